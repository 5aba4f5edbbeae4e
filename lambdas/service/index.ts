import { type StageAlarm, stageAlarms } from '../aws/alarm-states';
import { clusterSubnets, type HardwareFacts, hardwareFacts } from '../aws/hardware';
import { quotaValues } from '../aws/quotas';
import type { AwsQuota } from '../domain/aws-quotas';
import { type DeclaredModel, defaultModelCheck, type ModelCheck } from '../domain/catalog';
import { DomainError, unavailable } from '../domain/errors';
import type { DeclaredSpec } from '../domain/hardware';
import { builtinComputes, declaredModels } from '../shared/builtin-config';
import { config, type RuntimeConfig } from '../shared/config';
import * as admissions from '../store/admissions';
import * as commit from '../store/commit';
import * as computes from '../store/computes';
import * as costs from '../store/costs';
import * as demand from '../store/demand';
import * as events from '../store/events';
import * as idempotency from '../store/idempotency';
import * as models from '../store/models';
import * as passes from '../store/reconcile-passes';
import * as startTimes from '../store/start-times';
import * as tenancy from '../store/tenancy';
import * as workloads from '../store/workloads';
import { accessService } from './access';
import { admissionService } from './admission';
import { alarmService } from './alarms';
import { wakeService } from './autoscaling';
import { capacityService } from './capacity';
import { catalogService } from './catalog';
import { computeService } from './computes';
import { costService } from './costs';
import { eventService } from './events';
import { modelService } from './models';
import { passService } from './passes';
import { podService } from './pods';
import { quotaService } from './quotas';
import { scopeService } from './scopes';

/**
 * The service layer: one module per use case, between the handlers (api/routes, reconcile/handler.ts) and the
 * store and AWS adapters. Each loads what it needs, lets the domain decide, and writes (store/commit.ts); the
 * admitter alone writes admissions. Everything a use case
 * depends on is handed in here, once per container, the way Kueue's scheduler.New receives its queues, cache
 * and client: no module registers itself with another, and a test builds the services with other parts.
 */

/** The repositories, and how a write use case commits (store/commit.ts). */
export interface Stores {
  computes: typeof computes;
  models: typeof models;
  tenancy: typeof tenancy;
  admissions: typeof admissions;
  passes: typeof passes;
  /** Cost samples, one per reconcile pass (domain/cost.ts). */
  costs: typeof costs;
  idempotency: typeof idempotency;
  /** What the reconciler last saw of each model's pods (issue 20). */
  workloads: typeof workloads;
  /** What load asks of each autoscaled model (issue 33): what admission reads of the loop. */
  demand: typeof demand;
  /** A new replica's way to Ready per compute, as last seen (issue 33): a wake's expected time. */
  startTimes: typeof startTimes;
  /** Events of models and computes, for describe (domain/events.ts). */
  events: typeof events;
  commit: Pick<typeof commit, 'commitDecision'>;
}

/** A built-in as config/computes.yaml declares it: the hardware and cost may be left to AWS (resolveBuiltins). */
export interface BuiltinCompute {
  name: string;
  spec: DeclaredSpec;
}

export interface Dependencies {
  /** Now: what writes are stamped with and admission decides at. */
  clock: () => Date;
  /** The runtime configuration (stage, admins, table, ...); read on each use, so a reset holds at once. */
  config: () => RuntimeConfig;
  /** Refuses a model that cannot run before it is written; a deployment may give its own (e.g. weights exist). */
  modelCheck: ModelCheck;
  /** config/computes.yaml and config/catalog.yaml, as the deploy inlined them. */
  builtins: { computes: () => BuiltinCompute[]; models: () => DeclaredModel[] };
  store: Stores;
  /**
   * Queues an event for a Lambda (InvocationType Event): how POST /v1/reconcile starts a pass. Wired by the API
   * (service/for-api.ts) alone, so that the Lambda client stays out of the reconcile Lambda's bundle and role.
   */
  invoke: (functionName: string, event: unknown) => Promise<void>;
  /**
   * What AWS says about hardware (lambdas/aws/hardware.ts): instance types, on-demand prices and the cluster's
   * subnets, which every compute write is resolved against.
   */
  hardware: () => HardwareSource;
  /** The stage's CloudWatch alarms with their state (aws/alarms.ts), for GET /v1/alarms. */
  stageAlarms: () => Promise<StageAlarm[]>;
  /** The values of AWS quotas by code (lambdas/aws/quotas.ts, Service Quotas); undefined where AWS did not say. */
  awsQuotas: (qs: readonly AwsQuota[]) => Promise<Map<string, number | undefined>>;
}

export interface HardwareSource {
  readonly region: string;
  lookup: HardwareFacts['lookup'];
  offeredFamilies: HardwareFacts['offeredFamilies'];
  clusterSubnets: () => Promise<string[]>;
}

export function defaultDependencies(): Dependencies {
  return {
    clock: () => new Date(),
    config,
    modelCheck: defaultModelCheck,
    builtins: { computes: builtinComputes, models: declaredModels },
    store: {
      computes,
      models,
      tenancy,
      admissions,
      passes,
      costs,
      idempotency,
      workloads,
      demand,
      startTimes,
      events,
      commit: { commitDecision: commit.commitDecision },
    },
    invoke: async (functionName) => {
      throw new Error(
        `no Lambda invoker is wired here, so ${functionName} cannot be invoked; use createApiServices`,
      );
    },
    // Compute writes (the API) and the built-ins' load (the API and every reconcile pass) are resolved here.
    hardware: awsHardware,
    // A read AWS cannot answer is 503 naming CloudWatch, as a compute write AWS cannot check is.
    stageAlarms: () =>
      askingAws(
        'CloudWatch DescribeAlarms',
        stageAlarms,
        'the alarms cannot be read now: retry in a few seconds',
      ),
    awsQuotas: quotaValues,
  };
}

/**
 * What AWS says about hardware, through the adapter: EC2 instance types, prices, the cluster's subnets. When AWS
 * does not answer (after the SDK's retries), a compute write, or a cold start's load of the built-ins before any
 * request, cannot be checked: it is refused with 503 and a message that names the service, not a 500 that hides
 * it. The message fits a read as well as a write, since the built-ins' load comes before either.
 */
function awsHardware(): HardwareSource {
  const hw = hardwareFacts();
  return {
    region: hw.region,
    lookup: (t: string) => askingAws('EC2 DescribeInstanceTypes and the Price List', () => hw.lookup(t)),
    offeredFamilies: (f: readonly string[]) =>
      askingAws('EC2 DescribeInstanceTypes', () => hw.offeredFamilies(f)),
    clusterSubnets: () => askingAws('EKS DescribeCluster', () => clusterSubnets()),
  };
}

async function askingAws<T>(
  what: string,
  call: () => Promise<T>,
  consequence = 'llmcap checks computes against it, so nothing was written: retry in a few seconds',
): Promise<T> {
  try {
    return await call();
  } catch (e) {
    if (e instanceof DomainError) throw e;
    const err = e as Error;
    throw unavailable(`${what} failed (${err.name}: ${err.message}); ${consequence}`);
  }
}

export type Services = ReturnType<typeof wire>;
/** What the scope and quota use cases answer with, for the handlers that render it. */
export type { StoredQuota, StoredScope } from '../store/tenancy';

function wire(deps: Dependencies) {
  const access = accessService(deps);
  const catalog = catalogService(deps);
  const events = eventService(deps);
  const admission = admissionService(deps);
  const computes = computeService(deps, { catalog });
  const models = modelService(deps, { catalog, admission });
  return {
    deps,
    access,
    catalog,
    admission,
    models,
    computes,
    events,
    scopes: scopeService(deps, { catalog }),
    quotas: quotaService(deps),
    capacity: capacityService(deps, { catalog, admission }),
    passes: passService(deps),
    costs: costService(deps),
    alarms: alarmService(deps),
    pods: podService(deps, { catalog }),
    autoscaling: wakeService(deps, { models }),
    idempotency: deps.store.idempotency,
  };
}

/** The services of one container, from the default dependencies with any of them replaced. */
export function createServices(over: Partial<Dependencies> = {}): Services {
  return wire({ ...defaultDependencies(), ...over });
}
