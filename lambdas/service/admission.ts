import { admitCatalogChange, decisionWrites, type World } from '../domain/admission-world';
import type { ChangeResult } from '../domain/catalog';
import { conflict } from '../domain/errors';
import type { Model } from '../domain/model';
import { type Decision, modelStatus } from '../domain/quota';
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
  const { tenancy, admissions } = deps.store;

  return {
    /** The world a decision reads, the catalog given or loaded by the caller. */
    async loadWorld(catalog: LoadedCatalog): Promise<World> {
      const [scopes, quotas, stored] = await Promise.all([
        tenancy.listScopes(),
        tenancy.listQuotas(),
        admissions.listAdmissions(),
      ]);
      return { computes: catalog.computes, models: catalog.models, scopes, quotas, admissions: stored };
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
    ): Promise<{ items: TxItem[]; decision: Decision }> {
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
      return { items, decision: d };
    },

    /**
     * The admission part of each model's status, for the models API: one read of the admission record for a
     * single model, the (cached) admission partition for a list, never one read per model.
     */
    async summaries(models: readonly Model[]) {
      if (models.length === 1)
        return [modelStatus(models[0]!, await admissions.getAdmission(models[0]!.name))];
      const byModel = new Map((await admissions.listAdmissions()).map((a) => [a.model, a]));
      return models.map((m) => modelStatus(m, byModel.get(m.name)));
    },
  };
}

export type AdmissionService = ReturnType<typeof admissionService>;
