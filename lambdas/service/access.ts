import { Caller } from '../domain/access';
import type { Identity } from '../domain/principal';
import { ScopeTree } from '../domain/quota';
import type { Dependencies } from '.';

/**
 * Who is calling, in the tenancy tree as it stands: the tree is read per request (one cached read), so a
 * membership change holds at once. Every permission question is then the Caller's (domain/access.ts).
 */
export function accessService(deps: Dependencies) {
  return {
    async callerOf(who: Identity): Promise<Caller<ScopeTree>> {
      const tree = new ScopeTree(await deps.store.tenancy.listScopes());
      return new Caller(who, tree, deps.config().admins);
    },
  };
}

export type AccessService = ReturnType<typeof accessService>;
