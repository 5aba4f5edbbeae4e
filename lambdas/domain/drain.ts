/**
 * Scale-down without killing work (issue 20 §3): EKS picks the instances itself when a node group's desired size
 * drops, running replicas included. llmcap picks them instead, from the pods: nodes it has already cordoned
 * first (a drain in progress, so a restart mid-drain resumes it), then empty nodes, then those with the fewest
 * of llmcap's replicas. Pure, so the order is a unit test.
 */

export interface DrainNode {
  name: string;
  /** From the node's providerID `aws:///<az>/<instance-id>`. */
  instanceId?: string;
  unschedulable: boolean;
  /** llmcap's pods bound to the node. */
  pods: number;
}

/**
 * The field manager of the drain's merge patches (cordons, surges, deletion costs): a node whose
 * spec.unschedulable it owns was cordoned by llmcap's scale-down, not by an operator (domain/supply.ts).
 */
export const DRAIN_FIELD_MANAGER = 'llmcap-drain';

/**
 * The nodes a scale-down removes: cordoned ones first, an operator's cordon included (the node serves nothing;
 * docs/operations.md says so), then the emptiest.
 */
export function chooseNodesToRemove(nodes: readonly DrainNode[], count: number): DrainNode[] {
  if (count <= 0) return [];
  return [...nodes]
    .filter((n) => n.instanceId)
    .sort(
      (a, b) =>
        Number(b.unschedulable) - Number(a.unschedulable) || a.pods - b.pods || a.name.localeCompare(b.name),
    )
    .slice(0, count);
}

export function instanceIdOf(providerId: string | undefined): string | undefined {
  return /^aws:\/\/\/[^/]*\/(i-[0-9a-f]+)$/.exec(providerId ?? '')?.[1];
}

/** One scale-down with drain, as a pass reports it. */
export interface DrainReport {
  compute: string;
  /** Nodes chosen for removal, with what happened to each this pass. */
  nodes: {
    node: string;
    instanceId?: string;
    pods: number;
    /** `surging`: replacements of its Ready replicas are starting on nodes that stay. */
    step: 'cordoned' | 'surging' | 'evicting' | 'waiting' | 'terminated';
    /** Why the drain of this node waits (a replacement that cannot be placed, or is still starting). */
    waiting?: string;
  }[];
  refusedEvictions: number;
}

/**
 * Surge before evict: a Ready replica on a node that goes is not evicted (that would leave its model one
 * replica short until the replacement has loaded its weights, and a one-replica model with nothing). Instead
 * its Deployment gets as many extra replicas as it has Ready pods there, recorded on the Deployment in
 * SURGE_ANNOTATION so a restarted reconciler resumes; the scheduler puts them on nodes that stay, since the
 * going ones are cordoned. Once they are Ready, the old pods get the lowest pod-deletion-cost and the replicas
 * go back to the admitted count, so the ReplicaSet removes exactly the old pods.
 */
export const SURGE_ANNOTATION = 'llmcap.dev/drain-surge';
/** Kubernetes' ReplicaSet controller removes the pods of lowest cost first among equally Ready ones. */
export const DELETION_COST_ANNOTATION = 'controller.kubernetes.io/pod-deletion-cost';
/** The lowest int32: below any cost someone else may have set. */
export const GOING_COST = '-2147483648';

/** What a surge in flight recorded: the extra replicas, and the Ready count to hold when it ends. */
export interface Surge {
  surge: number;
  ready: number;
}

export function parseSurge(annotations: Record<string, string> | undefined): Surge | undefined {
  const raw = annotations?.[SURGE_ANNOTATION];
  if (!raw) return undefined;
  try {
    const v = JSON.parse(raw) as Partial<Surge>;
    if (Number.isInteger(v.surge) && v.surge! > 0 && Number.isInteger(v.ready) && v.ready! >= 0)
      return { surge: v.surge!, ready: v.ready! };
  } catch {
    // Not ours, or mangled by hand: no surge.
  }
  return undefined;
}

export function surgeValue(s: Surge): string {
  return JSON.stringify({ surge: s.surge, ready: s.ready });
}

/** A Deployment of a compute being drained, as the workloads step found it. */
export interface DrainDeployment {
  namespace: string;
  name: string;
  model: string;
  profile: string;
  compute: string;
  /** Replicas admission holds on this compute (the Deployment's replicas without a surge). */
  admitted: number;
  surge?: Surge;
}

/** The pod fields a drain decides on (domain/workloads.ts PodView). */
export interface DrainPod {
  name: string;
  namespace: string;
  model: string;
  profile: string;
  compute: string;
  node?: string;
  ready: boolean;
  reason?: string;
  message?: string;
}

export interface DrainPlan {
  /** Chosen nodes with none of llmcap's pods left: their instances go. */
  terminate: string[];
  /** Pods on going nodes that serve nothing (not Ready): evicted, the ReplicaSet re-creates them elsewhere. */
  evict: DrainPod[];
  /** Deployments to surge: replicas = admitted + surge.surge, and the annotation. */
  surge: { deployment: DrainDeployment; surge: Surge }[];
  /** Surges whose new pods are Ready: these old pods get GOING_COST, replicas = admitted, annotation cleared. */
  release: { deployment: DrainDeployment; pods: DrainPod[] }[];
  /** Surges still waiting, and why (the pending pod's own words when it cannot be placed). */
  waiting: { deployment: DrainDeployment; why: string }[];
}

const deploymentKey = (x: { namespace: string; model: string; profile: string; compute: string }) =>
  `${x.namespace}\u0000${x.model}\u0000${x.profile}\u0000${x.compute}`;

/**
 * One pass of a drain over the chosen nodes. A Deployment with Ready pods on them is surged (or, with a surge
 * in flight, released once the pods on nodes that stay are Ready again at least as many times as before the
 * surge, capped at the admitted count); pods that are not Ready are evicted, since they serve nothing; a chosen
 * node with no pod of llmcap's left is terminated.
 */
export function planDrain(input: {
  going: readonly string[];
  pods: readonly DrainPod[];
  deployments: readonly DrainDeployment[];
}): DrainPlan {
  const going = new Set(input.going);
  const plan: DrainPlan = { terminate: [], evict: [], surge: [], release: [], waiting: [] };
  const byDeployment = new Map<string, DrainPod[]>();
  for (const p of input.pods) {
    const k = deploymentKey(p);
    byDeployment.set(k, [...(byDeployment.get(k) ?? []), p]);
  }
  const onGoing = (p: DrainPod) => p.node !== undefined && going.has(p.node);
  const held = new Set<DrainPod>();
  for (const d of input.deployments) {
    const pods = byDeployment.get(deploymentKey(d)) ?? [];
    const moving = pods.filter((p) => onGoing(p) && p.ready);
    const staying = pods.filter((p) => !onGoing(p));
    const stayingReady = staying.filter((p) => p.ready).length;
    if (!d.surge) {
      if (moving.length === 0) continue;
      // Hold what serves now, at most what is admitted: a crash-looping replica elsewhere is not waited for.
      const ready = Math.min(d.admitted, moving.length + stayingReady);
      if (stayingReady >= ready) plan.release.push({ deployment: d, pods: moving });
      else plan.surge.push({ deployment: d, surge: { surge: moving.length, ready } });
      for (const p of moving) held.add(p);
      continue;
    }
    if (moving.length > d.surge.surge) {
      // Another node of this Deployment's joined the drain: surge for its pods too.
      plan.surge.push({ deployment: d, surge: { surge: moving.length, ready: d.surge.ready } });
      for (const p of moving) held.add(p);
      continue;
    }
    if (stayingReady >= Math.min(d.surge.ready, d.admitted) || moving.length === 0) {
      plan.release.push({ deployment: d, pods: moving });
      for (const p of moving) held.add(p);
      continue;
    }
    for (const p of moving) held.add(p);
    const stuck = staying.find((p) => !p.ready && p.reason === 'Unschedulable');
    const starting = staying.find((p) => !p.ready);
    plan.waiting.push({
      deployment: d,
      why: stuck
        ? `no room for the replacement of ${d.name} on the nodes that stay: ${stuck.message ?? 'unschedulable'}`
        : starting
          ? `waiting for the replacement ${starting.name} to be Ready (${starting.reason ?? 'starting'}: ${starting.message ?? ''})`
          : `waiting for the replacement of ${d.name} to be created`,
    });
  }
  for (const p of input.pods) if (onGoing(p) && !held.has(p) && !p.ready) plan.evict.push(p);
  // A Ready pod no Deployment of ours accounts for (its Deployment is being removed) goes by eviction too.
  for (const p of input.pods) if (onGoing(p) && p.ready && !held.has(p)) plan.evict.push(p);
  const busy = new Set(input.pods.filter(onGoing).map((p) => p.node));
  plan.terminate = input.going.filter((n) => !busy.has(n));
  return plan;
}

/**
 * The pods of a Deployment whose replicas drop to mark with GOING_COST first, so the ReplicaSet removes the
 * ones on nodes that go rather than one on a node that stays (which the drain would then have to move).
 */
export function podsToSteer(pods: readonly DrainPod[], going: ReadonlySet<string>): DrainPod[] {
  return pods.filter((p) => p.node !== undefined && going.has(p.node));
}
