import type { ReplicaUnit } from '../../../../lambdas/domain/headroom';
import type { Profile } from '../../../../lambdas/domain/model';
import { PlacementHeadroom } from '../../../../lambdas/domain/placement';
import { BUILTIN_COMPUTES, withMaxNodes } from '../../../helpers/computes';

const l40sx4: Profile = { name: 'l40sx4', gpus: 4, gpuType: 'L40S', cpuCores: 16, minMemoryGb: 128 };
const h100x4: Profile = { name: 'h100x4', gpus: 4, gpuType: 'H100', cpuCores: 16, minMemoryGb: 128 };
const l4: Profile = { name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16 };
const cpu: Profile = { name: 'cpu', gpus: 0, cpuCores: 2, minMemoryGb: 4 };
const unit = (id: string, replicas: number, ...profiles: Profile[]): ReplicaUnit => ({
  id,
  model: id.split('#')[0]!,
  replicas,
  profiles,
});
const used = (h: PlacementHeadroom) =>
  Object.fromEntries(
    h
      .usage()
      .filter((u) => u.replicas > 0)
      .map((u) => [u.compute, [u.usedNodes, u.replicas]]),
  );

describe('PlacementHeadroom', () => {
  it('places a unit all or nothing and says which compute is full', () => {
    const h = PlacementHeadroom.create(BUILTIN_COMPUTES);
    expect(h.place(unit('a#min', 1, l40sx4))).toMatchObject({
      ok: true,
      placements: [{ compute: 'gpu-l40s-4x', profile: 'l40sx4', replicas: 1 }],
    });
    expect(h.place(unit('b#min', 1, l40sx4))).toEqual({
      ok: false,
      message: 'no compute can take a 4-gpu L40S replica: gpu-l40s-4x is at its maxNodes 1',
      candidateComputes: ['gpu-l40s-4x'],
    });
    const before = used(h);
    // Five L4 replicas: four fit (maxNodes 4), so none is placed.
    expect(h.place(unit('c#min', 5, l4))).toMatchObject({
      ok: false,
      message: 'no compute can take 5 replicas of 1-gpu L4: gpu-l4-1x has room for 4 within its maxNodes 4',
    });
    expect(used(h)).toEqual(before);
  });

  it('falls back to the next profile, and spills to the next compute when the cheapest is full', () => {
    const h = PlacementHeadroom.create(BUILTIN_COMPUTES);
    h.place(unit('a#min', 1, l40sx4));
    const r = h.place(unit('b#min', 1, l40sx4, h100x4));
    expect(r).toMatchObject({
      ok: true,
      profile: h100x4,
      placements: [{ compute: 'gpu-h100-8x', replicas: 1 }],
    });
    // 13 CPU replicas of 2 cores: 3 per cpu-medium node (12 on 4 nodes), then cpu-small takes the 13th.
    expect(h.place(unit('c#min', 13, cpu))).toMatchObject({
      ok: true,
      placements: [
        { compute: 'cpu-medium', replicas: 12 },
        { compute: 'cpu-small', replicas: 1 },
      ],
    });
    expect(used(h)).toMatchObject({ 'cpu-medium': [4, 12], 'cpu-small': [1, 1] });
  });

  it('uses a GPU compute for CPU-only replicas only once the CPU computes are full', () => {
    const h = PlacementHeadroom.create(BUILTIN_COMPUTES);
    const r = h.place(unit('c#min', 17, cpu));
    expect(r.ok && r.placements).toEqual([
      { compute: 'cpu-medium', profile: 'cpu', replicas: 12 },
      { compute: 'cpu-small', profile: 'cpu', replicas: 4 },
      { compute: 'gpu-l4-1x', profile: 'cpu', replicas: 1 },
    ]);
  });

  it('names every profile when none fits', () => {
    const h = PlacementHeadroom.create(BUILTIN_COMPUTES);
    h.place(unit('a#min', 1, l40sx4));
    h.place(unit('b#min', 2, h100x4));
    expect(h.place(unit('c#min', 1, l40sx4, h100x4, { ...l4, gpuType: 'B200' }))).toMatchObject({
      ok: false,
      message:
        'no compute can take a 4-gpu L40S replica (profile l40sx4): gpu-l40s-4x is at its maxNodes 1; ' +
        'no compute can take a 4-gpu H100 replica (profile h100x4): gpu-h100-8x is at its maxNodes 1; ' +
        'no compute has a node that can hold a 1-gpu B200 replica',
      candidateComputes: ['gpu-l40s-4x', 'gpu-h100-8x'],
    });
  });

  it('releases exactly what a unit held; release of an unknown unit is a no-op', () => {
    const h = PlacementHeadroom.create(BUILTIN_COMPUTES);
    h.place(unit('a#min', 1, l40sx4));
    h.place(unit('c#min', 5, cpu));
    h.release('a#min');
    h.release('nope');
    expect(used(h)).toEqual({ 'cpu-medium': [2, 5] });
    expect(h.placementOf('a#min')).toBeUndefined();
    expect(h.place(unit('b#min', 1, l40sx4)).ok).toBe(true);
    h.release('c#min');
    expect(used(h)).toEqual({ 'gpu-l40s-4x': [1, 1] });
  });

  it('fits again what a release frees, after a refusal on the same compute', () => {
    const h = PlacementHeadroom.create(BUILTIN_COMPUTES);
    h.place(unit('a#min', 1, l40sx4));
    expect(h.place(unit('b#min', 1, l40sx4)).ok).toBe(false);
    const trial = h.clone();
    trial.release('a#min');
    expect(trial.place(unit('b#min', 1, l40sx4)).ok).toBe(true);
    expect(h.place(unit('b#min', 1, l40sx4)).ok).toBe(false);
    h.release('a#min');
    expect(h.place(unit('b#min', 1, l40sx4)).ok).toBe(true);
  });

  it('after a release, places on the cheapest compute again though it was full for that replica before', () => {
    const h = PlacementHeadroom.create(BUILTIN_COMPUTES);
    // 12 CPU replicas fill cpu-medium (3 a node on its 4 nodes); the next one goes to cpu-small.
    h.place(unit('a#min', 12, cpu));
    expect(h.place(unit('b#min', 1, cpu))).toMatchObject({
      ok: true,
      placements: [{ compute: 'cpu-small', replicas: 1 }],
    });
    h.release('a#min');
    expect(h.place(unit('c#min', 1, cpu))).toMatchObject({
      ok: true,
      placements: [{ compute: 'cpu-medium', replicas: 1 }],
    });
  });

  it('refuses to place the same unit twice', () => {
    const h = PlacementHeadroom.create(BUILTIN_COMPUTES);
    h.place(unit('a#min', 1, cpu));
    expect(h.place(unit('a#min', 1, cpu))).toMatchObject({ ok: false, message: /already placed/ });
  });

  it('clones independently in both directions (a trial plan can be dropped or adopted)', () => {
    const h = PlacementHeadroom.create(BUILTIN_COMPUTES);
    h.place(unit('a#min', 1, l40sx4));
    h.place(unit('c#min', 3, cpu));
    const trial = h.clone();
    trial.release('a#min');
    expect(trial.place(unit('b#min', 1, l40sx4)).ok).toBe(true);
    trial.place(unit('d#min', 3, cpu));
    expect(used(h)).toEqual({ 'gpu-l40s-4x': [1, 1], 'cpu-medium': [1, 3] });
    expect(h.placementOf('a#min')).toBeDefined();
    expect(h.placementOf('b#min')).toBeUndefined();
    // The original moves on; the trial does not see it.
    h.release('c#min');
    expect(used(trial)).toEqual({ 'gpu-l40s-4x': [1, 1], 'cpu-medium': [2, 6] });
    expect(trial.placementOf('a#min')).toBeUndefined();
    expect(trial.placementOf('c#min')).toBeDefined();
  });

  it('stays correct through many adopted clones (the unit table merges its layers)', () => {
    let h = PlacementHeadroom.create(withMaxNodes(BUILTIN_COMPUTES, 100));
    for (let i = 0; i < 100; i++) {
      const next = h.clone();
      expect(next.place(unit(`m${i}#min`, 1, cpu)).ok).toBe(true);
      if (i % 3 === 0) next.release(`m${i - 3}#min`);
      h = next;
    }
    const live = h.records().map((r) => r.unitId);
    expect(live).toHaveLength(100 - 33);
    expect(h.placementOf('m0#min')).toBeUndefined();
    expect(h.placementOf('m1#min')).toBeDefined();
    expect(h.usage().reduce((n, u) => n + u.replicas, 0)).toBe(67);
  });

  it('lists the computes that could host a unit if they had room', () => {
    const h = PlacementHeadroom.create(BUILTIN_COMPUTES);
    expect(h.candidateComputes(unit('x#1', 1, l40sx4, { ...l4, gpuType: undefined }))).toEqual([
      'gpu-l40s-4x',
      'gpu-l4-1x',
      'gpu-a10g-1x',
      'gpu-l40s-1x',
      'gpu-h100-8x',
    ]);
  });
});
