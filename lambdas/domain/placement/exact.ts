import type { Allocatable } from '../compute';
import type { ReplicaRequest } from './request';

/**
 * Placement as a mixed-integer program: which kind of node each replica goes to and how many nodes of each
 * kind open, at least cost. The model is written here as text (CPLEX LP format) and solved by whatever
 * `MipSolver` the caller injects (HiGHS in WebAssembly in the benchmark), so the domain stays pure and the
 * solver is replaceable.
 */

/** A kind of node: one compute's allocatable shape, price and node cap. */
export interface ExactKind {
  alloc: Allocatable;
  perHour: number;
  maxNodes: number;
}

/** Identical replicas (same request, same eligible kinds), counted. */
export interface ExactGroup {
  request: ReplicaRequest;
  count: number;
  /** Indices into the kinds this group's replicas may use. */
  eligible: readonly number[];
}

/** One open node: its kind and how many replicas of each group it holds (indexed like the groups). */
export interface ExactNode {
  kind: number;
  counts: number[];
}

/** What a MIP solver reports; `values` maps column names to their values in the best solution found. */
export interface MipAnswer {
  status: 'optimal' | 'feasible' | 'none';
  objective: number;
  /** A proven lower bound on the objective (equal to it when optimal). */
  bound: number;
  values: Record<string, number>;
}

/**
 * A MIP solver: solves a minimisation in CPLEX LP format within a time limit, optionally starting from a
 * known solution (column name to value). Synchronous, as HiGHS is once loaded.
 */
export interface MipSolver {
  solve(lp: string, options: { timeLimitS: number; start?: Record<string, number> }): MipAnswer;
}

export interface ExactResult {
  nodes: ExactNode[];
  costPerHour: number;
  /** Proven lower bound on the cost of any placement. */
  boundPerHour: number;
  optimal: boolean;
}

const yName = (k: number, j: number) => `y_${k}_${j}`;
const xName = (t: number, k: number, j: number) => `x_${t}_${k}_${j}`;

/** Nodes of a kind worth modelling: no more than replicas it may hold, its cap, or what the incumbent affords. */
function nodeBounds(
  kinds: readonly ExactKind[],
  groups: readonly ExactGroup[],
  incumbent?: number,
): number[] {
  return kinds.map((kind, k) => {
    let replicas = 0;
    for (const g of groups) if (g.eligible.includes(k)) replicas += g.count;
    let n = Math.min(replicas, kind.maxNodes);
    // A solution at most as dear as the incumbent opens at most incumbent / price nodes of any kind.
    if (incumbent !== undefined && kind.perHour > 0)
      n = Math.min(n, Math.floor(incumbent / kind.perHour + 1e-9));
    return n;
  });
}

const coef = (c: number, v: string) => `${c === 1 ? '' : `${c} `}${v}`;

/**
 * The model: y_k_j = 1 when node j of kind k is open (nodes of a kind open in order, which removes their
 * symmetry), x_t_k_j replicas of group t on it; every replica placed, every open node within its allocatable
 * in every dimension, cost Σ perHour·y minimised.
 */
export function exactModel(
  kinds: readonly ExactKind[],
  groups: readonly ExactGroup[],
  incumbent?: number,
): { lp: string; nodes: number[] } {
  const nodes = nodeBounds(kinds, groups, incumbent);
  const obj: string[] = [];
  const rows: string[] = [];
  const bounds: string[] = [];
  const ints: string[] = [];
  const bins: string[] = [];
  const onNode: string[][][] = kinds.map((_, k) => Array.from({ length: nodes[k]! }, () => []));
  const perGroup: string[][] = groups.map(() => []);
  kinds.forEach((kind, k) => {
    for (let j = 0; j < nodes[k]!; j++) {
      obj.push(coef(kind.perHour, yName(k, j)));
      bins.push(yName(k, j));
      if (j > 0) rows.push(`o_${k}_${j}: ${yName(k, j)} - ${yName(k, j - 1)} <= 0`);
    }
  });
  groups.forEach((g, t) => {
    for (const k of g.eligible) {
      const a = kinds[k]!.alloc;
      const per = Math.min(
        g.count,
        g.request.gpus > 0 ? Math.floor(a.gpus / g.request.gpus) : g.count,
        g.request.millicores > 0 ? Math.floor(a.millicores / g.request.millicores) : g.count,
        g.request.memoryMiB > 0 ? Math.floor(a.memoryMiB / g.request.memoryMiB) : g.count,
      );
      if (per <= 0) continue;
      for (let j = 0; j < nodes[k]!; j++) {
        const x = xName(t, k, j);
        perGroup[t]!.push(x);
        onNode[k]![j]!.push(x);
        // Linking each count to its node's y tightens the relaxation well beyond the capacity rows alone.
        rows.push(`l_${t}_${k}_${j}: ${x} - ${per} ${yName(k, j)} <= 0`);
        bounds.push(`0 <= ${x} <= ${per}`);
        ints.push(x);
      }
    }
  });
  groups.forEach((g, t) => {
    rows.push(`d_${t}: ${perGroup[t]!.length ? perGroup[t]!.join(' + ') : '0 x_none'} = ${g.count}`);
  });
  kinds.forEach((kind, k) => {
    for (let j = 0; j < nodes[k]!; j++) {
      const xs = onNode[k]![j]!;
      if (xs.length === 0) continue;
      const dims: [keyof ReplicaRequest, number][] = [
        ['gpus', kind.alloc.gpus],
        ['millicores', kind.alloc.millicores],
        ['memoryMiB', kind.alloc.memoryMiB],
      ];
      for (const [dim, cap] of dims) {
        const terms = xs
          .map((x) => [x, groups[Number(x.split('_')[1])]!.request[dim]] as const)
          .filter(([, r]) => r > 0)
          .map(([x, r]) => coef(r, x));
        if (terms.length) rows.push(`c_${dim}_${k}_${j}: ${terms.join(' + ')} - ${cap} ${yName(k, j)} <= 0`);
      }
    }
  });
  const lp = [
    'Minimize',
    ` cost: ${obj.length ? obj.join(' + ') : '0 x_none'}`,
    'Subject To',
    ...rows.map((r) => ` ${r}`),
    'Bounds',
    ...bounds.map((b) => ` ${b}`),
    'General',
    ...ints.map((x) => ` ${x}`),
    'Binary',
    ...bins.map((y) => ` ${y}`),
    'End',
  ].join('\n');
  return { lp, nodes };
}

/** Column values that describe a known placement, so the solver starts from it. */
function startOf(nodes: readonly ExactNode[], kindCount: number): Record<string, number> {
  const next = new Array<number>(kindCount).fill(0);
  const start: Record<string, number> = {};
  for (const n of nodes) {
    const j = next[n.kind]!++;
    start[yName(n.kind, j)] = 1;
    n.counts.forEach((c, t) => {
      if (c > 0) start[xName(t, n.kind, j)] = c;
    });
  }
  return start;
}

/**
 * The cheapest placement of the groups on the kinds, by the injected solver within `timeLimitS`. `incumbent`
 * (a placement already known, e.g. the heuristic's) bounds the model and seeds the search; when the solver
 * finds nothing better in time, it is the answer. Undefined when there is neither.
 */
export function exactPlacement(
  kinds: readonly ExactKind[],
  groups: readonly ExactGroup[],
  solver: MipSolver,
  options: { timeLimitS: number; incumbent?: readonly ExactNode[] },
): ExactResult | undefined {
  const known = options.incumbent;
  const knownCost = known ? costOf(kinds, known) : undefined;
  const { lp, nodes } = exactModel(kinds, groups, knownCost);
  const answer = solver.solve(lp, {
    timeLimitS: options.timeLimitS,
    ...(known ? { start: startOf(known, kinds.length) } : {}),
  });
  if (answer.status === 'none' || (knownCost !== undefined && answer.objective > knownCost - 1e-9)) {
    return known && knownCost !== undefined
      ? {
          nodes: known.map((n) => ({ kind: n.kind, counts: [...n.counts] })),
          costPerHour: knownCost,
          boundPerHour: Math.min(answer.bound, knownCost),
          optimal: answer.status === 'optimal' || answer.bound >= knownCost - 1e-6,
        }
      : undefined;
  }
  const out: ExactNode[] = [];
  kinds.forEach((_, k) => {
    for (let j = 0; j < nodes[k]!; j++) {
      if (Math.round(answer.values[yName(k, j)] ?? 0) !== 1) continue;
      const counts = groups.map((_, t) => Math.round(answer.values[xName(t, k, j)] ?? 0));
      if (counts.some((c) => c > 0)) out.push({ kind: k, counts });
    }
  });
  return {
    nodes: out,
    costPerHour: costOf(kinds, out),
    boundPerHour: answer.bound,
    optimal: answer.status === 'optimal',
  };
}

export function costOf(kinds: readonly ExactKind[], nodes: readonly ExactNode[]): number {
  return Math.round(nodes.reduce((s, n) => s + kinds[n.kind]!.perHour, 0) * 1e6) / 1e6;
}
