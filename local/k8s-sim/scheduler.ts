import type { Cluster } from './cluster';
import { MANAGERS, TAINTS } from './names';
import { parseQuantity } from './quantity';
import { NODES, PODS } from './resources';
import { matchesRequirements, type Requirement } from './selectors';
import type { JsonObject, KObject } from './types';

/**
 * kube-scheduler's default filters, in its order (NodeUnschedulable, TaintToleration, NodeAffinity,
 * NodeResourcesFit), least-allocated scoring, binding, and the FailedScheduling event worded as the scheduler
 * words it, preemption verdict included. A node's verdict is the first filter that rejects it.
 */

interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
}
interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export function tolerates(tolerations: Toleration[], taint: Taint): boolean {
  return tolerations.some((t) => {
    if (t.effect && t.effect !== taint.effect) return false;
    if (t.operator === 'Exists') return !t.key || t.key === taint.key;
    return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
  });
}

/** What a pod asks of a node: the sum of its containers' requests, or its largest init container's. */
export function podRequests(pod: KObject): Map<string, number> {
  const spec = (pod.spec as JsonObject) ?? {};
  const sum = new Map<string, number>();
  const add = (m: Map<string, number>, r: unknown) => {
    for (const [k, v] of Object.entries(((r as JsonObject)?.requests as JsonObject) ?? {}))
      m.set(k, (m.get(k) ?? 0) + (parseQuantity(v) ?? 0));
  };
  for (const c of (spec.containers as JsonObject[]) ?? []) add(sum, c.resources);
  for (const c of (spec.initContainers as JsonObject[]) ?? []) {
    const one = new Map<string, number>();
    add(one, c.resources);
    for (const [k, v] of one) if (v > (sum.get(k) ?? 0)) sum.set(k, v);
  }
  return sum;
}

function nodeAffinityRequirements(spec: JsonObject): Requirement[][] {
  const terms =
    ((
      ((spec.affinity as JsonObject)?.nodeAffinity as JsonObject)
        ?.requiredDuringSchedulingIgnoredDuringExecution as JsonObject
    )?.nodeSelectorTerms as JsonObject[]) ?? [];
  return terms.map((t) =>
    ((t.matchExpressions as JsonObject[]) ?? []).map((e) => ({
      key: e.key as string,
      op: e.operator as Requirement['op'],
      values: (e.values as string[]) ?? [],
    })),
  );
}

interface Verdict {
  reasons: string[];
  /** Whether evicting lower-priority pods could make room (NodeResourcesFit), or not (the others). */
  resolvable: boolean;
}

export class Scheduler {
  /** Pods to try in the next run. */
  private readonly pending = new Set<string>();
  /** Every pod waiting for a node, tried again when nodes change or room is freed. */
  private readonly unscheduled = new Set<string>();
  /** The node selector of each waiting pod, to tell which of them a node event concerns. */
  private readonly selectors = new Map<string, Record<string, string> | undefined>();
  /** The last FailedScheduling message per pod uid, so that a repeat is not a new attempt. */
  private readonly lastMessage = new Map<string, string>();
  /** What the pods bound to each node request (the scheduler cache), kept up to date as pods change. */
  private readonly usage = new Map<string, Map<string, number>>();
  private readonly podUsage = new Map<string, { node: string; req: Map<string, number> }>();

  constructor(private readonly c: Cluster) {}

  reset(): void {
    this.pending.clear();
    this.unscheduled.clear();
    this.selectors.clear();
    this.lastMessage.clear();
    this.usage.clear();
    this.podUsage.clear();
  }

  private account(key: string, pod: KObject | undefined): void {
    const prev = this.podUsage.get(key);
    if (prev) {
      const u = this.usage.get(prev.node);
      if (u) for (const [k, v] of prev.req) u.set(k, (u.get(k) ?? 0) - v);
      this.podUsage.delete(key);
    }
    const node = (pod?.spec as JsonObject | undefined)?.nodeName as string | undefined;
    const phase = (pod?.status as JsonObject | undefined)?.phase;
    if (!pod || !node || phase === 'Succeeded' || phase === 'Failed') return;
    const req = podRequests(pod);
    req.set('pods', 1);
    let u = this.usage.get(node);
    if (!u) {
      u = new Map();
      this.usage.set(node, u);
    }
    for (const [k, v] of req) u.set(k, (u.get(k) ?? 0) + v);
    this.podUsage.set(key, { node, req });
  }

  private isPending(pod: KObject): boolean {
    const spec = (pod.spec as JsonObject) ?? {};
    return (
      !spec.nodeName &&
      !pod.metadata?.deletionTimestamp &&
      (spec.schedulerName ?? 'default-scheduler') === 'default-scheduler'
    );
  }

  podChanged(type: string, pod: KObject, old: KObject | undefined): void {
    const key = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    this.account(key, type === 'DELETED' ? undefined : pod);
    if (type !== 'DELETED' && this.isPending(pod)) {
      this.unscheduled.add(key);
      this.selectors.set(key, (pod.spec as JsonObject)?.nodeSelector as Record<string, string> | undefined);
      if (type === 'ADDED') this.pending.add(key);
      return;
    }
    this.pending.delete(key);
    this.unscheduled.delete(key);
    this.selectors.delete(key);
    if (type === 'DELETED') this.lastMessage.delete(pod.metadata?.uid as string);
    // Room freed on a node: pods waiting for it get another try.
    if (
      (type === 'DELETED' && (old?.spec as JsonObject)?.nodeName) ||
      (pod.metadata?.deletionTimestamp && !old?.metadata?.deletionTimestamp)
    )
      this.retryAll();
  }

  /**
   * A node added or changed: the waiting pods it could take get another try, as kube-scheduler's queueing hints
   * have it (a pod whose node selector the node does not match keeps waiting with its last verdict). Retrying
   * every waiting pod on every node event made a cluster of thousands of pods and nodes quadratic.
   */
  nodesChanged(node: KObject | undefined, deleted: boolean): void {
    if (deleted) return;
    const labels = node?.metadata?.labels ?? {};
    for (const k of this.unscheduled) {
      const want = this.selectors.get(k);
      if (!want || Object.entries(want).every(([l, v]) => labels[l] === v)) this.pending.add(k);
    }
  }

  private retryAll(): void {
    for (const k of this.unscheduled) this.pending.add(k);
  }

  run(): boolean {
    if (this.pending.size === 0) return false;
    const keys = [...this.pending];
    this.pending.clear();
    const pods = keys
      .map((k) => {
        const i = k.indexOf('/');
        return this.c.store.get(PODS, k.slice(0, i), k.slice(i + 1));
      })
      .filter((p): p is KObject => p !== undefined && this.isPending(p))
      .sort((a, b) =>
        (a.metadata?.creationTimestamp ?? '') < (b.metadata?.creationTimestamp ?? '') ? -1 : 1,
      );
    if (pods.length === 0) return false;
    const nodes = this.c.store.list(NODES);
    for (const pod of pods) this.schedule(pod, nodes, this.usage);
    return true;
  }

  private filter(pod: KObject, node: KObject, used: Map<string, number>): Verdict | undefined {
    const spec = (pod.spec as JsonObject) ?? {};
    const tolerations = (spec.tolerations as Toleration[]) ?? [];
    const nspec = (node.spec as JsonObject) ?? {};
    if (nspec.unschedulable && !tolerates(tolerations, { key: TAINTS.unschedulable, effect: 'NoSchedule' }))
      return { reasons: ['node(s) were unschedulable'], resolvable: false };
    for (const t of (nspec.taints as Taint[]) ?? []) {
      if (t.effect === 'PreferNoSchedule') continue;
      if (!tolerates(tolerations, t))
        return { reasons: [`node(s) had untolerated taint {${t.key}: ${t.value ?? ''}}`], resolvable: false };
    }
    const labels = node.metadata?.labels ?? {};
    const selector = Object.entries((spec.nodeSelector as Record<string, string>) ?? {}).map(([key, v]) => ({
      key,
      op: 'In' as const,
      values: [v],
    }));
    const terms = nodeAffinityRequirements(spec);
    if (
      !matchesRequirements(selector, labels) ||
      (terms.length > 0 && !terms.some((t) => matchesRequirements(t, labels)))
    )
      return { reasons: ["node(s) didn't match Pod's node affinity/selector"], resolvable: false };
    const alloc = ((node.status as JsonObject)?.allocatable as JsonObject) ?? {};
    const reasons: string[] = [];
    if ((used.get('pods') ?? 0) + 1 > (parseQuantity(alloc.pods) ?? 110)) reasons.push('Too many pods');
    for (const [res, want] of podRequests(pod)) {
      if (want === 0) continue;
      const have = parseQuantity(alloc[res]) ?? 0;
      if ((used.get(res) ?? 0) + want > have + 1e-9) reasons.push(`Insufficient ${res}`);
    }
    if (reasons.length > 0) return { reasons, resolvable: true };
    return undefined;
  }

  /** LeastAllocated: the node with the most cpu and memory left after placing the pod. */
  private score(pod: KObject, node: KObject, used: Map<string, number>): number {
    const alloc = ((node.status as JsonObject)?.allocatable as JsonObject) ?? {};
    const req = podRequests(pod);
    let s = 0;
    for (const res of ['cpu', 'memory']) {
      const have = parseQuantity(alloc[res]) ?? 0;
      if (have <= 0) continue;
      s += (have - (used.get(res) ?? 0) - (req.get(res) ?? 0)) / have;
    }
    return s;
  }

  private schedule(pod: KObject, nodes: KObject[], used: Map<string, Map<string, number>>): void {
    const verdicts = new Map<string, Verdict>();
    let best: KObject | undefined;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (const n of nodes) {
      const name = n.metadata?.name as string;
      const u = used.get(name) ?? new Map();
      const v = this.filter(pod, n, u);
      if (v) {
        verdicts.set(name, v);
        continue;
      }
      const s = this.score(pod, n, u);
      if (s > bestScore) {
        best = n;
        bestScore = s;
      }
    }
    if (best) {
      // Binding writes the pod, which accounts for it on its node before the next pod is placed.
      this.bind(pod, best.metadata?.name as string);
      return;
    }
    this.fail(pod, nodes.length, verdicts);
  }

  /** The binding subresource: the pod gets its node, and the kubelet there takes it from here. */
  bind(pod: KObject, nodeName: string): void {
    const now = this.c.ts();
    const status = { ...((pod.status as JsonObject) ?? {}) };
    status.conditions = [
      ...((status.conditions as JsonObject[]) ?? []).filter((x) => x.type !== 'PodScheduled'),
      { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: now },
    ];
    const bound = this.c.write(
      PODS,
      { ...pod, spec: { ...(pod.spec as JsonObject), nodeName } },
      MANAGERS.scheduler,
    );
    const withStatus = this.c.write(PODS, { ...bound, status }, MANAGERS.scheduler, 'status');
    this.lastMessage.delete(pod.metadata?.uid as string);
    this.c.event(
      withStatus,
      'Normal',
      'Scheduled',
      `Successfully assigned ${pod.metadata?.namespace}/${pod.metadata?.name} to ${nodeName}`,
      'default-scheduler',
    );
    this.c.kubelet.podBound(withStatus);
  }

  private fail(pod: KObject, total: number, verdicts: Map<string, Verdict>): void {
    const message = failureMessage(pod, total, verdicts);
    const uid = pod.metadata?.uid as string;
    if (this.lastMessage.get(uid) === message) return;
    this.lastMessage.set(uid, message);
    const now = this.c.ts();
    const status = { ...((pod.status as JsonObject) ?? {}) };
    status.conditions = [
      ...((status.conditions as JsonObject[]) ?? []).filter((x) => x.type !== 'PodScheduled'),
      {
        type: 'PodScheduled',
        status: 'False',
        lastProbeTime: null,
        lastTransitionTime: now,
        reason: 'Unschedulable',
        message,
      },
    ];
    const written = this.c.write(PODS, { ...pod, status }, MANAGERS.scheduler, 'status');
    this.c.event(written, 'Warning', 'FailedScheduling', message, 'default-scheduler');
  }
}

function histogram(items: string[]): string {
  const counts = new Map<string, number>();
  for (const r of items) counts.set(r, (counts.get(r) ?? 0) + 1);
  return [...counts]
    .map(([r, n]) => `${n} ${r}`)
    .sort()
    .join(', ');
}

/** `0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint {...}. preemption: ...` */
export function failureMessage(pod: KObject, total: number, verdicts: Map<string, Verdict>): string {
  if (total === 0) return 'no nodes available to schedule pods';
  const all = [...verdicts.values()];
  const head = `0/${total} nodes are available: ${histogram(all.flatMap((v) => v.reasons))}.`;
  const spec = (pod.spec as JsonObject) ?? {};
  if (spec.preemptionPolicy === 'Never')
    return `${head} preemption: not eligible due to preemptionPolicy=Never.`;
  const preemption = all.map((v) =>
    v.resolvable
      ? 'No preemption victims found for incoming pod'
      : 'Preemption is not helpful for scheduling',
  );
  return `${head} preemption: 0/${total} nodes are available: ${histogram(preemption)}.`;
}
