import { perReplica, profileOf, unitProfile } from '../../../lambdas/domain/resources';

describe('the one conversion between profiles and resources', () => {
  it('a replica holds its profile’s gpus, cores and minimum memory; no minimum is no memory', () => {
    expect(perReplica({ gpus: 2, cpuCores: 8, minMemoryGb: 64 })).toEqual({
      gpus: 2,
      cores: 8,
      memoryGb: 64,
    });
    expect(perReplica({ gpus: 0, cpuCores: 1.5 })).toEqual({ gpus: 0, cores: 1.5, memoryGb: 0 });
  });

  it('profileOf is its inverse', () => {
    for (const r of [
      { gpus: 1, cores: 4, memoryGb: 16 },
      { gpus: 0, cores: 2, memoryGb: 0 },
    ]) {
      expect(perReplica(profileOf('p', r))).toEqual(r);
    }
    expect(profileOf('cpu', { gpus: 0, cores: 2, memoryGb: 0 })).not.toHaveProperty('minMemoryGb');
  });

  it('a unit runs with its model’s own profile while the model has it (GPU type and pin included)', () => {
    const own = { name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'gpu-l4-1x' };
    const unit = { profile: 'l4', resources: { gpus: 1, cores: 4, memoryGb: 16 } };
    expect(unitProfile([own], unit)).toBe(own);
    expect(unitProfile([], unit)).toEqual({ name: 'l4', gpus: 1, cpuCores: 4, minMemoryGb: 16 });
    expect(unitProfile(undefined, unit)).toEqual({ name: 'l4', gpus: 1, cpuCores: 4, minMemoryGb: 16 });
  });
});
