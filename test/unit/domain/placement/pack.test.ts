import type { Allocatable } from '../../../../lambdas/domain/compute';
import { lowerBound, makeItems, pack, strongLowerBound } from '../../../../lambdas/domain/placement';

const items = (rows: [number, number, number][]) => {
  const it = makeItems(rows.length);
  rows.forEach(([g, m, mi], i) => {
    it.g[i] = g;
    it.m[i] = m;
    it.mi[i] = mi;
    it.tag[i] = i;
  });
  return it;
};
const node: Allocatable = { gpus: 8, millicores: 10_000, memoryMiB: 10_000 };

describe('lowerBound', () => {
  it('is the max over dimensions of the ceiling of requested over allocatable', () => {
    expect(lowerBound(items([]), node)).toBe(0);
    expect(
      lowerBound(
        items([
          [3, 1000, 1000],
          [3, 1000, 1000],
          [3, 1000, 1000],
        ]),
        node,
      ),
    ).toBe(2);
    expect(
      lowerBound(
        items([
          [0, 6000, 100],
          [0, 6000, 100],
        ]),
        { ...node, gpus: 0 },
      ),
    ).toBe(2);
  });
});

describe('the bound a compute reports', () => {
  const threes = (n: number) =>
    items(Array.from({ length: n }, () => [3, 1000, 1000] as [number, number, number]));

  it('counts replicas that cannot share a node: five 3-GPU replicas on 8-GPU nodes need 3, not 2', () => {
    expect(lowerBound(threes(5), node)).toBe(2);
    expect(strongLowerBound(threes(5), node)).toBe(3);
    for (const strategy of ['ffd', 'best'] as const)
      expect(pack(threes(5), node, 10, strategy)).toMatchObject({ lowerBound: 3, packing: { bins: 3 } });
  });

  it('is never above an optimal packing (exhaustive over small GPU mixes)', () => {
    // Every multiset of up to 6 replicas of 1..8 GPUs on 8-GPU nodes, against the exact optimum.
    const optimum = (sizes: number[]): number => {
      let best = sizes.length;
      const bins: number[] = [];
      const go = (i: number) => {
        if (bins.length >= best) return;
        if (i === sizes.length) {
          best = bins.length;
          return;
        }
        for (let b = 0; b < bins.length; b++)
          if (bins[b]! + sizes[i]! <= 8) {
            bins[b]! += sizes[i]!;
            go(i + 1);
            bins[b]! -= sizes[i]!;
          }
        bins.push(sizes[i]!);
        go(i + 1);
        bins.pop();
      };
      go(0);
      return best;
    };
    let tighter = 0;
    const walk = (sizes: number[], min: number) => {
      if (sizes.length > 0) {
        const it = items(sizes.map((g) => [g, 100, 100] as [number, number, number]));
        const opt = optimum([...sizes].sort((a, b) => b - a));
        const lb = strongLowerBound(it, node);
        expect([sizes, lb <= opt]).toEqual([sizes, true]);
        if (lb > lowerBound(it, node)) tighter++;
      }
      if (sizes.length < 6) for (let g = min; g <= 8; g++) walk([...sizes, g], g);
    };
    walk([], 1);
    expect(tighter).toBeGreaterThan(0);
  });
});

describe('pack', () => {
  it('plain FFD goes lexicographically by (gpus, millicores, MiB)', () => {
    const it = items([
      [1, 1000, 1000],
      [4, 1000, 1000],
      [4, 1000, 1000],
      [2, 1000, 1000],
    ]);
    const { packing } = pack(it, node, 10, 'ffd');
    expect(packing.bins).toBe(2);
    expect([...packing.assign]).toEqual([1, 0, 0, 1]);
  });

  it('best finds the optimum where FFD does not (two dimensions that pull apart)', () => {
    // FFD by GPUs pairs the two 4-GPU replicas and then cannot pair the two CPU-heavy ones; ordering by the
    // largest normalized dimension puts each CPU-heavy replica with a 4-GPU one.
    const it = items([
      [4, 1000, 1000],
      [4, 1000, 1000],
      [3, 9000, 1000],
      [1, 9000, 1000],
    ]);
    expect(pack(it, node, 10, 'ffd').packing.bins).toBe(3);
    const best = pack(it, node, 10, 'best');
    expect(best).toMatchObject({ lowerBound: 2, packing: { bins: 2 } });
  });

  it('falls back to the given packing when no heuristic fits within cap', () => {
    const it = items([
      [4, 1000, 1000],
      [4, 1000, 1000],
      [3, 9000, 1000],
      [1, 9000, 1000],
    ]);
    const fallback = { bins: 2, assign: Int32Array.from([0, 1, 0, 1]) };
    expect(pack(it, node, 2, 'ffd', fallback).packing).toBe(fallback);
    expect(() => pack(it, node, 1, 'ffd')).toThrow(/no packing within maxNodes/);
  });
});
