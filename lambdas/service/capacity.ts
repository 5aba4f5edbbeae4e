import type { Caller } from '../domain/access';
import { restoreHeadroom } from '../domain/admission-world';
import {
  consolidationView,
  consolidationWorld,
  placedAsReady,
  planConsolidation,
} from '../domain/consolidation';
import { capacityView, type ScopeTree } from '../domain/quota';
import type { Dependencies } from '.';
import type { AdmissionService } from './admission';
import type { CatalogService } from './catalog';
import { requireVisibleScope } from './scopes';

/**
 * The capacity view (GET /v1/capacity): per scope the caller can see, guarantee, limit, usage, borrowed and
 * pending by reason, from the stored admissions (no decision pass); and the cluster headroom as admitted.
 */
export function capacityService(
  deps: Dependencies,
  svc: { catalog: CatalogService; admission: AdmissionService },
) {
  return {
    /**
     * What consolidation would do now (GET /v1/capacity?consolidation=true), before it acts: the moves, the
     * saving per hour and the nodes freed, as the caller may read them. It plans as the admitter does: with
     * the Ready replicas the reconciler saw, and the computes as admission may fill them now; where llmcap does
     * not run the pods, every placed replica counts as Ready (and the admitter moves nothing).
     */
    async consolidation(caller: Caller<ScopeTree>) {
      const world = await svc.admission.loadWorld(await svc.catalog.load());
      const now = deps.clock().toISOString();
      const plan = planConsolidation(
        consolidationWorld(world, world.admissions, now),
        world.ready ?? placedAsReady(world.admissions),
        deps.config().consolidation,
        now,
      );
      return consolidationView(plan, world, caller);
    },
    async view(caller: Caller<ScopeTree>, scope?: string) {
      if (scope) requireVisibleScope(caller, scope);
      const world = await svc.admission.loadWorld(await svc.catalog.load());
      const view = capacityView(
        { scopes: world.scopes, quotas: world.quotas, models: world.models, admissions: world.admissions },
        scope ? { scope } : {},
      );
      const { headroom } = restoreHeadroom(world.computes, world.admissions, world.models, caller.tenancy);
      const owners = new Map(world.computes.map((c) => [c.name, c.owner]));
      const usage = headroom.usage().map((u) => ({ ...u, freeNodes: u.maxNodes - u.usedNodes }));
      // Computes the caller cannot see count in the cluster's totals only: no name, owner or count of their own.
      // Each with its owner: two tenants' computes may share a name (domain/names.ts).
      const computes = usage
        .filter((u) => caller.canSee(owners.get(u.compute)))
        .map((u) => {
          const owner = owners.get(u.compute);
          return owner ? { ...u, owner } : u;
        });
      const sum = (k: 'usedNodes' | 'replicas' | 'maxNodes' | 'freeNodes') =>
        usage.reduce((n, u) => n + u[k], 0);
      return {
        scopes: view.scopes.filter((s) => caller.can('read', s.scope)),
        cluster: {
          computes,
          totals: {
            usedNodes: sum('usedNodes'),
            replicas: sum('replicas'),
            maxNodes: sum('maxNodes'),
            freeNodes: sum('freeNodes'),
          },
        },
      };
    },
  };
}
