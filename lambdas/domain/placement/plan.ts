import type { Allocatable, Compute } from '../compute';
import type { ReplicaUnit, UnitPlacement } from '../headroom';
import { PlacementHeadroom, type UnitRecord } from './headroom';
import { makeItems, type Packing, pack, type Strategy } from './pack';
import type { ComputeLike } from './request';

/**
 * Reconcile's batch plan. Units are admitted to computes in the order given, by the same incremental rule
 * admission uses (so the two never disagree on who fits); then each compute's replicas are packed again,
 * offline, for the nodes it needs. Admission's own packing is the fallback, so a repack never loses a replica.
 */

export interface PlannedNode {
  used: Allocatable;
  replicas: { unitId: string; count: number }[];
}

export interface ComputePlan {
  compute: string;
  maxNodes: number;
  allocatable: Allocatable;
  replicas: number;
  requested: Allocatable;
  neededNodes: number;
  lowerBoundNodes: number;
  costPerHour: number;
  lowerBoundCost: number;
  nodes: PlannedNode[];
}

export interface PlacedUnit {
  unitId: string;
  profile: string;
  placements: UnitPlacement[];
}

export interface PlanTotals {
  replicas: number;
  neededNodes: number;
  lowerBoundNodes: number;
  costPerHour: number;
  lowerBoundCost: number;
}

export interface PlacementPlan {
  /** Units placed, in input order. */
  placements: PlacedUnit[];
  /** Units that fit no compute within maxNodes, in input order, with the reason in words. */
  headroom: { unitId: string; message: string }[];
  /** One entry per compute, in input order. */
  computes: ComputePlan[];
  totals: PlanTotals;
}

export interface PlanOptions {
  /** 'best' (default) or plain first-fit decreasing, kept for comparison in the benchmark. */
  strategy?: Strategy;
}

// Dollar sums such as 0.1 + 0.2 print with float noise; a millionth of a dollar is below any price's precision.
const dollars = (x: number) => Math.round(x * 1e6) / 1e6;

export function planPlacement(
  computes: readonly ComputeLike[],
  units: readonly ReplicaUnit[],
  options: PlanOptions = {},
): PlacementPlan {
  const strategy = options.strategy ?? 'best';
  const h = PlacementHeadroom.create(computes);
  const placements: PlacedUnit[] = [];
  const headroom: { unitId: string; message: string }[] = [];
  const records: UnitRecord[] = [];
  for (const unit of units) {
    const r = h.place(unit);
    if (r.ok) {
      placements.push({ unitId: unit.id, profile: r.profile.name, placements: r.placements });
      records.push(h.record(unit.id)!);
    } else {
      headroom.push({ unitId: unit.id, message: r.message });
    }
  }

  const infos = h.computeInfos();
  const perCompute = new Int32Array(infos.length);
  for (const rec of records) for (const ci of rec.computes) perCompute[ci]!++;

  // One pass over the records fills every compute's items; admission's slots are renumbered densely
  // (a released unit can leave an empty slot between used ones) to serve as the fallback packing.
  const itemsOf = infos.map((info) => makeItems(perCompute[info.index]!));
  const fallbackOf = infos.map((info) => new Int32Array(perCompute[info.index]!));
  const denseOf = infos.map((info) => new Int32Array(info.maxNodes).fill(-1));
  const denseBins = new Int32Array(infos.length);
  const cursor = new Int32Array(infos.length);
  const requestedOf = infos.map(() => ({ gpus: 0, millicores: 0, memoryMiB: 0 }));
  records.forEach((rec, ri) => {
    const { gpus, millicores, memoryMiB } = rec.request;
    for (let j = 0; j < rec.computes.length; j++) {
      const ci = rec.computes[j]!;
      const items = itemsOf[ci]!;
      const k = cursor[ci]!++;
      items.g[k] = gpus;
      items.m[k] = millicores;
      items.mi[k] = memoryMiB;
      items.tag[k] = ri;
      const dense = denseOf[ci]!;
      const slot = rec.slots[j]!;
      if (dense[slot] === -1) dense[slot] = denseBins[ci]!++;
      fallbackOf[ci]![k] = dense[slot]!;
      const requested = requestedOf[ci]!;
      requested.gpus += gpus;
      requested.millicores += millicores;
      requested.memoryMiB += memoryMiB;
    }
  });

  const plans: ComputePlan[] = infos.map((info) => {
    const ci = info.index;
    const n = perCompute[ci]!;
    const items = itemsOf[ci]!;
    const requested = requestedOf[ci]!;
    const fallback: Packing = { bins: denseBins[ci]!, assign: fallbackOf[ci]! };
    const { packing, lowerBound } = pack(items, info.alloc, info.maxNodes, strategy, fallback);
    return {
      compute: info.name,
      maxNodes: info.maxNodes,
      allocatable: info.alloc,
      replicas: n,
      requested,
      neededNodes: packing.bins,
      lowerBoundNodes: lowerBound,
      costPerHour: dollars(packing.bins * info.perHour),
      lowerBoundCost: dollars(lowerBound * info.perHour),
      nodes: nodesOf(packing, items, records),
    };
  });

  const totals = plans.reduce<PlanTotals>(
    (t, p) => ({
      replicas: t.replicas + p.replicas,
      neededNodes: t.neededNodes + p.neededNodes,
      lowerBoundNodes: t.lowerBoundNodes + p.lowerBoundNodes,
      costPerHour: dollars(t.costPerHour + p.costPerHour),
      lowerBoundCost: dollars(t.lowerBoundCost + p.lowerBoundCost),
    }),
    { replicas: 0, neededNodes: 0, lowerBoundNodes: 0, costPerHour: 0, lowerBoundCost: 0 },
  );
  return { placements, headroom, computes: plans, totals };
}

function nodesOf(p: Packing, items: ReturnType<typeof makeItems>, records: UnitRecord[]): PlannedNode[] {
  const nodes: PlannedNode[] = Array.from({ length: p.bins }, () => ({
    used: { gpus: 0, millicores: 0, memoryMiB: 0 },
    replicas: [],
  }));
  for (let i = 0; i < p.assign.length; i++) {
    const node = nodes[p.assign[i]!]!;
    node.used.gpus += items.g[i]!;
    node.used.millicores += items.m[i]!;
    node.used.memoryMiB += items.mi[i]!;
    const unitId = records[items.tag[i]!]!.unitId;
    const last = node.replicas[node.replicas.length - 1];
    if (last && last.unitId === unitId) last.count++;
    else node.replicas.push({ unitId, count: 1 });
  }
  return nodes;
}

/** The sizing reconcile stores on a compute (shown as status.neededNodes and status.lowerBoundNodes). */
export function sizingOf(p: ComputePlan, computedAt: string): NonNullable<Compute['sizing']> {
  return {
    neededNodes: p.neededNodes,
    lowerBoundNodes: p.lowerBoundNodes,
    costPerHour: p.costPerHour,
    computedAt,
  };
}

/** The cluster part of /v1/capacity: per compute and in total, what the plan needs against the bound. */
export function capacityView(plan: PlacementPlan) {
  return {
    computes: plan.computes.map((c) => ({
      compute: c.compute,
      replicas: c.replicas,
      neededNodes: c.neededNodes,
      lowerBoundNodes: c.lowerBoundNodes,
      maxNodes: c.maxNodes,
      costPerHour: c.costPerHour,
      lowerBoundCost: c.lowerBoundCost,
    })),
    totals: plan.totals,
    headroom: plan.headroom,
  };
}
