import type { Allocatable, Compute } from '../compute';
import type { ReplicaUnit, UnitPlacement } from '../headroom';
import { mapArray } from './arrays';
import { type ExactGroup, type ExactKind, type ExactNode, exactPlacement, type MipSolver } from './exact';
import { PlacementHeadroom, type UnitRecord } from './headroom';
import { improveJoint, type JointClass, planJoint } from './joint';
import { type Items, makeItems, type Packing, pack, type Strategy } from './pack';
import type { ComputeInfo, ComputeLike } from './request';

/**
 * Reconcile's batch plan. Units are admitted to computes in the order given, by the same incremental rule
 * admission uses (so the two never disagree on who fits); then the computes of unpinned replicas are chosen
 * again jointly with their nodes, at least cost (joint.ts, and exact.ts when a solver is given and the plan is
 * small), and each compute's replicas are packed again, offline, for the nodes it needs. Admission's own
 * packing is the fallback, so a repack never loses a replica, and the plan never costs more than it.
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
  /**
   * 'best' (default): kinds chosen jointly with the packing (joint.ts) where that is cheaper than admission's
   * choice, then each compute packed again. 'ffd': admission's choice and plain first-fit decreasing, kept for
   * comparison in the benchmark.
   */
  strategy?: Strategy;
  /** An exact solver for small plans (exact.ts); without it the heuristics' plan stands. */
  exact?: ExactOptions;
  /**
   * Where each unit's replicas run now, by unit id: the plan improves on it (joint.ts improveJoint) instead of
   * planning afresh, so only what saves moves (consolidation's target). Without a usable start for every
   * replica, the plan is made afresh.
   */
  start?: ReadonlyMap<string, readonly UnitPlacement[]>;
}

export interface ExactOptions {
  solver: MipSolver;
  /** Largest plan, in replicas, given to the solver; beyond it the heuristics' plan stands. */
  maxReplicas?: number;
  /** The solver's time limit per plan. */
  timeLimitS?: number;
}

const EXACT_MAX_REPLICAS = 80;
/** Up to this many replicas both admission's choice and the joint one are packed and the cheaper kept. */
const REPACK_BOTH_MAX = 2_000;
const EXACT_TIME_LIMIT_S = 2;

// Dollar sums such as 0.1 + 0.2 print with float noise; a millionth of a dollar is below any price's precision.
const dollars = (x: number) => Math.round(x * 1e6) / 1e6;

/** Per replica (records expanded in order): its compute, and its node on that compute numbered from 0 densely. */
interface Assignment {
  compute: Int32Array;
  bin: Int32Array;
}

export function planPlacement(
  computes: readonly ComputeLike[],
  units: readonly ReplicaUnit[],
  options: PlanOptions = {},
): PlacementPlan {
  // This runs once a plan, so its loops over units and replicas are in helpers (admit, packAll's): a loop here
  // would have it compiled mid-loop (on-stack replacement), with what follows, not yet run, compiled blind and
  // given back to the interpreter at the same place in each of a fresh process's first plans.
  const strategy = options.strategy ?? 'best';
  const h = PlacementHeadroom.create(computes);
  const headroom: { unitId: string; message: string }[] = [];
  const records: UnitRecord[] = [];
  const placedUnits: ReplicaUnit[] = [];
  admit(h, units, headroom, records, placedUnits);

  const infos = h.computeInfos();
  const total = records.reduce((n, rec) => n + rec.computes.length, 0);
  const recOf = new Int32Array(total);
  // Admission's slots renumbered densely per compute (a released unit can leave an empty slot between used
  // ones): the fallback packing, so a repack never loses a replica admission placed.
  const admitted: Assignment = { compute: new Int32Array(total), bin: new Int32Array(total) };
  {
    const dense = mapArray(infos, (info) => new Int32Array(info.maxNodes).fill(-1));
    const next = new Int32Array(infos.length);
    let k = 0;
    records.forEach((rec, ri) => {
      for (let j = 0; j < rec.computes.length; j++, k++) {
        const ci = rec.computes[j]!;
        const d = dense[ci]!;
        const slot = rec.slots[j]!;
        if (d[slot] === -1) d[slot] = next[ci]!++;
        recOf[k] = ri;
        admitted.compute[k] = ci;
        admitted.bin[k] = d[slot]!;
      }
    });
  }
  let chosen: Assignment | undefined;
  let best: ReturnType<typeof packAll> | undefined;

  if (strategy === 'best' && total > 0) {
    // One eligible list per candidates object, so joint.ts can tell identical replicas apart cheaply.
    const lists = new Map<object, number[]>();
    const classes: JointClass[] = mapArray(records, (rec, ri) => {
      const cand = rec.candidates ?? h.candidatesOf(rec.profile, placedUnits[ri]!.reach);
      let eligible = lists.get(cand);
      if (!eligible) {
        eligible = cand.ok ? mapArray(cand.computes, (c) => c.index) : [];
        lists.set(cand, eligible);
      }
      return { request: rec.request, eligible, count: rec.computes.length };
    });
    const warm = options.start && warmStart(infos, records, options.start, classes);
    const joint = warm ? undefined : planJoint(infos, classes);
    if (warm) {
      chosen = { compute: warm.compute, bin: warm.node };
      best = packAll(infos, records, recOf, chosen, strategy);
    } else if (total > REPACK_BOTH_MAX) {
      // Large plans pack only one candidate, to stay fast: the joint plan unless it costs more than
      // admission's own packing (repacking only lowers either).
      const admittedCost = assignmentCost(infos, admitted);
      if (joint && joint.costPerHour <= admittedCost + 1e-9) {
        chosen = { compute: joint.compute, bin: joint.node };
        best = packAll(infos, records, recOf, chosen, strategy);
      }
    } else {
      best = packAll(infos, records, recOf, admitted, strategy);
      const consider = (a: Assignment | undefined) => {
        if (!a) return;
        const p = packAll(infos, records, recOf, a, strategy);
        if (p.costPerHour < best!.costPerHour - 1e-9) {
          best = p;
          chosen = a;
        }
      };
      if (joint) consider({ compute: joint.compute, bin: joint.node });
      const exact = options.exact;
      if (exact && total <= (exact.maxReplicas ?? EXACT_MAX_REPLICAS))
        consider(solveExactly(infos, classes, best.final, exact));
    }
  }
  best ??= packAll(infos, records, recOf, admitted, strategy);

  // Each unit's placements: admission's, unless the plan chose other computes.
  const placements: PlacedUnit[] = new Array(records.length);
  if (!chosen)
    records.forEach((rec, ri) => {
      placements[ri] = { unitId: rec.unitId, profile: rec.profile.name, placements: h.placementsOf(rec) };
    });
  else {
    // The units' placements follow the plan's choice of computes, grouped per compute in compute order: a
    // unit's computes insertion-sorted in a scratch array (a unit has a handful of replicas), counted in runs.
    const sorted = new Int32Array(records.reduce((n, rec) => Math.max(n, rec.computes.length), 0));
    let k = 0;
    records.forEach((rec, ri) => {
      const n = rec.computes.length;
      for (let j = 0; j < n; j++, k++) {
        const ci = chosen!.compute[k]!;
        let x = j;
        for (; x > 0 && sorted[x - 1]! > ci; x--) sorted[x] = sorted[x - 1]!;
        sorted[x] = ci;
      }
      const name = rec.profile.name;
      // A one-element literal first, as headroom's groupPlacements: most units sit on one compute.
      const out: UnitPlacement[] = n
        ? [{ compute: infos[sorted[0]!]!.name, profile: name, replicas: 1 }]
        : [];
      for (let j = 1; j < n; j++) {
        if (sorted[j] === sorted[j - 1]) out[out.length - 1]!.replicas++;
        else out.push({ compute: infos[sorted[j]!]!.name, profile: name, replicas: 1 });
      }
      placements[ri] = { unitId: rec.unitId, profile: name, placements: out };
    });
  }

  const plans = best.plans;
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

/**
 * Admission's pass over the units in order: the records of those placed, and why the others were not. The
 * caller's lists are filled, so nothing follows the loop: code after a loop compiled mid-loop, before it ever
 * ran, gave way to the interpreter there in every plan.
 */
function admit(
  h: PlacementHeadroom,
  units: readonly ReplicaUnit[],
  headroom: { unitId: string; message: string }[],
  records: UnitRecord[],
  placedUnits: ReplicaUnit[],
): void {
  for (const unit of units) {
    const r = h.placeRecord(unit);
    if ('ok' in r) headroom.push({ unitId: unit.id, message: r.message });
    else {
      records.push(r);
      placedUnits.push(unit);
    }
  }
}

/** The joint plan improved from where the units run now; undefined when a replica's start is unusable. */
function warmStart(
  infos: readonly ComputeInfo[],
  records: readonly UnitRecord[],
  start: ReadonlyMap<string, readonly UnitPlacement[]>,
  classes: readonly JointClass[],
) {
  const index = new Map(infos.map((i) => [i.name, i.index]));
  const total = records.reduce((n, rec) => n + rec.computes.length, 0);
  const at = new Int32Array(total).fill(-1);
  let k = 0;
  for (const rec of records) {
    const list = (start.get(rec.unitId) ?? []).flatMap((p) =>
      Array.from({ length: p.replicas }, () => index.get(p.compute) ?? -1),
    );
    for (let j = 0; j < rec.computes.length; j++, k++) at[k] = list[j] ?? -1;
  }
  return improveJoint(infos, classes, at);
}

/** Cost per hour of the nodes an assignment uses (its bins as numbered, before any repack). */
function assignmentCost(infos: readonly ComputeInfo[], a: Assignment): number {
  const bins = new Int32Array(infos.length);
  for (let k = 0; k < a.compute.length; k++) {
    const ci = a.compute[k]!;
    if (a.bin[k]! + 1 > bins[ci]!) bins[ci] = a.bin[k]! + 1;
  }
  return dollars(infos.reduce((s, info) => s + bins[info.index]! * info.perHour, 0));
}

/** Each compute's replicas under an assignment, packed again for its nodes; the assignment is the fallback. */
function packAll(
  infos: readonly ComputeInfo[],
  records: readonly UnitRecord[],
  recOf: Int32Array,
  a: Assignment,
  strategy: Strategy,
): { plans: ComputePlan[]; costPerHour: number; final: Assignment } {
  const total = recOf.length;
  const perCompute = new Int32Array(infos.length);
  const bins = new Int32Array(infos.length);
  countPerCompute(a, perCompute, bins);
  const itemsOf = mapArray(infos, (info) => makeItems(perCompute[info.index]!));
  const fallbackOf = mapArray(infos, (info) => new Int32Array(perCompute[info.index]!));
  const requestedOf = mapArray(infos, () => ({ gpus: 0, millicores: 0, memoryMiB: 0 }));
  fillItems(records, recOf, a, itemsOf, fallbackOf, requestedOf);
  const final: Assignment = { compute: a.compute, bin: new Int32Array(total) };
  let cost = 0;
  const plans: ComputePlan[] = mapArray(infos, (info) => {
    const ci = info.index;
    const items = itemsOf[ci]!;
    const fallback: Packing = { bins: bins[ci]!, assign: fallbackOf[ci]! };
    const { packing, lowerBound } = pack(items, info.alloc, info.maxNodes, strategy, fallback);
    for (let x = 0; x < items.tag.length; x++) final.bin[items.tag[x]!] = packing.assign[x]!;
    cost += packing.bins * info.perHour;
    return {
      compute: info.name,
      maxNodes: info.maxNodes,
      allocatable: info.alloc,
      replicas: perCompute[ci]!,
      requested: requestedOf[ci]!,
      neededNodes: packing.bins,
      lowerBoundNodes: lowerBound,
      costPerHour: dollars(packing.bins * info.perHour),
      lowerBoundCost: dollars(lowerBound * info.perHour),
      nodes: nodesOf(packing, items, records, recOf),
    };
  });
  return { plans, costPerHour: dollars(cost), final };
}

/** Replicas and nodes used per compute under an assignment (its bins as numbered), into the arrays given. */
function countPerCompute(a: Assignment, perCompute: Int32Array, bins: Int32Array): void {
  for (let k = 0; k < a.compute.length; k++) {
    const ci = a.compute[k]!;
    perCompute[ci]!++;
    if (a.bin[k]! + 1 > bins[ci]!) bins[ci] = a.bin[k]! + 1;
  }
}

/** Each compute's items (replicas in order), their bins under the assignment, and what they request in all. */
function fillItems(
  records: readonly UnitRecord[],
  recOf: Int32Array,
  a: Assignment,
  itemsOf: readonly Items[],
  fallbackOf: readonly Int32Array[],
  requestedOf: readonly Allocatable[],
): void {
  const cursor = new Int32Array(itemsOf.length);
  for (let k = 0; k < recOf.length; k++) {
    const ci = a.compute[k]!;
    const { gpus, millicores, memoryMiB } = records[recOf[k]!]!.request;
    const items = itemsOf[ci]!;
    const x = cursor[ci]!++;
    items.g[x] = gpus;
    items.m[x] = millicores;
    items.mi[x] = memoryMiB;
    items.tag[x] = k;
    fallbackOf[ci]![x] = a.bin[k]!;
    const requested = requestedOf[ci]!;
    requested.gpus += gpus;
    requested.millicores += millicores;
    requested.memoryMiB += memoryMiB;
  }
}

/**
 * The exact model (exact.ts) for a small plan: identical replicas grouped, the heuristics' plan as the
 * incumbent, and the solver's nodes turned back into an assignment (replicas of a group taken in order).
 */
function solveExactly(
  infos: readonly ComputeInfo[],
  classes: readonly JointClass[],
  incumbent: Assignment,
  options: ExactOptions,
): Assignment | undefined {
  const groups: ExactGroup[] = [];
  const byKey = new Map<string, number>();
  const members: number[][] = [];
  let k = 0;
  for (const c of classes) {
    const key = `${c.request.gpus}/${c.request.millicores}/${c.request.memoryMiB}/${c.eligible.join(',')}`;
    let t = byKey.get(key);
    if (t === undefined) {
      t = groups.length;
      byKey.set(key, t);
      groups.push({ request: c.request, count: 0, eligible: c.eligible });
      members.push([]);
    }
    groups[t]!.count += c.count;
    for (let r = 0; r < c.count; r++) members[t]!.push(k++);
  }
  const groupOf = new Int32Array(k);
  members.forEach((m, t) => {
    for (const i of m) groupOf[i] = t;
  });
  // The incumbent as nodes: per compute and node number, replicas per group.
  const index = new Map<string, ExactNode>();
  const known: ExactNode[] = [];
  for (let i = 0; i < k; i++) {
    const id = `${incumbent.compute[i]}/${incumbent.bin[i]}`;
    let nd = index.get(id);
    if (!nd) {
      nd = { kind: incumbent.compute[i]!, counts: groups.map(() => 0) };
      index.set(id, nd);
      known.push(nd);
    }
    nd.counts[groupOf[i]!]!++;
  }
  const kinds: ExactKind[] = infos.map((i) => ({ alloc: i.alloc, perHour: i.perHour, maxNodes: i.maxNodes }));
  const r = exactPlacement(kinds, groups, options.solver, {
    timeLimitS: options.timeLimitS ?? EXACT_TIME_LIMIT_S,
    incumbent: known,
  });
  if (!r) return undefined;
  const out: Assignment = { compute: new Int32Array(k), bin: new Int32Array(k) };
  const next = new Int32Array(infos.length);
  const taken = new Int32Array(groups.length);
  for (const nd of r.nodes) {
    const bin = next[nd.kind]!++;
    nd.counts.forEach((c, t) => {
      for (let x = 0; x < c; x++) {
        const i = members[t]![taken[t]!++]!;
        out.compute[i] = nd.kind;
        out.bin[i] = bin;
      }
    });
  }
  return out;
}

function nodesOf(
  p: Packing,
  items: ReturnType<typeof makeItems>,
  records: readonly UnitRecord[],
  recOf: Int32Array,
): PlannedNode[] {
  // A node's replicas are runs of one unit each. The runs are counted first and each list made that long: a
  // push onto an empty list reserves room for 17, and a 30k plan keeps 12,000 of these lists.
  const runs = new Int32Array(p.bins);
  const lastRec = new Int32Array(p.bins).fill(-1);
  for (let i = 0; i < p.assign.length; i++) {
    const b = p.assign[i]!;
    const ri = recOf[items.tag[i]!]!;
    if (lastRec[b] !== ri) runs[b]!++;
    lastRec[b] = ri;
  }
  const nodes: PlannedNode[] = new Array(p.bins);
  for (let b = 0; b < p.bins; b++)
    nodes[b] = { used: { gpus: 0, millicores: 0, memoryMiB: 0 }, replicas: new Array(runs[b]!) };
  runs.fill(0);
  lastRec.fill(-1);
  for (let i = 0; i < p.assign.length; i++) {
    const b = p.assign[i]!;
    const node = nodes[b]!;
    node.used.gpus += items.g[i]!;
    node.used.millicores += items.m[i]!;
    node.used.memoryMiB += items.mi[i]!;
    const ri = recOf[items.tag[i]!]!;
    if (lastRec[b] === ri) node.replicas[runs[b]! - 1]!.count++;
    else node.replicas[runs[b]!++] = { unitId: records[ri]!.unitId, count: 1 };
    lastRec[b] = ri;
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
