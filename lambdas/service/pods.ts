import type { Caller } from '../domain/access';
import { notFound } from '../domain/errors';
import { resolveName } from '../domain/names';
import { type PodFilter, type PodView, podMatches } from '../domain/workloads';
import type { Dependencies } from '.';
import { latest } from './admission';
import type { CatalogService } from './catalog';
import { visibleTo } from './models';

/**
 * `GET /v1/pods` (issue 20 §2): the pods of llmcap's models across the catalog, as the reconciler last saw them
 * (store/workloads.ts). The API has no access to the cluster and needs none: it reads what the reconciler
 * stored. A caller sees the pods of the models it may see (the models API's rule), so another tenant's
 * model's pods are as absent as the model; pods of a model gone from the catalog only platform admins see.
 */

export interface PodItem extends PodView {
  /** When llmcap last listed this pod: the latest pass that saw every pod, or its item's last change. */
  observedAt: string;
}

export interface PodList {
  /** False where llmcap leaves the pods to others (LLMCAP_WORKLOADS=off): it knows none. */
  deployed: boolean;
  items: PodItem[];
  /** When the reconciler last listed the pods; absent before its first pass. */
  observedAt?: string;
  /** Models with more pods than their status lists (MAX_PODS_SHOWN): the list holds `shown` of `total`. */
  truncated: { model: string; shown: number; total: number }[];
}

export function podService(deps: Dependencies, svc: { catalog: CatalogService }) {
  const { workloads } = deps.store;
  return {
    async list(caller: Caller, asked: PodFilter): Promise<PodList> {
      const catalog = await svc.catalog.load();
      const models = new Map(catalog.models.map((m) => [m.name, m]));
      const mayRead = (name: string) => {
        const m = models.get(name);
        return m ? visibleTo(caller, m) : caller.isPlatformAdmin;
      };
      // The filter speaks names; pods carry keys: the model and compute of that name the caller sees.
      const filter = { ...asked };
      if (asked.model !== undefined) {
        const m = resolveName('model', asked.model, undefined, catalog.models, (x) => visibleTo(caller, x));
        if (m) filter.model = m.name;
        else if (!mayRead(asked.model))
          throw notFound(`model ${asked.model} does not exist; GET /v1/models lists the catalog`);
      }
      if (asked.compute !== undefined) {
        const c = resolveName('compute', asked.compute, undefined, catalog.computes, (x) =>
          caller.canSee(x.owner),
        );
        if (c) filter.compute = c.name;
      }
      if (!deps.config().deployWorkloads) return { deployed: false, items: [], truncated: [] };
      const [stored, last] = await Promise.all([
        filter.model !== undefined
          ? workloads.getWorkload(filter.model).then((w) => (w ? [w] : []))
          : workloads.listWorkloads(),
        workloads.lastObserved(),
      ]);
      const items: PodItem[] = [];
      const truncated: PodList['truncated'] = [];
      for (const w of stored) {
        if (!mayRead(w.model)) continue;
        const observedAt = latest(w.observedAt, last) ?? w.observedAt;
        const total = w.total ?? w.pods.length;
        if (total > w.pods.length) truncated.push({ model: w.model, shown: w.pods.length, total });
        for (const p of w.pods) if (podMatches(p, filter)) items.push({ ...p, observedAt });
      }
      items.sort((a, b) => a.model.localeCompare(b.model) || a.name.localeCompare(b.name));
      return { deployed: true, items, ...(last ? { observedAt: last } : {}), truncated };
    },
  };
}

export type PodService = ReturnType<typeof podService>;
