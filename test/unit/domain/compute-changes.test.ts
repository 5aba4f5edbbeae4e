import { Caller } from '../../../lambdas/domain/access';
import {
  type ComputeSpec,
  ComputeSpecSchema,
  NODEGROUP_STATUSES,
  type NodegroupStatus,
} from '../../../lambdas/domain/compute';
import {
  builtinsStandAsDeclared,
  decideApply,
  decideClone,
  decideDelete,
  decideRename,
  decideSeed,
  declarationOf,
  hasNodegroupOrWork,
  needsObservation,
  type StoredCompute,
} from '../../../lambdas/domain/compute-changes';
import { parsePrincipal } from '../../../lambdas/domain/principal';
import { ScopeTree } from '../../../lambdas/domain/quota';
import { ACME_SCOPES, asRole, roleArn } from '../../helpers/principals';

/**
 * Every rule of a compute change, as the compute service asks them (domain/compute-changes.ts). The API tests
 * (test/integration/api/computes.test.ts) keep one end-to-end case per change; the branches are here.
 */

const spec: ComputeSpec = ComputeSpecSchema.parse({
  node: { instanceType: 'g6.2xlarge', cpu: 8, memoryGb: 32, gpu: { type: 'L4', count: 1, memoryGb: 24 } },
  nodeGroup: { maxNodes: 3 },
  cost: { perHour: 0.9776 },
});
const bigger: ComputeSpec = {
  ...spec,
  node: { ...spec.node, instanceType: 'g6.4xlarge', cpu: 16, memoryGb: 64 },
};

function compute(
  over: Partial<StoredCompute> & { nodegroupStatus?: NodegroupStatus; running?: boolean } = {},
) {
  const { nodegroupStatus = 'ABSENT', running, ...rest } = over;
  return {
    name: 'l4',
    owner: 'team:ml',
    builtin: false,
    spec,
    version: 2,
    createdAt: '2026-01-01T00:00:00.000Z',
    createdBy: 'x',
    updatedAt: '2026-01-01T00:00:00.000Z',
    updatedBy: 'x',
    status: { nodegroupStatus, desiredNodes: 0, readyNodes: 0 },
    generation: 1,
    ...(running
      ? {
          workflow: {
            executionName: 'l4-provision-g1-x',
            kind: 'provision',
            state: 'RUNNING',
            startedAt: 'now',
          },
        }
      : {}),
    ...rest,
  } as StoredCompute;
}

const tree = new ScopeTree(ACME_SCOPES);
const platform = parsePrincipal(roleArn('platform'));
const as = (who: string) => new Caller(asRole(who), tree, platform.ok ? [platform.value] : []);
const admin = as('platform');

describe('a node group exists or is being made', () => {
  it.each(NODEGROUP_STATUSES)('%s, with and without a running workflow', (s) => {
    const own = s !== 'ABSENT' && s !== 'FOREIGN';
    expect(hasNodegroupOrWork(compute({ nodegroupStatus: s }))).toBe(own);
    expect(hasNodegroupOrWork(compute({ nodegroupStatus: s, running: true }))).toBe(true);
    // Someone else's group is observed too, until it is gone or tagged as this compute's.
    expect(needsObservation(compute({ nodegroupStatus: s }))).toBe(s !== 'ABSENT');
    expect(needsObservation(compute({ nodegroupStatus: s, running: true }))).toBe(true);
  });
});

describe('apply (PUT)', () => {
  const input = (over: Partial<{ owner: string; spec: ComputeSpec }> = {}) => ({
    name: 'l4',
    owner: 'team:ml',
    spec,
    ...over,
  });

  it('creates a missing compute, if the caller may create it there', () => {
    expect(decideApply(as('chat-editor'), undefined, input({ owner: 'project:chat' }), undefined)).toEqual({
      kind: 'create',
    });
    expect(() => decideApply(as('ml-viewer'), undefined, input(), undefined)).toThrow(
      'create compute l4 needs the editor role in team:ml',
    );
    expect(() => decideApply(admin, undefined, input(), 3)).toThrow(
      'compute l4 does not exist, so version 3 cannot match',
    );
  });

  it('answers a compute the caller cannot see as missing, whatever the request', () => {
    const hidden = compute({ owner: 'project:search' });
    for (const expected of [undefined, 2])
      expect(() => decideApply(as('chat-editor'), hidden, input(), expected)).toThrow(
        expect.objectContaining({ kind: 'not-found', message: 'compute l4 does not exist' }),
      );
  });

  it('needs the editor role to change it, and on both sides to hand it over', () => {
    expect(() => decideApply(as('ml-viewer'), compute(), input(), undefined)).toThrow(
      /change compute l4 needs/,
    );
    expect(() =>
      decideApply(as('chat-editor'), compute({ owner: 'project:chat' }), input(), undefined),
    ).toThrow(/hand over compute l4 needs the editor role in team:ml/);
    expect(() => decideApply(as('ml-admin'), compute({ builtin: true }), input(), undefined)).toThrow(
      'change built-in compute l4 is reserved to platform admins',
    );
  });

  it('refuses a compute being deleted, then a stale version', () => {
    expect(() => decideApply(admin, compute({ deletionRequested: true }), input(), 1)).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ reason: 'Deleting' }) }),
    );
    expect(() => decideApply(admin, compute(), input(), 1)).toThrow(
      expect.objectContaining({
        kind: 'precondition',
        message: 'compute l4 is at version 2, not 1',
        details: expect.objectContaining({ reason: 'VersionMismatch' }),
      }),
    );
  });

  it('freezes the hardware while a node group exists or is being made, naming every frozen field', () => {
    for (const c of [compute({ nodegroupStatus: 'ACTIVE' }), compute({ running: true })]) {
      let error: unknown;
      try {
        decideApply(admin, c, input({ spec: bigger }), undefined);
      } catch (e) {
        error = e;
      }
      expect(error).toMatchObject({
        kind: 'conflict',
        details: {
          reason: 'NodegroupExists',
          errors: [
            { path: 'spec.node.instanceType', message: 'frozen while the node group exists' },
            { path: 'spec.node.cpu', message: 'frozen while the node group exists' },
            { path: 'spec.node.memoryGb', message: 'frozen while the node group exists' },
          ],
        },
      });
    }
    const maxNodes = { ...spec, nodeGroup: { maxNodes: 9 } };
    expect(decideApply(admin, compute({ nodegroupStatus: 'ACTIVE' }), input({ spec: maxNodes }), 2)).toEqual({
      kind: 'replace',
      expectedVersion: 2,
      requireNoNodegroup: false,
    });
  });

  it('replaces at the version read; a hardware change commits only if no node group appeared meanwhile', () => {
    expect(
      decideApply(admin, compute({ nodegroupStatus: 'FOREIGN' }), input({ spec: bigger }), undefined),
    ).toEqual({
      kind: 'replace',
      expectedVersion: 2,
      requireNoNodegroup: true,
    });
  });

  it("writes nothing for what is stored (a built-in stays config's), after the same refusals", () => {
    // Key order differs, as DynamoDB returns maps: the comparison is of values.
    const reordered = Object.fromEntries(Object.entries(spec).reverse()) as ComputeSpec;
    const builtin = compute({ builtin: true, owner: undefined, updatedBy: 'config' });
    expect(decideApply(admin, builtin, { name: 'l4', spec: reordered }, 2)).toEqual({ kind: 'unchanged' });
    expect(() => decideApply(admin, builtin, { name: 'l4', spec }, 1)).toThrow(/at version 2, not 1/);
    expect(() => decideApply(as('ml-viewer'), compute(), input(), undefined)).toThrow(
      /change compute l4 needs/,
    );
    expect(decideApply(admin, compute(), input({ owner: 'project:chat' }), undefined).kind).toBe('replace');
  });
});

describe('delete', () => {
  it('removes a compute without a node group at once, and marks one with a group or a running workflow', () => {
    expect(decideDelete(compute(), 'l4', undefined, [])).toBe('remove-now');
    expect(decideDelete(compute({ nodegroupStatus: 'FOREIGN' }), 'l4', 2, [])).toBe('remove-now');
    expect(decideDelete(compute({ nodegroupStatus: 'DELETE_FAILED' }), 'l4', undefined, [])).toBe(
      'mark-for-deletion',
    );
    expect(decideDelete(compute({ running: true }), 'l4', undefined, [])).toBe('mark-for-deletion');
  });

  it('is refused for a missing compute, a stale version, and while models use it (naming five, then a count)', () => {
    expect(() => decideDelete(undefined, 'l4', undefined, [])).toThrow('compute l4 does not exist');
    expect(() => decideDelete(compute(), 'l4', 1, [])).toThrow('compute l4 is at version 2, not 1');
    const users = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    expect(() => decideDelete(compute(), 'l4', undefined, users)).toThrow(
      'compute l4 is used by model(s) a, b, c, d, e and 2 more; move them to another compute before you delete it',
    );
  });
});

describe('rename', () => {
  it('is refused for a built-in, while a node group exists or is being made, and while models use it', () => {
    expect(() => decideRename(compute({ builtin: true }), 'l4', 'l4b', [])).toThrow(
      expect.objectContaining({ details: { reason: 'BuiltIn' } }),
    );
    for (const c of [compute({ nodegroupStatus: 'CREATING' }), compute({ running: true })])
      expect(() => decideRename(c, 'l4', 'l4b', [])).toThrow(
        /node group names cannot change, so clone it under l4b/,
      );
    expect(() => decideRename(compute(), 'l4', 'l4b', ['m'])).toThrow(/used by model\(s\) m; .* rename it/);
    expect(decideRename(compute({ nodegroupStatus: 'FOREIGN' }), 'l4', 'l4b', [])).toMatchObject({
      name: 'l4',
    });
  });
});

describe('clone and seed', () => {
  it("owns a clone as asked, else as the source (a built-in's clone is the platform's)", () => {
    expect(decideClone(admin, compute(), { name: 'copy' })).toEqual({ name: 'copy', owner: 'team:ml', spec });
    expect(decideClone(admin, compute({ builtin: true }), { name: 'copy' })).toEqual({ name: 'copy', spec });
    expect(() => decideClone(as('chat-editor'), compute(), { name: 'copy' })).toThrow(
      /create compute copy needs the editor role in team:ml/,
    );
  });

  it('creates a missing built-in, follows the configuration until an admin changes it, and keeps live hardware', () => {
    expect(decideSeed(undefined, spec)).toEqual({ kind: 'create' });
    const seeded = compute({ builtin: true, updatedBy: 'config' });
    expect(decideSeed(seeded, spec)).toEqual({ kind: 'keep' });
    expect(decideSeed(seeded, bigger)).toEqual({ kind: 'follow', requireNoNodegroup: true });
    expect(decideSeed(seeded, { ...spec, cost: { perHour: 1, currency: 'USD' } })).toEqual({
      kind: 'follow',
      requireNoNodegroup: false,
    });
    expect(decideSeed(compute({ builtin: true, updatedBy: 'admin' }), bigger)).toEqual({ kind: 'keep' });
  });

  it('records the declaration a built-in was resolved from, and says when every built-in stands as declared', () => {
    const entry = { name: 'c', spec: { node: { instanceType: 'g6.2xlarge' }, nodeGroup: { maxNodes: 2 } } };
    const as = declarationOf(entry, 'us-east-1');
    // Key order does not matter; the region does (another region's prices and offerings).
    expect(
      declarationOf(
        { spec: { nodeGroup: { maxNodes: 2 }, node: { instanceType: 'g6.2xlarge' } } },
        'us-east-1',
      ),
    ).toBe(as);
    expect(declarationOf(entry, 'eu-west-1')).not.toBe(as);
    const seeded = compute({ name: 'c', builtin: true, updatedBy: 'config', declaredAs: as });
    expect(decideSeed(seeded, spec, as)).toEqual({ kind: 'keep' });
    // The same spec from an older item (or another declaration) is written once, to record what it came from.
    expect(decideSeed({ ...seeded, declaredAs: undefined }, spec, as)).toEqual({
      kind: 'follow',
      requireNoNodegroup: false,
    });
    expect(builtinsStandAsDeclared([entry], [seeded], 'us-east-1')).toBe(true);
    expect(builtinsStandAsDeclared([entry], [seeded], 'eu-west-1')).toBe(false);
    expect(builtinsStandAsDeclared([entry], [], 'us-east-1')).toBe(false);
    const changed = { ...entry, spec: { ...entry.spec, nodeGroup: { maxNodes: 3 } } };
    expect(builtinsStandAsDeclared([changed], [seeded], 'us-east-1')).toBe(false);
    // An admin's built-in is kept whatever the file says, so it needs no resolution either.
    const taken = compute({ name: 'c', builtin: true, updatedBy: 'admin' });
    expect(builtinsStandAsDeclared([changed], [taken], 'us-east-1')).toBe(true);
  });
});
