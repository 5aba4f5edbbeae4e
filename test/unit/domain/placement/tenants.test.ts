import { issuesError, validateCatalog } from '../../../../lambdas/domain/catalog';
import type { Profile } from '../../../../lambdas/domain/model';
import { type ComputeLike, PlacementHeadroom, planPlacement } from '../../../../lambdas/domain/placement';
import { checkStart, ScopeTree } from '../../../../lambdas/domain/quota';

/**
 * Issue 17 §1: two tenants side by side. team:a's models may use platform computes, team:a's and org:acme's
 * (above it), never team:b's, which team:a cannot even see; a refusal reads as if team:b's did not exist.
 */

const tree = new ScopeTree([
  { name: 'org:acme' },
  { name: 'team:a', parent: 'org:acme' },
  { name: 'team:b', parent: 'org:acme' },
]);
const reach = (owner: string | undefined) => tree.reach(owner);

const compute = (name: string, owner: string | undefined, gpu?: string) => ({
  name,
  ...(owner ? { owner } : {}),
  spec: {
    node: {
      cpu: 32,
      memoryGb: 256,
      ...(gpu ? { gpu: { type: gpu, count: 4, memoryGb: 80, resource: 'nvidia.com/gpu' } } : {}),
    },
    nodeGroup: { maxNodes: 2 },
    cost: { perHour: 1 },
  },
});
const COMPUTES: ComputeLike[] = [
  compute('shared-cpu', undefined),
  compute('a-h100', 'team:a', 'H100'),
  compute('acme-a10g', 'org:acme', 'A10G'),
  compute('b-l40s', 'team:b', 'L40S'),
];

const gpu = (name: string, extra: Partial<Profile> = {}): Profile => ({
  name,
  gpus: 1,
  cpuCores: 2,
  minMemoryGb: 8,
  ...extra,
});
const model = (name: string, owner: string, profiles: Profile[], fallback?: string) => ({
  name,
  owner,
  spec: {
    source: 'hf://x/y',
    engine: 'vllm' as const,
    profiles,
    scaling: { min: 1, max: 1 },
    class: 'standard' as const,
    ...(fallback ? { fallback } : {}),
  },
  createdAt: '2026-01-01T00:00:00Z',
});
// The refusal for `name`, with the name replaced, so that two refusals can be compared word for word.
const messages = (issues: { message: string }[], name: string) =>
  issues.map((i) => i.message.replaceAll(name, '<name>'));

describe("a tenant cannot use another tenant's computes", () => {
  it("refuses a pin to another tenant's compute exactly as a pin to a compute that does not exist", () => {
    const pinned = (c: string) =>
      validateCatalog([model('a-model', 'team:a', [gpu('p', { compute: c })])] as never, COMPUTES, reach);
    const other = pinned('b-l40s');
    const missing = pinned('no-such-compute');
    expect(other).toHaveLength(1);
    expect(messages(other, 'b-l40s')).toEqual(messages(missing, 'no-such-compute'));
    expect(other[0]!.kind).toBe(missing[0]!.kind);
    // Its own compute, its org's, and team:b's own pin are fine.
    expect(pinned('a-h100')).toEqual([]);
    expect(pinned('acme-a10g')).toEqual([]);
    expect(
      validateCatalog(
        [model('b-model', 'team:b', [gpu('p', { compute: 'b-l40s' })])] as never,
        COMPUTES,
        reach,
      ),
    ).toEqual([]);
  });

  it("refuses a fallback to another tenant's model exactly as a fallback to a model not in the catalog", () => {
    const b = model('b-model', 'team:b', [gpu('p', { gpuType: 'L40S' })]);
    const withFallback = (fb: string) =>
      validateCatalog([b, model('a-model', 'team:a', [gpu('p')], fb)] as never, COMPUTES, reach);
    const other = withFallback('b-model');
    const missing = withFallback('no-such-model');
    expect(other).toHaveLength(1);
    expect(messages(other, 'b-model')).toEqual(messages(missing, 'no-such-model'));
    // A model of the org above may be a fallback.
    const acme = model('acme-model', 'org:acme', [gpu('p')]);
    expect(
      validateCatalog([acme, model('a-model', 'team:a', [gpu('p')], 'acme-model')] as never, COMPUTES, reach),
    ).toEqual([]);
  });

  it('says what is true only to a caller who may see the model or compute out of reach', () => {
    const b = model('b-model', 'team:b', [gpu('p', { gpuType: 'L40S' })]);
    const issues = validateCatalog(
      [b, model('a-model', 'team:a', [gpu('p', { compute: 'b-l40s' })], 'b-model')] as never,
      COMPUTES,
      reach,
    );
    const seen = (canSee: boolean) =>
      issuesError(issues, { canSee: () => canSee }).details.errors!.map((e) => e.message);
    expect(seen(false)).toEqual(issues.map((i) => i.message));
    expect(seen(false).join()).not.toContain('team:b');
    expect(seen(true)).toEqual([
      expect.stringMatching(
        /^model a-model: profile p pins compute b-l40s, which is owned by scope team:b, outside the reach of its owner team:a/,
      ),
      expect.stringMatching(
        /^model a-model: fallback b-model is owned by scope team:b, outside the reach of its owner team:a/,
      ),
    ]);
  });

  it("refuses an unpinned profile whose GPU type only another tenant's compute has, as if none had it", () => {
    const l40s = [model('a-model', 'team:a', [gpu('p', { gpuType: 'L40S' })])];
    const issues = validateCatalog(l40s as never, COMPUTES, reach);
    const none = validateCatalog(
      l40s as never,
      COMPUTES.filter((c) => c.name !== 'b-l40s'),
      reach,
    );
    expect(issues.map((i) => i.message)).toEqual(none.map((i) => i.message));
    expect(issues).toHaveLength(1);
    expect(issues[0]!.message).not.toContain('b-l40s');
  });

  it('admission and the batch plan never place a replica there, even with room', () => {
    const m = model('a-model', 'team:a', [gpu('p', { gpuType: 'L40S' })]);
    const unit = { id: 'a-model#min', model: 'a-model', profiles: m.spec.profiles, replicas: 1 };
    const h = PlacementHeadroom.create(COMPUTES);
    expect(h.place({ ...unit, reach: reach('team:a') }).ok).toBe(false);
    expect(h.candidateComputes({ ...unit, reach: reach('team:a') })).toEqual([]);
    expect(h.place({ ...unit, id: 'b#min', reach: reach('team:b') })).toMatchObject({
      ok: true,
      placements: [{ compute: 'b-l40s' }],
    });
    const plan = planPlacement(COMPUTES, [{ ...unit, reach: reach('team:a') }]);
    expect(plan.placements).toEqual([]);
    expect(plan.headroom).toHaveLength(1);
    const start = checkStart(
      { scopes: tree, quotas: [], models: [m], admissions: [], headroom: h, now: '2026-01-01T00:00:00Z' },
      m,
    );
    expect(start).toMatchObject({ ok: false, reason: 'Headroom' });
    // An unpinned profile any GPU fits goes to the tenant's own or its org's compute, never team:b's.
    const any = { ...unit, id: 'any#min', profiles: [gpu('p')], replicas: 16, reach: reach('team:a') };
    const placed = PlacementHeadroom.create(COMPUTES).place(any);
    expect(placed.ok).toBe(true);
    if (placed.ok) expect(placed.placements.map((p) => p.compute).sort()).toEqual(['a-h100', 'acme-a10g']);
  });

  it('a shared model (no owner) uses platform computes only', () => {
    expect(tree.reach(undefined)).toEqual([]);
    const h = PlacementHeadroom.create(COMPUTES);
    const unit = { id: 'u', model: 'm', profiles: [gpu('p')], replicas: 1 };
    expect(h.place(unit).ok).toBe(false);
    expect(tree.reach('team:a')).toEqual(['team:a', 'org:acme']);
  });
});
