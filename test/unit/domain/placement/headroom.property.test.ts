import fc from 'fast-check';
import type { ReplicaUnit } from '../../../../lambdas/domain/headroom';
import { type ComputeLike, computeInfos, PlacementHeadroom } from '../../../../lambdas/domain/placement';
import { computesArb, unitsArb } from './arbitraries';

type Op =
  | { kind: 'place'; i: number }
  | { kind: 'release'; i: number }
  | { kind: 'bounce'; i: number }
  | { kind: 'adopt' }
  | { kind: 'trial'; ops: { place: boolean; i: number }[] };

const opArb = (n: number): fc.Arbitrary<Op> => {
  const i = fc.integer({ min: 0, max: Math.max(0, n - 1) });
  return fc.oneof(
    { arbitrary: i.map((i) => ({ kind: 'place' as const, i })), weight: 5 },
    { arbitrary: i.map((i) => ({ kind: 'release' as const, i })), weight: 2 },
    { arbitrary: i.map((i) => ({ kind: 'bounce' as const, i })), weight: 2 },
    { arbitrary: fc.constant({ kind: 'adopt' as const }), weight: 1 },
    {
      arbitrary: fc
        .array(fc.record({ place: fc.boolean(), i }), { maxLength: 6 })
        .map((ops) => ({ kind: 'trial' as const, ops })),
      weight: 2,
    },
  );
};

/** The headroom's full observable state, to compare before and after. */
const snapshot = (h: PlacementHeadroom) => ({
  usage: h.usage(),
  units: h
    .records()
    .map((r) => [r.unitId, r.placements] as const)
    .sort(([a], [b]) => (a < b ? -1 : 1)),
});

/** Rebuilds slot loads from the records: no slot above allocatable, no compute above maxNodes. */
function verify(computes: ComputeLike[], h: PlacementHeadroom, live: Set<string>) {
  const infos = computeInfos(computes);
  const loads = new Map<string, { g: number; m: number; mi: number }>();
  const ids = new Set<string>();
  for (const r of h.records()) {
    ids.add(r.unitId);
    r.computes.forEach((ci, j) => {
      const key = `${ci}|${r.slots[j]}`;
      const l = loads.get(key) ?? { g: 0, m: 0, mi: 0 };
      l.g += r.request.gpus;
      l.m += r.request.millicores;
      l.mi += r.request.memoryMiB;
      loads.set(key, l);
    });
  }
  expect(ids).toEqual(live);
  const nodes = new Array(infos.length).fill(0);
  for (const [key, l] of loads) {
    const ci = Number(key.split('|')[0]);
    const a = infos[ci]!.alloc;
    expect(l.g <= a.gpus && l.m <= a.millicores && l.mi <= a.memoryMiB).toBe(true);
    nodes[ci]++;
  }
  h.usage().forEach((u, ci) => {
    expect(u.usedNodes).toBe(nodes[ci]);
    expect(u.usedNodes).toBeLessThanOrEqual(infos[ci]!.maxNodes);
  });
}

function apply(h: PlacementHeadroom, units: ReplicaUnit[], live: Set<string>, place: boolean, i: number) {
  const u = units[i];
  if (!u) return;
  if (!place) {
    h.release(u.id);
    live.delete(u.id);
    return;
  }
  const before = snapshot(h);
  const r = h.place(u);
  if (r.ok) {
    expect(live.has(u.id)).toBe(false);
    expect(r.placements.reduce((n, p) => n + p.replicas, 0)).toBe(u.replicas);
    expect(u.profiles).toContain(r.profile);
    live.add(u.id);
  } else {
    // All or nothing: a refused unit leaves no trace.
    expect(snapshot(h)).toEqual(before);
    expect(r.message.length).toBeGreaterThan(0);
  }
}

describe('PlacementHeadroom (properties)', () => {
  it('never overfills a node or exceeds maxNodes through places, releases and clones', () => {
    fc.assert(
      fc.property(
        computesArb,
        unitsArb(12).chain((units) =>
          fc.tuple(fc.constant(units), fc.array(opArb(units.length), { maxLength: 40 })),
        ),
        (computes, [units, ops]) => {
          let h = PlacementHeadroom.create(computes);
          let live = new Set<string>();
          for (const op of ops) {
            if (op.kind === 'place' || op.kind === 'release')
              apply(h, units, live, op.kind === 'place', op.i);
            else if (op.kind === 'bounce') {
              // What a unit frees is there again for it: release then place always succeeds.
              const u = units[op.i];
              if (u && live.has(u.id)) {
                h.release(u.id);
                expect(h.place(u).ok).toBe(true);
              }
            } else if (op.kind === 'adopt') {
              h = h.clone();
              live = new Set(live);
            } else {
              // A dropped trial plan changes nothing in the original.
              const before = snapshot(h);
              const trial = h.clone();
              const trialLive = new Set(live);
              for (const t of op.ops) apply(trial, units, trialLive, t.place, t.i);
              verify(computes, trial, trialLive);
              expect(snapshot(h)).toEqual(before);
            }
            verify(computes, h, live);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('is deterministic: the same calls give the same answers', () => {
    fc.assert(
      fc.property(computesArb, unitsArb(), (computes, units) => {
        const run = () => {
          const h = PlacementHeadroom.create(computes);
          return units.map((u) => h.place(u));
        };
        expect(run()).toEqual(run());
      }),
      { numRuns: 100 },
    );
  });
});
