import {
  type BuiltCatalog,
  buildCatalog,
  declaredToModel,
  modelsUsingCompute,
  type ReachOf,
  type SkippedModel,
} from '../domain/catalog';
import type { Compute } from '../domain/compute';
import { deepFreeze } from '../domain/freeze';
import type { Model } from '../domain/model';
import { resolveName } from '../domain/names';
import { ScopeTree } from '../domain/quota';
import { logger } from '../shared/logger';
import type { ReadAge } from '../store/shared-read';
import type { Dependencies } from '.';

/**
 * The catalog in force: the declared models (config/catalog.yaml) and the stored rows, validated against the
 * computes (domain/catalog). A stored row that does not validate is left out with a warning, one row at a time.
 */

export interface LoadedCatalog extends BuiltCatalog {
  /** The computes the catalog was validated against (those not being deleted), with their versions. */
  computes: readonly Compute[];
  reach: ReachOf;
  /** The tenancy tree, for names per owner (domain/names.ts). */
  lineage: ScopeTree;
}

// Declared models are as old as the configuration this container loaded.
let declaredAt: string | undefined;
// Each bad row is logged once per container, not on every request that loads the catalog.
const warned = new Set<string>();

function warnOnce(key: string, message: string, detail: Record<string, unknown>): void {
  if (warned.has(key)) return;
  warned.add(key);
  logger.warn(message, detail);
}

export function catalogService(deps: Dependencies) {
  // Built once per service: the configuration a container loaded does not change, and frozen models let the
  // catalog's validation check each of them once (domain/catalog/validation.ts).
  let declaredModels: readonly Model[] | undefined;
  const declared = (): Model[] => {
    declaredAt ??= deps.clock().toISOString();
    const at = declaredAt;
    declaredModels ??= deepFreeze(deps.builtins.models().map((d) => declaredToModel(d, at)));
    return [...declaredModels];
  };

  /** The catalog as stored now, or as this process last read it when no older than `age` (a write's first decision). */
  async function load(age?: ReadAge): Promise<LoadedCatalog> {
    const [rows, all, scopes] = await Promise.all([
      deps.store.models.listModelRows(age),
      deps.store.computes.listComputes(age),
      deps.store.tenancy.listScopes(age),
    ]);
    // Frozen: the checks of one write reuse what placement knows of this list (domain/catalog/validation.ts).
    const computes: readonly Compute[] = Object.freeze(all.filter((c) => !c.deletionRequested));
    // A model may use platform computes and those of its owner or a scope above it (docs/security.md).
    const tree = new ScopeTree(scopes);
    const reach: ReachOf = (owner) => tree.reach(owner);
    const built = buildCatalog(declared(), rows, computes, reach);
    for (const s of built.skipped) {
      warnOnce(`${s.name}|${s.version}|${s.problem}`, 'stored model skipped: it is left out of the catalog', {
        model: s.name,
        problem: s.problem,
      });
    }
    for (const i of built.issues) {
      warnOnce(
        `declared|${i.model}|${i.message}`,
        'declared model breaks a catalog rule; fix config/catalog.yaml',
        {
          model: i.model,
          problem: i.message,
        },
      );
    }
    return { ...built, computes, reach, lineage: tree };
  }

  return {
    load,

    /**
     * The model or skipped row a caller means by `name` (and `owner`, when it sees two: 409 AmbiguousName), among
     * those `canSee` allows; or nothing.
     */
    async get(
      name: string,
      canSee: (m: { declared?: boolean; owner?: string }) => boolean,
      owner?: string,
    ): Promise<{ model?: Model; skipped?: SkippedModel }> {
      const c = await load();
      const rows = [...c.models, ...c.skipped.map((s) => ({ ...s, declared: false }))];
      const key = resolveName('model', name, owner, rows, canSee)?.name;
      const model = c.models.find((m) => m.name === key);
      if (model) return { model };
      return { skipped: c.skipped.find((s) => s.name === key) };
    },

    /** The models a compute cannot be deleted or renamed under (domain/catalog modelsUsingCompute). */
    async modelsUsing(computeName: string): Promise<string[]> {
      const c = await load();
      return modelsUsingCompute(c.models, c.computes, computeName, c.reach);
    },

    /** The models a scope owns: it cannot be deleted while it owns any. */
    async ownedBy(scope: string): Promise<string[]> {
      return (await load()).models.filter((m) => m.owner === scope).map((m) => m.name);
    },
  };
}

export type CatalogService = ReturnType<typeof catalogService>;
