import { mapArray } from './arrays';
import type { ComputeInfo, ReplicaRequest } from './request';

/**
 * The kind choice made jointly with the packing (issue 34): which compute each replica goes to and on which
 * of its nodes, at least cost. Admission ranks computes per profile alone (cost per replica on an empty node),
 * so memory-heavy replicas open r7i nodes while open m7i nodes have the memory spare, and "any GPU" replicas
 * open 8-GPU nodes they leave half empty. Here every replica may use the spare room of any open node of a
 * compute it is eligible for before a node opens, and a node opens where its cost per share actually used is
 * lowest; local moves then empty, re-kind and merge nodes. Deterministic: no clock, no randomness, budgets
 * counted in steps.
 */

/** Identical replicas of one unit: their request and the computes they may use (indices, best first). */
export interface JointClass {
  request: ReplicaRequest;
  eligible: readonly number[];
  count: number;
}

/** Per replica (classes expanded in order), its compute and node; nodes are numbered per compute from 0. */
export interface JointPlan {
  compute: Int32Array;
  node: Int32Array;
  /** Nodes used per compute. */
  nodes: Int32Array;
  costPerHour: number;
}

interface Node {
  kind: number;
  g: number;
  m: number;
  mi: number;
  items: number[];
}

/**
 * What a node of allocatable `a` with `fg`, `fm`, `fmi` free has left after one replica of `g`, `m`, `mi`, summed
 * over its resources as shares of the node: the best fit is the node left with least.
 */
function slackAfter(
  a: { gpus: number; millicores: number; memoryMiB: number },
  fg: number,
  fm: number,
  fmi: number,
  g: number,
  m: number,
  mi: number,
): number {
  return (a.gpus > 0 ? (fg - g) / a.gpus : 0) + (fm - m) / a.millicores + (fmi - mi) / a.memoryMiB;
}

/** Steps of local improvement allowed per replica (and at least a floor), so large plans stay fast. */
const STEPS_PER_REPLICA = 40;
const MIN_STEPS = 4_000;
const IMPROVE_MAX = 1_000;
/** Rounds of local moves, and the nodes each round tries to empty or merge (those that waste the most). */
const MAX_ROUNDS = 8;
const VICTIMS = 64;

/** Plans this small (in replicas) are also tried from perturbed orders, and the cheapest plan kept. */
const SMALL = 400;
const RESTARTS = 24;
/**
 * Ruin-and-recreate rounds per replica on small plans. The restarts and local moves leave up to 11% on the
 * table where the saving needs replicas of several nodes to trade places across kinds (a node of the dear
 * kind half full of what the cheap kind could hold); emptying a few nodes at once and refilling them finds it.
 */
const LNS_STEPS_PER_REPLICA = 60;
/**
 * How often a round that costs the same but spreads the load more is kept anyway: a walk on the plateau of
 * equal cost, without which the search sticks where every node is nearly full in one dimension (seeds 62 and
 * 98 of the optimum bench, one kind: 5 nodes where 4 do).
 */
const WALK = 0.5;

export function planJoint(
  kinds: readonly ComputeInfo[],
  classes: readonly JointClass[],
): JointPlan | undefined {
  // No loop over replicas here: this runs once a plan, so a loop would have it compiled on the stack mid-loop
  // (on-stack replacement), with the code after the loop, not yet run, compiled blind. That code then gave way
  // to the interpreter at the same place every plan of a fresh process; loops live in the helpers instead.
  const n = classes.reduce((s, c) => s + c.count, 0);
  const cls = replicaClasses(classes, n);
  // Dominant share of a replica on its best-ranked compute orders the replicas, largest first.
  const key = mapArray(classes, (c, ci) =>
    c.eligible.length ? share(kinds, classes, ci, c.eligible[0]!) : 0,
  );
  // Past IMPROVE_MAX replicas the moves gain little (a few dollars in 75,000 on the 30k mix) for most of the time
  // (3,000 replicas: half of the plan's time, the same cost).
  const budget = n <= IMPROVE_MAX ? Math.max(MIN_STEPS, n * STEPS_PER_REPLICA) : 0;
  let best: Node[] | undefined;
  let bestCost = Number.POSITIVE_INFINITY;
  // A fixed seed: the restarts are the same on every run, so the plan is too.
  const random = lcg(0x9e3779b9);
  const runs = n <= SMALL ? RESTARTS : 1;
  // The first run sorts classes, not replicas (a class's replicas are identical and keep their order).
  for (let run = 0; run < runs; run++) {
    // Typed either way, so the greedy reads one kind of array whatever the plan's size.
    let order: Int32Array;
    if (run === 0) order = replicasByClass(classes, byKeyDescending(key), n);
    else {
      const k = new Float64Array(n);
      for (let i = 0; i < n; i++) k[i] = key[cls[i]!]! * (0.75 + 0.5 * random());
      order = Int32Array.from(
        Array.from({ length: n }, (_, i) => i).sort((a, b) => k[b]! - k[a]! || cls[a]! - cls[b]! || a - b),
      );
    }
    const flat = greedy(kinds, classes, cls, order, run % 2 === 1, run % 4 >= 2);
    if (!flat) continue;
    // Large plans that are not improved keep the greedy's flat arrays (no object per node) to the end.
    if (budget === 0 && n > SMALL) return flatResult(kinds, flat, n);
    const nodes = nodesOf(flat, order);
    if (budget > 0) improve(kinds, classes, cls, nodes, budget);
    const cost = nodes.reduce((s, nd) => s + (nd.items.length ? kinds[nd.kind]!.perHour : 0), 0);
    if (cost < bestCost - 1e-9) {
      bestCost = cost;
      best = nodes;
    }
  }
  if (best && n <= SMALL)
    best = ruinAndRecreate(kinds, classes, cls, best, random, n * LNS_STEPS_PER_REPLICA);
  return best && result(kinds, best, n);
}

/**
 * The joint plan improved from a known assignment (each replica's compute, classes expanded in order) rather
 * than made afresh: consolidation's target, so that what already runs moves only where that saves. Each
 * compute's replicas are packed largest first onto its nodes, then only strictly cheaper changes are kept
 * (ruin-and-recreate on small plans, the local moves beyond). Undefined when a replica has no start it may use.
 */
export function improveJoint(
  kinds: readonly ComputeInfo[],
  classes: readonly JointClass[],
  start: Int32Array,
): JointPlan | undefined {
  const n = start.length;
  const cls = new Int32Array(n);
  {
    let i = 0;
    classes.forEach((c, ci) => {
      for (let r = 0; r < c.count; r++) cls[i++] = ci;
    });
  }
  const order = Array.from({ length: n }, (_, i) => i);
  const key = (i: number) => share(kinds, classes, cls[i]!, start[i]!);
  for (let i = 0; i < n; i++)
    if (start[i]! < 0 || !classes[cls[i]!]!.eligible.includes(start[i]!)) return undefined;
  order.sort((a, b) => start[a]! - start[b]! || key(b) - key(a) || a - b);
  const nodes: Node[] = [];
  const byKind: number[][] = mapArray(kinds, () => []);
  for (const i of order) {
    const k = start[i]!;
    const { gpus: g, millicores: m, memoryMiB: mi } = classes[cls[i]!]!.request;
    let chosen = byKind[k]!.find((x) => nodes[x]!.g >= g && nodes[x]!.m >= m && nodes[x]!.mi >= mi) ?? -1;
    if (chosen < 0) {
      const a = kinds[k]!.alloc;
      if (g > a.gpus || m > a.millicores || mi > a.memoryMiB) return undefined;
      chosen = nodes.length;
      nodes.push({ kind: k, g: a.gpus, m: a.millicores, mi: a.memoryMiB, items: [] });
      byKind[k]!.push(chosen);
    }
    const nd = nodes[chosen]!;
    nd.g -= g;
    nd.m -= m;
    nd.mi -= mi;
    nd.items.push(i);
  }
  if (n > SMALL) {
    improve(kinds, classes, cls, nodes, Math.max(MIN_STEPS, Math.min(n, IMPROVE_MAX) * STEPS_PER_REPLICA));
    return result(kinds, nodes, n);
  }
  const improved = ruinAndRecreate(
    kinds,
    classes,
    cls,
    nodes,
    lcg(0x9e3779b9),
    n * LNS_STEPS_PER_REPLICA,
    true,
  );
  return result(kinds, improved, n);
}

/** Each replica's class, classes expanded in order. */
function replicaClasses(classes: readonly JointClass[], n: number): Int32Array {
  const cls = new Int32Array(n);
  let i = 0;
  for (let ci = 0; ci < classes.length; ci++) for (let r = 0; r < classes[ci]!.count; r++) cls[i++] = ci;
  return cls;
}

/**
 * The replicas class by class in the given order of classes, each class's replicas in their own order. A typed
 * array: a plain one of 30,000 is a large object, allocated and filled with holes apart from the young heap.
 */
function replicasByClass(classes: readonly JointClass[], byClass: readonly number[], n: number): Int32Array {
  const start = new Int32Array(classes.length);
  for (let ci = 1; ci < classes.length; ci++) start[ci] = start[ci - 1]! + classes[ci - 1]!.count;
  const order = new Int32Array(n);
  let x = 0;
  for (const ci of byClass) for (let r = 0; r < classes[ci]!.count; r++) order[x++] = start[ci]! + r;
  return order;
}

/**
 * Indices by decreasing key, equal keys in index order: the sort `key[b] - key[a] || a - b`, done over the
 * distinct keys (one per kind of replica: a few hundred among 8,549 classes on the 30k mix) and their buckets
 * filled in index order. In a fresh process the comparator's 100,000 calls a plan ran unoptimised. A NaN key
 * has no place in that order, so a key list with one sorts as before.
 */
function byKeyDescending(key: readonly number[]): number[] {
  const buckets = new Map<number, number[]>();
  for (let i = 0; i < key.length; i++) {
    const k = key[i]!;
    if (Number.isNaN(k)) return mapArray(key, (_, j) => j).sort((a, b) => key[b]! - key[a]! || a - b);
    const b = buckets.get(k);
    if (b) b.push(i);
    else buckets.set(k, [i]);
  }
  const distinct = [...buckets.keys()].sort((a, b) => b - a);
  const out = new Array<number>(key.length);
  let x = 0;
  for (const k of distinct) for (const i of buckets.get(k)!) out[x++] = i;
  return out;
}

/** A small linear congruential generator in [0, 1): deterministic restarts without module state. */
function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 4294967296;
  };
}

function share(kinds: readonly ComputeInfo[], classes: readonly JointClass[], ci: number, k: number): number {
  const { gpus, millicores, memoryMiB } = classes[ci]!.request;
  const a = kinds[k]!.alloc;
  return Math.max(a.gpus > 0 ? gpus / a.gpus : 0, millicores / a.millicores, memoryMiB / a.memoryMiB);
}

/**
 * Replicas in the given order, each into the first open node with room of a compute it may use (computes in
 * its ranking's order); when none has room, a node opens on the compute where the replica's share costs least
 * once the replicas still to come that may go there fill it (`alone`: once its own class fills it).
 */
function greedy(
  kinds: readonly ComputeInfo[],
  classes: readonly JointClass[],
  cls: Int32Array,
  order: Int32Array,
  alone: boolean,
  bestFit: boolean,
): FlatNodes | undefined {
  // Eligible lists: classes of one profile share theirs.
  const listId = new Map<readonly number[], number>();
  const listOf = new Int32Array(classes.length);
  classes.forEach((c, ci) => {
    let id = listId.get(c.eligible);
    if (id === undefined) {
      id = listId.size;
      listId.set(c.eligible, id);
    }
    listOf[ci] = id;
  });
  const listsOfKind: number[][] = mapArray(kinds, () => []);
  for (const [list, id] of listId) for (const k of list) listsOfKind[k]!.push(id);
  // Per list, whether its CPU computes all come before its GPU ones (rankCandidates' order for a CPU-only
  // replica), so a pass that skips GPU nodes stops at the first.
  const cpuFirst = new Uint8Array(listId.size);
  for (const [list, id] of listId) {
    let gpuSeen = false;
    let ordered = true;
    for (const k of list) {
      if (kinds[k]!.alloc.gpus > 0) gpuSeen = true;
      else if (gpuSeen) ordered = false;
    }
    cpuFirst[id] = ordered ? 1 : 0;
  }
  // Computes of the same shape, price and eligible lists (pools of one kind) cost a replica the same: the
  // cost of opening a node is computed once per such family.
  const familyOf = new Int32Array(kinds.length);
  const families = new Map<string, number>();
  kinds.forEach((kd, k) => {
    const a = kd.alloc;
    const key = `${a.gpus}/${a.millicores}/${a.memoryMiB}/${kd.perHour}/${listsOfKind[k]!.join(',')}`;
    let id = families.get(key);
    if (id === undefined) {
      id = families.size;
      families.set(key, id);
    }
    familyOf[k] = id;
  });
  // Demand still to place that a node opened on a compute could take (how full it can get), per dimension:
  // the sum over the lists that name the compute, the same for its whole family. Kept per family and lowered
  // as each replica is placed (once per family its list names), so pricing a node is O(1), not O(lists). The
  // requests are whole units, so the sums are exact in any order.
  const familiesOfList: number[][] = [];
  for (const [list, id] of listId) {
    const fams: number[] = [];
    for (const k of list) if (!fams.includes(familyOf[k]!)) fams.push(familyOf[k]!);
    familiesOfList[id] = fams;
  }
  const leftG = new Float64Array(families.size);
  const leftM = new Float64Array(families.size);
  const leftMi = new Float64Array(families.size);
  const leftOfClass = mapArray(classes, (c) => c.count);
  classes.forEach((c, ci) => {
    for (const f of familiesOfList[listOf[ci]!]!) {
      leftG[f]! += c.request.gpus * c.count;
      leftM[f]! += c.request.millicores * c.count;
      leftMi[f]! += c.request.memoryMiB * c.count;
    }
  });
  // Nodes as flat arrays (a node holds at least one replica, so there are at most n): no object per node.
  const n = order.length;
  const nodeKind = new Int32Array(n);
  const freeG = new Float64Array(n);
  const freeM = new Float64Array(n);
  const freeMi = new Float64Array(n);
  const nodeOf = new Int32Array(cls.length);
  const byKind: number[][] = mapArray(kinds, () => []);
  // Per list, from each position: the first position not known to be at maxNodes (computes only fill, so
  // one found full is passed over for good), and the first past the run of computes of its family there
  // (pools of one kind sit together in a ranking): once a family is priced, the rest of its run costs the
  // same and cannot win, so opening a node looks at one compute per family, not one per pool.
  const notFull: Int32Array[] = [];
  const runEnd: Int32Array[] = [];
  for (const [list, id] of listId) {
    const el = list.length;
    const up = new Int32Array(el + 1);
    const end = new Int32Array(el);
    for (let e = el - 1; e >= 0; e--) {
      up[e] = e;
      end[e] = e + 1 < el && familyOf[list[e + 1]!] === familyOf[list[e]!] ? end[e + 1]! : e + 1;
    }
    up[el] = el;
    notFull[id] = up;
    runEnd[id] = end;
  }
  const familyStamp = new Int32Array(kinds.length).fill(-1);
  const familyCost = new Float64Array(kinds.length);

  // First node of each compute worth scanning for each class: nodes only fill, so one that refused a replica
  // refuses the next identical one too.
  // Shared by classes with the same request and the same eligible list (the same objects: callers pass one of
  // each per profile's candidates, so no key string per class is built), so the scan is paid once per kind of
  // replica, not once per unit.
  // With each pointer array, the positions worth scanning as bits: computes with a node open and not yet
  // skipped for good (at maxNodes, every node refused this kind of replica). A compute's bit is set in every
  // array that names it when its first node opens, so the scan passes over the computes with no node at
  // all (most pools, most of the time) without looking at them.
  const shared = new Map<readonly number[], Map<ReplicaRequest, number>>();
  const fs: Int32Array[] = [];
  const bitsOf: Uint32Array[] = [];
  const watchers: number[][] = mapArray(kinds, () => []);
  const from = new Int32Array(classes.length);
  classes.forEach((c, ci) => {
    let byReq = shared.get(c.eligible);
    if (!byReq) {
      byReq = new Map();
      shared.set(c.eligible, byReq);
    }
    let fi = byReq.get(c.request);
    if (fi === undefined) {
      fi = fs.length;
      byReq.set(c.request, fi);
      fs.push(new Int32Array(c.eligible.length));
      bitsOf.push(new Uint32Array((c.eligible.length + 31) >>> 5));
      for (let e = 0; e < c.eligible.length; e++) watchers[c.eligible[e]!]!.push(fi, e);
    }
    from[ci] = fi;
  });
  const left: Left = { g: leftG, m: leftM, mi: leftMi, ci: -1, placed: 0 };
  // The loop over replicas is a function of its own: compiled mid-loop (on-stack replacement) it is small, and
  // nothing after it in the same function runs first unseen (see planJoint).
  const st: GreedyState = {
    kinds,
    classes,
    cls,
    alone,
    bestFit,
    listOf,
    cpuFirst,
    familyOf,
    familiesOfList,
    leftOfClass,
    left,
    nodeKind,
    freeG,
    freeM,
    freeMi,
    nodeOf,
    byKind,
    notFull,
    runEnd,
    familyStamp,
    familyCost,
    fs,
    bitsOf,
    watchers,
    from,
  };
  const count = placeReplicas(st, order);
  return count < 0 ? undefined : { count, kind: nodeKind, g: freeG, m: freeM, mi: freeMi, nodeOf };
}

/** What greedy() has worked out for its loop over replicas, and the nodes that loop fills. */
interface GreedyState {
  kinds: readonly ComputeInfo[];
  classes: readonly JointClass[];
  cls: Int32Array;
  alone: boolean;
  bestFit: boolean;
  listOf: Int32Array;
  cpuFirst: Uint8Array;
  familyOf: Int32Array;
  familiesOfList: number[][];
  leftOfClass: number[];
  left: Left;
  nodeKind: Int32Array;
  freeG: Float64Array;
  freeM: Float64Array;
  freeMi: Float64Array;
  nodeOf: Int32Array;
  byKind: number[][];
  notFull: Int32Array[];
  runEnd: Int32Array[];
  familyStamp: Int32Array;
  familyCost: Float64Array;
  fs: Int32Array[];
  bitsOf: Uint32Array[];
  watchers: number[][];
  from: Int32Array;
}

/** greedy()'s loop: places the replicas in order into the state's nodes; the nodes opened, or -1 if one fits nowhere. */
function placeReplicas(st: GreedyState, order: Int32Array): number {
  const { kinds, classes, cls, bestFit, listOf, cpuFirst, familyOf, familiesOfList, leftOfClass, left } = st;
  const { nodeKind, freeG, freeM, freeMi, nodeOf, byKind, notFull, runEnd, familyStamp, familyCost } = st;
  const { fs, bitsOf, watchers, from } = st;
  let count = 0;
  let openings = 0;
  let lastClass = -1;
  let lastNode = -1;
  for (const i of order) {
    const ci = cls[i]!;
    const c = classes[ci]!;
    const { gpus: g, millicores: m, memoryMiB: mi } = c.request;
    // rankCandidates keeps GPU nodes for GPU work (a CPU-only replica ranks them last): a CPU-only replica
    // uses no GPU node, open or new, unless no CPU compute has room left (the second pass).
    const cpuOnly = g === 0;
    let chosen = -1;
    // A replica just after an identical one (its class's replicas follow each other) goes where the scan would
    // put it without scanning: every node before that one's refused it, and in best fit that node, only
    // fuller now, is still the tightest. So the scan runs once per unit while its node has room.
    if (ci === lastClass && freeG[lastNode]! >= g && freeM[lastNode]! >= m && freeMi[lastNode]! >= mi)
      chosen = lastNode;
    const f = fs[from[ci]!]!;
    const bits = bitsOf[from[ci]!]!;
    const id = listOf[ci]!;
    const ordered = cpuFirst[id] === 1;
    for (let pass = 0; pass < 2 && chosen < 0; pass++) {
      const gpuNodes = pass === 1 || !cpuOnly;
      if (pass === 1 && !cpuOnly) break;
      let slack = Number.POSITIVE_INFINITY;
      scan: for (let w = 0; w < bits.length; w++) {
        let word = bits[w]!;
        while (word !== 0) {
          if (chosen >= 0 && !bestFit) break scan;
          const low = word & -word;
          word ^= low;
          const e = (w << 5) + 31 - Math.clz32(low);
          const k = c.eligible[e]!;
          if (!gpuNodes && kinds[k]!.alloc.gpus > 0) {
            if (ordered) break scan;
            continue;
          }
          const list = byKind[k]!;
          if (list.length >= kinds[k]!.maxNodes && f[e]! >= list.length) {
            bits[w]! &= ~low;
            continue;
          }
          if (bestFit) {
            // Best fit: the open node left with the least room, normalised by its shape.
            const a = kinds[k]!.alloc;
            for (const x of list) {
              const ng = freeG[x]!;
              const nm = freeM[x]!;
              const nmi = freeMi[x]!;
              if (ng < g || nm < m || nmi < mi) continue;
              const sl = slackAfter(a, ng, nm, nmi, g, m, mi);
              if (sl < slack) {
                slack = sl;
                chosen = x;
              }
            }
            continue;
          }
          for (let s = f[e]!; s < list.length; s++) {
            const x = list[s]!;
            if (freeG[x]! >= g && freeM[x]! >= m && freeMi[x]! >= mi) {
              chosen = list[s]!;
              f[e] = s;
              break;
            }
            f[e] = s + 1;
          }
        }
      }
      if (chosen >= 0) break;
      let best = -1;
      let bestCost = Number.POSITIVE_INFINITY;
      openings++;
      settle(left, classes, listOf, familiesOfList, leftOfClass);
      const elist = c.eligible;
      const up = notFull[id]!;
      const end = runEnd[id]!;
      for (
        let e = openFrom(byKind, kinds, elist, up, 0);
        e < elist.length;
        e = openFrom(byKind, kinds, elist, up, end[e]!)
      ) {
        const k = elist[e]!;
        if (!gpuNodes && kinds[k]!.alloc.gpus > 0) {
          if (ordered) break;
          continue;
        }
        const fam = familyOf[k]!;
        if (familyStamp[fam] !== openings) {
          // What this replica pays of a node opened for it, if what may still go there fills it.
          const sh = share(kinds, classes, ci, k);
          familyStamp[fam] = openings;
          familyCost[fam] = (kinds[k]!.perHour * sh) / Math.max(fill(st, k, ci), sh);
        }
        const cost = familyCost[fam]!;
        if (cost < bestCost - 1e-12) {
          bestCost = cost;
          best = k;
        }
      }
      if (best < 0) continue;
      const a = kinds[best]!.alloc;
      chosen = count++;
      nodeKind[chosen] = best;
      freeG[chosen] = a.gpus;
      freeM[chosen] = a.millicores;
      freeMi[chosen] = a.memoryMiB;
      byKind[best]!.push(chosen);
      if (byKind[best]!.length === 1) {
        const wk = watchers[best]!;
        for (let x = 0; x < wk.length; x += 2) bitsOf[wk[x]!]![wk[x + 1]! >>> 5]! |= 1 << (wk[x + 1]! & 31);
      }
    }
    if (chosen < 0) return -1;
    freeG[chosen]! -= g;
    freeM[chosen]! -= m;
    freeMi[chosen]! -= mi;
    nodeOf[i] = chosen;
    lastClass = ci;
    lastNode = chosen;
    // The demand left is lowered a class's run of replicas at a time, not per replica: it is read only when a
    // node opens, so it is brought up to date there, and the sums of whole requests are the same either way.
    if (ci !== left.ci) {
      settle(left, classes, listOf, familiesOfList, leftOfClass);
      left.ci = ci;
    }
    left.placed++;
  }
  return count;
}

/**
 * How full a node opened on compute k can get for class ci: from what the class still has to place (`alone`),
 * or from what every list naming k's family still has to place.
 */
function fill(st: GreedyState, k: number, ci: number): number {
  const a = st.kinds[k]!.alloc;
  let g = 0;
  let m = 0;
  let mi = 0;
  if (st.alone) {
    const r = st.classes[ci]!.request;
    const c = st.leftOfClass[ci]!;
    g = r.gpus * c;
    m = r.millicores * c;
    mi = r.memoryMiB * c;
  } else {
    const f = st.familyOf[k]!;
    g = st.left.g[f]!;
    m = st.left.m[f]!;
    mi = st.left.mi[f]!;
  }
  return Math.min(1, Math.max(a.gpus > 0 ? g / a.gpus : 0, m / a.millicores, mi / a.memoryMiB));
}

/** The first position at or after x of a compute not at maxNodes, path-compressed as in union-find. */
function openFrom(
  byKind: readonly (readonly number[])[],
  kinds: readonly ComputeInfo[],
  list: readonly number[],
  up: Int32Array,
  x: number,
): number {
  const el = list.length;
  let r = x;
  while (r < el) {
    if (up[r] !== r) r = up[r]!;
    else if (byKind[list[r]!]!.length >= kinds[list[r]!]!.maxNodes) {
      up[r] = r + 1;
      r++;
    } else break;
  }
  while (x < r) {
    const nx = up[x]!;
    up[x] = r;
    x = nx;
  }
  return r;
}

/** The greedy's demand still to place: per family of computes and per class, with replicas placed not yet taken off. */
interface Left {
  g: Float64Array;
  m: Float64Array;
  mi: Float64Array;
  /** The class whose last `placed` replicas are not yet taken off. */
  ci: number;
  placed: number;
}

/** Takes the replicas placed since the last call off the demand left (integers: exact in any grouping). */
function settle(
  left: Left,
  classes: readonly JointClass[],
  listOf: Int32Array,
  familiesOfList: readonly (readonly number[])[],
  leftOfClass: number[],
): void {
  const p = left.placed;
  if (p === 0) return;
  const { gpus, millicores, memoryMiB } = classes[left.ci]!.request;
  leftOfClass[left.ci]! -= p;
  for (const f of familiesOfList[listOf[left.ci]!]!) {
    left.g[f]! -= gpus * p;
    left.m[f]! -= millicores * p;
    left.mi[f]! -= memoryMiB * p;
  }
  left.placed = 0;
}

/** The greedy's nodes: the first `count` entries of each array; nodeOf gives each replica's node. */
interface FlatNodes {
  count: number;
  kind: Int32Array;
  g: Float64Array;
  m: Float64Array;
  mi: Float64Array;
  nodeOf: Int32Array;
}

/** The greedy's nodes as objects, each with its replicas in the order they were placed. */
function nodesOf(flat: FlatNodes, order: Int32Array): Node[] {
  const nodes: Node[] = new Array(flat.count);
  for (let x = 0; x < flat.count; x++)
    nodes[x] = { kind: flat.kind[x]!, g: flat.g[x]!, m: flat.m[x]!, mi: flat.mi[x]!, items: [] };
  for (const i of order) nodes[flat.nodeOf[i]!]!.items.push(i);
  return nodes;
}

/** result() of the greedy's nodes, read from its flat arrays (every node holds a replica). */
function flatResult(kinds: readonly ComputeInfo[], flat: FlatNodes, n: number): JointPlan {
  const counts = new Int32Array(kinds.length);
  const compute = new Int32Array(n);
  const node = new Int32Array(n);
  // The loops are in numberFlat, which answers a number: code after a loop compiled mid-loop (on-stack
  // replacement) before it ever ran gave way to the interpreter at this literal in every plan.
  const cost = numberFlat(kinds, flat, counts, compute, node);
  return { compute, node, nodes: counts, costPerHour: Math.round(cost * 1e6) / 1e6 };
}

/** Numbers the greedy's nodes per compute, sets each replica's compute and node, and answers the cost per hour. */
function numberFlat(
  kinds: readonly ComputeInfo[],
  flat: FlatNodes,
  counts: Int32Array,
  compute: Int32Array,
  node: Int32Array,
): number {
  const number = new Int32Array(flat.count);
  let cost = 0;
  for (let x = 0; x < flat.count; x++) {
    const k = flat.kind[x]!;
    number[x] = counts[k]!++;
    cost += kinds[k]!.perHour;
  }
  for (let i = 0; i < compute.length; i++) {
    const x = flat.nodeOf[i]!;
    compute[i] = flat.kind[x]!;
    node[i] = number[x]!;
  }
  return cost;
}

/**
 * Local moves, cheapest first to try: empty a node into the spare room of others (any compute its replicas
 * may use), move a node to the cheapest compute that holds all it has, merge two nodes into one cheaper node.
 * Each accepted move lowers the cost, so the loop ends; `budget` bounds the work on large plans.
 */
function improve(
  kinds: readonly ComputeInfo[],
  classes: readonly JointClass[],
  cls: Int32Array,
  nodes: Node[],
  budget: number,
): void {
  const alive = (nd: Node) => nd.items.length > 0;
  const count = () => {
    const c = new Int32Array(kinds.length);
    for (const nd of nodes) if (alive(nd)) c[nd.kind]!++;
    return c;
  };
  const used = (nd: Node) => {
    const a = kinds[nd.kind]!.alloc;
    return { g: a.gpus - nd.g, m: a.millicores - nd.m, mi: a.memoryMiB - nd.mi };
  };
  // The computes every replica of a node may use. Replicas of one profile share their list (the same array),
  // so most nodes have one or two distinct lists; more are intersected by counting.
  const mark = new Int32Array(kinds.length);
  const eligibleAll = (items: readonly number[]): readonly number[] => {
    const lists: (readonly number[])[] = [];
    for (const i of items) {
      const e = classes[cls[i]!]!.eligible;
      if (!lists.includes(e)) lists.push(e);
    }
    if (lists.length === 1) return lists[0]!;
    mark.fill(0);
    for (const l of lists) for (const k of l) mark[k]!++;
    return lists[0]!.filter((k) => mark[k] === lists.length);
  };
  const holds = (k: number, u: { g: number; m: number; mi: number }) => {
    const a = kinds[k]!.alloc;
    return u.g <= a.gpus && u.m <= a.millicores && u.mi <= a.memoryMiB;
  };
  const cheapest = (
    items: readonly number[],
    u: { g: number; m: number; mi: number },
    n: Int32Array,
    free?: number,
  ) => {
    let best = -1;
    for (const k of eligibleAll(items)) {
      if (!holds(k, u) || (n[k]! >= kinds[k]!.maxNodes && k !== free)) continue;
      // CPU-only replicas move onto a GPU node no more than the greedy puts them there.
      if (u.g === 0 && kinds[k]!.alloc.gpus > 0 && kinds[free ?? k]!.alloc.gpus === 0) continue;
      if (best < 0 || kinds[k]!.perHour < kinds[best]!.perHour) best = k;
    }
    return best;
  };

  let improved = true;
  for (let round = 0; improved && budget > 0 && round < MAX_ROUNDS; round++) {
    improved = false;
    // 1. Empty nodes, dearest per share used first, into the others' spare room (best fit).
    const live = nodes.map((_, x) => x).filter((x) => alive(nodes[x]!));
    const worth = (x: number) => {
      const nd = nodes[x]!;
      const u = used(nd);
      const a = kinds[nd.kind]!.alloc;
      const load = Math.max(a.gpus > 0 ? u.g / a.gpus : 0, u.m / a.millicores, u.mi / a.memoryMiB);
      return kinds[nd.kind]!.perHour * (1 - load);
    };
    live.sort((a, b) => worth(b) - worth(a) || a - b);
    for (const victim of live.slice(0, VICTIMS)) {
      if (budget <= 0) break;
      const vn = nodes[victim]!;
      if (!alive(vn)) continue;
      const moves: [number, number][] = [];
      const items = [...vn.items].sort((a, b) => {
        const ra = classes[cls[a]!]!.request;
        const rb = classes[cls[b]!]!.request;
        return rb.gpus - ra.gpus || rb.memoryMiB - ra.memoryMiB || rb.millicores - ra.millicores || a - b;
      });
      let ok = true;
      for (const i of items) {
        const c = classes[cls[i]!]!;
        const { gpus: g, millicores: m, memoryMiB: mi } = c.request;
        let chosen = -1;
        let slack = Number.POSITIVE_INFINITY;
        for (let x = 0; x < nodes.length; x++) {
          budget--;
          const nd = nodes[x]!;
          if (x === victim || !alive(nd) || nd.g < g || nd.m < m || nd.mi < mi) continue;
          if (!c.eligible.includes(nd.kind)) continue;
          if (g === 0 && kinds[nd.kind]!.alloc.gpus > 0 && kinds[vn.kind]!.alloc.gpus === 0) continue;
          const a = kinds[nd.kind]!.alloc;
          const s = slackAfter(a, nd.g, nd.m, nd.mi, g, m, mi);
          if (s < slack) {
            slack = s;
            chosen = x;
          }
        }
        if (chosen < 0) {
          ok = false;
          break;
        }
        const nd = nodes[chosen]!;
        nd.g -= g;
        nd.m -= m;
        nd.mi -= mi;
        moves.push([i, chosen]);
      }
      if (ok) {
        for (const [i, x] of moves) nodes[x]!.items.push(i);
        vn.items = [];
        const a = kinds[vn.kind]!.alloc;
        vn.g = a.gpus;
        vn.m = a.millicores;
        vn.mi = a.memoryMiB;
        improved = true;
      } else {
        for (const [i, x] of moves) {
          const r = classes[cls[i]!]!.request;
          nodes[x]!.g += r.gpus;
          nodes[x]!.m += r.millicores;
          nodes[x]!.mi += r.memoryMiB;
        }
      }
    }
    // 2. Move each node to the cheapest compute that holds what it has.
    let n = count();
    for (const nd of nodes) {
      if (!alive(nd) || budget <= 0) continue;
      budget -= nd.items.length;
      const u = used(nd);
      const k = cheapest(nd.items, u, n, nd.kind);
      if (k >= 0 && kinds[k]!.perHour < kinds[nd.kind]!.perHour - 1e-12) {
        n[nd.kind]!--;
        n[k]!++;
        const a = kinds[k]!.alloc;
        nd.kind = k;
        nd.g = a.gpus - u.g;
        nd.m = a.millicores - u.m;
        nd.mi = a.memoryMiB - u.mi;
        improved = true;
      }
    }
    // 3. Merge two nodes into one of a compute cheaper than both together, least loaded pairs first.
    n = count();
    const light = nodes
      .map((_, x) => x)
      .filter((x) => alive(nodes[x]!))
      .sort((a, b) => worth(b) - worth(a) || a - b)
      .slice(0, VICTIMS);
    for (let p = 0; p < light.length && budget > 0; p++) {
      const A = nodes[light[p]!]!;
      if (!alive(A)) continue;
      for (let q = p + 1; q < light.length && budget > 0; q++) {
        const B = nodes[light[q]!]!;
        if (!alive(B)) continue;
        budget -= A.items.length + B.items.length;
        const ua = used(A);
        const ub = used(B);
        const u = { g: ua.g + ub.g, m: ua.m + ub.m, mi: ua.mi + ub.mi };
        const items = [...A.items, ...B.items];
        // Either node's own slot is free once both are merged.
        const k = cheapest(items, u, n, A.kind);
        if (k < 0 || kinds[k]!.perHour >= kinds[A.kind]!.perHour + kinds[B.kind]!.perHour - 1e-12) continue;
        // Nor does a merge bring a CPU-only node's replicas onto a GPU node.
        const cpuOnGpu = (x: Node, ux: { g: number }) => ux.g === 0 && kinds[x.kind]!.alloc.gpus === 0;
        if (kinds[k]!.alloc.gpus > 0 && (cpuOnGpu(A, ua) || cpuOnGpu(B, ub))) continue;
        n[A.kind]!--;
        n[B.kind]!--;
        n[k]!++;
        const a = kinds[k]!.alloc;
        A.kind = k;
        A.items = items;
        A.g = a.gpus - u.g;
        A.m = a.millicores - u.m;
        A.mi = a.memoryMiB - u.mi;
        const b = kinds[B.kind]!.alloc;
        B.items = [];
        B.g = b.gpus;
        B.m = b.millicores;
        B.mi = b.memoryMiB;
        improved = true;
      }
    }
  }
}

function result(kinds: readonly ComputeInfo[], nodes: Node[], n: number): JointPlan {
  const compute = new Int32Array(n);
  const node = new Int32Array(n);
  const counts = new Int32Array(kinds.length);
  let cost = 0;
  for (const nd of nodes) {
    if (nd.items.length === 0) continue;
    const j = counts[nd.kind]!++;
    cost += kinds[nd.kind]!.perHour;
    for (const i of nd.items) {
      compute[i] = nd.kind;
      node[i] = j;
    }
  }
  return { compute, node, nodes: counts, costPerHour: Math.round(cost * 1e6) / 1e6 };
}

/**
 * Large-neighbourhood search: empty a few nodes (one of the least loaded and some others), put their replicas
 * back largest first (one round in four in a random order) into the best-fitting open node of a compute they
 * may use, opening a node where its cost per share filled is lowest, and keep the result when it costs no
 * more (on ties, when its load is more concentrated, which makes the next node easier to empty). A round
 * that is not kept is undone from a log, so a round costs what it touches, not the plan's size.
 * Deterministic: `random` is seeded.
 */
function ruinAndRecreate(
  kinds: readonly ComputeInfo[],
  classes: readonly JointClass[],
  cls: Int32Array,
  start: Node[],
  random: () => number,
  rounds: number,
  strict = false,
): Node[] {
  const nodes = start.filter((nd) => nd.items.length).map((nd) => ({ ...nd, items: [...nd.items] }));
  const loadOf = (nd: Node) => {
    const a = kinds[nd.kind]!.alloc;
    return Math.max(a.gpus > 0 ? 1 - nd.g / a.gpus : 0, 1 - nd.m / a.millicores, 1 - nd.mi / a.memoryMiB);
  };
  // What a node adds to the score: its price, and its price weighted by its load squared (the tie-break).
  const spreadOf = (nd: Node) => (nd.items.length ? kinds[nd.kind]!.perHour * loadOf(nd) ** 2 : 0);
  const priceOf = (nd: Node) => (nd.items.length ? kinds[nd.kind]!.perHour : 0);
  // CPU-only replicas keep off GPU nodes when a CPU compute may take them, as the greedy does.
  const allowed = classes.map((c) => {
    const el = new Uint8Array(kinds.length);
    const cpu = c.request.gpus === 0 && c.eligible.some((k) => kinds[k]!.alloc.gpus === 0);
    for (const k of c.eligible) if (!cpu || kinds[k]!.alloc.gpus === 0) el[k] = 1;
    return { list: c.eligible.filter((k) => el[k]), has: el };
  });
  const firstShare = classes.map((_, ci) =>
    allowed[ci]!.list.length ? share(kinds, classes, ci, allowed[ci]!.list[0]!) : 0,
  );
  const count = new Int32Array(kinds.length);
  for (const nd of nodes) count[nd.kind]!++;
  // The undo log of a round: each touched node's state before it (items only ever appended, so their count).
  const logNode: number[] = [];
  const logState: { g: number; m: number; mi: number; len: number; items?: number[] }[] = [];
  const touched = new Int32Array(start.length + classes.reduce((x, c) => x + c.count, 0) + 1).fill(-1);
  let pool: number[] = [];
  for (let round = 0; round < rounds && nodes.length > 1; round++) {
    logNode.length = 0;
    logState.length = 0;
    const baseLen = nodes.length;
    let delta = 0;
    let deltaSpread = 0;
    const touch = (x: number, keepItems: boolean) => {
      if (touched[x] === round) return;
      touched[x] = round;
      const nd = nodes[x]!;
      logNode.push(x);
      logState.push({
        g: nd.g,
        m: nd.m,
        mi: nd.mi,
        len: nd.items.length,
        ...(keepItems ? {} : { items: nd.items }),
      });
      delta -= priceOf(nd);
      deltaSpread -= spreadOf(nd);
    };
    const a = Math.floor(random() * nodes.length);
    const b = Math.floor(random() * nodes.length);
    const victims = new Set([loadOf(nodes[a]!) <= loadOf(nodes[b]!) ? a : b]);
    const extra = 1 + Math.floor(random() * 3);
    for (let e = 0; e < extra && victims.size < nodes.length; e++)
      victims.add(Math.floor(random() * nodes.length));
    pool = [];
    for (const v of victims) {
      const nd = nodes[v]!;
      touch(v, false);
      pool.push(...nd.items);
      const al = kinds[nd.kind]!.alloc;
      nd.items = [];
      nd.g = al.gpus;
      nd.m = al.millicores;
      nd.mi = al.memoryMiB;
    }
    const shuffled = random() < 0.25;
    const key = new Map<number, number>();
    for (const i of pool) key.set(i, shuffled ? random() : firstShare[cls[i]!]! * (0.6 + 0.8 * random()));
    pool.sort((x, y) => key.get(y)! - key.get(x)! || x - y);
    let ok = true;
    for (let p = 0; p < pool.length; p++) {
      const i = pool[p]!;
      const ci = cls[i]!;
      const { gpus: g, millicores: m, memoryMiB: mi } = classes[ci]!.request;
      const el = allowed[ci]!;
      let chosen = -1;
      let slack = Number.POSITIVE_INFINITY;
      for (let x = 0; x < nodes.length; x++) {
        const nd = nodes[x]!;
        // Emptied nodes are not refilled: the point is to find room elsewhere.
        if (!nd.items.length || nd.g < g || nd.m < m || nd.mi < mi || !el.has[nd.kind]) continue;
        const al = kinds[nd.kind]!.alloc;
        const sl = slackAfter(al, nd.g, nd.m, nd.mi, g, m, mi);
        if (sl < slack) {
          slack = sl;
          chosen = x;
        }
      }
      if (chosen < 0) {
        // A new node where this replica's share costs least once the rest of the pool that may go there fills it.
        let best = -1;
        let bestCost = Number.POSITIVE_INFINITY;
        for (const k of el.list) {
          if (count[k]! >= kinds[k]!.maxNodes) continue;
          const al = kinds[k]!.alloc;
          if (g > al.gpus || m > al.millicores || mi > al.memoryMiB) continue;
          let fg = 0;
          let fm = 0;
          let fmi = 0;
          for (let q = p; q < pool.length; q++) {
            const cq = cls[pool[q]!]!;
            if (!allowed[cq]!.has[k]) continue;
            const r = classes[cq]!.request;
            fg += r.gpus;
            fm += r.millicores;
            fmi += r.memoryMiB;
          }
          const fill = Math.min(
            1,
            Math.max(al.gpus > 0 ? fg / al.gpus : 0, fm / al.millicores, fmi / al.memoryMiB),
          );
          const sh = share(kinds, classes, ci, k);
          const cost = (kinds[k]!.perHour * sh) / Math.max(fill, sh);
          if (cost < bestCost - 1e-12) {
            bestCost = cost;
            best = k;
          }
        }
        if (best < 0) {
          ok = false;
          break;
        }
        const al = kinds[best]!.alloc;
        chosen = nodes.length;
        nodes.push({ kind: best, g: al.gpus, m: al.millicores, mi: al.memoryMiB, items: [] });
        count[best]!++;
      } else if (chosen < baseLen) touch(chosen, true);
      const nd = nodes[chosen]!;
      nd.g -= g;
      nd.m -= m;
      nd.mi -= mi;
      nd.items.push(i);
    }
    if (ok) {
      for (const x of logNode) {
        delta += priceOf(nodes[x]!);
        deltaSpread += spreadOf(nodes[x]!);
      }
      for (let x = baseLen; x < nodes.length; x++) {
        delta += priceOf(nodes[x]!);
        deltaSpread += spreadOf(nodes[x]!);
      }
    }
    if (ok && (delta < -1e-9 || (!strict && delta <= 1e-9 && (deltaSpread >= -1e-12 || random() < WALK)))) {
      // Kept: emptied nodes leave the list (their compute's count with them).
      let w = 0;
      for (let x = 0; x < nodes.length; x++) {
        const nd = nodes[x]!;
        if (nd.items.length) nodes[w++] = nd;
        else count[nd.kind]!--;
      }
      nodes.length = w;
      continue;
    }
    for (let x = baseLen; x < nodes.length; x++) count[nodes[x]!.kind]!--;
    nodes.length = baseLen;
    logNode.forEach((x, j) => {
      const nd = nodes[x]!;
      const st = logState[j]!;
      nd.g = st.g;
      nd.m = st.m;
      nd.mi = st.mi;
      if (st.items) nd.items = st.items;
      else nd.items.length = st.len;
    });
  }
  return nodes;
}
