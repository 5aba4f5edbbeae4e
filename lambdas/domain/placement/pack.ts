import type { Allocatable } from '../compute';

/**
 * Batch packing of one compute's replicas onto its allocatable node shape, for the nodes reconcile asks
 * for. Items are flat arrays (one entry per replica) so tens of thousands pack in milliseconds.
 */

export interface Items {
  g: Int32Array;
  m: Int32Array;
  mi: Int32Array;
  /** An opaque tag per item (the plan uses the unit's index). */
  tag: Int32Array;
}

/** An assignment of every item to a bin numbered 0..bins-1, every bin non-empty. */
export interface Packing {
  bins: number;
  assign: Int32Array;
}

export type Strategy = 'ffd' | 'best';

export function makeItems(n: number): Items {
  return { g: new Int32Array(n), m: new Int32Array(n), mi: new Int32Array(n), tag: new Int32Array(n) };
}

/** max over dimensions of ⌈Σ requests / allocatable⌉; GPUs are whole, so their quotient is exact. */
export function lowerBound(items: Items, alloc: Allocatable): number {
  let g = 0;
  let m = 0;
  let mi = 0;
  for (let i = 0; i < items.g.length; i++) {
    g += items.g[i]!;
    m += items.m[i]!;
    mi += items.mi[i]!;
  }
  return Math.max(
    alloc.gpus > 0 ? Math.ceil(g / alloc.gpus) : 0,
    Math.ceil(m / alloc.millicores),
    Math.ceil(mi / alloc.memoryMiB),
  );
}

type Key = (i: number) => number;

/**
 * Items sorted by decreasing key, ties by decreasing (g, m, mi) then index: a total, deterministic order.
 * Runs of equal adjacent items (a unit's replicas are adjacent) are sorted instead of items: equal items have
 * equal keys, so runs sorted by the same fields and then by where they start, each keeping its items in index
 * order, give exactly the items' order, for a few dozen runs where a compute has hundreds of replicas.
 */
function order(items: Items, key: Key): Int32Array {
  const { g, m, mi } = items;
  const n = g.length;
  const start: number[] = [];
  for (let i = 0; i < n; i++)
    if (i === 0 || g[i] !== g[i - 1] || m[i] !== m[i - 1] || mi[i] !== mi[i - 1]) start.push(i);
  const runs = start.length;
  const idx = new Array<number>(runs);
  const k = new Float64Array(runs);
  for (let r = 0; r < runs; r++) {
    idx[r] = r;
    k[r] = key(start[r]!);
  }
  // Runs are numbered in the order they start, so the last tie-break on the run is the one on the index.
  idx.sort((a, b) => {
    const x = start[a]!;
    const y = start[b]!;
    return k[b]! - k[a]! || g[y]! - g[x]! || m[y]! - m[x]! || mi[y]! - mi[x]! || a - b;
  });
  const out = new Int32Array(n);
  let o = 0;
  for (let j = 0; j < runs; j++) {
    const r = idx[j]!;
    const end = r + 1 < runs ? start[r + 1]! : n;
    for (let i = start[r]!; i < end; i++) out[o++] = i;
  }
  return out;
}

function keys(items: Items, alloc: Allocatable): Record<'lex' | 'max' | 'sum', Key> {
  const ig = alloc.gpus > 0 ? 1 / alloc.gpus : 0;
  const im = 1 / alloc.millicores;
  const imi = 1 / alloc.memoryMiB;
  const { g, m, mi } = items;
  return {
    // Lexicographic (gpus, millicores, MiB): the plain first-fit decreasing; ties are broken in order().
    lex: (i) => g[i]!,
    max: (i) => Math.max(g[i]! * ig, m[i]! * im, mi[i]! * imi),
    sum: (i) => g[i]! * ig + m[i]! * im + mi[i]! * imi,
  };
}

/**
 * Places items in the given order. First fit takes the lowest-numbered bin with room; best fit the bin
 * left with the least normalized slack. Returns undefined once more than `cap` bins would be needed.
 */
function greedy(
  items: Items,
  alloc: Allocatable,
  cap: number,
  ord: Int32Array,
  best: boolean,
): Packing | undefined {
  const n = ord.length;
  const fg = new Int32Array(cap);
  const fm = new Int32Array(cap);
  const fmi = new Int32Array(cap);
  const assign = new Int32Array(items.g.length);
  const ig = alloc.gpus > 0 ? 1 / alloc.gpus : 0;
  const im = 1 / alloc.millicores;
  const imi = 1 / alloc.memoryMiB;
  let bins = 0;
  let last = -1;
  for (let k = 0; k < n; k++) {
    const i = ord[k]!;
    const g = items.g[i]!;
    const m = items.m[i]!;
    const mi = items.mi[i]!;
    let chosen = -1;
    let slack = Number.POSITIVE_INFINITY;
    // An item just after an identical one (the orders keep equal items together): every bin before that one's
    // refused it too, so first fit starts there, and best fit keeps that bin while it has room (only fuller
    // now, it is still the tightest). The scans then cost per distinct size, not per item.
    let from = 0;
    if (k > 0) {
      const p = ord[k - 1]!;
      if (items.g[p] === g && items.m[p] === m && items.mi[p] === mi) {
        if (fg[last]! >= g && fm[last]! >= m && fmi[last]! >= mi) chosen = last;
        else if (!best) from = last + 1;
      }
    }
    if (chosen < 0)
      for (let b = from; b < bins; b++) {
        if (fg[b]! >= g && fm[b]! >= m && fmi[b]! >= mi) {
          if (!best) {
            chosen = b;
            break;
          }
          const s = (fg[b]! - g) * ig + (fm[b]! - m) * im + (fmi[b]! - mi) * imi;
          if (s < slack) {
            slack = s;
            chosen = b;
          }
        }
      }
    if (chosen < 0) {
      if (bins === cap) return undefined;
      chosen = bins++;
      fg[chosen] = alloc.gpus;
      fm[chosen] = alloc.millicores;
      fmi[chosen] = alloc.memoryMiB;
    }
    fg[chosen]! -= g;
    fm[chosen]! -= m;
    fmi[chosen]! -= mi;
    assign[i] = chosen;
    last = chosen;
  }
  return { bins, assign };
}

/**
 * Tries to empty whole bins, least loaded first, by moving each of their items (largest first) into the
 * best-fitting other bin. Cheap, and it recovers most of what the greedy order wastes at the tail.
 */
function eliminate(items: Items, alloc: Allocatable, p: Packing, lb: number): Packing {
  const ig = alloc.gpus > 0 ? 1 / alloc.gpus : 0;
  const im = 1 / alloc.millicores;
  const imi = 1 / alloc.memoryMiB;
  const assign = p.assign.slice();
  let bins = p.bins;
  const n = assign.length;
  while (bins > lb) {
    const fg = new Int32Array(bins).fill(alloc.gpus);
    const fm = new Int32Array(bins).fill(alloc.millicores);
    const fmi = new Int32Array(bins).fill(alloc.memoryMiB);
    const members: number[][] = Array.from({ length: bins }, () => []);
    for (let i = 0; i < n; i++) {
      const b = assign[i]!;
      fg[b]! -= items.g[i]!;
      fm[b]! -= items.m[i]!;
      fmi[b]! -= items.mi[i]!;
      members[b]!.push(i);
    }
    const load = (b: number) =>
      (alloc.gpus - fg[b]!) * ig + (alloc.millicores - fm[b]!) * im + (alloc.memoryMiB - fmi[b]!) * imi;
    const byLoad = Array.from({ length: bins }, (_, b) => b).sort((a, b) => load(a) - load(b) || a - b);
    let emptied = -1;
    for (const victim of byLoad) {
      const mine = members[victim]!.slice().sort(
        (a, b) =>
          Math.max(items.g[b]! * ig, items.m[b]! * im, items.mi[b]! * imi) -
            Math.max(items.g[a]! * ig, items.m[a]! * im, items.mi[a]! * imi) || a - b,
      );
      const moves: [number, number][] = [];
      let ok = true;
      for (const i of mine) {
        const g = items.g[i]!;
        const m = items.m[i]!;
        const mi = items.mi[i]!;
        let chosen = -1;
        let slack = Number.POSITIVE_INFINITY;
        for (let b = 0; b < bins; b++) {
          if (b === victim || fg[b]! < g || fm[b]! < m || fmi[b]! < mi) continue;
          const s = (fg[b]! - g) * ig + (fm[b]! - m) * im + (fmi[b]! - mi) * imi;
          if (s < slack) {
            slack = s;
            chosen = b;
          }
        }
        if (chosen < 0) {
          ok = false;
          break;
        }
        fg[chosen]! -= g;
        fm[chosen]! -= m;
        fmi[chosen]! -= mi;
        moves.push([i, chosen]);
      }
      if (ok) {
        for (const [i, b] of moves) assign[i] = b;
        emptied = victim;
        break;
      }
      for (const [i, b] of moves) {
        fg[b]! += items.g[i]!;
        fm[b]! += items.m[i]!;
        fmi[b]! += items.mi[i]!;
      }
    }
    if (emptied < 0) break;
    // Renumber so bins stay 0..bins-1: the last bin takes the emptied one's number.
    bins--;
    for (let i = 0; i < n; i++) if (assign[i] === bins) assign[i] = emptied;
  }
  return { bins, assign };
}

/** Node budget of the exact search; beyond it the best heuristic packing stands. */
const EXACT_MAX_ITEMS = 16;
const EXACT_BUDGET = 200_000;

/**
 * Depth-first search for a packing into `target` bins, for small instances only (a handful of replicas on
 * a compute is common: maxNodes defaults to 4). Symmetric branches (bins in identical state) are skipped.
 */
function exact(items: Items, alloc: Allocatable, target: number, ord: Int32Array): Packing | undefined {
  const n = ord.length;
  const fg = new Int32Array(target);
  const fm = new Int32Array(target);
  const fmi = new Int32Array(target);
  const assign = new Int32Array(items.g.length);
  let budget = EXACT_BUDGET;
  let open = 0;
  const go = (k: number): boolean => {
    if (k === n) return true;
    if (--budget < 0) return false;
    const i = ord[k]!;
    const g = items.g[i]!;
    const m = items.m[i]!;
    const mi = items.mi[i]!;
    const limit = Math.min(open + 1, target);
    for (let b = 0; b < limit; b++) {
      if (b === open) {
        fg[b] = alloc.gpus;
        fm[b] = alloc.millicores;
        fmi[b] = alloc.memoryMiB;
      }
      if (fg[b]! < g || fm[b]! < m || fmi[b]! < mi) continue;
      let twin = false;
      for (let c = 0; c < b && !twin; c++) twin = fg[c] === fg[b] && fm[c] === fm[b] && fmi[c] === fmi[b];
      if (twin) continue;
      fg[b]! -= g;
      fm[b]! -= m;
      fmi[b]! -= mi;
      assign[i] = b;
      const opened = b === open;
      if (opened) open++;
      if (go(k + 1)) return true;
      if (opened) open--;
      fg[b]! += g;
      fm[b]! += m;
      fmi[b]! += mi;
    }
    return false;
  };
  return go(0) ? { bins: open, assign } : undefined;
}

/**
 * The packing for one compute. 'ffd' is plain first-fit decreasing in lexicographic (gpus, millicores, MiB)
 * order. 'best' also runs first fit and best fit in two normalized orders (largest dimension, sum of
 * dimensions), empties bins where it can, and searches exactly when the instance is small and the bound is
 * not met; it keeps the fewest bins, earliest candidate on ties. `fallback` (admission's own packing, known
 * to be within `cap`) is used when no heuristic fits within cap, so every replica admission placed stays
 * placed; 'best' also takes it when it has fewer bins.
 */
export function pack(items: Items, alloc: Allocatable, cap: number, strategy: Strategy, fallback?: Packing) {
  const lb = lowerBound(items, alloc);
  const k = keys(items, alloc);
  let best: Packing | undefined;
  const consider = (p: Packing | undefined) => {
    if (p && (!best || p.bins < best.bins)) best = p;
  };
  consider(greedy(items, alloc, cap, order(items, k.lex), false));
  // Nothing can beat a packing at the tighter bound, so the extra heuristics only run when there is a gap.
  const floor = strategy === 'best' && best && best.bins > lb ? strongLowerBound(items, alloc) : lb;
  if (strategy === 'best') {
    for (const key of [k.max, k.sum]) {
      if (best && best.bins <= floor) break;
      const ord = order(items, key);
      consider(greedy(items, alloc, cap, ord, false));
      consider(greedy(items, alloc, cap, ord, true));
    }
    if (best && best.bins > floor) consider(eliminate(items, alloc, best, floor));
    if (best && best.bins > floor && items.g.length <= EXACT_MAX_ITEMS) {
      const ord = order(items, k.max);
      for (let t = best.bins - 1; t >= floor; t--) {
        const p = exact(items, alloc, t, ord);
        if (!p) break;
        consider(p);
      }
    }
  }
  // Plain FFD keeps its own answer unless it cannot fit within cap; 'best' takes admission's if fewer.
  if (strategy === 'best' || !best) consider(fallback);
  if (!best) throw new Error('placement: no packing within maxNodes and no fallback');
  // A packing at L1 is optimal, so the bound is L1 itself; otherwise the tight bound ('best' has it as floor).
  const bound = best.bins <= lb ? lb : strategy === 'best' ? floor : strongLowerBound(items, alloc);
  return { packing: best, lowerBound: bound };
}

/**
 * The bound a compute's status reports (lowerBoundNodes) and packings are judged by: the best of, per
 * dimension, Martello and Toth's L2 (items larger than half a node count one per node) and Fekete and
 * Schepers' dual feasible functions u(k), which round sizes up to 1/k steps so that what cannot share a
 * node counts (five 3-GPU replicas on 8-GPU nodes: 3, where L1 and L2 say 2). Valid for vector packing
 * because a packing in all dimensions is a packing in each.
 */
export function strongLowerBound(items: Items, alloc: Allocatable): number {
  let best = lowerBound(items, alloc);
  const dims: [Int32Array, number][] = [
    [items.g, alloc.gpus],
    [items.m, alloc.millicores],
    [items.mi, alloc.memoryMiB],
  ];
  for (const [sizes, cap] of dims) {
    if (cap <= 0) continue;
    // Thousands of replicas have a few dozen distinct sizes: every sum below runs over those, with counts.
    const { value, count } = distinctDecreasing(sizes);
    const n = value.length;
    // Candidate α: 0 and every distinct size at most cap/2.
    for (let ai = -1; ai < n; ai++) {
      const a = ai < 0 ? 0 : value[ai]!;
      if (ai >= 0 && a > cap / 2) continue;
      let j1 = 0;
      let j2 = 0;
      let sum2 = 0;
      let sum3 = 0;
      for (let i = 0; i < n; i++) {
        const x = value[i]!;
        const c = count[i]!;
        if (x > cap - a) j1 += c;
        else if (x > cap / 2) {
          j2 += c;
          sum2 += x * c;
        } else if (x >= a) sum3 += x * c;
      }
      const l = j1 + j2 + Math.max(0, Math.ceil((sum3 - (j2 * cap - sum2)) / cap));
      if (l > best) best = l;
    }
    const d = dualFeasibleBound(value, count, cap);
    if (d > best) best = d;
  }
  return best;
}

/** The distinct sizes, largest first, and how many items have each. */
function distinctDecreasing(sizes: Int32Array): { value: Float64Array; count: Float64Array } {
  const s = Float64Array.from(sizes).sort();
  const value = new Float64Array(s.length);
  const count = new Float64Array(s.length);
  let n = 0;
  for (let i = s.length - 1; i >= 0; i--) {
    if (n > 0 && value[n - 1] === s[i]) count[n - 1]!++;
    else {
      value[n] = s[i]!;
      count[n++] = 1;
    }
  }
  return { value: value.subarray(0, n), count: count.subarray(0, n) };
}

/** Steps k tried by dualFeasibleBound: enough for GPU counts (at most 16 a node) and coarse CPU or memory. */
const DFF_MAX_K = 16;

/**
 * max over k of ⌈Σ u(k)(x)⌉ with u(k)(x) = x when (k+1)x is whole, ⌊(k+1)x⌋/k otherwise (x = size/cap).
 * Summed exactly as integers over cap·k, so no rounding can push the bound past the optimum.
 */
function dualFeasibleBound(value: Float64Array, count: Float64Array, cap: number): number {
  let best = 0;
  for (let k = 1; k <= DFF_MAX_K; k++) {
    let whole = 0; // Σ sizes kept as they are, over cap
    let steps = 0; // Σ ⌊(k+1)x⌋, over k
    for (let i = 0; i < value.length; i++) {
      const t = (k + 1) * value[i]!;
      if (t % cap === 0) whole += value[i]! * count[i]!;
      else steps += Math.floor(t / cap) * count[i]!;
    }
    const l = Math.ceil((whole * k + steps * cap) / (cap * k));
    if (l > best) best = l;
  }
  return best;
}
