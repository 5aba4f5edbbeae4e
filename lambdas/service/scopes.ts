import type { Caller, Role } from '../domain/access';
import { conflict, notFound } from '../domain/errors';
import { planMemberWrite, ScopeTree, validateScopeCreate, validateScopeDelete } from '../domain/quota';
import type { StoredScope } from '../store/tenancy';
import type { Dependencies } from '.';
import type { CatalogService } from './catalog';

/**
 * The scope use cases: create and delete a scope (through the ledger, since admission reads the tree), grant and
 * revoke a member's role (optimistic on the scope's version: admission ignores roles), and the reads. Who may do
 * each is the Caller's answer (domain/access.ts); what the tree allows is domain/quota/tenancy.ts's.
 */

/** How often a member write is planned again when the scope keeps changing under it. */
const MEMBER_ATTEMPTS = 8;

/** A scope the caller cannot see answers like a missing one, so that scope names do not leak. */
export function requireVisibleScope(caller: Caller<ScopeTree>, scope: string): void {
  if (!caller.tenancy.has(scope) || !caller.can('read', scope))
    throw notFound(`scope ${scope} does not exist`);
}

export function scopeService(deps: Dependencies, svc: { catalog: CatalogService }) {
  const { tenancy, ledger } = deps.store;
  const now = () => deps.clock().toISOString();

  async function setMember(
    scope: string,
    principal: string,
    role: Role | undefined,
    by: string,
  ): Promise<StoredScope> {
    for (let attempt = 1; ; attempt++) {
      const current = await tenancy.getScope(scope);
      if (!current) throw notFound(`scope ${scope} does not exist`);
      const plan = planMemberWrite(scope, current.members ?? {}, principal, role);
      // Removing someone who is not a member changes nothing, not even the version.
      if (!plan.set && plan.remove.length === 0) return current;
      const written = await tenancy.writeMembers(current, plan, by, now());
      if (written) return written;
      if (attempt >= MEMBER_ATTEMPTS) {
        throw conflict(`the members of ${scope} keep changing; retry in a moment`, 'ConcurrentUpdate');
      }
    }
  }

  return {
    /** The scopes the caller can see, sorted. */
    async list(caller: Caller<ScopeTree>): Promise<StoredScope[]> {
      const scopes = await tenancy.listScopes();
      return scopes.filter((s) => caller.can('read', s.name)).sort((a, b) => a.name.localeCompare(b.name));
    },

    async get(name: string, caller: Caller<ScopeTree>): Promise<StoredScope> {
      requireVisibleScope(caller, name);
      const s = (await tenancy.listScopes()).find((x) => x.name === name);
      if (!s) throw notFound(`scope ${name} does not exist`);
      return s;
    },

    /** An org needs a platform admin; a team or project an admin of its parent. */
    async create(
      s: { name: string; parent?: string },
      caller: Caller<ScopeTree>,
      by: string,
    ): Promise<StoredScope> {
      if (s.parent) {
        if (!caller.tenancy.has(s.parent)) throw notFound(`parent scope ${s.parent} does not exist`);
        caller.authorize('create-scope', s.parent);
      } else caller.authorize('platform', undefined);
      return ledger.withLedger(
        async () => {
          const tree = await loadTree();
          validateScopeCreate(tree, s);
          const at = now();
          const item: StoredScope = {
            name: s.name,
            ...(s.parent ? { parent: s.parent } : {}),
            members: {},
            version: 1,
            createdAt: at,
            createdBy: by,
            updatedAt: at,
            updatedBy: by,
          };
          return { items: tenancy.scopeCreateItems(item), result: item };
        },
        { by, onItemConflict: () => conflict(`scope ${s.name} already exists`, 'AlreadyExists') },
      );
    },

    /** A scope with children or models cannot be deleted; an org's deletion needs a platform admin. */
    async remove(name: string, caller: Caller<ScopeTree>, by: string): Promise<void> {
      requireVisibleScope(caller, name);
      caller.authorize(caller.tenancy.parent(name) ? 'delete-scope' : 'platform', name);
      await ledger.withLedger(
        async () => {
          const tree = await loadTree();
          if (!tree.has(name)) throw notFound(`scope ${name} does not exist`);
          validateScopeDelete(tree, name, await svc.catalog.ownedBy(name));
          return { items: tenancy.scopeDeleteItems(name), result: undefined };
        },
        { by },
      );
    },

    /** Grants `role` to a principal (another spelling of the same principal is replaced), or revokes it. */
    async setMember(
      scope: string,
      principal: string,
      role: Role | undefined,
      caller: Caller<ScopeTree>,
      by: string,
    ): Promise<StoredScope> {
      requireVisibleScope(caller, scope);
      caller.authorize('manage-members', scope);
      return setMember(scope, principal, role, by);
    },

    loadTree,
  };

  async function loadTree(): Promise<ScopeTree> {
    return new ScopeTree(await tenancy.listScopes());
  }
}

export type ScopeService = ReturnType<typeof scopeService>;
