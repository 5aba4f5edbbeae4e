import type { ClusterClient } from '../aws/kubernetes';
import type { Caller } from '../domain/access';
import {
  autoscale,
  demandChanges,
  type ModelLoad,
  observeStartTimes,
  type PodLoad,
  podLoadFromText,
  type StartedObject,
  wake,
  wakeEstimate,
} from '../domain/autoscaling';
import { conflict } from '../domain/errors';
import type { Model } from '../domain/model';
import { keyFromLabel } from '../domain/names';
import {
  type EnginesConfig,
  engineFor,
  LABEL_COMPUTE,
  type NamespaceOf,
  type PodLike,
  type PodView,
  podView,
} from '../domain/workloads';
import { mapLimit } from '../shared/map-limit';
import type { Dependencies } from '.';
import type { ModelService } from './models';
import { managedSelector } from './workloads';

/**
 * The load step of a pass (docs/design.md, Autoscaling): each autoscaled model's Ready pods' /metrics read
 * through the API server's pod proxy with the reconciler's identity, and the replicas the load asks for
 * computed from them and what the last passes stored (domain/autoscaling.ts). The answer goes into each
 * model's WORKLOAD item, which admission reads as the model's demand on the next pass.
 */

const MAX_CONCURRENCY = 8;

export async function observeLoad(input: {
  models: readonly Pick<Model, 'name' | 'spec'>[];
  pods: readonly PodView[];
  /** What the last pass stored per model. */
  previous: ReadonlyMap<string, ModelLoad>;
  engines: EnginesConfig;
  client: ClusterClient;
  now: string;
}): Promise<Map<string, ModelLoad>> {
  const out = new Map<string, ModelLoad>();
  const byModel = new Map<string, PodView[]>();
  // Failed and completed pods are discarded, as the HPA discards them.
  for (const p of input.pods)
    if (p.phase !== 'Failed' && p.phase !== 'Succeeded')
      byModel.set(p.model, [...(byModel.get(p.model) ?? []), p]);
  await mapLimit(
    input.models.filter((m) => m.spec.autoscaling),
    MAX_CONCURRENCY,
    async (m) => {
      const policy = m.spec.autoscaling!;
      const port = engineFor(input.engines, m).port;
      const pods = byModel.get(m.name) ?? [];
      const loads: PodLoad[] = await Promise.all(
        pods.map(async (p): Promise<PodLoad> => {
          if (!p.ready) return { ready: false };
          try {
            const text = await input.client.podProxyGet(p.namespace, p.name, port, '/metrics');
            return { ready: true, ...podLoadFromText(m.spec.engine, policy.metric, text) };
          } catch {
            // A Ready pod whose metrics cannot be read counts as the HPA counts a pod with missing metrics.
            return { ready: true };
          }
        }),
      );
      const prev = input.previous.get(m.name);
      const r = autoscale({
        policy,
        scaling: m.spec.scaling,
        pods: loads,
        current: pods.length,
        ...(prev ? { prev } : {}),
        now: input.now,
      });
      out.set(m.name, { metric: policy.metric, ...r.state });
    },
  );
  return out;
}

/**
 * The load step of a pass, before admission (service/reconcile.ts) so that the admitter decides on this pass's
 * load rather than the last one's: the autoscaled models' pods listed in their namespaces, their load read,
 * and the DEMAND items written where the replicas asked for changed. Answers every autoscaled model's load,
 * which the pass stores with the pods in the WORKLOAD items.
 */
export async function observeDemand(input: {
  models: readonly Pick<Model, 'name' | 'owner' | 'spec'>[];
  /** Each owner's namespace, read only when some model autoscales. */
  namespaceOf: () => Promise<NamespaceOf>;
  stage: string;
  engines: EnginesConfig;
  /** The cluster, reached only when some model autoscales. */
  client: () => Promise<ClusterClient>;
  store: Pick<Dependencies['store'], 'demand' | 'workloads' | 'startTimes'>;
  /** llmcap's Nodes as the pass listed them (absent without cluster access). */
  nodes?: readonly StartedObject[];
  now: string;
}): Promise<Map<string, ModelLoad>> {
  const models = input.models.filter((m) => m.spec.autoscaling);
  const stored = await input.store.demand.listDemands();
  if (models.length === 0) {
    // Nothing autoscales: no pod to read, no wake to estimate; only demands left by models that did go.
    for (const d of stored) await input.store.demand.removeDemand(d.model);
    return new Map();
  }
  const [previous, namespaceOf, client] = await Promise.all([
    input.store.workloads.listWorkloads(),
    input.namespaceOf(),
    input.client(),
  ]);
  const pods: PodView[] = [];
  const raw: StartedObject[] = [];
  await mapLimit([...new Set(models.map((m) => namespaceOf(m.owner)))], MAX_CONCURRENCY, async (ns) => {
    const listed = await client.list('v1', 'Pod', ns, { labelSelector: managedSelector(input.stage) });
    for (const p of listed) pods.push(podView(p as unknown as PodLike));
    raw.push(...(listed as StartedObject[]));
  });
  await recordStartTimes(input.store.startTimes, input.nodes ?? [], raw);
  const loads = await observeLoad({
    models,
    pods,
    previous: new Map(previous.flatMap((w) => (w.autoscaling ? [[w.model, w.autoscaling] as const] : []))),
    engines: input.engines,
    client,
    now: input.now,
  });
  const { put, remove } = demandChanges(loads, stored);
  // A wake written since this step read the WORKLOAD item stands: its DEMAND item is not overwritten.
  for (const d of put) await input.store.demand.recordDemand({ ...d, at: input.now });
  for (const m of remove) await input.store.demand.removeDemand(m);
  return loads;
}

/** The start times each compute's nodes and replicas show, written where a newer one turned Ready. */
async function recordStartTimes(
  store: Dependencies['store']['startTimes'],
  nodes: readonly StartedObject[],
  pods: readonly StartedObject[],
): Promise<void> {
  const byCompute = new Map<string, { nodes: StartedObject[]; pods: StartedObject[] }>();
  const add = (o: StartedObject, kind: 'nodes' | 'pods') => {
    const label = o.metadata?.labels?.[LABEL_COMPUTE];
    if (!label) return;
    const c = keyFromLabel(label);
    const e = byCompute.get(c) ?? { nodes: [], pods: [] };
    e[kind].push(o);
    byCompute.set(c, e);
  };
  for (const n of nodes) add(n, 'nodes');
  for (const p of pods) add(p, 'pods');
  if (byCompute.size === 0) return;
  const kept = new Map((await store.listStartTimes()).map((t) => [t.compute, t]));
  for (const [c, seen] of byCompute) {
    const next = observeStartTimes(c, kept.get(c), seen.nodes, seen.pods);
    if (next) await store.recordStartTimes(next);
  }
}

/** Wakes an autoscaled model (POST /v1/models/{name}/wake): it asks for max(min, 1) replicas from now on. */
export function wakeService(deps: Dependencies, svc: { models: ModelService }) {
  return {
    async wake(name: string, caller: Caller, opts: { owner?: string; dryRun: boolean }) {
      // Read as the model is: one the caller may not see answers 404, as a missing one does.
      const m = await svc.models.get(name, caller, opts.owner);
      caller.requireEditor(m.owner, `waking model ${name}`);
      const policy = m.spec.autoscaling;
      if (!policy)
        throw conflict(
          `model ${name} has no spec.autoscaling, so it runs its scaling.target and never sleeps; scale it with PUT /v1/models/${name}/scaling`,
          'NotAutoscaled',
        );
      const now = deps.clock().toISOString();
      const next = (prev: ModelLoad | undefined): ModelLoad => ({
        metric: policy.metric,
        ...wake(prev, m.spec.scaling, now),
      });
      const stored = await deps.store.workloads.getWorkload(m.name);
      const load = opts.dryRun
        ? next(stored?.autoscaling)
        : await deps.store.workloads.recordWake(m.name, next, now);
      // What admission reads (store/demand.ts); were this write lost, the next pass writes it from the item above.
      if (!opts.dryRun)
        await deps.store.demand.recordDemand(
          {
            model: m.name,
            desired: load.desired ?? 0,
            ...(load.wokenAt ? { wokenAt: load.wokenAt } : {}),
            at: now,
          },
          { wake: true },
        );
      // A model sent to zero has no replica to count on, even while its last pods are still going.
      const running = stored?.autoscaling?.desired === 0 ? 0 : (stored?.running ?? 0);
      // The times last seen on a compute its profiles name, in their order; the defaults where none was seen.
      const seen = new Map((await deps.store.startTimes.listStartTimes()).map((t) => [t.compute, t]));
      const observed = m.spec.profiles.flatMap((p) => (p.compute && seen.get(p.compute)) || [])[0];
      return {
        model: name,
        desiredReplicas: load.desired ?? 0,
        running,
        ...wakeEstimate(running, observed),
      };
    },
  };
}
