import fc from 'fast-check';
import {
  type CostCompute,
  type CostSample,
  costInputs,
  costOverPeriod,
  dominantShare,
  SHARED,
  splitCost,
} from '../../../lambdas/domain/cost';
import { planPlacement } from '../../../lambdas/domain/placement';
import { computesArb, unitsArb } from './placement/arbitraries';

// A g6e.12xlarge-like node: 4 GPUs, 47 cores, 370 GiB allocatable.
const alloc = { gpus: 4, millicores: 47_000, memoryMiB: 378_880 };
const gpuReplica = (scope: string, gpus: number, count = 1) => ({
  scope,
  count,
  request: { gpus, millicores: 4000, memoryMiB: 16_384 },
});
const node = (...replicas: CostCompute['nodes'][number]['replicas']) => ({ replicas });
const compute = (over: Partial<CostCompute>): CostCompute => ({
  compute: 'gpu',
  perHour: 10,
  allocatable: alloc,
  billedNodes: 1,
  nodes: [],
  ...over,
});

describe('splitCost', () => {
  it("charges each replica its dominant share of the node's price, and the rest is idle", () => {
    const [c] = splitCost([compute({ nodes: [node(gpuReplica('team:a', 2), gpuReplica('team:b', 1))] })]);
    expect(c!.scopes['team:a']).toBeCloseTo(5);
    expect(c!.scopes['team:b']).toBeCloseTo(2.5);
    expect(c!.idle).toBeCloseTo(2.5);
    expect(c!.perHour).toBe(10);
  });

  it('takes the dominant resource: a memory-heavy CPU replica pays for the memory it holds', () => {
    const r = { gpus: 0, millicores: 1000, memoryMiB: 189_440 };
    expect(dominantShare(r, alloc)).toBeCloseTo(0.5);
    const [c] = splitCost([compute({ nodes: [node({ scope: 'team:a', count: 1, request: r })] })]);
    expect(c!.scopes['team:a']).toBeCloseTo(5);
    expect(c!.idle).toBeCloseTo(5);
  });

  it('scales shares that add up to more than a node (GPU-heavy beside memory-heavy) down to its price', () => {
    const memory = { scope: 'team:b', count: 1, request: { gpus: 0, millicores: 1000, memoryMiB: 284_160 } };
    const [c] = splitCost([compute({ nodes: [node(gpuReplica('team:a', 3), memory)] })]);
    // 0.75 and 0.75: half each, nothing idle.
    expect(c!.scopes['team:a']).toBeCloseTo(5);
    expect(c!.scopes['team:b']).toBeCloseTo(5);
    expect(c!.idle).toBeCloseTo(0);
  });

  it('counts nodes kept beyond the plan (a cool-down) as idle, and a deleted compute as idle only', () => {
    const [kept, going] = splitCost([
      compute({ billedNodes: 3, nodes: [node(gpuReplica('team:a', 4))] }),
      compute({ compute: 'old', billedNodes: 2, nodes: [] }),
    ]);
    expect(kept!.scopes['team:a']).toBeCloseTo(10);
    expect(kept!.idle).toBeCloseTo(20);
    expect(going).toMatchObject({ perHour: 20, idle: 20, scopes: {} });
  });

  it('shares the nodes that bill among all the planned ones while the group grows', () => {
    const [c] = splitCost([
      compute({ billedNodes: 1, nodes: [node(gpuReplica('team:a', 4)), node(gpuReplica('team:b', 4))] }),
    ]);
    expect(c!.perHour).toBe(10);
    expect(c!.scopes['team:a']).toBeCloseTo(5);
    expect(c!.scopes['team:b']).toBeCloseTo(5);
  });

  it("charges a shared model's replicas to SHARED and an owned one's to its owner (costInputs)", () => {
    const spec = {
      cost: { perHour: 10 },
      node: {
        cpu: 48,
        memoryGb: 384,
        gpu: { type: 'L40S', count: 4, memoryGb: 48, resource: 'nvidia.com/gpu' },
      },
    };
    const plan = {
      computes: [
        {
          compute: 'gpu',
          allocatable: alloc,
          nodes: [
            {
              used: alloc,
              replicas: [
                { unitId: 'u1', count: 1 },
                { unitId: 'u2', count: 1 },
              ],
            },
          ],
        },
      ],
    };
    const profile = { name: 'p', gpus: 2, cpuCores: 4, minMemoryGb: 16 };
    const inputs = costInputs(
      plan,
      [{ name: 'gpu', spec, status: { desiredNodes: 1 } }],
      [
        { id: 'u1', model: 'mine', profiles: [profile] },
        { id: 'u2', model: 'everyones', profiles: [profile] },
      ],
      (m) => (m === 'mine' ? 'team:a' : undefined),
    );
    const [c] = splitCost(inputs);
    expect(c!.scopes).toEqual({ 'team:a': 5, [SHARED]: 5 });
  });

  it('adds up to the node groups’ cost within 1%, for any plan and any number of billed nodes', () => {
    fc.assert(
      fc.property(
        computesArb,
        unitsArb(),
        fc.array(fc.nat(6), { minLength: 12, maxLength: 12 }),
        (cs, us, billed) => {
          const plan = planPlacement(cs, us);
          const observed = cs.map((c, i) => ({ ...c, status: { desiredNodes: billed[i % billed.length]! } }));
          const split = splitCost(costInputs(plan, observed, us, () => 'team:x'));
          const whole = observed.reduce((n, c) => n + c.status.desiredNodes * c.spec.cost.perHour, 0);
          const parts = split.reduce(
            (n, c) => n + c.idle + Object.values(c.scopes).reduce((a, b) => a + b, 0),
            0,
          );
          expect(Math.abs(parts - whole)).toBeLessThanOrEqual(whole * 0.01 + 1e-9);
          for (const c of split) expect(c.idle).toBeGreaterThanOrEqual(0);
        },
      ),
    );
  });
});

describe('costOverPeriod', () => {
  const sample = (at: string, a: number, idle: number): CostSample => ({
    at,
    currency: 'USD',
    computes: [{ compute: 'gpu', nodes: 1, perHour: a + idle, idle, scopes: { 'team:a': a } }],
  });

  it('holds each sample until the next, from the one in force when the period began', () => {
    const samples = [
      sample('2026-01-01T09:30:00.000Z', 2, 1), // before the period: in force at 10:00
      sample('2026-01-01T11:00:00.000Z', 4, 0),
    ];
    const { total, series } = costOverPeriod(
      samples,
      new Date('2026-01-01T10:00:00Z'),
      new Date('2026-01-01T12:00:00Z'),
      2,
    );
    expect(total.scopes['team:a']).toBeCloseTo(2 + 4);
    expect(total.computes.gpu).toEqual({ cost: 3 + 4, idle: 1 });
    expect(total.total).toBeCloseTo(7);
    expect(series.map((b) => b.scopes['team:a'])).toEqual([2, 4]);
    expect(series[0]!.from).toBe('2026-01-01T10:00:00.000Z');
  });

  it('counts nothing before the first sample', () => {
    const { total } = costOverPeriod(
      [sample('2026-01-01T11:30:00.000Z', 2, 0)],
      new Date('2026-01-01T10:00:00Z'),
      new Date('2026-01-01T12:00:00Z'),
      4,
    );
    expect(total.scopes['team:a']).toBeCloseTo(1);
  });
});
