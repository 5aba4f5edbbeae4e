import { Caller } from '../domain/access';
import type { Identity } from '../domain/principal';
import { ScopeTree } from '../domain/quota';
import type { Dependencies } from '.';

/**
 * Who is calling, in the tenancy tree as it stands: the tree is read per request (one shared read), so a
 * membership change holds at once. Every permission question is then the Caller's (domain/access.ts). A write
 * whose decision asks the caller again in the tree it reads (and commits on that tree's lineage, store/tenancy.ts
 * lineageChecks) may start from the tree as this process last read it (`snapshot`).
 */
export function accessService(deps: Dependencies) {
  return {
    async callerOf(who: Identity, opts: { snapshot?: boolean } = {}): Promise<Caller<ScopeTree>> {
      const ms = opts.snapshot ? deps.config().writeSnapshotMs : 0;
      const tree = new ScopeTree(await deps.store.tenancy.listScopes(ms ? { maxAgeMs: ms } : undefined));
      return new Caller(who, tree, deps.config().admins);
    },
  };
}

export type AccessService = ReturnType<typeof accessService>;
