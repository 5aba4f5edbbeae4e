import type { Caller } from '../domain/access';
import { type ChangePreview, changePreview } from '../domain/admission-world';
import {
  applyChange,
  type CatalogChange,
  type ChangeResult,
  checkRefusal,
  type ModelCheck,
  sourcesIndex,
} from '../domain/catalog';
import { conflict, notFound } from '../domain/errors';
import type { AdmissionSummary, Model } from '../domain/model';
import { nameOf } from '../domain/names';
import type { ScopeTree } from '../domain/quota';
import { GUARDS } from '../store/commit';
import type { Dependencies } from '.';
import type { AdmissionService, KnownStatus } from './admission';
import type { CatalogService } from './catalog';
import { committing, type WriteOptions } from './writes';

/**
 * The model use cases: add, replace, remove, scale, resources, class and owner (one catalog change each), and
 * the reads. A change is validated as the whole next catalog, the pre-add check may refuse it, admission refuses
 * a start that can never fit; what passes is stored as intent, and the admitter decides its replicas.
 */

/** Verbs whose result the pre-add check sees (a model that may no longer run). */
const CHECKED_VERBS = new Set<CatalogChange['verb']>(['add', 'replace', 'resources']);

// Declared models are readable by everyone; an added one by its owner's members (and everyone when shared).
export const visibleTo = (caller: Caller, m: { declared?: boolean; owner?: string }) =>
  m.declared === true || caller.canSee(m.owner);

/**
 * The guards a change decides under (store/commit.ts): a change that makes or moves a name, or removes a model,
 * takes its name's; one that names a fallback takes the fallback's too, so an add naming a model and that model's
 * removal cannot both pass. A scaling, class or resources change takes none: its conditions are on its own item.
 */
function changeGuards(c: CatalogChange): string[] {
  const names = new Set<string>();
  if (c.verb === 'add' || c.verb === 'replace' || c.verb === 'owner' || c.verb === 'remove')
    names.add(nameOf(c.name));
  if ((c.verb === 'add' || c.verb === 'replace') && c.spec.fallback) names.add(nameOf(c.spec.fallback));
  return [...names].sort().map(GUARDS.modelName);
}

/**
 * A change as committed (or previewed): the catalog's result, what its answer's status needs, and the caller as
 * the deciding read of the tree saw it, for the answer to tell what that caller may read.
 */
type ChangeOutcome = ChangeResult & {
  preview?: ChangePreview;
  admission?: KnownStatus;
  caller?: Caller<ScopeTree>;
};

/** The scopes (and versions) an editor's role over the model before and after the change came from. */
function editorLineage(tree: ScopeTree, r: ChangeResult): { scope: string; version: number }[] {
  const owners = new Set([(r.before ?? r.replacesSkipped)?.owner, r.after?.owner]);
  const out = new Map<string, number>();
  for (const o of owners) if (o) for (const l of tree.lineageVersions(o)) out.set(l.scope, l.version);
  return [...out].sort(([a], [b]) => a.localeCompare(b)).map(([scope, version]) => ({ scope, version }));
}

export function modelService(
  deps: Dependencies,
  svc: { catalog: CatalogService; admission: AdmissionService },
) {
  const { catalog, admission } = svc;

  /**
   * Applies one catalog change (refused, writing nothing, when it breaks a rule) and stores it as intent: the
   * model item conditional on the version read, the computes it pins checked at theirs, and for a new name (or
   * owner) the name's guard, so two adds of one name along a line cannot both pass. Admission is the admitter's
   * (service/admitter.ts), triggered by this very write: the answer carries the last decision and Queued.
   */
  async function change(
    c: CatalogChange,
    opts: {
      by: string;
      /** The caller; each decision asks it again in the tree that decision read (Caller.within). */
      access?: Caller<ScopeTree>;
      /** The request's `?owner=`, resolved in the decision's tree. */
      owner?: string | ((caller: Caller<ScopeTree>) => string | undefined);
    } & WriteOptions,
  ): Promise<ChangeOutcome> {
    // The check may be slow (a deployment's may look at the weights): run it once per distinct model, not per retry.
    const checked = new Map<string, Awaited<ReturnType<ModelCheck>>>();
    const guards = changeGuards(c);
    // A dry run previews on fresh reads; a write's first decision may use this process's young answers.
    const snapshotMs = opts.dryRun ? 0 : deps.config().writeSnapshotMs;
    // The answer's pods, read beside the decision rather than after the commit: one round trip fewer.
    const pods =
      opts.dryRun || c.verb === 'remove'
        ? undefined
        : admission.podsOf(c.name, snapshotMs ? { maxAgeMs: snapshotMs } : undefined);
    pods?.catch(() => {}); // awaited below; a refused change never asks, and must not leave it unhandled
    const r = await deps.store.commit.commitDecision<ChangeOutcome>(
      committing(opts, async (age) => {
        const [state, rest] = await Promise.all([
          catalog.load(age),
          admission.loadRest({ demand: opts.dryRun === true, age }),
        ]);
        const now = deps.clock().toISOString();
        // The caller's roles as this decision's tree has them: on a snapshot, its lineage checks below hold them.
        const access = opts.access?.within(state.lineage);
        const ownerParam = typeof opts.owner === 'function' ? access && opts.owner(access) : opts.owner;
        const r = applyChange(state, c, { by: opts.by, now, access, ownerParam });
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
        const { decision, stored } = admission.check(state, rest, r, now, opts.dryRun === true);
        const result: ChangeOutcome = decision
          ? { ...r, preview: changePreview(r, decision), caller: access }
          : { ...r, admission: { admissions: stored ? [stored] : [] }, caller: access };
        const lineage = access && !access.isPlatformAdmin ? editorLineage(state.lineage, r) : [];
        return { items: deps.store.models.changeItems(r, state.computes, now, lineage), result };
      }),
      {
        guards,
        // What a model's profiles fit depends on the computes: one deleted meanwhile sends the write back to
        // decide again, instead of storing a model no compute can take (left out of the catalog on the next read).
        checks: CHECKED_VERBS.has(c.verb) ? [GUARDS.computes] : undefined,
        snapshotMs,
        // Concurrent writes of one model in this process would only race each other for its item.
        oneAtATime: opts.dryRun ? undefined : `model#${nameOf(c.name)}`,
        onItemConflict: (i) =>
          i === 0
            ? conflict(
                `model ${c.name} changed while this request was deciding; read it again and retry`,
                'ConcurrentUpdate',
              )
            : conflict(
                `a compute that model ${c.name} pins, or its owner scope, changed meanwhile; retry the request`,
                'ConcurrentUpdate',
              ),
      },
    );
    if (r.admission) r.admission.pods = await pods;
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
      known?: KnownStatus,
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
