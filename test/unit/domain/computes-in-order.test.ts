import { restoreHeadroom } from '../../../lambdas/domain/admission-world';
import { validateModel } from '../../../lambdas/domain/catalog';
import { ProfileSchema } from '../../../lambdas/domain/model';
import { PlacementHeadroom } from '../../../lambdas/domain/placement';
import { type AdmissionModel, decide, ScopeTree } from '../../../lambdas/domain/quota';
import { admissibleComputes } from '../../../lambdas/domain/supply';
import { builtin } from '../../helpers/computes';

// Issue 32 §3: a profile may name several computes in order of preference; placement honours that order, and
// a compute short of capacity passes its replicas to the next.

const NOW = '2026-12-06T03:00:00.000Z';
const later = (ms: number) => new Date(Date.parse(NOW) + ms).toISOString();

function pool(name: string, perHour: number, maxNodes: number, supply?: object) {
  const b = builtin('gpu-l4-1x');
  return {
    name,
    spec: { ...b.spec, nodeGroup: { ...b.spec.nodeGroup, maxNodes }, cost: { ...b.spec.cost, perHour } },
    status: { readyNodes: 0 },
    ...(supply ? { supply } : {}),
  };
}

const profile = {
  name: 'l4',
  gpus: 1,
  gpuType: 'L4',
  cpuCores: 2,
  minMemoryGb: 8,
  computes: ['first', 'second'],
};
const model = (min: number): AdmissionModel => ({
  name: 'chat',
  createdAt: NOW,
  spec: { profiles: [profile], scaling: { min, max: min } },
});

const placements = (computes: object[], min: number, now = NOW) =>
  decide({
    scopes: [],
    quotas: [],
    models: [model(min)],
    admissions: [],
    headroom: PlacementHeadroom.create(admissibleComputes(computes as never, now)),
    now,
  }).admissions[0]!.units.flatMap((u) => u.placements.map((p) => `${p.compute}×${p.replicas}`));

describe('computes in order of preference (issue 32 §3)', () => {
  it('fills the first named compute, though dearer, before the next, and names no other', () => {
    const computes = [pool('first', 2, 2), pool('second', 1, 4), pool('cheapest', 0.1, 10)];
    expect(placements(computes, 2)).toEqual(['first×2']);
    expect(placements(computes, 3)).toEqual(['first×2', 'second×1']);
  });

  it('passes over the first while it is short of capacity past the grace, and comes back at its probe', () => {
    const shortage = {
      shortOfCapacity: {
        since: NOW,
        message: 'InsufficientInstanceCapacity',
        lastFailureAt: NOW,
        probes: 0,
        countedUntil: later(60_000),
        nextProbeAt: later(600_000),
      },
    };
    const computes = [pool('first', 2, 2, shortage), pool('second', 1, 4)];
    expect(placements(computes, 1, later(1_000))).toEqual(['first×1']);
    expect(placements(computes, 1, later(120_000))).toEqual(['second×1']);
    expect(placements(computes, 1, later(600_000))).toEqual(['first×1']);
    // Admitted on the first, then short: the replica leaves it and is placed on the second.
    const admission = {
      model: 'chat',
      units: [
        {
          id: 'chat#min',
          kind: 'min',
          replicas: 1,
          profile: 'l4',
          resources: { gpus: 1, cores: 2, memoryGb: 8 },
          placements: [{ compute: 'first', profile: 'l4', replicas: 1 }],
          admittedAt: NOW,
          borrowed: false,
        },
      ],
    } as never;
    const asModel = { ...model(1), spec: { ...model(1).spec, source: 'hf://o/m', engine: 'vllm' as const } };
    const kept = restoreHeadroom(
      computes as never,
      [admission],
      [asModel],
      new ScopeTree([]),
      later(120_000),
    );
    expect(kept.admissions[0]!.units).toEqual([]);
  });

  it('refuses a list naming a compute that does not exist or cannot hold the replica, and both compute and computes', () => {
    const issues = validateModel(
      {
        name: 'chat',
        spec: {
          source: 'hf://o/m',
          engine: 'vllm',
          profiles: [{ ...profile, computes: ['first', 'nowhere'] }],
          scaling: { min: 1, max: 1 },
        },
      } as never,
      [pool('first', 1, 2)] as never,
    );
    expect(issues).toEqual([
      expect.objectContaining({
        path: 'spec.profiles[0].computes',
        message: expect.stringContaining('profile l4 names compute nowhere, which does not exist'),
      }),
    ]);
    const both = ProfileSchema.safeParse({ ...profile, compute: 'first' });
    expect(both.success).toBe(false);
    expect(JSON.stringify(both.error?.issues)).toContain('sets both compute and computes');
    const twice = ProfileSchema.safeParse({ ...profile, computes: ['first', 'first'] });
    expect(JSON.stringify(twice.error?.issues)).toContain('compute first is already computes[0]');
  });
});
