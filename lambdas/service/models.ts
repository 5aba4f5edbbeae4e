import type { Caller } from '../domain/access';
import { type ChangePreview, changePreview } from '../domain/admission-world';
import {
  applyChange,
  type CatalogAccess,
  type CatalogChange,
  type ChangeResult,
  checkRefusal,
  type ModelCheck,
  sourcesIndex,
} from '../domain/catalog';
import { conflict, notFound } from '../domain/errors';
import type { ResourceEvent } from '../domain/events';
import type { AdmissionSummary, Model } from '../domain/model';
import type { ModelAdmission } from '../domain/quota';
import type { Dependencies } from '.';
import type { AdmissionService } from './admission';
import type { CatalogService } from './catalog';
import type { EventService } from './events';
import { committing, type WriteOptions } from './writes';

/**
 * The model use cases: add, replace, remove, scale, resources, class and owner (one catalog change each), and
 * the reads. A change is decided against the whole catalog under the ledger: the next catalog is validated, the
 * pre-add check may refuse it, admission decides the changed model, and the model, its admission and any
 * victims' are written in one transaction with the ledger bump (or nothing is).
 */

/** Verbs whose result the pre-add check sees (a model that may no longer run). */
const CHECKED_VERBS = new Set<CatalogChange['verb']>(['add', 'replace', 'resources']);

// Declared models are readable by everyone; an added one by its owner's members (and everyone when shared).
export const visibleTo = (caller: Caller, m: { declared?: boolean; owner?: string }) =>
  m.declared === true || caller.canSee(m.owner);

export function modelService(
  deps: Dependencies,
  svc: { catalog: CatalogService; admission: AdmissionService; events: EventService },
) {
  const { catalog, admission, events } = svc;

  /** Applies one catalog change (refused, writing nothing, when it breaks a rule); the model before and after. */
  async function change(
    c: CatalogChange,
    opts: { by: string; access?: CatalogAccess; owner?: string } & WriteOptions,
  ): Promise<ChangeResult & { preview?: ChangePreview; admission?: { after: ModelAdmission | undefined } }> {
    // The check may be slow (a deployment's may look at the weights): run it once per distinct model, not per retry.
    const checked = new Map<string, Awaited<ReturnType<ModelCheck>>>();
    let decided: ResourceEvent[] = [];
    const r = await deps.store.ledger.withLedger(
      committing(opts, async () => {
        const state = await catalog.load();
        const now = deps.clock().toISOString();
        const r = applyChange(state, c, { by: opts.by, now, access: opts.access, ownerParam: opts.owner });
        if (r.unchanged) return { items: [], result: r };
        if (r.after && CHECKED_VERBS.has(c.verb)) {
          const candidate = { name: r.after.name, owner: r.after.owner, spec: r.after.spec };
          const key = JSON.stringify(candidate);
          let problems = checked.get(key);
          if (!problems) {
            problems = await deps.modelCheck(candidate, {
              verb: c.verb as 'add' | 'replace' | 'resources',
              computes: state.computes,
            });
            checked.set(key, problems);
          }
          if (problems.length) throw checkRefusal(r.after.name, problems);
        }
        const own = deps.store.models.changeItems(r, state.computes);
        const admitted = await admission.forCatalogChange(state, r, now, own.length);
        // The last attempt's events are the committed decision's: a retry decides again from scratch.
        decided = opts.dryRun ? [] : admitted.events;
        // A commit answers with the admission it wrote (or kept), so the answer needs no read of it afterwards.
        const result = opts.dryRun
          ? { ...r, preview: changePreview(r, admitted.decision) }
          : { ...r, admission: { after: admitted.after } };
        return { items: [...own, ...admitted.items], result };
      }),
      {
        by: opts.by,
        groupable: true,
        onItemConflict: (i) =>
          i === 0
            ? conflict(
                `model ${c.name} changed while this request was deciding; read it again and retry`,
                'ConcurrentUpdate',
              )
            : conflict(
                `a compute that model ${c.name} pins changed meanwhile; retry the request`,
                'ConcurrentUpdate',
              ),
      },
    );
    if (!r.unchanged) await events.record(decided);
    return r;
  }

  return {
    change,

    /**
     * The admission part of each model's status (absent until admission decided something for it), as `reader`
     * may read it: of other scopes' models it cannot see, no name or figure.
     */
    statusOf(
      models: readonly Model[],
      reader: Caller,
      known?: { admissions: readonly ModelAdmission[] },
    ): Promise<(AdmissionSummary | undefined)[]> {
      return admission.summaries(models, reader, known);
    },

    /** The catalog the caller can see, sorted; rows left out are an operator's concern (platform admins see them). */
    async list(caller: Caller) {
      const c = await catalog.load();
      const items = c.models.filter((m) => visibleTo(caller, m)).sort((a, b) => a.name.localeCompare(b.name));
      return { items, skipped: caller.isPlatformAdmin ? c.skipped : [] };
    },

    /** One model the caller can see (`owner` says which of two); a stored row left out of the catalog says why. */
    async get(name: string, caller: Caller, owner?: string): Promise<Model> {
      const { model, skipped } = await catalog.get(name, (m) => visibleTo(caller, m), owner);
      if (model) return model;
      if (skipped) {
        throw notFound(
          `model ${name} is stored but left out of the catalog because ${skipped.problem}; replace it with PUT /v1/models/${name} or remove it with DELETE`,
        );
      }
      throw notFound(`model ${name} does not exist; GET /v1/models lists the catalog`);
    },

    /** Each weights source and the models the caller can see that use it. */
    async sources(caller: Caller) {
      const c = await catalog.load();
      return sourcesIndex(c.models.filter((m) => visibleTo(caller, m)));
    },
  };
}

export type ModelService = ReturnType<typeof modelService>;
