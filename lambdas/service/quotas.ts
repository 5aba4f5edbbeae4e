import type { Caller } from '../domain/access';
import { conflict, notFound, versionMismatch } from '../domain/errors';
import { assertQuotaWrite, type Quota, ScopeTree, sameQuota } from '../domain/quota';
import { GUARDS } from '../store/commit';
import type { StoredQuota } from '../store/tenancy';
import type { Dependencies } from '.';
import { requireVisibleScope } from './scopes';
import { committing, type WriteOptions } from './writes';

/**
 * The quota use cases: apply and delete a scope's quota, under the tenancy guard (store/commit.ts: the tree's sums span quotas), and
 * the reads. A quota is set from above: by an admin of the parent, an org's by a platform admin, so that nobody
 * raises their own guarantee. The rules of the whole set of quotas are domain/quota/quota.ts's.
 */
export function quotaService(deps: Dependencies) {
  const { tenancy, commit } = deps.store;

  const authorizeWrite = (caller: Caller<ScopeTree>, scope: string) => {
    requireVisibleScope(caller, scope);
    caller.authorize(caller.tenancy.parent(scope) ? 'set-quota' : 'platform', scope);
  };

  return {
    /** The quotas of scopes the caller can see, sorted. */
    async list(caller: Caller<ScopeTree>): Promise<StoredQuota[]> {
      const quotas = await tenancy.listQuotas();
      return quotas
        .filter((q) => caller.tenancy.has(q.scope) && caller.can('read', q.scope))
        .sort((a, b) => a.scope.localeCompare(b.scope));
    },

    /** Every stored quota (what scope manifests say `hasQuota` from). */
    all: () => tenancy.listQuotas(),

    async get(scope: string, caller: Caller<ScopeTree>): Promise<StoredQuota> {
      requireVisibleScope(caller, scope);
      const q = (await tenancy.listQuotas()).find((x) => x.scope === scope);
      if (!q) {
        throw notFound(
          `scope ${scope} has no quota; it guarantees the sum of its children's and limits nothing`,
        );
      }
      return q;
    },

    /** Sets a scope's guarantee and limit, checked against the tree and every other quota (409 naming numbers). */
    async apply(
      q: Quota,
      expected: number | undefined,
      caller: Caller<ScopeTree>,
      by: string,
      opts?: WriteOptions,
    ): Promise<StoredQuota> {
      authorizeWrite(caller, q.scope);
      return commit.commitDecision(
        committing(opts, async () => {
          const [scopes, quotas] = await Promise.all([tenancy.listScopes(), tenancy.listQuotas()]);
          const current = quotas.find((x) => x.scope === q.scope);
          if (expected !== undefined && (current?.version ?? 0) !== expected) {
            throw versionMismatch(
              `quota of ${q.scope} is at version ${current?.version ?? 0}, not ${expected}`,
            );
          }
          // The quota asked for is the one stored: nothing to write, so its version and updatedBy stay.
          if (current && sameQuota(current, q)) return { items: [], result: current };
          assertQuotaWrite(new ScopeTree(scopes), quotas, { ...q, delete: false });
          const item: StoredQuota = {
            scope: q.scope,
            guarantee: q.guarantee,
            ...(q.limit ? { limit: q.limit } : {}),
            version: (current?.version ?? 0) + 1,
            updatedAt: deps.clock().toISOString(),
            updatedBy: by,
          };
          return { items: tenancy.quotaPutItems(item, current), result: item };
        }),
        {
          guards: [GUARDS.tenancy],
          onItemConflict: () =>
            conflict(`quota of ${q.scope} changed meanwhile; read it again and retry`, 'ConcurrentUpdate'),
        },
      );
    },

    async remove(scope: string, caller: Caller<ScopeTree>, by: string, opts?: WriteOptions): Promise<void> {
      authorizeWrite(caller, scope);
      await commit.commitDecision(
        committing(opts, async () => {
          const [scopes, quotas] = await Promise.all([tenancy.listScopes(), tenancy.listQuotas()]);
          if (!quotas.some((q) => q.scope === scope)) throw notFound(`scope ${scope} has no quota`);
          assertQuotaWrite(new ScopeTree(scopes), quotas, { scope, delete: true });
          return { items: [tenancy.quotaDeleteItem(scope)], result: undefined };
        }),
        { guards: [GUARDS.tenancy] },
      );
    },
  };
}

export type QuotaService = ReturnType<typeof quotaService>;
