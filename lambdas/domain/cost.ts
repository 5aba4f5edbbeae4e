import { type Allocatable, allocatable } from './compute';
import type { ReplicaUnit } from './headroom';
import type { PlannedNode } from './placement/plan';
import { type ReplicaRequest, replicaRequest } from './placement/request';

/**
 * Cost per scope (docs/design.md §3.6): what the node groups cost, shared out to the scopes whose replicas run
 * on them. A node's price is split among the replicas placed on it in proportion to their dominant resource
 * share (the largest fraction of the node's GPUs, CPU or memory one replica asks for, as in DRF); what no
 * replica uses is the compute's idle cost. The parts always add up to the node groups' cost. Pure.
 */

/** The key under which the replicas of shared models (no owner) are charged. */
export const SHARED = 'shared';

/** Samples (one per reconcile pass) expire after this; a period can reach back this far. */
export const COST_RETENTION_DAYS = 35;
/** The longest period one GET /v1/costs adds up: a month's bill, and a bounded read of samples. */
export const MAX_COST_PERIOD_DAYS = 31;

export interface CostReplica {
  /** The scope charged: the model's owner, or SHARED. */
  scope: string;
  count: number;
  request: ReplicaRequest;
}

export interface CostCompute {
  compute: string;
  owner?: string;
  /** The price of one node. */
  perHour: number;
  allocatable: Allocatable;
  /** The nodes billing now: the node group's desired size as last observed. */
  billedNodes: number;
  /** The nodes placement planned, with the replicas on each. */
  nodes: { replicas: CostReplica[] }[];
}

/** One compute's cost per hour and who it is charged to. */
export interface ComputeCost {
  compute: string;
  owner?: string;
  nodes: number;
  perHour: number;
  idle: number;
  /** $/h per scope charged (SHARED for shared models). */
  scopes: Record<string, number>;
}

/** The largest fraction of a node one replica asks for; a dimension the node lacks does not count. */
export function dominantShare(r: ReplicaRequest, a: Allocatable): number {
  const f = (x: number, of: number) => (of > 0 ? x / of : 0);
  return Math.max(f(r.gpus, a.gpus), f(r.millicores, a.millicores), f(r.memoryMiB, a.memoryMiB));
}

/**
 * Splits each compute's cost (billed nodes × price). A planned node costs one node's price while the group has
 * at least as many nodes as planned (the nodes beyond are idle); while it has fewer (it is growing), the nodes
 * that bill are shared by all the planned ones. On a node, replicas pay their dominant shares of its price; if
 * those add up to more than the whole node (one replica heavy on GPUs, another on memory), they are scaled to it.
 */
export function splitCost(computes: readonly CostCompute[]): ComputeCost[] {
  return computes.map((c) => {
    const perHour = c.billedNodes * c.perHour;
    const planned = c.nodes.length;
    const nodePrice = planned === 0 ? 0 : (Math.min(c.billedNodes, planned) / planned) * c.perHour;
    const scopes: Record<string, number> = {};
    let charged = 0;
    for (const node of c.nodes) {
      const shares = node.replicas.map((r) => dominantShare(r.request, c.allocatable) * r.count);
      const sum = shares.reduce((s, x) => s + x, 0);
      const scale = sum > 1 ? 1 / sum : 1;
      node.replicas.forEach((r, i) => {
        const part = nodePrice * shares[i]! * scale;
        scopes[r.scope] = (scopes[r.scope] ?? 0) + part;
        charged += part;
      });
    }
    return {
      compute: c.compute,
      ...(c.owner ? { owner: c.owner } : {}),
      nodes: c.billedNodes,
      perHour,
      idle: Math.max(0, perHour - charged),
      scopes,
    };
  });
}

/** What the reconciler stores each pass: the cost per hour at that moment. */
export interface CostSample {
  at: string;
  currency: string;
  computes: ComputeCost[];
}

/** A sample's rates hold until the next one; the last holds until `to` (or now, if sooner). */
export interface CostTotals {
  scopes: Record<string, number>;
  computes: Record<string, { cost: number; idle: number }>;
  total: number;
}

const empty = (): CostTotals => ({ scopes: {}, computes: {}, total: 0 });

function add(t: CostTotals, s: CostSample, hours: number): void {
  for (const c of s.computes) {
    const k = computeKey(c);
    const e = t.computes[k] ?? { cost: 0, idle: 0 };
    e.cost += c.perHour * hours;
    e.idle += c.idle * hours;
    t.computes[k] = e;
    t.total += c.perHour * hours;
    for (const [scope, x] of Object.entries(c.scopes)) t.scopes[scope] = (t.scopes[scope] ?? 0) + x * hours;
  }
}

/** Two tenants' computes may share a name: a compute is told apart by its owner too. */
export function computeKey(c: { compute: string; owner?: string }): string {
  return c.owner ? `${c.owner}/${c.compute}` : c.compute;
}

/**
 * Adds up the samples over [from, to) in `buckets` equal slices (the chart) and in total. `samples` are sorted
 * by time and may start with the last one before `from`, whose rates hold from `from`.
 */
export function costOverPeriod(
  samples: readonly CostSample[],
  from: Date,
  to: Date,
  buckets: number,
): { total: CostTotals; series: (CostTotals & { from: string; to: string })[] } {
  const t0 = from.getTime();
  const t1 = to.getTime();
  const width = (t1 - t0) / buckets;
  const series = Array.from({ length: buckets }, (_, i) => ({
    ...empty(),
    from: new Date(t0 + i * width).toISOString(),
    to: new Date(t0 + (i + 1) * width).toISOString(),
  }));
  const total = empty();
  samples.forEach((s, i) => {
    const start = Math.max(t0, Date.parse(s.at));
    const end = Math.min(t1, i + 1 < samples.length ? Date.parse(samples[i + 1]!.at) : t1);
    if (end <= start) return;
    add(total, s, (end - start) / 3_600_000);
    for (let b = Math.max(0, Math.floor((start - t0) / width)); b < buckets; b++) {
      const bs = t0 + b * width;
      const be = bs + width;
      if (bs >= end) break;
      const ov = Math.min(be, end) - Math.max(bs, start);
      if (ov > 0) add(series[b]!, s, ov / 3_600_000);
    }
  });
  return { total, series };
}

/** The inputs of splitCost from a pass: the plan's nodes, the computes as observed, and whose replicas are whose. */
export function costInputs(
  plan: { computes: readonly { compute: string; allocatable: Allocatable; nodes: readonly PlannedNode[] }[] },
  computes: readonly {
    name: string;
    owner?: string;
    spec: { cost: { perHour: number }; node: Parameters<typeof allocatable>[0] };
    status: { desiredNodes: number };
  }[],
  units: readonly Pick<ReplicaUnit, 'id' | 'model' | 'profiles'>[],
  ownerOf: (model: string) => string | undefined,
): CostCompute[] {
  const planned = new Map(plan.computes.map((p) => [p.compute, p]));
  const unit = new Map(units.map((u) => [u.id, u]));
  return computes.map((c) => {
    const p = planned.get(c.name);
    return {
      compute: c.name,
      ...(c.owner ? { owner: c.owner } : {}),
      perHour: c.spec.cost.perHour,
      allocatable: p?.allocatable ?? allocatable(c.spec.node),
      billedNodes: c.status.desiredNodes,
      nodes: (p?.nodes ?? []).map((n) => ({
        replicas: n.replicas.map((r) => {
          const u = unit.get(r.unitId);
          return {
            scope: (u && ownerOf(u.model)) || SHARED,
            count: r.count,
            request: u?.profiles[0]
              ? replicaRequest(u.profiles[0])
              : { gpus: 0, millicores: 0, memoryMiB: 0 },
          };
        }),
      })),
    };
  });
}
