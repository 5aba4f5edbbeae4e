import fc from 'fast-check';
import type { ReplicaUnit } from '../../../../lambdas/domain/headroom';
import type { Profile } from '../../../../lambdas/domain/model';
import type { ComputeLike } from '../../../../lambdas/domain/placement';

/** Small random clusters and workloads: few nodes per compute, so maxNodes and headroom are hit often. */

const GPU_TYPES = ['L4', 'L40S'];

export const computesArb: fc.Arbitrary<ComputeLike[]> = fc
  .array(
    fc.record({
      cpu: fc.constantFrom(2, 4, 8, 16, 48),
      memoryGb: fc.constantFrom(8, 16, 32, 64, 384),
      gpu: fc.option(
        fc.record({ type: fc.constantFrom(...GPU_TYPES), count: fc.integer({ min: 1, max: 8 }) }),
        {
          nil: undefined,
        },
      ),
      maxNodes: fc.integer({ min: 1, max: 6 }),
      perHour: fc.double({ min: 0.1, max: 20, noNaN: true }),
    }),
    { minLength: 1, maxLength: 5 },
  )
  .map((cs) =>
    cs.map((c, i) => ({
      name: `c${i}`,
      spec: {
        node: {
          cpu: c.cpu,
          memoryGb: c.memoryGb,
          gpu: c.gpu ? { ...c.gpu, memoryGb: 24, resource: 'nvidia.com/gpu' } : undefined,
        },
        nodeGroup: { maxNodes: c.maxNodes },
        cost: { perHour: c.perHour },
      },
    })),
  );

const profileArb = (i: number): fc.Arbitrary<Profile> =>
  fc.record({
    name: fc.constant(`p${i}`),
    gpus: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 8 })),
    gpuType: fc.option(fc.constantFrom(...GPU_TYPES), { nil: undefined }),
    cpuCores: fc.constantFrom(0.25, 0.5, 1, 1.5, 2, 4, 8, 16),
    minMemoryGb: fc.option(fc.constantFrom(0.5, 1, 4, 16, 64), { nil: undefined }),
    compute: fc.option(fc.constantFrom('c0', 'c1', 'c9'), { nil: undefined, freq: 8 }),
  }) as fc.Arbitrary<Profile>;

export const unitsArb = (max = 25): fc.Arbitrary<ReplicaUnit[]> =>
  fc
    .array(
      fc.record({
        replicas: fc.integer({ min: 1, max: 6 }),
        profiles: fc.tuple(profileArb(0), profileArb(1), profileArb(2)),
        profileCount: fc.integer({ min: 1, max: 3 }),
      }),
      { maxLength: max },
    )
    .map((us) =>
      us.map((u, i) => ({
        id: `m${i}#min`,
        model: `m${i}`,
        replicas: u.replicas,
        profiles: u.profiles.slice(0, u.profileCount),
      })),
    );
