import type { ChangeResult } from './catalog';
import type { Compute } from './compute';
import { conflict } from './errors';
import type { ReplicaUnit } from './headroom';
import type { Model } from './model';
import { type ComputeLike, PlacementHeadroom } from './placement';
import {
  checkStart,
  type Decision,
  decide,
  type ModelAdmission,
  type Quota,
  type Scope,
  ScopeTree,
} from './quota';
import { unitProfile } from './resources';

/**
 * Admission over the stored world (docs/reference/quota-semantics.md §7): the headroom restored from what is
 * admitted, a catalog change's admission (the API's), and every pending request (reconcile's). Pure: the
 * services load the world inside a ledger transaction and write what is decided in that same transaction.
 */

export interface World {
  computes: Compute[];
  models: Model[];
  scopes: Scope[];
  quotas: Quota[];
  admissions: ModelAdmission[];
}

/**
 * The cluster as admitted so far: every unit put back where it was placed. A unit that no longer fits there
 * (its compute was removed or shrunk) is dropped from the admission, so the pass places it again.
 */
export function restoreHeadroom(
  computes: readonly ComputeLike[],
  admissions: readonly ModelAdmission[],
  models: readonly Pick<Model, 'name' | 'spec' | 'owner'>[],
  tree: ScopeTree,
): { headroom: PlacementHeadroom; admissions: ModelAdmission[] } {
  const headroom = PlacementHeadroom.create(computes);
  const byModel = new Map(models.map((m) => [m.name, m]));
  const kept = admissions.map((a) => {
    const m = byModel.get(a.model);
    // A unit on a compute its owner may not use (stored before tenants were isolated) is placed again.
    const reach = tree.reach(m?.owner);
    const units = a.units.filter((u) =>
      headroom.restore(u.id, unitProfile(m?.spec.profiles, u), u.placements, reach),
    );
    return units.length === a.units.length ? a : { ...a, units };
  });
  return { headroom, admissions: kept };
}

/** One decision over the world; `only` restricts it to some models' requests. */
export function decideWorld(world: World, now: string, only?: string[]): Decision {
  const tree = new ScopeTree(world.scopes);
  const restored = restoreHeadroom(world.computes, world.admissions, world.models, tree);
  return decide(
    {
      scopes: tree,
      quotas: world.quotas,
      models: world.models,
      admissions: restored.admissions,
      headroom: restored.headroom,
      now,
    },
    only ? { only: { models: only } } : {},
  );
}

/**
 * The admission a catalog change causes, decided for the changed model alone: a model owned by no scope is
 * refused (409 UnknownScope), so is a start that can never fit (409 LimitExceeded or Headroom, checkStart);
 * otherwise its replicas are admitted, placed, or left pending, and take-backs decided, all to be written with
 * the change. `computes` are those the catalog was validated against; `world` holds the rest as stored.
 */
export function admitCatalogChange(
  world: Pick<World, 'scopes' | 'quotas' | 'admissions' | 'computes'>,
  change: ChangeResult,
  now: string,
): Decision {
  const after = change.after;
  const name = (after ?? change.before ?? change.replacesSkipped)!.name;
  const tree = new ScopeTree(world.scopes);
  if (after?.owner && !tree.has(after.owner)) {
    throw conflict(
      `scope ${after.owner} does not exist; create it (POST /v1/scopes) before it owns models`,
      'UnknownScope',
    );
  }
  const restored = restoreHeadroom(world.computes, world.admissions, change.next, tree);
  const input = {
    scopes: tree,
    quotas: world.quotas,
    models: change.next,
    admissions: restored.admissions,
    now,
  };
  if (after) {
    const check = checkStart(
      {
        ...input,
        headroom: restored.headroom.clone(),
        emptyHeadroom: PlacementHeadroom.create(world.computes),
      },
      after,
    );
    if (!check.ok) throw conflict(check.message, check.reason);
  }
  return decide({ ...input, headroom: restored.headroom }, { only: { models: [name] } });
}

/** What a dry run answers besides the model: its admission as decided, and what it would take back from others. */
export interface ChangePreview {
  /** The changed model's admission as this change would leave it (absent when the model is removed). */
  admission?: ModelAdmission;
  /** Replicas of other models this change would take back, each with why. */
  takesBack: { model: string; scope: string; replicas: number; reason: string; message: string }[];
}

/** The preview of one catalog change from its decision (the decision the write would commit). */
export function changePreview(change: ChangeResult, d: Decision): ChangePreview {
  const name = change.after?.name;
  const admission = name ? d.admissions.find((a) => a.model === name) : undefined;
  return {
    ...(admission ? { admission } : {}),
    takesBack: d.victims.map((v) => ({
      model: v.model,
      scope: v.scope,
      replicas: v.replicas,
      reason: v.reason,
      message: v.message,
    })),
  };
}

/** What a decision writes: the admissions it changed, and those of models no longer in the catalog. */
export function decisionWrites(d: Decision): { next: ModelAdmission[]; removed: string[] } {
  const changed = new Set(d.changed);
  return { next: d.admissions.filter((a) => changed.has(a.model)), removed: d.removed };
}

/** Admitted units as placement units, each pinned to where admission placed it, so sizing follows admission. */
export function unitsOf(
  admissions: readonly ModelAdmission[],
  models: readonly Pick<Model, 'name' | 'spec' | 'owner'>[],
  tree: ScopeTree,
): ReplicaUnit[] {
  const byModel = new Map(models.map((m) => [m.name, m]));
  const units: ReplicaUnit[] = [];
  for (const a of admissions) {
    const m = byModel.get(a.model);
    const reach = tree.reach(m?.owner);
    for (const u of a.units) {
      const base = unitProfile(m?.spec.profiles, u);
      for (const pl of u.placements) {
        units.push({
          id: `${u.id}@${pl.compute}`,
          model: a.model,
          profiles: [{ ...base, compute: pl.compute }],
          replicas: pl.replicas,
          reach,
        });
      }
    }
  }
  return units;
}

/** Replicas a model holds in an admission (0 when none). */
export function heldReplicas(a?: ModelAdmission): number {
  return (a?.units ?? []).reduce((n, u) => n + u.replicas, 0);
}
