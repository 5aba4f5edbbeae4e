import { Caller, NO_TENANCY } from '../../../lambdas/domain/access';
import { parsePrincipal } from '../../../lambdas/domain/principal';
import { ScopeTree } from '../../../lambdas/domain/quota';
import { ACME_SCOPES, asRole, roleArn } from '../../helpers/principals';

/** The one permission model (domain/access.ts): every route and use case asks a Caller. */

const tree = new ScopeTree(ACME_SCOPES);
const platform = parsePrincipal(roleArn('platform'));
const admins = platform.ok ? [platform.value] : [];
const callerAs = (who: string) => new Caller(asRole(who), tree, admins);

describe('who may do what in the tree', () => {
  test.each([
    ['platform', 'platform', undefined, true],
    ['ml-admin', 'platform', undefined, false],
    ['anyone', 'read', undefined, true],
    ['anyone', 'edit', undefined, false],
    ['chat-editor', 'edit', 'project:chat', true],
    ['chat-editor', 'edit', 'project:search', false],
    ['chat-editor', 'read', 'team:ml', true],
    ['ml-viewer', 'edit', 'project:chat', false],
    ['ml-viewer', 'read', 'project:chat', true],
    ['ml-admin', 'edit', 'project:chat', true],
    ['ml-admin', 'set-quota', 'project:chat', true],
    ['ml-admin', 'set-quota', 'team:ml', false],
    ['org-admin', 'set-quota', 'team:ml', true],
    ['org-admin', 'set-quota', 'org:acme', false],
    ['platform', 'set-quota', 'org:acme', true],
    ['ml-admin', 'manage-members', 'team:ml', true],
    ['chat-editor', 'manage-members', 'project:chat', false],
    ['ml-admin', 'create-scope', 'team:ml', true],
    ['ml-admin', 'delete-scope', 'project:chat', true],
    ['ml-admin', 'delete-scope', 'team:ml', false],
    ['org-admin', 'read', 'org:other', false],
    ['org-admin', 'edit', 'team:gone', false],
  ] as const)('%s may %s in %s: %s', (who, action, scope, allowed) => {
    expect(callerAs(who).can(action, scope)).toBe(allowed);
  });

  test('a refusal says which role is missing and where', () => {
    expect(() => callerAs('ml-viewer').authorize('edit', 'project:chat')).toThrow(
      'changing it needs the editor role in project:chat or a scope above it; an admin there can grant it',
    );
    expect(() => callerAs('ml-admin').authorize('set-quota', 'team:ml')).toThrow(/admin role in org:acme/);
    expect(() => callerAs('org-admin').authorize('set-quota', 'org:acme')).toThrow(
      /reserved to platform admins/,
    );
  });
});

describe('resources owned by a scope, or shared', () => {
  it('a shared resource is visible to everyone and changed by platform admins only', () => {
    expect(callerAs('anyone').canSee(undefined)).toBe(true);
    expect(() => callerAs('ml-admin').requireEditor(undefined, 'add model m (shared)')).toThrow(
      'add model m (shared) is reserved to platform admins; ask one, or use a resource your scope owns',
    );
    expect(() => callerAs('platform').requireEditor(undefined, 'add model m (shared)')).not.toThrow();
  });

  it("a scope's resource is visible to its members, those above and those beneath; editors change it", () => {
    expect(callerAs('chat-editor').canSee('team:ml')).toBe(true);
    expect(callerAs('org-admin').canSee('project:chat')).toBe(true);
    expect(callerAs('chat-editor').canSee('project:search')).toBe(false);
    expect(() => callerAs('ml-viewer').requireEditor('team:ml', 'change compute c')).toThrow(
      'change compute c needs the editor role in team:ml or a scope above it; a scope admin can grant it',
    );
    expect(() => callerAs('ml-admin').requireEditor('project:chat', 'change compute c')).not.toThrow();
  });

  it('outside any tree only platform admins hold a role', () => {
    const outside = new Caller(asRole('platform'), NO_TENANCY, admins);
    expect(outside.has('admin', 'team:ml')).toBe(true);
    expect(new Caller(asRole('ml-admin'), NO_TENANCY, admins).canSee('team:ml')).toBe(false);
  });
});
