import {
  Accounting,
  assertQuotaWrite,
  capacityView,
  checkQuotaWrite,
  type Quota,
  QuotaBook,
  QuotaSpecSchema,
  ScopeTree,
  validateScopeCreate,
  validateScopeDelete,
} from '../../../../lambdas/domain/quota';
import { ACME_SCOPES, asRole } from '../../../helpers/principals';
import { World } from './world';

const tree = new ScopeTree(ACME_SCOPES);

describe('scope tree', () => {
  test('paths, children, lowest common ancestor', () => {
    expect(tree.ancestors('project:chat')).toEqual(['project:chat', 'team:ml', 'org:acme']);
    expect(tree.children('team:ml')).toEqual(['project:chat', 'project:search']);
    expect(tree.names[tree.lca(tree.id('project:chat'), tree.id('project:solo'))]).toBe('org:acme');
    expect(tree.lca(tree.id('project:chat'), tree.id('org:other'))).toBe(-1);
    expect(tree.isAncestorOrSelf(tree.id('team:ml'), tree.id('project:chat'))).toBe(true);
    expect(tree.isAncestorOrSelf(tree.id('project:chat'), tree.id('team:ml'))).toBe(false);
  });

  test('roles inherit down the tree; members below see what is above', () => {
    expect(tree.roleIn(asRole('ml-admin'), 'project:chat')).toBe('admin');
    expect(tree.roleIn(asRole('ml-viewer'), 'project:search')).toBe('viewer');
    expect(tree.roleIn(asRole('ml-admin'), 'org:acme')).toBeUndefined();
    expect(tree.isMemberAtOrBelow(asRole('chat-editor'), 'org:acme')).toBe(true);
    expect(tree.isMemberAtOrBelow(asRole('chat-editor'), 'project:search')).toBe(false);
  });

  test('creating scopes follows org / team / project', () => {
    expect(() => validateScopeCreate(tree, { name: 'team:new', parent: 'org:acme' })).not.toThrow();
    expect(() => validateScopeCreate(tree, { name: 'project:new', parent: 'org:acme' })).not.toThrow();
    expect(() => validateScopeCreate(tree, { name: 'org:new' })).not.toThrow();
    expect(() => validateScopeCreate(tree, { name: 'team:ml', parent: 'org:acme' })).toThrow(
      'scope team:ml already exists',
    );
    expect(() => validateScopeCreate(tree, { name: 'team:x' })).toThrow('a team needs a parent (org)');
    expect(() => validateScopeCreate(tree, { name: 'team:x', parent: 'team:ml' })).toThrow(
      'a team sits under an org',
    );
    expect(() => validateScopeCreate(tree, { name: 'project:x', parent: 'project:chat' })).toThrow(
      'a project sits under a team or an org',
    );
    expect(() => validateScopeCreate(tree, { name: 'org:x', parent: 'org:acme' })).toThrow(/has no parent/);
    expect(() => validateScopeCreate(tree, { name: 'team:x', parent: 'org:none' })).toThrow(/does not exist/);
    expect(() => validateScopeCreate(tree, { name: 'Team:X' })).toThrow(/org:<id>/);
  });

  test('a scope with children or models cannot be deleted', () => {
    expect(() => validateScopeDelete(tree, 'team:ml', [])).toThrow(
      'team:ml still holds scopes project:chat, project:search; move or delete them first',
    );
    expect(() => validateScopeDelete(tree, 'project:chat', ['llama'])).toThrow(/holds models llama/);
    expect(() => validateScopeDelete(tree, 'project:search', [], ['gpu-a'])).toThrow(/holds computes gpu-a/);
    expect(() => validateScopeDelete(tree, 'project:search', [])).not.toThrow();
  });

  test('a broken tree is refused when loaded', () => {
    expect(() => new ScopeTree([{ name: 'team:a', parent: 'org:none' }])).toThrow(/does not exist/);
    expect(
      () =>
        new ScopeTree([
          { name: 'team:a', parent: 'team:b' },
          { name: 'team:b', parent: 'team:a' },
        ]),
    ).toThrow(/cycle/);
  });
});

describe('quota validation', () => {
  const base: Quota[] = [
    { scope: 'team:ml', guarantee: { gpus: 10 }, limit: { gpus: 12 } },
    { scope: 'project:chat', guarantee: { gpus: 6 }, limit: { gpus: 12 } },
    { scope: 'project:search', guarantee: { gpus: 4 } },
  ];

  test.each([
    [
      'the children guarantee more than the parent holds',
      { scope: 'team:ml', guarantee: { gpus: 8 }, limit: { gpus: 12 } },
      'team:ml guarantees 10 gpus to its children but holds 8',
    ],
    [
      'a child raises the children sum',
      { scope: 'project:search', guarantee: { gpus: 5 } },
      'team:ml guarantees 11 gpus to its children but holds 10',
    ],
    [
      'a limit below the guarantee',
      { scope: 'project:chat', guarantee: { gpus: 6 }, limit: { gpus: 5 } },
      'project:chat limits gpus to 5 gpus, below its guarantee of 6 gpus',
    ],
    [
      'a child limit above the parent limit',
      { scope: 'project:chat', guarantee: { gpus: 6 }, limit: { gpus: 13 } },
      "project:chat limits gpus to 13 gpus, above team:ml's limit of 12 gpus",
    ],
    [
      'a parent limit below a child limit',
      { scope: 'team:ml', guarantee: { gpus: 10 }, limit: { gpus: 11 } },
      "project:chat limits gpus to 12 gpus, above team:ml's limit of 11 gpus",
    ],
    [
      'through a scope without a quota',
      { scope: 'org:acme', guarantee: { gpus: 9 } },
      'org:acme guarantees 10 gpus to its children but holds 9',
    ],
    [
      'other resources',
      { scope: 'team:ml', guarantee: { gpus: 10, memoryGb: 64 }, limit: { gpus: 12, memoryGb: 32 } },
      'team:ml limits memory to 32 GB of memory, below its guarantee of 64 GB of memory',
    ],
  ])('refused: %s', (_, write, message) => {
    const r = checkQuotaWrite(tree, base, write);
    expect(r).toMatchObject({ ok: false });
    expect(!r.ok && r.message).toBe(message);
    expect(() => assertQuotaWrite(tree, base, write)).toThrow(`quota refused: ${message}`);
  });

  test('accepted writes return the next set; deleting a quota is always fine', () => {
    const r = checkQuotaWrite(tree, base, {
      scope: 'org:acme',
      guarantee: { gpus: 12 },
      limit: { gpus: 20 },
    });
    expect(r.ok && r.quotas.map((q) => q.scope)).toEqual([
      'team:ml',
      'project:chat',
      'project:search',
      'org:acme',
    ]);
    expect(checkQuotaWrite(tree, base, { scope: 'team:ml', delete: true })).toMatchObject({ ok: true });
    expect(checkQuotaWrite(tree, base, { scope: 'team:none', guarantee: {} })).toMatchObject({ ok: false });
    // A limit above a grandparent's is refused even with no quota in between.
    const withOrg = [...base.slice(1), { scope: 'org:acme', guarantee: { gpus: 10 }, limit: { gpus: 11 } }];
    expect(
      checkQuotaWrite(tree, withOrg, {
        scope: 'project:search',
        guarantee: { gpus: 4 },
        limit: { gpus: 20 },
      }),
    ).toMatchObject({
      ok: false,
      message: "project:search limits gpus to 20 gpus, above org:acme's limit of 11 gpus",
    });
  });

  test('the body schema: whole GPUs, no negatives, no unknown keys', () => {
    expect(QuotaSpecSchema.safeParse({ guarantee: { gpus: 1.5 } }).success).toBe(false);
    expect(QuotaSpecSchema.safeParse({ guarantee: { cores: -1 } }).success).toBe(false);
    expect(QuotaSpecSchema.safeParse({ guarantee: { tpus: 1 } }).success).toBe(false);
    expect(QuotaSpecSchema.parse({ limit: { gpus: 4 } })).toEqual({ guarantee: {}, limit: { gpus: 4 } });
  });

  test('effective guarantee of a scope without a quota is its children sum; usage and borrowed add up', () => {
    const book = new QuotaBook(tree, base);
    expect(book.guarantee(tree.id('org:acme'))).toEqual({ gpus: 10, cores: 0, memoryGb: 0 });
    expect(book.limit(tree.id('org:acme'))).toEqual({});
    const acc = new Accounting(tree, book);
    acc.charge(tree.id('project:chat'), { gpus: 8, cores: 4, memoryGb: 0 }, 1);
    acc.charge(tree.id('project:search'), { gpus: 3, cores: 0, memoryGb: 0 }, 1);
    expect(acc.usage(tree.id('team:ml'))).toEqual({ gpus: 11, cores: 4, memoryGb: 0 });
    expect(acc.borrowed(tree.id('project:chat')).gpus).toBe(2);
    expect(acc.borrowed(tree.id('team:ml')).gpus).toBe(1);
    expect(acc.atLimit(tree.id('team:ml'))).toBe(false);
    acc.charge(tree.id('project:search'), { gpus: 1, cores: 0, memoryGb: 0 }, 1);
    expect(acc.atLimit(tree.id('team:ml'))).toBe(true);
    acc.charge(tree.id('project:search'), { gpus: 4, cores: 0, memoryGb: 0 }, -1);
    expect(acc.usage(tree.id('org:acme')).gpus).toBe(8);
  });
});

describe('capacity view and model status', () => {
  test('per scope figures from stored admissions, pending by reason, CapacityAtLimit', () => {
    const w = new World(['org:o', 'project:a<org:o', 'project:b<org:o'], {
      'project:a': { g: 2, l: 3 },
      'project:b': { g: 1 },
    });
    w.model('a', 'project:a', { min: 1, target: 5, max: 5 });
    w.model('b', 'project:b', { min: 1 });
    w.model('s', undefined, { min: 2 });
    w.pass();
    const v = capacityView(
      { scopes: w.scopes, quotas: w.quotas, models: w.models, admissions: [...w.admissions.values()] },
      { scope: 'org:o', cluster: w.headroom().summary() },
    );
    expect(v.scopes.find((s) => s.scope === 'project:a')).toMatchObject({
      guarantee: { gpus: 2 },
      limit: { gpus: 3 },
      usage: { gpus: 3 },
      borrowed: { gpus: 1 },
      atLimit: true,
      pending: { LimitExceeded: 2 },
      capacityAtLimit: true,
    });
    expect(v.scopes.find((s) => s.scope === 'org:o')).toMatchObject({
      usage: { gpus: 4 },
      guarantee: { gpus: 3 },
    });
    expect(v.cluster?.find((c) => c.name === 'gpu-big')?.used.gpus).toBe(6);
    expect(w.status('a')).toEqual({
      effectiveClass: 'standard',
      admitted: 3,
      borrowed: 1,
      pending: 2,
      placements: [{ compute: 'gpu-big', profile: 'p', replicas: 3 }],
      reasons: [
        {
          reason: 'LimitExceeded',
          message: 'project:a is at its limit of 3 gpus; 1 gpu more needed (it holds 3, this needs 1)',
          replicas: 2,
        },
      ],
      takenBack: [],
    });
    expect(w.status('s')).toMatchObject({ admitted: 2, borrowed: 0 });
    expect(w.last!.atLimit).toEqual(['project:a']);
  });
});
