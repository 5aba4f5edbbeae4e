import fc from 'fast-check';
import type { ReplicaUnit } from '../../../../lambdas/domain/headroom';
import type { Profile } from '../../../../lambdas/domain/model';
import {
  type ComputeLike,
  capacityView,
  computeInfos,
  type PlacementPlan,
  planPlacement,
  rankCandidates,
  replicaRequest,
  sizingOf,
} from '../../../../lambdas/domain/placement';
import { BUILTIN_COMPUTES } from '../../../helpers/computes';
import { computesArb, unitsArb } from './arbitraries';

const unit = (id: string, replicas: number, ...profiles: Profile[]): ReplicaUnit => ({
  id,
  model: id,
  replicas,
  profiles,
});

/** Checks every invariant of a plan against its input; throws (via expect) on the first broken one. */
function verify(computes: ComputeLike[], units: ReplicaUnit[], plan: PlacementPlan) {
  const infos = computeInfos(computes);
  const placed = new Map(plan.placements.map((p) => [p.unitId, p]));
  const waiting = new Set(plan.headroom.map((h) => h.unitId));
  // Every unit is placed exactly once or reported as headroom, never both.
  expect(plan.placements.length + plan.headroom.length).toBe(units.length);
  const onCompute = new Map<string, number>(); // `${unit}|${compute}` → replicas
  for (const u of units) {
    const p = placed.get(u.id);
    expect(Boolean(p) !== waiting.has(u.id)).toBe(true);
    if (!p) continue;
    const profile = u.profiles.find((x) => x.name === p.profile)!;
    expect(profile).toBeDefined();
    expect(p.placements.reduce((n, x) => n + x.replicas, 0)).toBe(u.replicas);
    const cand = rankCandidates(infos, profile);
    for (const x of p.placements) {
      // Only computes whose hardware fits the profile.
      expect(cand.ok && cand.computes.some((c) => c.name === x.compute)).toBe(true);
      onCompute.set(`${u.id}|${x.compute}`, (onCompute.get(`${u.id}|${x.compute}`) ?? 0) + x.replicas);
    }
  }
  const byId = new Map(units.map((u) => [u.id, u]));
  for (const c of plan.computes) {
    const info = infos.find((i) => i.name === c.compute)!;
    expect(c.nodes.length).toBe(c.neededNodes);
    expect(c.neededNodes).toBeLessThanOrEqual(info.maxNodes);
    expect(c.neededNodes).toBeGreaterThanOrEqual(c.lowerBoundNodes);
    const sum = { gpus: 0, millicores: 0, memoryMiB: 0 };
    const seen = new Map<string, number>();
    for (const node of c.nodes) {
      expect(node.replicas.length).toBeGreaterThan(0);
      const used = { gpus: 0, millicores: 0, memoryMiB: 0 };
      for (const r of node.replicas) {
        const req = replicaRequest(
          byId.get(r.unitId)!.profiles.find((x) => x.name === placed.get(r.unitId)!.profile)!,
        );
        used.gpus += req.gpus * r.count;
        used.millicores += req.millicores * r.count;
        used.memoryMiB += req.memoryMiB * r.count;
        seen.set(r.unitId, (seen.get(r.unitId) ?? 0) + r.count);
      }
      expect(node.used).toEqual(used);
      // No node above allocatable in any dimension.
      expect(used.gpus).toBeLessThanOrEqual(info.alloc.gpus);
      expect(used.millicores).toBeLessThanOrEqual(info.alloc.millicores);
      expect(used.memoryMiB).toBeLessThanOrEqual(info.alloc.memoryMiB);
      sum.gpus += used.gpus;
      sum.millicores += used.millicores;
      sum.memoryMiB += used.memoryMiB;
    }
    // Each replica the plan put on this compute is on exactly one of its nodes.
    for (const [id, n] of seen) expect(onCompute.get(`${id}|${c.compute}`)).toBe(n);
    const expected = [...onCompute]
      .filter(([k]) => k.endsWith(`|${c.compute}`))
      .reduce((n, [, v]) => n + v, 0);
    expect(c.replicas).toBe(expected);
    expect(c.requested).toEqual(sum);
    const lb = Math.max(
      info.alloc.gpus > 0 ? Math.ceil(sum.gpus / info.alloc.gpus) : 0,
      Math.ceil(sum.millicores / info.alloc.millicores),
      Math.ceil(sum.memoryMiB / info.alloc.memoryMiB),
    );
    // The reported bound is at least L1 and never above the packing found.
    expect(c.lowerBoundNodes).toBeGreaterThanOrEqual(lb);
    expect(c.lowerBoundNodes).toBeLessThanOrEqual(c.neededNodes);
  }
}

describe('planPlacement', () => {
  it('sizes each compute with nodes, lower bound and cost', () => {
    const plan = planPlacement(BUILTIN_COMPUTES, [
      unit('a', 2, { name: 'h', gpus: 4, gpuType: 'H100', cpuCores: 16, minMemoryGb: 128 }),
      unit('b', 7, { name: 'c', gpus: 0, cpuCores: 2, minMemoryGb: 4 }),
      unit('c', 1, { name: 'x', gpus: 4, gpuType: 'H100', cpuCores: 16 }),
    ]);
    expect(plan.headroom).toEqual([
      { unitId: 'c', message: 'no compute can take a 4-gpu H100 replica: gpu-h100-8x is at its maxNodes 1' },
    ]);
    const h100 = plan.computes.find((c) => c.compute === 'gpu-h100-8x')!;
    expect(h100).toMatchObject({ neededNodes: 1, lowerBoundNodes: 1, costPerHour: 55.04, replicas: 2 });
    expect(h100.nodes).toEqual([
      { used: { gpus: 8, millicores: 32000, memoryMiB: 262144 }, replicas: [{ unitId: 'a', count: 2 }] },
    ]);
    // Seven 2-core replicas: three cpu-medium nodes (three each) would do, but two of them and one cpu-small
    // (one replica) cost less; admission alone would open the third cpu-medium.
    expect(plan.placements.find((p) => p.unitId === 'b')!.placements).toEqual([
      { compute: 'cpu-small', profile: 'c', replicas: 1 },
      { compute: 'cpu-medium', profile: 'c', replicas: 6 },
    ]);
    expect(plan.computes.find((c) => c.compute === 'cpu-medium')).toMatchObject({
      neededNodes: 2,
      lowerBoundNodes: 2,
      costPerHour: 0.8064,
    });
    expect(plan.totals).toEqual({
      replicas: 9,
      neededNodes: 4,
      lowerBoundNodes: 4,
      costPerHour: 56.048,
      lowerBoundCost: 56.048,
    });
    expect(sizingOf(h100, '2025-01-01T00:00:00Z')).toEqual({
      neededNodes: 1,
      lowerBoundNodes: 1,
      costPerHour: 55.04,
      computedAt: '2025-01-01T00:00:00Z',
    });
    expect(capacityView(plan).computes).toHaveLength(7);
  });

  it('keeps every replica admission placed, even where plain FFD would need more than maxNodes', () => {
    // Arrival order packs 2 nodes; FFD by GPUs would need 3, more than maxNodes 2.
    const c: ComputeLike = {
      name: 'g8',
      spec: {
        node: {
          cpu: 11,
          memoryGb: 64,
          gpu: { type: 'X', count: 8, memoryGb: 80, resource: 'nvidia.com/gpu' },
        },
        nodeGroup: { maxNodes: 2 },
        cost: { perHour: 1 },
      },
    };
    // allocatable: 8 GPUs, 10280 m.
    const units = [
      unit('a', 1, { name: 'p', gpus: 3, cpuCores: 9 }),
      unit('b', 1, { name: 'p', gpus: 1, cpuCores: 9 }),
      unit('c', 2, { name: 'p', gpus: 4, cpuCores: 1 }),
    ];
    for (const strategy of ['ffd', 'best'] as const) {
      const plan = planPlacement([c], units, { strategy });
      expect(plan.headroom).toEqual([]);
      expect(plan.computes[0]!.neededNodes).toBe(2);
      verify([c], units, plan);
    }
  });

  it('holds its invariants on random clusters and workloads, deterministically', () => {
    fc.assert(
      fc.property(computesArb, unitsArb(), (computes, units) => {
        const plan = planPlacement(computes, units);
        verify(computes, units, plan);
        expect(planPlacement(computes, units)).toEqual(plan);
        const ffd = planPlacement(computes, units, { strategy: 'ffd' });
        verify(computes, units, ffd);
        // The same units placed, each with the same profile; 'best' may choose other computes, never at a
        // higher cost than admission's choice packed by plain FFD.
        expect(plan.placements.map((p) => [p.unitId, p.profile])).toEqual(
          ffd.placements.map((p) => [p.unitId, p.profile]),
        );
        expect(plan.headroom).toEqual(ffd.headroom);
        expect(plan.totals.costPerHour).toBeLessThanOrEqual(ffd.totals.costPerHour + 1e-9);
      }),
      { numRuns: 300 },
    );
  });
});
