import { admitCatalogChange, decisionWrites, type World } from '../domain/admission-world';
import { autoscalingStatus, demandOf } from '../domain/autoscaling';
import type { ChangeResult } from '../domain/catalog';
import { conflict } from '../domain/errors';
import { admissionEvents, type ResourceEvent } from '../domain/events';
import type { Model } from '../domain/model';
import {
  admissionAsSeen,
  type Decision,
  type ModelAdmission,
  modelStatus,
  type Reader,
} from '../domain/quota';
import type { WorkloadStatus } from '../domain/workloads';
import type { TxItem } from '../store/ledger';
import { LEDGER_MAX_ITEMS } from '../store/limits';
import type { Dependencies } from '.';
import type { LoadedCatalog } from './catalog';

/**
 * Admission, loaded and written: everything a decision reads is loaded inside the caller's ledger transaction,
 * and what it decides is written in that same transaction, so decisions are serializable
 * (docs/reference/quota-semantics.md §7). The API decides the changed model alone; reconcile every pending request.
 */
export function admissionService(deps: Dependencies) {
  const { tenancy, admissions, workloads } = deps.store;

  return {
    /** The world a decision reads, the catalog given or loaded by the caller. */
    async loadWorld(catalog: LoadedCatalog): Promise<World> {
      const [scopes, quotas, stored, demand] = await Promise.all([
        tenancy.listScopes(),
        tenancy.listQuotas(),
        admissions.listAdmissions(),
        workloads.listWorkloads().then(demandOf),
      ]);
      return {
        computes: catalog.computes,
        models: catalog.models,
        scopes,
        quotas,
        admissions: stored,
        demand,
      };
    },

    /**
     * The admission writes of one catalog change, to commit with its `alongside` own items: refuses a start
     * that can never fit (409, nothing stored) and a change that would write more than one transaction holds.
     */
    async forCatalogChange(
      state: LoadedCatalog,
      change: ChangeResult,
      now: string,
      alongside: number,
    ): Promise<{
      items: TxItem[];
      decision: Decision;
      after: ModelAdmission | undefined;
      /** What the decision changed for each model, to record once it has committed. */
      events: ResourceEvent[];
    }> {
      const [scopes, quotas, stored] = await Promise.all([
        tenancy.listScopes(),
        tenancy.listQuotas(),
        admissions.listAdmissions(),
      ]);
      const d = admitCatalogChange(
        { scopes, quotas, admissions: stored, computes: state.computes },
        change,
        now,
      );
      const w = decisionWrites(d);
      const items = admissions.admissionItems(w.next, w.removed);
      // The change's own items (the model, the computes it pins) share the transaction with these.
      if (items.length + alongside > LEDGER_MAX_ITEMS) {
        throw conflict(
          `this change would move ${items.length} admissions at once; split it and retry`,
          'TooLarge',
        );
      }
      // The changed model's admission once this commits: what the write answers with, so it reads nothing more.
      const name = change.after?.name;
      // In a group, `stored` is the overlay: what the decisions before this one left.
      const after =
        name === undefined
          ? undefined
          : (w.next.find((a) => a.model === name) ?? stored.find((a) => a.model === name));
      const created = new Map(state.models.map((m) => [m.name, m.createdAt]));
      if (change.after) created.set(change.after.name, change.after.createdAt);
      const events = admissionEvents(stored, w.next, (m) => created.get(m), now, 'api');
      return { items, decision: d, after, events };
    },

    /**
     * The admission part of each model's status, for the models API: one read of the admission record for a
     * single model, the (cached) admission partition for a list, never one read per model. Where llmcap runs
     * the pods (LLMCAP_WORKLOADS=deploy), each also gets `running` (0 until a pod is Ready), the pods and their
     * reasons, read the same way from what the reconciler last saw; elsewhere llmcap knows nothing of the pods
     * and says nothing. `known` gives the admissions when the caller has them (a write's own decision). Each
     * tells `reader` only what it may read of other scopes' models (domain/quota/telling.ts).
     */
    async summaries(
      models: readonly Model[],
      reader: Reader,
      known?: { admissions: readonly ModelAdmission[] },
    ) {
      const deploy = deps.config().deployWorkloads;
      const one = models.length === 1 ? models[0]! : undefined;
      const [stored, seen, lastObserved] = await Promise.all([
        known
          ? known.admissions
          : one
            ? admissions.getAdmission(one.name).then((a) => (a ? [a] : []))
            : admissions.listAdmissions(),
        !deploy
          ? []
          : one
            ? workloads.getWorkload(one.name).then((w) => (w ? [w] : []))
            : workloads.listWorkloads(),
        deploy ? workloads.lastObserved() : undefined,
      ]);
      const byModel = new Map(stored.map((a) => [a.model, a]));
      const podsOf = new Map(seen.map((w) => [w.model, w]));
      return models.map((m) => {
        const a = byModel.get(m.name);
        const status = modelStatus(m, a && admissionAsSeen(a, reader));
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

/** The later of two ISO times, either possibly absent. */
export function latest(a: string | undefined, b: string | undefined): string | undefined {
  return a && b ? (a > b ? a : b) : (a ?? b);
}
