import { randomUUID } from 'node:crypto';
import type { Caller, Role } from '../domain/access';
import { conflict, DomainError, invalid, notFound, versionMismatch } from '../domain/errors';
import { strandedComputes, unknownFamilyIssues } from '../domain/hardware';
import {
  type MemberWrite,
  planMembers,
  planMemberWrite,
  ScopeTree,
  validateScopeCreate,
  validateScopeDelete,
} from '../domain/quota';
import { listed } from '../domain/text';
import { newScopeNamespace, scopeNamespace } from '../domain/workloads';
import { GUARDS } from '../store/commit';
import type { StoredScope } from '../store/tenancy';
import type { Dependencies } from '.';
import type { CatalogService } from './catalog';
import { committing, type WriteOptions } from './writes';

/** The scope a member write would leave: what a dry run answers. */
function planned(current: StoredScope, plan: MemberWrite, by: string, at: string): StoredScope {
  const members = { ...(current.members ?? {}) };
  for (const k of plan.remove) delete members[k];
  if (plan.set) members[plan.set.principal] = plan.set.role;
  return { ...current, members, version: current.version + 1, updatedAt: at, updatedBy: by };
}

/**
 * The scope use cases: create and delete a scope (under the tenancy guard, store/commit.ts), grant and
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
  const { tenancy, commit } = deps.store;
  const now = () => deps.clock().toISOString();

  async function setMember(
    scope: string,
    principal: string,
    role: Role | undefined,
    by: string,
    opts?: WriteOptions,
  ): Promise<StoredScope> {
    for (let attempt = 1; ; attempt++) {
      const current = await tenancy.getScope(scope);
      if (!current) throw notFound(`scope ${scope} does not exist`);
      const plan = planMemberWrite(scope, current.members ?? {}, principal, role);
      // Removing someone who is not a member changes nothing, not even the version.
      if (!plan.set && plan.remove.length === 0) return current;
      if (opts?.dryRun) return planned(current, plan, by, now());
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
      opts?: WriteOptions,
    ): Promise<StoredScope> {
      if (s.parent) {
        // A parent the caller cannot see answers as one that does not exist, so the answer tells no names.
        if (!caller.tenancy.has(s.parent) || !caller.can('read', s.parent))
          throw notFound(`parent scope ${s.parent} does not exist`);
        caller.authorize('create-scope', s.parent);
      } else caller.authorize('platform', undefined);
      return commit.commitDecision(
        committing(opts, async () => {
          const all = await tenancy.listScopes();
          const tree = new ScopeTree(all);
          const key = validateScopeCreate(tree, s);
          const at = now();
          const stage = deps.config().stage;
          const taken = new Set(all.map((x) => scopeNamespace(stage, x)));
          const item: StoredScope = {
            name: key,
            ...(s.parent ? { parent: s.parent } : {}),
            namespace: newScopeNamespace(stage, key, taken),
            members: {},
            version: 1,
            createdAt: at,
            createdBy: by,
            updatedAt: at,
            updatedBy: by,
          };
          return { items: tenancy.scopeCreateItems(item), result: item };
        }),
        {
          guards: [GUARDS.tenancy],
          onItemConflict: () => conflict(`scope ${s.name} already exists`, 'AlreadyExists'),
        },
      );
    },

    /**
     * A scope with children, models or computes cannot be deleted; an org's deletion needs a platform admin. The
     * scope is marked first (store/tenancy.ts markScopeDeleting), so nothing is created under it while the
     * deletion reads what it holds; the mark is taken back when the deletion does not happen.
     */
    async remove(name: string, caller: Caller<ScopeTree>, by: string, opts?: WriteOptions): Promise<void> {
      requireVisibleScope(caller, name);
      caller.authorize(caller.tenancy.parent(name) ? 'delete-scope' : 'platform', name);
      const token = randomUUID();
      if (!opts?.dryRun && !(await tenancy.markScopeDeleting(name, token, now()))) {
        if (!(await tenancy.getScope(name))) throw notFound(`scope ${name} does not exist`);
        throw conflict(
          `scope ${name} is being deleted by another request; retry in a few seconds`,
          'ConcurrentUpdate',
        );
      }
      try {
        await commit.commitDecision(
          committing(opts, async () => {
            const tree = await loadTree();
            if (!tree.has(name)) throw notFound(`scope ${name} does not exist`);
            const [models, computes] = await Promise.all([
              svc.catalog.ownedBy(name),
              deps.store.computes.listComputes(),
            ]);
            // A compute whose deletion was asked for is going (its node group first): it holds the scope no longer.
            const owned = computes.filter((c) => c.owner === name && !c.deletionRequested).map((c) => c.name);
            validateScopeDelete(tree, name, models, owned);
            return { items: tenancy.scopeDeleteItems(name, token), result: undefined };
          }),
          { guards: [GUARDS.tenancy] },
        );
      } catch (e) {
        if (!opts?.dryRun) await tenancy.unmarkScopeDeleting(name, token);
        throw e;
      }
    },

    /** Grants `role` to a principal (another spelling of the same principal is replaced), or revokes it. */
    async setMember(
      scope: string,
      principal: string,
      role: Role | undefined,
      caller: Caller<ScopeTree>,
      by: string,
      opts?: WriteOptions,
    ): Promise<StoredScope> {
      requireVisibleScope(caller, scope);
      caller.authorize('manage-members', scope);
      return setMember(scope, principal, role, by, opts);
    },

    /**
     * Sets the members as a whole (a scope manifest's desired state): those it no longer lists are removed and
     * new ones added in one conditional write; `expected` (If-Match, the manifest's version) pins the version read.
     */
    async replaceMembers(
      scope: string,
      members: Record<string, Role>,
      expected: number | undefined,
      caller: Caller<ScopeTree>,
      by: string,
      opts?: WriteOptions,
    ): Promise<StoredScope> {
      requireVisibleScope(caller, scope);
      caller.authorize('manage-members', scope);
      const current = await tenancy.getScope(scope);
      if (!current) throw notFound(`scope ${scope} does not exist`);
      if (expected !== undefined && expected !== current.version) {
        throw versionMismatch(`scope ${scope} is at version ${current.version}, not ${expected}`);
      }
      const plan = planMembers(scope, current.members ?? {}, members);
      if (plan.unchanged) return current;
      const at = now();
      if (opts?.dryRun) {
        return {
          ...current,
          members: plan.members,
          version: current.version + 1,
          updatedAt: at,
          updatedBy: by,
        };
      }
      const written = await tenancy.replaceMembers(current, plan.members, by, at);
      if (!written) {
        throw versionMismatch(`the members of ${scope} changed meanwhile; read the scope again and retry`);
      }
      return written;
    },

    /**
     * Limits the instance families the scope's computes (and those of the scopes beneath) may use, or lifts the
     * limit (null); a platform admin's alone. Each family must be one EC2 offers in the region.
     */
    async setInstanceFamilies(
      name: string,
      families: string[] | null,
      caller: Caller<ScopeTree>,
      by: string,
      opts?: WriteOptions,
    ): Promise<StoredScope> {
      requireVisibleScope(caller, name);
      caller.authorize('platform', undefined);
      if (families) {
        const hw = deps.hardware();
        const issues = unknownFamilyIssues(families, await hw.offeredFamilies(families), hw.region);
        if (issues.length) throw invalid('fix the instance families listed', issues);
        const tree = caller.tenancy;
        const stranded = strandedComputes(
          name,
          families,
          await deps.store.computes.listComputes(),
          (owner) => tree.has(owner) && tree.ancestors(owner).includes(name),
        );
        if (stranded.length) {
          const names = stranded.map((i) => i.path.slice('computes.'.length));
          throw new DomainError(
            'conflict',
            `${listed(names)} ${names.length === 1 ? 'uses' : 'use'} an instance family the new list for ${name} leaves out: delete or change ${names.length === 1 ? 'it' : 'them'} first, or keep the family (each is listed in errors)`,
            { reason: 'FamilyInUse', errors: stranded },
          );
        }
      }
      if (opts?.dryRun) {
        const current = await tenancy.getScope(name);
        if (!current) throw notFound(`scope ${name} does not exist`);
        const { instanceFamilies: _old, ...rest } = current;
        return {
          ...rest,
          ...(families ? { instanceFamilies: families } : {}),
          version: current.version + 1,
          updatedAt: now(),
          updatedBy: by,
        };
      }
      const s = await tenancy.writeInstanceFamilies(name, families ?? undefined, by, now());
      if (!s) throw notFound(`scope ${name} does not exist`);
      return s;
    },

    loadTree,
  };

  async function loadTree(): Promise<ScopeTree> {
    return new ScopeTree(await tenancy.listScopes());
  }
}

export type ScopeService = ReturnType<typeof scopeService>;
