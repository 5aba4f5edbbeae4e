import * as alarms from '../aws/alarms';
import { type ClusterClient, clusterClient } from '../aws/kubernetes';
import { invokeAdmitter } from '../aws/lambda';
import * as nodegroups from '../aws/nodegroups';
import * as stepFunctions from '../aws/workflows';
import { type Action, decideAction, type WorkflowKind } from '../domain/actions';
import { decideWorld, unitsOf, type World } from '../domain/admission-world';
import { type NodeView, observedAllocatables, sameRoom } from '../domain/allocatable';
import type { ModelLoad, StartedObject } from '../domain/autoscaling';
import { capByQuotas, NODEGROUPS_PER_CLUSTER, type QuotaCap, vcpuQuotaOf } from '../domain/aws-quotas';
import {
  type Compute,
  FAILED_NODEGROUP_STATUSES,
  labels,
  nodegroupExists,
  type ObservedStatus,
  type Sizing,
  sameObservation,
} from '../domain/compute';
import { costInputs, splitCost } from '../domain/cost';
import { nextCreateRetry, retryMessage, retryPolicy } from '../domain/create-retry';
import type { DrainNode, DrainReport } from '../domain/drain';
import { computeEvents, computeFailure, driftEvents, type ResourceEvent } from '../domain/events';
import { labelValue } from '../domain/names';
import { type ComputePlan, nextSizing, nodesInForce, planPlacement } from '../domain/placement';
import { ScopeTree } from '../domain/quota';
import type { ComputeReport, ReconcileSummary } from '../domain/reconcile-pass';
import {
  type ComputeSupply,
  holdsLaunches,
  inGrace,
  type LaunchActivity,
  nextComputeShortage,
  nextInterruptions,
  nextShortZones,
  nodeOfInstance,
  nodesAhead,
  nodesByCompute,
  pastGraces,
  replacementNodes,
  replacesReclaimed,
  SPOT_WARNING_ANNOTATION,
  type SupplyNode,
  sameSupply,
  sharedShortZones,
  withReplacements,
} from '../domain/supply';
import { type EnginesConfig, namespacesOf, type WorkloadsReport } from '../domain/workloads';
import { enginesConfig } from '../shared/builtin-config';
import { logger } from '../shared/logger';
import { createServices, type Dependencies, type Services } from '.';
import type { AdmitterSummary } from './admitter';
import { observeDemand, observeLoad } from './autoscaling';
import { chooseGoing, drainForScaleDown, type Shrink } from './drain';
import { workflowService } from './workflows';
import { reconcileWorkloads } from './workloads';

/**
 * One reconcile pass (docs/design.md, Reconcile): observe what AWS runs, have the admitter decide (it alone writes
 * admissions), place what is admitted, start the workflows that make the node groups match, and report.
 * Idempotent and safe beside another pass and API writes: workflow starts go through a conditional claim per compute.
 */

export type { ComputeReport, ReconcileSummary };

/** What a pass observed of a group's supply from AWS (aws/nodegroups.ts Observation). */
interface ObservedSupply {
  desiredNodes: number;
  /** Newest first. */
  launches?: LaunchActivity[];
  zones?: string[];
  healthIssues?: ObservedStatus['healthIssues'];
}

/**
 * What a pass depends on beyond the services: EKS and Auto Scaling, Step Functions, CloudWatch, and the
 * cluster's Kubernetes API with the engines it deploys (docs/workloads.md).
 */
export interface ReconcileDependencies extends Dependencies {
  nodegroups: Pick<typeof nodegroups, 'observeAll' | 'terminateInstance' | 'subnetZones'>;
  /** A client of the cluster's API with a fresh EKS token (aws/kubernetes.ts), asked for once per pass. */
  cluster: () => Promise<ClusterClient>;
  /** config/engines.yaml, as the deploy inlined it. */
  engines: () => EnginesConfig;
  stepFunctions: typeof stepFunctions;
  alarms: Pick<typeof alarms, 'syncAlarms'>;
  /**
   * Runs the admitter once and answers its figures. Deployed, the admitter Lambda (reserved concurrency 1)
   * invoked synchronously (aws/lambda.ts invokeAdmitter), so that it stays the only writer of admissions; a test
   * may hand in its own one-at-a-time runner.
   */
  admit: () => Promise<AdmitterSummary>;
}

export function createReconciler(over: Partial<ReconcileDependencies> = {}) {
  const services = createServices(over);
  const deps: ReconcileDependencies = {
    ...services.deps,
    nodegroups,
    stepFunctions,
    alarms,
    cluster: () => clusterClient(),
    engines: enginesConfig,
    admit: () => {
      const fn = services.deps.config().admitterFunction;
      if (!fn)
        throw new Error(
          'no admitter function is configured (LLMCAP_ADMITTER_FUNCTION): admission cannot be decided this pass',
        );
      return invokeAdmitter(fn);
    },
    ...over,
  };
  return reconciler(deps, services);
}

export type Reconciler = ReturnType<typeof reconciler>;

function reconciler(deps: ReconcileDependencies, services: Services) {
  const store = deps.store;
  const starter = workflowService({
    clock: deps.clock,
    computes: store.computes,
    stepFunctions: deps.stepFunctions,
  });

  /** A scale-down of a live group, while llmcap runs the pods: it drains the nodes itself (drain.ts). */
  function drainsFirst(action: Action, c: Compute): action is Extract<Action, { kind: 'scale' }> {
    return (
      deps.config().deployWorkloads &&
      action.kind === 'scale' &&
      c.status.nodegroupStatus === 'ACTIVE' &&
      action.desired < c.status.desiredNodes
    );
  }

  /**
   * The model servers of what is admitted (issue 20), their pods read into status.running, then the drains of
   * this pass's scale-downs. A pass that changed Deployments drains nothing: their pods are still going, and a
   * node that empties by itself is cheaper to remove than one whose pods must move.
   */
  async function runWorkloads(
    input: Pick<
      Parameters<typeof reconcileWorkloads>[0],
      'models' | 'admissions' | 'computes' | 'now' | 'namespaceOf'
    >,
    shrinks: Shrink[],
    errors: string[],
    loads: Map<string, ModelLoad> | undefined,
  ): Promise<{ workloads?: WorkloadsReport; drains: DrainReport[] }> {
    const drains: DrainReport[] = [];
    const stage = deps.config().stage;
    let workloads: WorkloadsReport | undefined;
    try {
      const client = await deps.cluster();
      let chosen = new Map<string, DrainNode[]>();
      const w = await reconcileWorkloads({
        ...input,
        stage,
        engines: deps.engines(),
        client,
        record: store.workloads.recordWorkloads,
        // Read before admission this pass (observeDemand); read here only when that step failed.
        observeLoad: async (pods, k) =>
          loads ??
          observeLoad({
            models: input.models,
            pods,
            previous: new Map(
              (await store.workloads.listWorkloads()).flatMap((w) =>
                w.autoscaling ? [[w.model, w.autoscaling] as const] : [],
              ),
            ),
            engines: deps.engines(),
            client: k,
            now: input.now,
          }),
        ...(shrinks.length
          ? {
              shrinking: {
                draining: new Set(shrinks.filter((s) => s.cordon).map((s) => s.compute.name)),
                going: async (pods) => {
                  chosen = await chooseGoing({ shrinks, pods, client, stage });
                  return new Set([...chosen.values()].flat().map((n) => n.name));
                },
              },
            }
          : {}),
      });
      workloads = w.report;
      if (w.report.applied.length === 0)
        for (const d of shrinks.filter((s) => s.cordon)) {
          try {
            drains.push(
              await drainForScaleDown({
                compute: d.compute,
                chosen: chosen.get(d.compute.name) ?? [],
                pods: w.pods,
                deployments: w.deployments,
                client: w.client,
                terminateInstance: deps.nodegroups.terminateInstance,
              }),
            );
          } catch (e) {
            errors.push(`draining ${d.compute.name}: ${(e as Error).message}`);
          }
        }
    } catch (e) {
      errors.push(`workloads: ${(e as Error).message}`);
    }
    return { ...(workloads ? { workloads } : {}), drains };
  }

  /**
   * Issue 32 §3: the replicas a short compute holds move to their next compute only when its grace ends, and
   * would then wait for a node to boot there. Deciding now as the admitter will decide then (the graces counted as
   * over, supply.ts pastGraces) says which computes they go to and how many nodes those need; the pass asks for
   * them now, so the node boots during the grace. Only while a grace runs; no AWS call.
   */
  function nodesAheadOfGraces(
    world: World,
    planned: readonly ComputePlan[],
    now: string,
  ): Map<string, ComputePlan> {
    const computes = pastGraces(world.computes, now);
    if (!computes) return new Map();
    const after = decideWorld({ ...world, computes }, now);
    const tree = new ScopeTree(world.scopes);
    const later = planPlacement(computes, unitsOf(after.admissions, world.models, tree));
    const short = new Set(
      world.computes.filter((c) => inGrace(c.supply?.shortOfCapacity, now)).map((c) => c.name),
    );
    const out = nodesAhead(planned, later.computes, short);
    for (const [c, p] of out)
      logger.info('nodes asked for ahead of a capacity grace', { compute: c, neededNodes: p.neededNodes });
    return out;
  }

  /**
   * What AWS quotas let each compute ask for this pass (domain/aws-quotas.ts capByQuotas): node groups within the
   * cluster's quota, nodes within the account's vCPUs per class. The values come from Service Quotas, cached per
   * container; one it did not answer limits nothing.
   */
  async function quotaCaps(
    computes: readonly Compute[],
    sized: ReadonlyMap<string, { neededNodes: number }>,
  ): Promise<Map<string, QuotaCap>> {
    const live = computes.filter((c) => !(c as { deletionRequested?: boolean }).deletionRequested);
    const qs = [
      NODEGROUPS_PER_CLUSTER,
      ...live.flatMap((c) => vcpuQuotaOf(c.spec.node.instanceType, c.spec.node.capacityType) ?? []),
    ];
    const values = await deps.awsQuotas(qs);
    return capByQuotas(
      computes.map((c) => {
        const hasGroup = nodegroupExists(c.status) || c.workflow?.state === 'RUNNING';
        return {
          name: c.name,
          instanceType: c.spec.node.instanceType,
          capacityType: c.spec.node.capacityType,
          vcpus: c.spec.node.cpu,
          currentNodes: hasGroup ? c.status.desiredNodes : 0,
          neededNodes: live.includes(c) ? (sized.get(c.name)?.neededNodes ?? 0) : 0,
          hasGroup,
        };
      }),
      (q) => values.get(q.code),
    );
  }

  /**
   * Reads llmcap's Nodes once, records per instance type the least allocatable its Ready nodes report, and copies
   * it onto each compute of that type whose copy differs (a compute created since a node of its type was seen
   * included): one List of Nodes a pass, not counted as AWS calls. Without cluster access (workloads not deployed) a failure
   * is only logged: planning keeps the formula.
   */
  async function observeNodeRoom(
    computes: readonly Compute[],
    now: string,
    errors: string[],
  ): Promise<SupplyNode[] | undefined> {
    try {
      const client = await deps.cluster();
      const nodes = (await client.list('v1', 'Node', undefined, {
        labelSelector: COMPUTE_LABEL,
      })) as unknown as (NodeView & SupplyNode)[];
      const gpuResource = new Map(
        computes.flatMap((c) =>
          c.spec.node.gpu ? [[c.spec.node.instanceType, c.spec.node.gpu.resource] as const] : [],
        ),
      );
      const known = new Map((await store.computes.listNodeAllocatables()).map((a) => [a.instanceType, a]));
      for (const seen of observedAllocatables(nodes, gpuResource, now)) {
        if (sameRoom(known.get(seen.instanceType), seen)) continue;
        await store.computes.recordNodeAllocatable(seen);
        known.set(seen.instanceType, seen);
      }
      for (const c of computes) {
        const seen = known.get(c.spec.node.instanceType);
        if (seen && !sameRoom(c.allocatable, seen))
          await store.computes.recordComputeAllocatable(c.name, seen);
      }
      return nodes;
    } catch (e) {
      const message = `observing nodes' allocatable: ${(e as Error).message}`;
      if (deps.config().deployWorkloads) errors.push(message);
      else logger.warn(message);
      return undefined;
    }
  }

  /**
   * The zones a compute's node group will launch in, for computes without one: its subnets' zones, kept on its
   * supply (a subnet's zone never changes), so only subnets no pass has seen cost a DescribeSubnets, one for all.
   * Without them (EC2 unreachable) the compute is judged on its own launches alone, as before zones were known.
   */
  async function plannedZones(
    computes: readonly Compute[],
    called: () => void,
  ): Promise<Map<string, { zones: string[]; subnetZones: Record<string, string> }>> {
    const subnetsOf = (c: Compute) => c.spec.nodeGroup.subnetIds ?? deps.config().subnetIds;
    const known: Record<string, string> = {};
    for (const c of computes) Object.assign(known, c.supply?.subnetZones);
    const unread = [...new Set(computes.flatMap(subnetsOf))].filter((id) => !(id in known));
    if (unread.length) {
      try {
        called();
        Object.assign(known, await deps.nodegroups.subnetZones(unread));
      } catch (e) {
        // Not a pass's failure: zones only let a compute learn of a shortage before its own launch fails.
        logger.warn(
          "reading subnets' zones failed; computes without a node group are judged on their own launches",
          {
            subnets: unread,
            error: (e as Error).message,
          },
        );
      }
    }
    const out = new Map<string, { zones: string[]; subnetZones: Record<string, string> }>();
    for (const c of computes) {
      const subnets = subnetsOf(c);
      if (!subnets.length || !subnets.every((id) => id in known)) continue;
      const subnetZones = Object.fromEntries(subnets.map((id) => [id, known[id]!]));
      out.set(c.name, { zones: [...new Set(Object.values(subnetZones))].sort(), subnetZones });
    }
    return out;
  }

  /**
   * Which nodes of each compute take pods (issue 32 §1), from the Nodes observeNodeRoom listed: cordoned and
   * long-NotReady nodes are idle, and the group is grown to replace those within its desired size. Written
   * only when it changed. Without the Nodes (no cluster access) the stored supply stands.
   */
  async function observeSupply(
    computes: readonly Compute[],
    nodes: readonly SupplyNode[] | undefined,
    observed: ReadonlyMap<string, ObservedSupply>,
    planned: ReadonlyMap<string, { zones: string[]; subnetZones: Record<string, string> }>,
    now: string,
  ): Promise<Map<string, ComputeSupply | undefined>> {
    const out = new Map<string, ComputeSupply | undefined>();
    const graceMs = deps.config().supplyGraceSeconds * 1000;
    const capacityGraceMs = deps.config().capacityGraceSeconds * 1000;
    const seen = nodes ? nodesByCompute(nodes, COMPUTE_LABEL, now, graceMs) : undefined;
    // Zones first, for every compute: a zone one group found short is short for each group of its instance type.
    const zonal = new Map(
      computes.map((c) => {
        const o = observed.get(c.name);
        const next = nextShortZones(
          c.supply?.shortZones,
          o?.launches ?? [],
          c.supply?.launchesReadTo,
          now,
          capacityGraceMs,
        );
        return [
          c.name,
          { ...next, zones: o?.zones ?? planned.get(c.name)?.zones ?? c.supply?.zones },
        ] as const;
      }),
    );
    const shared = sharedShortZones(
      computes.map((c) => ({ spec: c.spec, shortZones: zonal.get(c.name)?.shortZones })),
    );
    for (const c of computes) {
      const o = observed.get(c.name);
      const s = seen?.get(labelValue(c.name));
      // Without the Nodes (no cluster access) what the last pass saw of them stands.
      const idle = seen ? (s?.idle ?? []) : (c.supply?.idleNodes ?? []);
      const replacements = seen
        ? s
          ? replacementNodes(s.idle.length, s.nodes, o?.desiredNodes ?? c.status.desiredNodes)
          : 0
        : (c.supply?.replacementNodes ?? 0);
      const newest = o?.launches?.[0];
      const reclaimed = replacesReclaimed(c.supply, newest, now, graceMs);
      const z = zonal.get(c.name)!;
      const short = nextComputeShortage(
        c.supply?.shortOfCapacity,
        {
          ...(newest ? { launch: newest } : {}),
          ...(o?.healthIssues ? { healthIssues: o.healthIssues } : {}),
        },
        { node: c.spec.node, zones: z.zones, shared },
        now,
        capacityGraceMs,
        reclaimed,
      );
      const next: ComputeSupply = {
        ...(idle.length ? { idleNodes: idle } : {}),
        ...(replacements ? { replacementNodes: replacements } : {}),
        ...(short ? { shortOfCapacity: short } : {}),
        ...(c.supply?.interruptions ? { interruptions: c.supply.interruptions } : {}),
        ...(z.zones ? { zones: z.zones } : {}),
        // Planned only for computes whose group listed no zones (the pass's call of plannedZones).
        ...(planned.has(c.name) ? { subnetZones: planned.get(c.name)!.subnetZones } : {}),
        ...(z.shortZones.length ? { shortZones: z.shortZones } : {}),
        ...(z.readTo ? { launchesReadTo: z.readTo } : {}),
      };
      out.set(c.name, next);
      if (!sameSupply(c.supply, next)) await store.computes.recordSupply(c.name, next);
    }
    return out;
  }

  /**
   * EC2 warned that a Spot instance goes in two minutes (issue 32 §4): its node is marked (an annotation, so the
   * pass that follows counts it idle at once: the group grows to replace it, and admission re-places the replicas
   * on it elsewhere if the group cannot), and the warning is counted on its compute. A node of no compute of
   * llmcap's is left alone. EKS's own capacity rebalancing is not duplicated: nothing here launches or drains.
   */
  async function spotInterruption(w: { instance: string; at: string }): Promise<string | undefined> {
    const client = await deps.cluster();
    const nodes = (await client.list('v1', 'Node', undefined, {
      labelSelector: COMPUTE_LABEL,
    })) as unknown as SupplyNode[];
    const node = nodeOfInstance(nodes, w.instance);
    const label = node?.metadata.labels?.[COMPUTE_LABEL];
    const compute = label && (await store.computes.listComputes()).find((c) => labelValue(c.name) === label);
    if (!node || !compute) return undefined;
    await client.patch('v1', 'Node', undefined, node.metadata.name, {
      metadata: { annotations: { [SPOT_WARNING_ANNOTATION]: w.at } },
    });
    const interruptions = nextInterruptions(compute.supply?.interruptions, {
      ...w,
      node: node.metadata.name,
    });
    await store.computes.recordSupply(compute.name, { ...compute.supply, interruptions });
    return compute.name;
  }

  return {
    run: runReconcile,
    workflows: starter,
    syncAlarms: deps.alarms.syncAlarms,
    services,
    spotInterruption,
  };

  async function runReconcile(opts: { now?: Date } = {}): Promise<ReconcileSummary> {
    const started = opts.now ?? deps.clock();
    const now = started.toISOString();
    const t0 = Date.now();
    const errors: string[] = [];
    let awsCalls = 0;
    const cooldownMs = deps.config().cooldownSeconds * 1000;
    const retries = retryPolicy(deps.config().createRetrySeconds);

    await services.computes.seedBuiltins();

    // 1-2. Observe every node group llmcap believes in, and settle workflows that ended without recording.
    let computes = await store.computes.listComputes();
    for (const c of computes.filter((x) => x.workflow?.state === 'RUNNING')) {
      try {
        await starter.settle(c);
        awsCalls++;
      } catch (e) {
        errors.push(`settling ${c.name}: ${(e as Error).message}`);
      }
    }
    computes = await store.computes.listComputes();
    const observed = new Map<string, ObservedSupply & { maxSize?: number }>();
    const stored = new Map(computes.map((c) => [c.name, c.status]));
    try {
      for (const o of await deps.nodegroups.observeAll(computes, now)) {
        awsCalls += o.calls;
        observed.set(o.compute, {
          maxSize: o.maxSize,
          desiredNodes: o.status.desiredNodes,
          ...(o.launches ? { launches: o.launches } : {}),
          ...(o.zones ? { zones: o.zones } : {}),
          ...(o.status.healthIssues ? { healthIssues: o.status.healthIssues } : {}),
        });
        // Only what changed is written: a steady pass over 200 computes made 200 writes of the same status.
        const was = stored.get(o.compute);
        if (!was || !sameObservation(was, o.status))
          await store.computes.recordObservation(o.compute, o.status);
        if (o.vanished) logger.warn('node group vanished outside llmcap', { compute: o.compute });
      }
    } catch (e) {
      errors.push(`observing: ${(e as Error).message}`);
    }

    // 2b. The room nodes really have: what each instance type's nodes report replaces EKS's formula (issue 32 §2).
    const nodes = await observeNodeRoom(computes, now, errors);
    // 2c. Nodes that take no pods (issue 32 §1): cordoned, drained or NotReady nodes are replaced.
    // 2d. Launches that fail for lack of capacity (issue 32 §3), from the groups' scaling activities.
    // Zones of groups not made yet, from their subnets (DescribeSubnets, only for subnets no pass has read).
    const planned = await plannedZones(
      computes.filter((c) => !observed.get(c.name)?.zones),
      () => awsCalls++,
    );
    const supply = await observeSupply(computes, nodes, observed, planned, now);
    const target = (c: Compute, needed: number) =>
      withReplacements(needed, supply.get(c.name)?.replacementNodes ?? 0, c.spec.nodeGroup.maxNodes);

    // 2e. Load (issue 33): read before the admitter, so that it decides on this pass's demand.
    let loads: Map<string, ModelLoad> | undefined;
    if (deps.config().deployWorkloads) {
      try {
        const stage = deps.config().stage;
        loads = await observeDemand({
          models: (await services.catalog.load()).models,
          namespaceOf: async () => namespacesOf(stage, await store.tenancy.listScopes()),
          stage,
          engines: deps.engines(),
          client: () => deps.cluster(),
          store,
          ...(nodes ? { nodes: nodes as StartedObject[] } : {}),
          now,
        });
      } catch (e) {
        errors.push(`load: ${(e as Error).message}`);
      }
    }

    // 3. The admitter decides every pending request (it alone writes admissions); then placement of what it admitted.
    let admitted: AdmitterSummary | undefined;
    try {
      admitted = await deps.admit();
    } catch (e) {
      errors.push(`admission: ${(e as Error).message}; placing what was admitted before`);
    }
    const world = await services.admission.loadWorld(await services.catalog.load());
    const events: ResourceEvent[] = [];
    const all = await store.computes.listComputes(); // includes computes being deleted, which the catalog leaves out
    const units = unitsOf(world.admissions, world.models, new ScopeTree(world.scopes));
    const plan = planPlacement(
      all.filter((c) => !c.deletionRequested),
      units,
    );
    // 3b. While a short compute's grace runs, the nodes its replicas will need where they go once it ends: sized
    // as any need, so that they are asked for now and kept for the cool-down like any other.
    const ahead = nodesAheadOfGraces(world, plan.computes, now);
    const sized = new Map(plan.computes.map((p) => [p.compute, p]));
    const placedNeeds = new Map(plan.computes.map((p) => [p.compute, p.neededNodes]));
    for (const [c, p] of ahead) sized.set(c, p);
    const byName = new Map(all.map((c) => [c.name, c]));
    const caps = await quotaCaps(
      all,
      new Map(
        [...sized.values()].map((p) => [
          p.compute,
          {
            neededNodes: byName.has(p.compute)
              ? target(byName.get(p.compute)!, p.neededNodes)
              : p.neededNodes,
          },
        ]),
      ),
    );

    // 4. Act: one workflow per compute whose node group differs from what is needed.
    const reports: ComputeReport[] = [];
    const launched: ReconcileSummary['workflows'] = [];
    const shrinks: Shrink[] = [];
    for (const c of all) {
      const deleting = c.deletionRequested === true;
      const planned = sized.get(c.name);
      const retry = nextCreateRetry(
        c.sizing?.createRetry,
        { status: c.status, deleting },
        planned?.neededNodes ?? 0,
        started,
        retries,
      );
      const next = nextSizing(c.sizing, planned, started, cooldownMs, {
        deleting,
        nodesInForce: nodesInForce(c.status),
        ...(retry ? { createRetry: retry } : {}),
      });
      // Nodes an AWS quota would refuse are not asked for; the status says which quota (issue 32 §5).
      const cap = deleting ? undefined : caps.get(c.name);
      const { pendingReason: _was, aheadNodes: _ahead, ...rest } = next.sizing;
      // Of the nodes needed, those asked for ahead of replicas moving here (3b): the status says so.
      const aheadBy = deleting ? 0 : (ahead.get(c.name)?.neededNodes ?? 0) - (placedNeeds.get(c.name) ?? 0);
      const sizing: Sizing = {
        ...rest,
        ...(cap ? { pendingReason: cap.reason } : {}),
        ...(aheadBy > 0 ? { aheadNodes: aheadBy } : {}),
      };
      if (
        next.changed ||
        c.sizing?.pendingReason !== sizing.pendingReason ||
        c.sizing?.aheadNodes !== sizing.aheadNodes
      )
        await store.computes.recordSizing(c.name, sizing);
      // Idle nodes are replaced within maxNodes (issue 32 §1): the needed nodes are those that take pods.
      const wanted = deleting ? sizing.neededNodes : target(c, sizing.neededNodes);
      let action = decideAction({
        compute: c,
        needed: cap ? Math.min(wanted, cap.allowedNodes) : wanted,
        observedMax: observed.get(c.name)?.maxSize,
        retry,
        now: started,
      });
      let note = action.kind === 'none' || action.kind === 'delete' ? action.why : undefined;
      // EC2 had no capacity for these nodes: asked again only at the next probe (issue 32 §3).
      const short = supply.get(c.name)?.shortOfCapacity;
      if (action.kind === 'scale' && action.desired > c.status.readyNodes && holdsLaunches(short, now)) {
        action = { kind: 'none', why: `short of capacity; next launch attempt at ${short!.nextProbeAt}` };
        note = action.why;
      }
      try {
        if (action.kind === 'remove-item') {
          await store.computes.removeDeletedCompute(c.name);
        } else if (drainsFirst(action, c)) {
          // Issue 20 §3: llmcap removes the instances itself, after draining them (runWorkloads below).
          shrinks.push({ compute: c, keep: action.desired, cordon: true });
          note = `scaling down to ${action.desired} by draining the nodes llmcap chooses`;
        } else if (action.kind !== 'none') {
          const kind: WorkflowKind = action.kind;
          const desired = action.kind === 'delete' ? 0 : action.desired;
          const r = await starter.start({ compute: c, kind, desiredNodes: desired });
          awsCalls++;
          launched.push({
            compute: c.name,
            kind,
            outcome: r.outcome,
            ...('executionName' in r ? { executionName: r.executionName } : {}),
          });
          if (r.outcome === 'refused') note = r.message;
        }
      } catch (e) {
        errors.push(`${action.kind} ${c.name}: ${(e as Error).message}`);
        events.push(computeFailure(c, `${action.kind}: ${(e as Error).message}`, now));
      }
      // During a cool-down the node group keeps its size, but the replicas already drop: steer the ReplicaSets
      // to the pods on the nodes that will go (not cordoned: the need may rise again before they do).
      if (
        action.kind === 'none' &&
        deps.config().deployWorkloads &&
        c.status.nodegroupStatus === 'ACTIVE' &&
        planned &&
        target(c, planned.neededNodes) < c.status.desiredNodes
      )
        shrinks.push({ compute: c, keep: target(c, planned.neededNodes), cordon: false });
      reports.push({
        compute: c.name,
        status: c.status.nodegroupStatus,
        desiredNodes: c.status.desiredNodes,
        readyNodes: c.status.readyNodes,
        neededNodes: sizing.neededNodes,
        lowerBoundNodes: sizing.lowerBoundNodes,
        costPerHour: sizing.costPerHour,
        // FOREIGN too: the compute gets no nodes until someone renames it or deletes the other group.
        // A held create failure counts until a create succeeds, so the alarm does not clear while the failed
        // group is deleted and created again.
        // A group DEGRADED only because EC2 has no capacity is nobody's to fix: it is reported as short of
        // capacity (below) and its replicas move elsewhere, instead of paging (issue 32 §3).
        failed:
          (FAILED_NODEGROUP_STATUSES.includes(c.status.nodegroupStatus) &&
            !(c.status.nodegroupStatus === 'DEGRADED' && short)) ||
          retry !== undefined,
        ...(retry && c.status.nodegroupStatus !== 'CREATE_FAILED'
          ? { statusMessage: retryMessage(retry) }
          : c.status.statusMessage
            ? { statusMessage: c.status.statusMessage }
            : {}),
        ...(retry ? { nextCreateAttemptAt: retry.nextAttemptAt } : {}),
        action: action.kind,
        ...(note ? { actionNote: note } : {}),
        ...(cap ? { pendingReason: cap.reason } : {}),
        ...(short ? { shortOfCapacitySince: short.since } : {}),
        ...(aheadBy > 0 ? { aheadNodes: aheadBy } : {}),
      });
    }

    // What the node groups cost now, and whose replicas it is for (GET /v1/costs): one sample per pass.
    const owners = new Map(world.models.map((m) => [m.name, m.owner]));
    const costNow = splitCost(costInputs(plan, all, units, (m) => owners.get(m)));
    try {
      await store.costs.putCostSample({ at: now, currency: 'USD', computes: costNow });
    } catch (e) {
      errors.push(`recording the cost sample: ${(e as Error).message}`);
    }

    // 5. Workloads (issue 20): the model servers of what is admitted; their pods become status.running.
    const { workloads, drains } = deps.config().deployWorkloads
      ? await runWorkloads(
          {
            models: world.models,
            admissions: world.admissions,
            computes: all,
            now,
            // The pass's own read of the tree: each scope's namespace (domain/workloads.ts namespacesOf).
            namespaceOf: namespacesOf(deps.config().stage, world.scopes),
          },
          shrinks,
          errors,
          loads,
        )
      : { workloads: undefined, drains: [] };

    events.push(
      ...computeEvents(all, reports, launched, now),
      ...driftEvents(workloads?.repaired ?? [], world.models, now),
    );
    await services.events.record(events);

    const pendingReplicas = world.admissions.reduce(
      (n, a) => n + a.pending.reduce((k, p) => k + p.replicas, 0),
      0,
    );
    return {
      startedAt: now,
      durationMs: Date.now() - t0,
      computes: reports,
      scopes: (admitted?.scopes ?? []).map((s) => ({
        ...s,
        pendingReplicas: Object.values(s.pending).reduce((n, x) => n + (x ?? 0), 0),
      })),
      atLimit: admitted?.atLimit ?? [],
      admission: {
        admitted: admitted?.admitted ?? 0,
        released: admitted?.released ?? 0,
        victims: admitted?.victims ?? 0,
        pendingReplicas,
        commits: admitted?.commits ?? 0,
        ...(admitted?.moves ? { moves: admitted.moves } : {}),
      },
      workflows: launched,
      awsCalls,
      ...(workloads ? { workloads } : {}),
      ...(drains.length ? { drains } : {}),
      errors,
    };
  }
}

/** llmcap's nodes: every compute's group labels its nodes with the compute (domain/compute.ts labels). */
const COMPUTE_LABEL = Object.keys(labels('x'))[0]!;
