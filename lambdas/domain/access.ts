import { forbidden } from './errors';
import { type Identity, matches, type Principal } from './principal';

/**
 * Who may do what (docs/design.md, Security): the one permission model every route and use case asks.
 * Platform admins (the stage config's `admins`) may do everything. Inside the tenancy tree a member's role in a
 * scope holds in every scope beneath it. Pure: the caller's identity, the tree and the admins are given.
 */

export const ROLES = ['admin', 'editor', 'viewer'] as const;
export type Role = (typeof ROLES)[number];
/** A role includes the ones ranked below it. */
export const RANK: Record<Role, number> = { viewer: 1, editor: 2, admin: 3 };

export function isRole(r: unknown): r is Role {
  return typeof r === 'string' && (ROLES as readonly string[]).includes(r);
}

/**
 * What a caller may want to do, and which scope the check is made in:
 * - `read`: see a resource owned by the scope (any role there, above, or beneath it).
 * - `edit`: create, change or delete models and computes owned by the scope (editor).
 * - `manage-members`: grant or revoke roles in the scope (admin in it or above).
 * - `create-scope`: create a scope under the given parent (admin of the parent); orgs: platform admins.
 * - `delete-scope` / `set-quota`: the given scope's quota or existence is decided from above it (admin of a
 *   strict ancestor), so that nobody raises their own guarantee; orgs: platform admins.
 * - `platform`: reconcile now, built-in computes, shared models (platform admins only).
 * An empty scope means a shared resource: everyone reads it, platform admins change it.
 */
export type Action =
  | 'read'
  | 'edit'
  | 'manage-members'
  | 'create-scope'
  | 'delete-scope'
  | 'set-quota'
  | 'platform';

/** The tenancy tree as the permission model reads it (domain/quota/tenancy.ts's ScopeTree). */
export interface Tenancy {
  has(scope: string): boolean;
  parent(scope: string): string | undefined;
  /** The caller's strongest role in `scope`, held there or inherited from a scope above. */
  roleIn(who: Identity, scope: string): Role | undefined;
  /** True if the caller holds any role in `scope` or in a scope beneath it (those see what it owns). */
  isMemberAtOrBelow(who: Identity, scope: string): boolean;
}

/** A tree without scopes: only platform admins and shared resources. */
export const NO_TENANCY: Tenancy = {
  has: () => false,
  parent: () => undefined,
  roleIn: () => undefined,
  isMemberAtOrBelow: () => false,
};

const NEEDS: Record<Exclude<Action, 'platform'>, Role> = {
  read: 'viewer',
  edit: 'editor',
  'manage-members': 'admin',
  'create-scope': 'admin',
  'delete-scope': 'admin',
  'set-quota': 'admin',
};

const WHAT: Record<Action, string> = {
  read: 'reading it',
  edit: 'changing it',
  'manage-members': 'managing members',
  'create-scope': 'creating a scope here',
  'delete-scope': 'deleting this scope',
  'set-quota': 'setting this quota',
  platform: 'this',
};

/** Quotas and deletion are decided one level up: a scope admin cannot raise their own guarantee. */
const decidedAbove = (action: Action) => action === 'set-quota' || action === 'delete-scope';

/** A caller in a tree; `tenancy` is the tree it was built with (a ScopeTree, for the services). */
export class Caller<T extends Tenancy = Tenancy> {
  constructor(
    readonly who: Identity,
    readonly tenancy: T,
    readonly admins: readonly Principal[],
  ) {}

  /** The same caller in another reading of the tree (a write decides again on fresh reads). */
  within<U extends Tenancy>(tenancy: U): Caller<U> {
    return new Caller(this.who, tenancy, this.admins);
  }

  get isPlatformAdmin(): boolean {
    return this.admins.some((a) => matches(a, this.who));
  }

  /** Holds `role` (or a stronger one) in `scope`, there or inherited; platform admins hold every role. */
  has(role: Role, scope: string | undefined): boolean {
    if (this.isPlatformAdmin) return true;
    if (!scope) return false;
    const r = this.tenancy.roleIn(this.who, scope);
    return r !== undefined && RANK[r] >= RANK[role];
  }

  can(action: Action, scope: string | undefined): boolean {
    if (this.isPlatformAdmin) return true;
    if (action === 'platform') return false;
    if (!scope) return action === 'read';
    if (!this.tenancy.has(scope)) return false;
    if (action === 'read')
      return this.has('viewer', scope) || this.tenancy.isMemberAtOrBelow(this.who, scope);
    const at = decidedAbove(action) ? this.tenancy.parent(scope) : scope;
    return at !== undefined && this.has(NEEDS[action], at);
  }

  /** Throws a 403 whose message says which role is missing and where. */
  authorize(action: Action, scope: string | undefined): void {
    if (this.can(action, scope)) return;
    if (action === 'platform' || !scope) throw forbidden(`${WHAT[action]} is reserved to platform admins`);
    if (!this.tenancy.has(scope)) throw forbidden(`${this.who.arn} has no role in ${scope}`);
    if (action === 'read') throw forbidden(`${this.who.arn} has no role in ${scope}, above it or beneath it`);
    const at = decidedAbove(action) ? this.tenancy.parent(scope) : scope;
    if (!at) throw forbidden(`${WHAT[action]} for ${scope} is reserved to platform admins (it is an org)`);
    throw forbidden(
      `${WHAT[action]} needs the ${NEEDS[action as keyof typeof NEEDS]} role in ${at} or a scope above it; ` +
        `an admin there can grant it`,
    );
  }

  /** Platform-owned resources (no owner, or built in) are visible to all; a scope's to its members and those above. */
  canSee(owner: string | undefined): boolean {
    return this.can('read', owner);
  }

  requirePlatformAdmin(what: string): void {
    if (!this.isPlatformAdmin) {
      throw forbidden(`${what} is reserved to platform admins; ask one, or use a resource your scope owns`);
    }
  }

  /** Changing something a scope owns takes `editor` there (or above); unowned things take a platform admin. */
  requireEditor(owner: string | undefined, what: string): void {
    if (!owner) {
      this.requirePlatformAdmin(what);
      return;
    }
    if (!this.can('edit', owner)) {
      throw forbidden(
        `${what} needs the editor role in ${owner} or a scope above it; a scope admin can grant it`,
      );
    }
  }
}
