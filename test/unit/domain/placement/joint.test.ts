import fc from 'fast-check';
import type { ReplicaUnit } from '../../../../lambdas/domain/headroom';
import type { Profile } from '../../../../lambdas/domain/model';
import { type ComputeLike, planPlacement } from '../../../../lambdas/domain/placement';
import { computesArb, unitsArb } from './arbitraries';

/**
 * Issue 34: kinds chosen together with the nodes. Real instance types at the snapshot's us-east-1 on-demand
 * prices; 'ffd' is admission's kind choice (cheapest per replica, each profile judged alone) packed plainly,
 * the old plan.
 */

const kind = (
  name: string,
  cpu: number,
  memoryGb: number,
  perHour: number,
  gpu?: { type: string; count: number },
  owner?: string,
): ComputeLike => ({
  name,
  ...(owner ? { owner } : {}),
  spec: {
    node: {
      cpu,
      memoryGb,
      ...(gpu ? { gpu: { ...gpu, memoryGb: 24, resource: 'nvidia.com/gpu' } } : {}),
    },
    nodeGroup: { maxNodes: 20 },
    cost: { perHour },
  },
});
const M7I = kind('m7i-2xlarge', 8, 32, 0.4032);
const R7I = kind('r7i-2xlarge', 8, 64, 0.5292);
const L4X8 = kind('g6-48xlarge', 192, 768, 13.3504, { type: 'L4', count: 8 });
const L40S = kind('g6e-2xlarge', 8, 64, 2.24208, { type: 'L40S', count: 1 });

const unit = (id: string, replicas: number, profile: Profile, reach?: string[]): ReplicaUnit => ({
  id,
  model: id,
  replicas,
  profiles: [profile],
  ...(reach ? { reach } : {}),
});
const computesOf = (plan: ReturnType<typeof planPlacement>, id: string) =>
  plan.placements.find((p) => p.unitId === id)!.placements.map((p) => [p.compute, p.replicas]);

describe('planPlacement: kinds chosen with the nodes', () => {
  it('puts memory-heavy replicas in the spare memory of open m7i nodes instead of opening an r7i', () => {
    const computes = [M7I, R7I];
    const units = [
      // Each needs an m7i node of its own for its cores, and leaves 26 GiB of it unused.
      unit('cores', 3, { name: 'c', gpus: 0, cpuCores: 6, minMemoryGb: 4 }),
      // Alone, cheapest per replica on r7i (three a node); here they fit the m7i nodes' leftovers.
      unit('memory', 3, { name: 'm', gpus: 0, cpuCores: 1, minMemoryGb: 20 }),
    ];
    const old = planPlacement(computes, units, { strategy: 'ffd' });
    expect(computesOf(old, 'memory')).toEqual([['r7i-2xlarge', 3]]);
    expect(old.totals.costPerHour).toBe(1.7388);

    const plan = planPlacement(computes, units);
    expect(computesOf(plan, 'memory')).toEqual([['m7i-2xlarge', 3]]);
    expect(plan.totals).toMatchObject({ neededNodes: 3, costPerHour: 1.2096 });
    expect(plan.computes.find((c) => c.compute === 'r7i-2xlarge')!.neededNodes).toBe(0);
  });

  it('does not open a half-empty 8-GPU node for a few "any GPU" replicas, and opens it when they fill it', () => {
    const computes = [L4X8, L40S];
    const anyGpu: Profile = { name: 'any', gpus: 1, cpuCores: 4, minMemoryGb: 16 };
    // Per GPU the 8-GPU node is cheaper (1.67 against 2.24 $/h), so admission opens one for two replicas.
    const two = [unit('a', 2, anyGpu)];
    expect(planPlacement(computes, two, { strategy: 'ffd' }).totals.costPerHour).toBe(13.3504);
    const plan = planPlacement(computes, two);
    expect(computesOf(plan, 'a')).toEqual([['g6e-2xlarge', 2]]);
    expect(plan.totals.costPerHour).toBe(4.48416);

    // Eight of them fill it, and then it is the cheaper node.
    const eight = planPlacement(computes, [unit('a', 8, anyGpu)]);
    expect(computesOf(eight, 'a')).toEqual([['g6-48xlarge', 8]]);
    expect(eight.totals.costPerHour).toBe(13.3504);
  });

  it('uses the spare room across kinds only where a profile may go: GPU type, pinned compute, tenancy', () => {
    const mine = kind('team-m7i', 8, 32, 0.4032, undefined, 'team:a');
    const theirs = kind('team-b-m7i', 8, 32, 0.1, undefined, 'team:b');
    const computes = [L4X8, L40S, M7I, R7I, mine, theirs];
    const units = [
      // Two L4 replicas must use the 8-GPU L4 node however empty it stays.
      unit('l4', 2, { name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16 }),
      // "Any GPU" replicas may use its spare GPUs, which are free once it is open.
      unit('any', 3, { name: 'any', gpus: 1, cpuCores: 4, minMemoryGb: 16 }),
      // Pinned to r7i: stays there although the m7i nodes have room.
      unit('pinned', 1, { name: 'p', gpus: 0, cpuCores: 1, minMemoryGb: 4, compute: 'r7i-2xlarge' }),
      // team:a's model: its own compute or platform ones, never team:b's cheaper one.
      unit('tenant', 4, { name: 't', gpus: 0, cpuCores: 3, minMemoryGb: 8 }, ['team:a']),
    ];
    const plan = planPlacement(computes, units);
    expect(plan.headroom).toEqual([]);
    expect(computesOf(plan, 'l4')).toEqual([['g6-48xlarge', 2]]);
    expect(computesOf(plan, 'any')).toEqual([['g6-48xlarge', 3]]);
    expect(computesOf(plan, 'pinned')).toEqual([['r7i-2xlarge', 1]]);
    expect(computesOf(plan, 'tenant').every(([c]) => c !== 'team-b-m7i')).toBe(true);
    expect(plan.computes.find((c) => c.compute === 'team-b-m7i')!.replicas).toBe(0);
    // CPU-only replicas stay off the GPU node's spare cores: GPU nodes are kept for GPU work.
    const gpuNode = plan.computes.find((c) => c.compute === 'g6-48xlarge')!;
    expect(gpuNode.nodes).toHaveLength(1);
    expect([...new Set(gpuNode.nodes[0]!.replicas.map((r) => r.unitId))].sort()).toEqual(['any', 'l4']);
  });

  it('answers the same plan for the same input, and never costs more than the old choice', () => {
    fc.assert(
      fc.property(computesArb, unitsArb(), (computes, units) => {
        const plan = planPlacement(computes, units);
        expect(planPlacement(computes, units)).toEqual(plan);
        const old = planPlacement(computes, units, { strategy: 'ffd' });
        expect(plan.totals.costPerHour).toBeLessThanOrEqual(old.totals.costPerHour + 1e-9);
        expect(plan.totals.replicas).toBe(old.totals.replicas);
      }),
      { numRuns: 200 },
    );
  });

  // Mixes of the optimum bench (bench/optimum.ts) where the restarts and local moves stopped short of the
  // optimum HiGHS proves; each replica listed as [cores, GiB, count].
  const mixOf = (rows: [number, number, number][]) =>
    rows.map(([cpuCores, minMemoryGb, n], i) =>
      unit(`u${i}`, n, { name: `p${i}`, gpus: 0, cpuCores, minMemoryGb }),
    );

  it('packs one kind as tightly as the optimum where every node is nearly full in one dimension', () => {
    // Seed 98: 26 replicas on m7i.4xlarge; 4 nodes hold them (HiGHS), the plan used 5.
    const m7i4 = kind('m7i-4xlarge', 16, 64, 0.8064);
    const units = mixOf([
      [4, 8, 4],
      [2, 9, 3],
      [0.5, 1.5, 4],
      [2, 4.5, 6],
      [2, 30, 2],
      [4, 18, 4],
      [3, 18, 1],
      [0.5, 1, 2],
    ]);
    const plan = planPlacement([m7i4], units);
    expect(plan.headroom).toEqual([]);
    expect(plan.totals).toMatchObject({ replicas: 26, neededNodes: 4, costPerHour: 3.2256 });
  });

  it('puts cores-heavy replicas beside memory-heavy ones on r7i when the r7i nodes have the cores spare', () => {
    // Seed 42: 27 replicas over c7i.2xlarge and r7i.2xlarge; the optimum is 2 c7i and 5 r7i nodes (3.36 $/h),
    // the plan opened a c7i node for each 4-core replica beside r7i nodes full of cores (3.5574 $/h).
    const c7i = kind('c7i-2xlarge', 8, 16, 0.357);
    const units = [
      ...mixOf([
        [1, 6, 4],
        [2, 4.5, 2],
        [4, 9, 2],
        [4, 8, 5],
        [0.5, 1.5, 3],
        [0.5, 0.75, 4],
        [1, 4, 1],
        [1, 2, 2],
      ]),
      // Too big for a c7i node's memory.
      unit('r7i-only', 4, { name: 'big', gpus: 0, cpuCores: 2, minMemoryGb: 20 }),
    ];
    const plan = planPlacement([c7i, R7I], units);
    expect(plan.headroom).toEqual([]);
    expect(plan.totals.costPerHour).toBeLessThanOrEqual(3.36 * 1.01);
  });
});
