import { checkCatalogChange, type World } from '../domain/admission-world';
import { autoscalingStatus, demandOf } from '../domain/autoscaling';
import type { ChangeResult } from '../domain/catalog';
import { observedReady } from '../domain/consolidation';
import { type Model, queuedStatus } from '../domain/model';
import {
  admissionAsSeen,
  type Decision,
  type ModelAdmission,
  modelStatus,
  type Reader,
} from '../domain/quota';
import { replicasGoing } from '../domain/supply';
import type { WorkloadStatus } from '../domain/workloads';
import type { ReadAge } from '../store/shared-read';
import type { StoredWorkload } from '../store/workloads';
import type { Dependencies } from '.';
import type { LoadedCatalog } from './catalog';

/**
 * Admission as the API and the admitter load it. The API checks a change against the world as it reads it and
 * stores intent (service/models.ts); the admitter (service/admitter.ts) alone decides and writes admissions
 * (docs/reference/quota-semantics.md §7). Reads answer each model's status with its last decision and, while a
 * later version of it waits for the admitter, the reason Queued.
 */
export function admissionService(deps: Dependencies) {
  const { tenancy, admissions, workloads } = deps.store;

  /**
   * Everything but the catalog: the tree, the quotas and the admissions as stored; with `demand`, what load asks
   * of autoscaled models too (a dry run's preview decides on it, as the admitter will).
   */
  const loadRest = (opts: { demand?: boolean; age?: ReadAge } = {}) =>
    Promise.all([
      tenancy.listScopes(opts.age),
      tenancy.listQuotas(opts.age),
      admissions.listAdmissions(opts.age),
      opts.demand ? deps.store.demand.listDemands() : undefined,
    ]).then(([scopes, quotas, stored, demands]) => ({
      scopes,
      quotas,
      admissions: stored,
      ...(demands ? { demand: demandOf(demands) } : {}),
    }));

  return {
    /** The world a decision reads, the catalog given or loaded by the caller. */
    async loadWorld(catalog: LoadedCatalog, age?: ReadAge): Promise<World> {
      // What load asks of autoscaled models (their DEMAND items, store/demand.ts), which the admitter decides on,
      // and, where llmcap runs the pods, which of them are Ready where: what consolidation moves by. The pods are
      // always read fresh: their partition wakes no admitter, so nothing says when a reading of it went stale.
      const deploy = deps.config().deployWorkloads;
      const [rest, demands, seen] = await Promise.all([
        loadRest({ age }),
        deps.store.demand.listDemands(age),
        deploy ? workloads.listWorkloads() : undefined,
      ]);
      // A table written before DEMAND items existed keeps the demand in the WORKLOAD item until the next pass
      // writes one: read there for an autoscaled model without one, so a deploy does not drop it to its target.
      const known = new Set(demands.map((d) => d.model));
      const without = new Set(
        catalog.models.filter((m) => m.spec.autoscaling && !known.has(m.name)).map((m) => m.name),
      );
      const listed = seen ?? (without.size ? await workloads.listWorkloads() : []);
      const before = listed.flatMap((w) =>
        w.autoscaling?.desired !== undefined && without.has(w.model)
          ? [{ model: w.model, desired: w.autoscaling.desired }]
          : [],
      );
      return {
        computes: catalog.computes,
        models: catalog.models,
        ...rest,
        demand: demandOf([...demands, ...before]),
        ...(seen ? { ready: observedReady(seen), going: replicasGoing(seen, catalog.computes) } : {}),
      };
    },

    /** The tree, quotas and admissions, for a write that loads its catalog beside them (one round trip). */
    loadRest,

    /**
     * What the reconciler last saw of one model's pods, for a write to read beside its decision instead of after
     * its commit (one round trip fewer); nothing where llmcap does not run the pods.
     */
    async podsOf(model: string, age?: ReadAge): Promise<KnownStatus['pods']> {
      if (!deps.config().deployWorkloads) return undefined;
      const [w, lastObserved] = await Promise.all([
        workloads.getWorkload(model, age),
        workloads.lastObserved(age),
      ]);
      return { model, seen: w ? [w] : [], lastObserved };
    },

    /**
     * The API's check of one catalog change (domain checkCatalogChange): refuses a start that can never fit (409,
     * nothing stored); in a dry run, the decision the admitter would make for the changed model, to preview.
     */
    check(
      state: LoadedCatalog,
      rest: Awaited<ReturnType<typeof loadRest>>,
      change: ChangeResult,
      now: string,
      preview: boolean,
    ): { decision?: Decision; stored?: ModelAdmission } {
      const decision = checkCatalogChange({ ...rest, computes: state.computes }, change, now, { preview });
      const name = change.after?.name;
      const stored = name === undefined ? undefined : rest.admissions.find((a) => a.model === name);
      return { ...(decision ? { decision } : {}), ...(stored ? { stored } : {}) };
    },

    /**
     * The admission part of each model's status, for the models API: one read of the admission record for a
     * single model, the (cached) admission partition for a list, never one read per model. Where llmcap runs
     * the pods (LLMCAP_WORKLOADS=deploy), each also gets `running` (0 until a pod is Ready), the pods and their
     * reasons, read the same way from what the reconciler last saw; elsewhere llmcap knows nothing of the pods
     * and says nothing. `known` gives the admissions when the caller has them (a write's own decision). Each
     * tells `reader` only what it may read of other scopes' models (domain/quota/telling.ts).
     */
    async summaries(models: readonly Model[], reader: Reader, known?: KnownStatus) {
      const deploy = deps.config().deployWorkloads;
      const one = models.length === 1 ? models[0]! : undefined;
      const pods = one && known?.pods?.model === one.name ? known.pods : undefined;
      const [stored, seen, lastObserved] = await Promise.all([
        known
          ? known.admissions
          : one
            ? admissions.getAdmission(one.name).then((a) => (a ? [a] : []))
            : admissions.listAdmissions(),
        !deploy
          ? []
          : pods
            ? pods.seen
            : one
              ? workloads.getWorkload(one.name).then((w) => (w ? [w] : []))
              : workloads.listWorkloads(),
        deploy ? (pods ? pods.lastObserved : workloads.lastObserved()) : undefined,
      ]);
      const byModel = new Map(stored.map((a) => [a.model, a]));
      const podsOf = new Map(seen.map((w) => [w.model, w]));
      return models.map((m) => {
        const a = byModel.get(m.name);
        // The last decision as the reader may see it, and Queued while a later version waits for the admitter.
        const status = queuedStatus(
          m,
          a?.modelVersion,
          a !== undefined,
          modelStatus(m, a && admissionAsSeen(a, reader)),
        );
        if (!deploy) return status;
        const w = podsOf.get(m.name);
        // When the pods were last looked at, which a steady pass confirms without rewriting the model's item.
        const observedAt = latest(w?.observedAt, lastObserved);
        const pods: Omit<WorkloadStatus, 'total'> & { observedAt?: string } = {
          running: w?.running ?? 0,
          pods: w?.pods ?? [],
          podReasons: w?.podReasons ?? [],
          ...(observedAt ? { observedAt } : {}),
        };
        return {
          ...status,
          ...pods,
          ...(w?.autoscaling ? { autoscaling: autoscalingStatus(w.autoscaling, status) } : {}),
        };
      });
    },
  };
}

export type AdmissionService = ReturnType<typeof admissionService>;

/** What a caller already read for a status: the admissions, and (a write's) one model's pods, read beside it. */
export interface KnownStatus {
  admissions: readonly ModelAdmission[];
  pods?: { model: string; seen: readonly StoredWorkload[]; lastObserved: string | undefined };
}

/** The later of two ISO times, either possibly absent. */
export function latest(a: string | undefined, b: string | undefined): string | undefined {
  return a && b ? (a > b ? a : b) : (a ?? b);
}
