import fc from 'fast-check';
import { NAME_PATTERN } from '../../../lambdas/domain/compute';
import {
  COMPUTE_ID_PATTERN,
  clientRequestToken,
  executionName,
  foreignMessage,
  incarnation,
  legacyComputeId,
  newComputeId,
  nodegroupName,
  nodegroupTags,
  ownerOf,
  ownsNodegroup,
} from '../../../lambdas/domain/nodegroup';

/** Names, tags and tokens that identify a compute's node group and work in AWS (domain/nodegroup.ts). */

const EKS_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
const SFN_NAME = /^[0-9A-Za-z_-]{1,80}$/;

const stageArb = fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,15}$/);
const nameArb = fc.stringMatching(NAME_PATTERN);

describe('node group names', () => {
  it('keeps llmcap-<stage>-<compute> when it fits in 63 characters', () => {
    expect(nodegroupName('dev', 'gpu-l4-1x')).toBe('llmcap-dev-gpu-l4-1x');
    expect(nodegroupName('Prod', 'a_b')).toBe('llmcap-prod-a-b');
  });

  it('gives two long names that share their first 54 characters different groups', () => {
    const a = `${'x'.repeat(44)}-alpha`;
    const b = `${'x'.repeat(44)}-bravo`;
    const na = nodegroupName('production', a);
    const nb = nodegroupName('production', b);
    expect(na).not.toBe(nb);
    for (const n of [na, nb]) {
      expect(n).toMatch(EKS_NAME);
      expect(n).toMatch(/^llmcap-production-x+-[0-9a-f]{8}$/);
    }
    // Stable: the same compute always maps to the same group.
    expect(nodegroupName('production', a)).toBe(na);
  });

  it('keeps the plain cut for computes stored before ids existed, whose groups carry that name', () => {
    const long = `${'x'.repeat(44)}-alpha`;
    expect(nodegroupName('production', long, true)).toBe(`llmcap-production-${'x'.repeat(44)}`);
  });

  it('is a valid EKS name, and distinct for distinct computes, for every stage and compute name', () => {
    fc.assert(
      fc.property(stageArb, nameArb, nameArb, (stage, a, b) => {
        const na = nodegroupName(stage, a);
        expect(na).toMatch(EKS_NAME);
        if (a !== b) expect(na).not.toBe(nodegroupName(stage, b));
      }),
      { numRuns: 500 },
    );
  });
});

describe('incarnation ids', () => {
  it('are fresh for every new item and use only lowercase letters and digits', () => {
    const ids = new Set(Array.from({ length: 1000 }, newComputeId));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(COMPUTE_ID_PATTERN);
  });

  it('are derived for items stored before ids existed, the same on every read and new for a re-creation', () => {
    const old = { name: 'gpu-l4-1x', createdAt: '2026-01-01T00:00:00.000Z' };
    const id = legacyComputeId(old.name, old.createdAt);
    expect(incarnation(old)).toEqual({ id, legacy: true });
    expect(incarnation({ ...old })).toEqual({ id, legacy: true });
    expect(id).toMatch(COMPUTE_ID_PATTERN);
    expect(incarnation({ ...old, createdAt: '2026-02-01T00:00:00.000Z' }).id).not.toBe(id);
    expect(incarnation({ ...old, uid: 'abc123def456' })).toEqual({ id: 'abc123def456', legacy: false });
  });
});

describe('execution names', () => {
  it('are <compute>-<kind>-g<generation>-<id>, new for each incarnation of the same compute name', () => {
    expect(executionName('gpu-l4-1x', 'provision', 1, 'k7m2q9xa4bc0')).toBe(
      'gpu-l4-1x-provision-g1-k7m2q9xa4bc0',
    );
    // Deleted and created again: generation 1 again, but another id, so not the name Step Functions kept.
    expect(executionName('gpu-l4-1x', 'provision', 1, 'z0y1x2w3v4t5')).not.toBe(
      executionName('gpu-l4-1x', 'provision', 1, 'k7m2q9xa4bc0'),
    );
  });

  it('fit in 80 characters of 0-9 A-Z a-z - _ whatever the compute name and generation', () => {
    fc.assert(
      fc.property(
        nameArb,
        fc.constantFrom('provision', 'scale', 'delete'),
        fc.integer({ min: 1, max: 2 ** 40 }),
        (name, kind, generation) => {
          const id = newComputeId();
          const n = executionName(name, kind, generation, id);
          expect(n).toMatch(SFN_NAME);
          // What makes it unique is never cut: only the compute part is shortened.
          expect(n.endsWith(`-${kind}-g${generation}-${id}`)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('EKS idempotency tokens', () => {
  it('differ between incarnations, kinds and generations, and repeat for the same work', () => {
    const t = clientRequestToken('k7m2q9xa4bc0', 'provision', 1);
    expect(clientRequestToken('k7m2q9xa4bc0', 'provision', 1)).toBe(t);
    expect(clientRequestToken('z0y1x2w3v4t5', 'provision', 1)).not.toBe(t);
    expect(clientRequestToken('k7m2q9xa4bc0', 'provision', 2)).not.toBe(t);
    expect(clientRequestToken('k7m2q9xa4bc0', 'scale', 1)).not.toBe(t);
  });
});

describe('who owns a node group', () => {
  const compute = { name: 'gpu-l4-1x', createdAt: '2026-01-01T00:00:00.000Z', uid: 'k7m2q9xa4bc0' };
  const owner = ownerOf('prod', compute);

  it('tags every group with stage, compute and incarnation', () => {
    expect(nodegroupTags(owner)).toEqual({
      'llmcap:stage': 'prod',
      'llmcap:compute': 'gpu-l4-1x',
      'llmcap:compute-id': 'k7m2q9xa4bc0',
    });
  });

  it.each([
    ['its own tags', nodegroupTags(owner), true],
    ['its own tags and more', { ...nodegroupTags(owner), team: 'ml' }, true],
    ['no tags', {}, false],
    ['another stage', { ...nodegroupTags(owner), 'llmcap:stage': 'dev' }, false],
    [
      'an earlier incarnation of the same name',
      { ...nodegroupTags(owner), 'llmcap:compute-id': 'z0y1x2w3v4t5' },
      false,
    ],
    [
      'an older llmcap (no id) for a compute that has one',
      { 'llmcap:stage': 'prod', 'llmcap:compute': 'gpu-l4-1x' },
      false,
    ],
  ])('decides a group with %s', (_what, tags, ours) => {
    expect(ownsNodegroup(tags, owner)).toBe(ours);
  });

  it("adopts an older llmcap's group (no id tag) only for a compute stored before ids existed, by name", () => {
    const legacy = ownerOf('prod', { name: 'gpu-l4-1x', createdAt: compute.createdAt });
    expect(legacy.legacy).toBe(true);
    expect(ownsNodegroup({ 'llmcap:stage': 'prod', 'llmcap:compute': 'gpu-l4-1x' }, legacy)).toBe(true);
    expect(ownsNodegroup({ 'llmcap:stage': 'prod', 'llmcap:compute': 'gpu-l4-2x' }, legacy)).toBe(false);
    expect(
      ownsNodegroup(
        { 'llmcap:stage': 'prod', 'llmcap:compute': 'gpu-l4-1x', 'llmcap:compute-id': '' },
        legacy,
      ),
    ).toBe(true);
    expect(ownsNodegroup(nodegroupTags(legacy), legacy)).toBe(true);
  });

  it('says whose tags it found, what llmcap expects, and what to do', () => {
    expect(foreignMessage('llmcap-prod-gpu-l4-1x', { team: 'data' }, owner)).toBe(
      `node group llmcap-prod-gpu-l4-1x exists and is not llmcap's (tags {"team":"data"}; llmcap expects llmcap:stage=prod and llmcap:compute-id=k7m2q9xa4bc0): rename the compute or delete that node group`,
    );
  });
});
