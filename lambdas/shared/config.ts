import * as z from 'zod';
import type { WorkflowKind } from '../domain/actions';
import {
  type ConsolidationPolicy,
  ConsolidationPolicySchema,
  DEFAULT_CONSOLIDATION,
} from '../domain/consolidation';
import { FORMS_SENTENCE, type Principal, parsePrincipal } from '../domain/principal';

/**
 * The runtime configuration of every Lambda and of the local control plane: every `LLMCAP_*` variable the Lambda
 * code reads, checked once (zod) at first use, so that a misconfigured deploy fails loudly on its first request
 * rather than half-working. Nothing else reads `process.env.LLMCAP_*`, except the three config files the deploy
 * inlines at bundle time (LLMCAP_CONFIG_COMPUTES, LLMCAP_CONFIG_CATALOG, LLMCAP_CONFIG_ENGINES; builtin-config.ts,
 * each validated by CDK at deploy): esbuild replaces those expressions with the validated files, so they are not
 * variables at run time. The local control plane's
 * own settings (LLMCAP_PORT, LLMCAP_SIM_*, ...) are read by local/, which never runs in Lambda.
 */
const csv = z
  .string()
  .optional()
  .transform((s) =>
    (s ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  );

/** Platform admins: each an IAM principal in one of the forms of docs/security.md, or the start fails. */
const principals = csv.transform((list, ctx): Principal[] => {
  const out: Principal[] = [];
  for (const s of list) {
    const r = parsePrincipal(s);
    if (r.ok) out.push(r.value);
    else ctx.addIssue({ code: 'custom', message: `${s}: ${r.problem}; each admin is ${FORMS_SENTENCE}` });
  }
  return out;
});

/**
 * The API Lambda's timeout, in seconds: API Gateway gives an HTTP API integration at most 30 s. The stack's
 * function construct sets LLMCAP_FUNCTION_TIMEOUT_SECONDS from the timeout it deploys, so code that must know
 * how long an invocation can last (an Idempotency-Key's claim) reads the figure Lambda enforces.
 */
export const API_TIMEOUT_SECONDS = 29;
/** An endpoint override: empty means "the SDK's own" (the regional endpoint, or AWS_ENDPOINT_URL_*). */
const endpoint = z
  .union([
    z.literal(''),
    z.url({ protocol: /^https?$/, error: 'an http(s) URL such as http://127.0.0.1:4510' }),
  ])
  .optional()
  .transform((v) => v || undefined);

const arn = (service: string, resource: string, example: string) =>
  z
    .string()
    .regex(
      new RegExp(`^arn:aws[a-z-]*:${service}:[a-z0-9-]+:\\d{12}:${resource}`),
      `an ARN such as ${example}`,
    )
    .optional();

const stateMachine = arn(
  'states',
  'stateMachine:[\\w-]+$',
  'arn:aws:states:us-east-1:123456789012:stateMachine:x',
);

export const RuntimeConfigSchema = z.object({
  LLMCAP_STAGE: z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,15}$/, 'a stage is 1-16 lowercase letters, digits or -')
    .default('local'),
  LLMCAP_TABLE: z.string().min(3).default('llmcap'),
  LLMCAP_ADMINS: principals,
  LLMCAP_CLUSTER: z.string().min(1).default('llmcap-local'),
  LLMCAP_SUBNETS: csv,
  LLMCAP_COOLDOWN_SECONDS: z.coerce.number().int().min(0).default(600),
  /** The stage's consolidation policy as JSON (infra/stage-config.ts `consolidation`); absent: the defaults. */
  LLMCAP_CONSOLIDATION: z
    .string()
    .optional()
    .transform((s, ctx) => {
      let raw: unknown = {};
      try {
        raw = s ? JSON.parse(s) : {};
      } catch {
        ctx.addIssue({ code: 'custom', message: 'JSON such as {"minSavingPerHour": 2}' });
        return z.NEVER;
      }
      const r = ConsolidationPolicySchema.safeParse(raw);
      if (!r.success) {
        for (const i of r.error.issues)
          ctx.addIssue({ code: 'custom', message: `${i.path.join('.')}: ${i.message}` });
        return z.NEVER;
      }
      return r.data;
    }),
  /** The first wait before a failed node group create is tried again; it doubles per failure (domain/create-retry.ts). */
  LLMCAP_CREATE_RETRY_SECONDS: z.coerce.number().min(0).max(3600).default(300),
  /**
   * How long a node may be NotReady, or a node group fail to launch for lack of capacity, before llmcap stops
   * counting on it (domain/supply.ts): a booting node is NotReady for a minute or two.
   */
  LLMCAP_SUPPLY_GRACE_SECONDS: z.coerce.number().min(0).max(3600).default(300),
  /**
   * How long admission still counts on the nodes a node group failed to launch for lack of capacity (EC2's
   * InsufficientInstanceCapacity) before it places their replicas on the next compute (domain/supply.ts). Short:
   * EC2 said it has no capacity, and Karpenter tries the next offering at once; the probe tries again later.
   */
  LLMCAP_CAPACITY_GRACE_SECONDS: z.coerce.number().min(0).max(3600).default(60),
  /** The reconcile Lambda that POST /v1/reconcile invokes (name or ARN); set on the api Lambda only. */
  LLMCAP_RECONCILE_FUNCTION: z.string().min(1).optional(),
  /** The admitter Lambda each reconcile pass runs before placing (name or ARN); set on the reconcile Lambda only. */
  LLMCAP_ADMITTER_FUNCTION: z.string().min(1).optional(),
  /** Minutes between scheduled reconciles: the period of the alarms on what each pass reports. */
  LLMCAP_RECONCILE_RATE_MINUTES: z.coerce.number().int().min(1).max(60).default(1),
  /** This function's timeout as deployed (Lambda allows 1-900 s); the local API runs with the API's. */
  LLMCAP_FUNCTION_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(900).default(API_TIMEOUT_SECONDS),
  /** The three node group workflows the reconciler starts; set on the reconcile Lambda only. */
  LLMCAP_PROVISION_SM_ARN: stateMachine,
  LLMCAP_SCALE_SM_ARN: stateMachine,
  LLMCAP_DELETE_SM_ARN: stateMachine,
  /** The on-call topic the per-scope and per-compute alarms notify; unset: the reconciler keeps no alarms. */
  LLMCAP_ALARM_TOPIC_ARN: arn('sns', '[\\w.-]+$', 'arn:aws:sns:us-east-1:123456789012:oncall'),
  /** Locally and in tests: DynamoDB Local, the cloud simulator (EKS and Auto Scaling), the local Step Functions. */
  LLMCAP_DYNAMODB_ENDPOINT: endpoint,
  LLMCAP_EKS_ENDPOINT: endpoint,
  LLMCAP_SFN_ENDPOINT: endpoint,
  /**
   * Locally and in tests: the AWS SDK's retry backoff and adaptive rate limiter wait this fraction of their time,
   * for a simulator that runs faster than AWS (shared/retry.ts). 1, the SDK's own policy, everywhere else.
   */
  LLMCAP_SDK_RETRY_TIME_SCALE: z.coerce.number().gt(0).max(1).default(1),
  /** Where config/*.yaml are read from when the deploy inlined none (locally and in tests). */
  LLMCAP_CONFIG_DIR: z.string().min(1).optional(),
  /** The stage's region, as the Lambda runtime sets it: where node groups run and prices are asked for. */
  AWS_REGION: z.string().min(1).optional(),
  AWS_DEFAULT_REGION: z.string().min(1).optional(),
  /**
   * `deploy`: the reconciler runs the model servers of what is admitted (docs/workloads.md); `off` (the default
   * when unset): it keeps the node groups only and leaves the pods to the platform's own tooling.
   */
  LLMCAP_WORKLOADS: z.enum(['deploy', 'off']).default('off'),
  /**
   * How old an answer this API process already has a write's first decision may use (store/shared-read.ts): its
   * conditions catch what changed, refusals are answered from fresh reads. 0 reads the table for every decision.
   */
  LLMCAP_WRITE_SNAPSHOT_MS: z.coerce.number().int().min(0).max(10_000).default(1000),
});

export interface RuntimeConfig {
  stage: string;
  table: string;
  admins: readonly Principal[];
  cluster: string;
  subnetIds: string[];
  cooldownSeconds: number;
  createRetrySeconds: number;
  supplyGraceSeconds: number;
  capacityGraceSeconds: number;
  reconcileFunction?: string;
  admitterFunction?: string;
  reconcileRateMinutes: number;
  functionTimeoutSeconds: number;
  /** The state machine of each workflow kind, where this function starts them. */
  stateMachines: Partial<Record<WorkflowKind, string>>;
  alarmTopicArn?: string;
  endpoints: { dynamodb?: string; eks?: string; sfn?: string };
  /** LLMCAP_SDK_RETRY_TIME_SCALE: 1 in AWS. */
  sdkRetryTimeScale: number;
  configDir?: string;
  region: string;
  deployWorkloads: boolean;
  consolidation: ConsolidationPolicy;
  /** LLMCAP_WRITE_SNAPSHOT_MS. */
  writeSnapshotMs: number;
}

let cached: RuntimeConfig | undefined;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): RuntimeConfig {
  const parsed = RuntimeConfigSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`llmcap configuration is invalid: ${lines}`);
  }
  const e = parsed.data;
  const machines: Partial<Record<WorkflowKind, string>> = {};
  if (e.LLMCAP_PROVISION_SM_ARN) machines.provision = e.LLMCAP_PROVISION_SM_ARN;
  if (e.LLMCAP_SCALE_SM_ARN) machines.scale = e.LLMCAP_SCALE_SM_ARN;
  if (e.LLMCAP_DELETE_SM_ARN) machines.delete = e.LLMCAP_DELETE_SM_ARN;
  return {
    stage: e.LLMCAP_STAGE,
    table: e.LLMCAP_TABLE,
    admins: e.LLMCAP_ADMINS,
    cluster: e.LLMCAP_CLUSTER,
    subnetIds: e.LLMCAP_SUBNETS,
    cooldownSeconds: e.LLMCAP_COOLDOWN_SECONDS,
    consolidation: e.LLMCAP_CONSOLIDATION ?? DEFAULT_CONSOLIDATION,
    createRetrySeconds: e.LLMCAP_CREATE_RETRY_SECONDS,
    supplyGraceSeconds: e.LLMCAP_SUPPLY_GRACE_SECONDS,
    capacityGraceSeconds: e.LLMCAP_CAPACITY_GRACE_SECONDS,
    ...(e.LLMCAP_RECONCILE_FUNCTION ? { reconcileFunction: e.LLMCAP_RECONCILE_FUNCTION } : {}),
    ...(e.LLMCAP_ADMITTER_FUNCTION ? { admitterFunction: e.LLMCAP_ADMITTER_FUNCTION } : {}),
    reconcileRateMinutes: e.LLMCAP_RECONCILE_RATE_MINUTES,
    functionTimeoutSeconds: e.LLMCAP_FUNCTION_TIMEOUT_SECONDS,
    stateMachines: machines,
    ...(e.LLMCAP_ALARM_TOPIC_ARN ? { alarmTopicArn: e.LLMCAP_ALARM_TOPIC_ARN } : {}),
    endpoints: {
      ...(e.LLMCAP_DYNAMODB_ENDPOINT ? { dynamodb: e.LLMCAP_DYNAMODB_ENDPOINT } : {}),
      ...(e.LLMCAP_EKS_ENDPOINT ? { eks: e.LLMCAP_EKS_ENDPOINT } : {}),
      ...(e.LLMCAP_SFN_ENDPOINT ? { sfn: e.LLMCAP_SFN_ENDPOINT } : {}),
    },
    sdkRetryTimeScale: e.LLMCAP_SDK_RETRY_TIME_SCALE,
    ...(e.LLMCAP_CONFIG_DIR ? { configDir: e.LLMCAP_CONFIG_DIR } : {}),
    region: e.AWS_REGION ?? e.AWS_DEFAULT_REGION ?? 'us-east-1',
    deployWorkloads: e.LLMCAP_WORKLOADS === 'deploy',
    writeSnapshotMs: e.LLMCAP_WRITE_SNAPSHOT_MS,
  };
}

/** The configuration of this process; tests and the local control plane reset it after changing env. */
export function config(): RuntimeConfig {
  cached ??= loadConfig();
  return cached;
}

export function resetConfig(): void {
  cached = undefined;
}
