// Types only: the API reaches this file (wake's managedSelector), and the cluster client's module would bring the
// EKS SDK and the request signer into its bundle and cold start.
import type { ClusterClient, ListedObject } from '../aws/kubernetes';
import type { ModelLoad } from '../domain/autoscaling';
import type { Compute } from '../domain/compute';
import {
  DELETION_COST_ANNOTATION,
  DRAIN_FIELD_MANAGER,
  type DrainDeployment,
  GOING_COST,
  parseSurge,
  podsToSteer,
  SURGE_ANNOTATION,
} from '../domain/drain';
import type { Model } from '../domain/model';
import { keyFromLabel } from '../domain/names';
import type { ModelAdmission } from '../domain/quota';
import {
  appliedAsWanted,
  type DriftRepaired,
  desiredWorkloads,
  driftedBy,
  type EnginesConfig,
  FIELD_MANAGER,
  type K8sObject,
  LABEL_COMPUTE,
  LABEL_MODEL,
  LABEL_PROFILE,
  LABEL_STAGE,
  MANAGED_BY,
  type NamespaceOf,
  type PodLike,
  type PodView,
  placementsOf,
  podView,
  type WorkloadStatus,
  type WorkloadsReport,
  workloadStatus,
} from '../domain/workloads';
import { mapLimit } from '../shared/map-limit';

/**
 * The workloads step of a pass (docs/workloads.md): apply what admission holds as model servers, remove what
 * llmcap no longer wants, and read the pods back into each model's status. It compares with what the cluster
 * reports first, so a steady pass lists and writes nothing else: at 10,000 models, a pass costs four lists per
 * namespace.
 */

/** What llmcap owns in one stage; another stage's objects on the same cluster are never touched. */
export function managedSelector(stage: string): string {
  return `${MANAGED_BY}=${FIELD_MANAGER},${LABEL_STAGE}=${stage}`;
}

const KINDS = [
  { apiVersion: 'apps/v1', kind: 'Deployment' },
  { apiVersion: 'v1', kind: 'Service' },
  { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' },
] as const;

const MAX_CONCURRENCY = 8;

const keyOf = (o: { kind?: string; metadata?: { namespace?: string; name?: string } }) =>
  `${o.kind}/${o.metadata?.namespace}/${o.metadata?.name}`;

export async function reconcileWorkloads(input: {
  models: readonly Pick<Model, 'name' | 'owner' | 'spec'>[];
  admissions: readonly ModelAdmission[];
  computes: readonly Pick<Compute, 'name' | 'spec'>[];
  now: string;
  stage: string;
  engines: EnginesConfig;
  /** Each owner's namespace (the scopes' stored ones, domain/workloads.ts namespacesOf); derived when absent. */
  namespaceOf?: NamespaceOf;
  client: ClusterClient;
  /** Writes each model's pods where the models API reads them (store/workloads.ts); returns the writes. */
  record: (seen: Map<string, WorkloadStatus>, now: string) => Promise<number>;
  /** The load of the autoscaled models, read from their pods (service/autoscaling.ts), stored with them. */
  observeLoad?: (pods: readonly PodView[], client: ClusterClient) => Promise<Map<string, ModelLoad>>;
  /**
   * While computes shrink (docs/workloads.md#scale-down): `draining` are the computes being drained, whose
   * Deployments keep their surge; `going` names the nodes that go, from the pods listed before anything is
   * applied, so a Deployment whose replicas drop loses its pods there (pod-deletion-cost).
   */
  shrinking?: {
    draining: ReadonlySet<string>;
    going: (pods: readonly PodView[]) => Promise<ReadonlySet<string>>;
  };
}): Promise<{
  report: WorkloadsReport;
  pods: PodView[];
  deployments: DrainDeployment[];
  client: ClusterClient;
}> {
  const { stage } = input;
  const want = desiredWorkloads(
    stage,
    placementsOf(input.models, input.admissions, input.computes),
    input.engines,
    input.namespaceOf,
  );
  const k = input.client;
  const before = k.calls;
  const selector = managedSelector(stage);
  const applied: string[] = [];
  const removed: string[] = [];
  const repaired: DriftRepaired[] = [];

  const liveNs = new Set(
    (await k.list('v1', 'Namespace', undefined, { labelSelector: selector })).map((n) => n.metadata.name),
  );
  for (const ns of want.namespaces) {
    if (liveNs.has(ns.metadata.name)) continue;
    await k.apply(ns);
    applied.push(`Namespace/${ns.metadata.name}`);
  }
  const namespaces = [...new Set([...liveNs, ...want.namespaces.map((n) => n.metadata.name)])].sort();
  const wanted = new Map<string, K8sObject[]>();
  for (const o of want.objects) {
    const ns = o.metadata.namespace!;
    wanted.set(ns, [...(wanted.get(ns) ?? []), o]);
  }

  const pods: PodView[] = [];
  const live = new Map<string, Map<string, ListedObject>>();
  const listPods = async (ns: string) => {
    const listed = (await k.list('v1', 'Pod', ns, { labelSelector: selector })) as PodLike[];
    const notReadyRunning = listed.some(
      (p) =>
        p.status?.phase === 'Running' &&
        p.status.conditions?.find((c) => c.type === 'Ready')?.status !== 'True',
    );
    // The probe's own words are in its Unhealthy event, not on the pod: read them only when a pod needs them.
    const probes = new Map<string, string>();
    if (notReadyRunning) {
      const events = await k.list('v1', 'Event', ns, { fieldSelector: 'reason=Unhealthy' });
      events.sort((a, b) => String(eventTime(a)).localeCompare(String(eventTime(b))));
      for (const e of events) {
        const name = (e.involvedObject as { name?: string } | undefined)?.name;
        if (name) probes.set(name, String(e.message ?? ''));
      }
    }
    for (const p of listed) pods.push(podView(p, probes.get(p.metadata?.name ?? '')));
  };
  const shrinking = input.shrinking;
  await mapLimit(namespaces, MAX_CONCURRENCY, async (ns) => {
    const here = new Map<string, ListedObject>();
    for (const kind of KINDS)
      for (const o of await k.list(kind.apiVersion, kind.kind, ns, { labelSelector: selector }))
        here.set(keyOf({ ...o, kind: kind.kind }), { ...o, apiVersion: kind.apiVersion, kind: kind.kind });
    live.set(ns, here);
    // During a scale-down the pods are read before the apply: which pods a dropping Deployment loses depends on them.
    if (shrinking) await listPods(ns);
  });
  const going = shrinking ? await shrinking.going(pods) : new Set<string>();
  const deployments: DrainDeployment[] = [];

  await mapLimit(namespaces, MAX_CONCURRENCY, async (ns) => {
    const here = live.get(ns)!;
    const kept = new Set<string>();
    const mine = (wanted.get(ns) ?? []).map((o) => {
      if (o.kind !== 'Deployment') return o;
      const l = here.get(keyOf(o));
      const labels = o.metadata.labels ?? {};
      const compute = keyFromLabel(labels[LABEL_COMPUTE] ?? '');
      const admitted = (o.spec as { replicas: number }).replicas;
      const surge = shrinking?.draining.has(compute) ? parseSurge(l?.metadata.annotations) : undefined;
      if (shrinking?.draining.has(compute))
        deployments.push({
          namespace: ns,
          name: o.metadata.name,
          model: keyFromLabel(labels[LABEL_MODEL] ?? ''),
          profile: labels[LABEL_PROFILE] ?? '',
          compute,
          admitted,
          ...(surge ? { surge } : {}),
        });
      // A drain's surge stands until the drain ends it; the apply agrees with it rather than resetting it.
      if (surge) kept.add(keyOf(o));
      return surge ? { ...o, spec: { ...(o.spec as object), replicas: admitted + surge.surge } } : o;
    });
    for (const o of mine) {
      const l = here.get(keyOf(o));
      if (o.kind === 'Deployment' && !kept.has(keyOf(o)) && l?.metadata.annotations?.[SURGE_ANNOTATION]) {
        // A surge left behind by a drain that no longer runs (the compute grew again): end it with the apply.
        await k.patch(o.apiVersion, o.kind, ns, o.metadata.name, {
          metadata: { annotations: { [SURGE_ANNOTATION]: null } },
        });
      }
      if (l && appliedAsWanted(o, l)) continue;
      if (o.kind === 'Deployment' && l && going.size > 0) {
        const liveReplicas = (l.spec as { replicas?: number } | undefined)?.replicas ?? 0;
        if (liveReplicas > (o.spec as { replicas: number }).replicas) {
          const labels = o.metadata.labels ?? {};
          const own = pods.filter(
            (p) =>
              p.namespace === ns &&
              p.model === keyFromLabel(labels[LABEL_MODEL] ?? '') &&
              p.profile === labels[LABEL_PROFILE] &&
              p.compute === keyFromLabel(labels[LABEL_COMPUTE] ?? ''),
          );
          for (const p of podsToSteer(own, going))
            await k.patch('v1', 'Pod', ns, p.name, {
              metadata: { annotations: { [DELETION_COST_ANNOTATION]: GOING_COST } },
            });
        }
      }
      const by = l && driftedBy(o, l, [FIELD_MANAGER, DRAIN_FIELD_MANAGER]);
      await k.apply(o);
      applied.push(keyOf(o));
      if (by) {
        const model = o.metadata.labels?.[LABEL_MODEL];
        repaired.push({ object: keyOf(o), by, ...(model ? { model: keyFromLabel(model) } : {}) });
      }
    }
    const keep = new Set(mine.map(keyOf));
    for (const [key, o] of here) {
      if (keep.has(key)) continue;
      await k.remove(o);
      removed.push(key);
    }
    if (!shrinking) await listPods(ns);
  });

  const byModel = new Map<string, PodView[]>();
  for (const p of pods) if (p.model) byModel.set(p.model, [...(byModel.get(p.model) ?? []), p]);
  const statuses = new Map<string, WorkloadStatus>();
  for (const [m, list] of byModel) statuses.set(m, workloadStatus(list));
  // An autoscaled model at zero keeps its item: what it asks for (0 until a wake) must outlive its pods.
  for (const [m, load] of (await input.observeLoad?.(pods, k)) ?? [])
    statuses.set(m, { ...(statuses.get(m) ?? workloadStatus([])), autoscaling: load });
  const storeWrites = await input.record(statuses, input.now);
  const notRunning = [...statuses].flatMap(([model, s]) =>
    s.podReasons.slice(0, 1).map((r) => ({ model, ...r })),
  );
  return {
    report: {
      applied,
      removed,
      repaired,
      calls: k.calls - before,
      running: [...statuses.values()].reduce((n, s) => n + s.running, 0),
      notRunning,
      unscheduled: pods.filter((p) => !p.ready && p.reason === 'Unschedulable').length,
      storeWrites,
    },
    pods,
    deployments,
    client: k,
  };
}

function eventTime(e: ListedObject): unknown {
  return e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp;
}
