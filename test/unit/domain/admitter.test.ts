import { admitterOrder, admitterWrites } from '../../../lambdas/domain/admission-world';
import { queuedStatus } from '../../../lambdas/domain/model';
import type { Decision, ModelAdmission } from '../../../lambdas/domain/quota';

/** The admitter's pure parts (service/admitter.ts): what a run writes, in which order, and what a read says meanwhile. */

const unit = (id: string, replicas: number) => ({
  id,
  replicas,
  placements: [{ compute: 'c', profile: 'p', replicas }],
});
const admission = (model: string, replicas: number, extra: Partial<ModelAdmission> = {}): ModelAdmission =>
  ({
    model,
    units: replicas ? [unit(`${model}#min`, replicas)] : [],
    pending: [],
    ...extra,
  }) as ModelAdmission;
const decision = (admissions: ModelAdmission[], changed: string[], removed: string[] = []) =>
  ({ admissions, changed, removed }) as unknown as Decision;

describe('admitterWrites', () => {
  const models = [
    { name: 'a', version: 3 },
    { name: 'b', version: 1 },
  ];

  it('writes nothing when every admission is as stored and of the model version in force', () => {
    const stored = [admission('a', 1, { modelVersion: 3 }), admission('b', 0, { modelVersion: 1 })];
    const w = admitterWrites(
      { models, admissions: stored },
      decision([admission('a', 1), admission('b', 0)], []),
    );
    expect(w).toEqual({ next: [], removed: [] });
  });

  it('stamps a decision the rules left unchanged when the model moved on, so the write reads as decided', () => {
    const stored = [admission('a', 1, { modelVersion: 2 }), admission('b', 0, { modelVersion: 1 })];
    const w = admitterWrites(
      { models, admissions: stored },
      decision([admission('a', 1), admission('b', 0)], []),
    );
    expect(w.next).toEqual([admission('a', 1, { modelVersion: 3 })]);
  });

  it('writes what changed and a model never decided, each with its version, and drops removed models', () => {
    const stored = [admission('a', 1, { modelVersion: 3 }), admission('gone', 2, { modelVersion: 5 })];
    const w = admitterWrites(
      { models, admissions: stored },
      decision([admission('a', 2), admission('b', 0)], ['a'], ['gone']),
    );
    expect(w.next).toEqual([admission('a', 2, { modelVersion: 3 }), admission('b', 0, { modelVersion: 1 })]);
    expect(w.removed).toEqual(['gone']);
  });
});

describe('admitterOrder', () => {
  it('puts removals first, then releases, then admissions, so every prefix of the slices is within every limit', () => {
    const before = [admission('grow', 1), admission('shrink', 3), admission('same', 1)];
    const after = [admission('grow', 3), admission('shrink', 1), admission('same', 1)];
    const order = admitterOrder(before, after, ['gone']);
    const sorted = ['grow', 'same', 'gone', 'shrink'].sort((x, y) => order(x) - order(y));
    expect(sorted).toEqual(['gone', 'shrink', 'same', 'grow']);
  });
});

describe('queuedStatus', () => {
  const spec = (min: number, target: number, max: number) => ({
    profiles: [],
    scaling: { min, target, max },
  });
  const status = (admitted: number, pending = 0) => ({ admitted, pending, reasons: [] as any[] });

  it('is the decision itself, of the version in force, once the admitter has decided it', () => {
    expect(queuedStatus({ version: 4, spec: spec(1, 2, 2) } as never, 4, true, status(2))).toEqual({
      ...status(2),
      observedVersion: 4,
    });
  });

  it('keeps the last decision and queues the replicas the new version adds, saying which version it is of', () => {
    const s = queuedStatus({ version: 5, spec: spec(1, 4, 4) } as never, 4, true, status(2));
    expect(s).toMatchObject({ admitted: 2, pending: 2, observedVersion: 4 });
    expect(s.reasons).toEqual([
      expect.objectContaining({
        reason: 'Queued',
        replicas: 2,
        message: expect.stringContaining('version 5'),
      }),
    ]);
  });

  it('queues nothing on a scale-down, and only says the figures are of an older version', () => {
    const s = queuedStatus({ version: 5, spec: spec(1, 1, 1) } as never, 4, true, status(3));
    expect(s).toEqual({ ...status(3), observedVersion: 4 });
  });

  it('queues every wanted replica of a model never decided, without claiming a version', () => {
    const s = queuedStatus({ version: 1, spec: spec(2, 2, 2) } as never, undefined, false, status(0));
    expect(s).not.toHaveProperty('observedVersion');
    expect(s.reasons).toEqual([expect.objectContaining({ reason: 'Queued', replicas: 2 })]);
  });

  it('counts replicas the last decision left pending once, not again as Queued', () => {
    const s = queuedStatus({ version: 6, spec: spec(1, 5, 5) } as never, 5, true, status(2, 2));
    expect(s.reasons).toEqual([expect.objectContaining({ reason: 'Queued', replicas: 1 })]);
    expect(s.pending).toBe(3);
  });
});
