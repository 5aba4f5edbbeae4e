import { forbidden } from '../domain/errors';
import { type Identity, matches, type Principal } from '../domain/principal';
import { config } from '../shared/config';

/**
 * Who may do what (DESIGN.md §8). Platform admins (stage config) may do everything. Inside the tenancy tree a
 * member's role in a scope holds in every scope beneath it; `roleIn` answers with that inheritance applied.
 */
export type Role = 'admin' | 'editor' | 'viewer';
const RANK: Record<Role, number> = { viewer: 1, editor: 2, admin: 3 };

export interface Tenancy {
  /** The caller's strongest role in `scope`, held there or inherited from a scope above. */
  roleIn(who: Identity, scope: string): Role | undefined;
  /** True if the caller holds any role in `scope` or in a scope beneath it (those see what it owns). */
  isMemberAtOrBelow(who: Identity, scope: string): boolean;
}

export const NO_TENANCY: Tenancy = { roleIn: () => undefined, isMemberAtOrBelow: () => false };

export class Caller {
  constructor(
    readonly who: Identity,
    readonly tenancy: Tenancy = NO_TENANCY,
    readonly admins: readonly Principal[] = config().admins,
  ) {}

  get isPlatformAdmin(): boolean {
    return this.admins.some((a) => matches(a, this.who));
  }

  has(role: Role, scope: string | undefined): boolean {
    if (this.isPlatformAdmin) return true;
    if (!scope) return false;
    const r = this.tenancy.roleIn(this.who, scope);
    return r !== undefined && RANK[r] >= RANK[role];
  }

  /** Platform-owned resources (no owner, or built in) are visible to all; a scope's to its members and those above. */
  canSee(owner: string | undefined): boolean {
    if (!owner || this.isPlatformAdmin) return true;
    return this.has('viewer', owner) || this.tenancy.isMemberAtOrBelow(this.who, owner);
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
    if (!this.has('editor', owner)) {
      throw forbidden(
        `${what} needs the editor role in ${owner} or a scope above it; a scope admin can grant it`,
      );
    }
  }
}
