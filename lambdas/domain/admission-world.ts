import type { ChangeResult } from './catalog';
import type { Compute } from './compute';
import { conflict } from './errors';
import type { ReplicaUnit, UnitPlacement } from './headroom';
import type { Model, Profile } from './model';
import type { Reach } from './placement';
import { type ComputeLike, PlacementHeadroom } from './placement';
import {
  type AdmittedUnit,
  checkStart,
  type Decision,
  decide,
  type ModelAdmission,
  type Quota,
  type Scope,
  ScopeTree,
} from './quota';
import { unitProfile } from './resources';
import { admissibleComputes } from './supply';

/**
 * Admission over the stored world (docs/reference/quota-semantics.md §7): the headroom restored from what is
 * admitted, the API's check of a catalog change (and its preview), and the admitter's decision over every model
 * with what it writes. Pure: the admitter loads the world once and commits what is decided behind its fence.
 */

export interface World {
  /**
   * As stored, with what the last pass saw of their supply (`Compute.supply`, domain/supply.ts): the headroom
   * gives a compute only the node slots it can really have (admissibleComputes).
   */
  computes: readonly Compute[];
  models: Model[];
  scopes: Scope[];
  quotas: Quota[];
  admissions: ModelAdmission[];
  /**
   * The replicas load asks for, per autoscaled model (the reconciler's WORKLOAD items, domain/autoscaling.ts
   * demandOf); absent or missing a model: its scaling.target, as before autoscaling.
   */
  demand?: ReadonlyMap<string, number>;
  /**
   * Ready replicas per model and compute, as the reconciler last saw the pods (its WORKLOAD items' `readyOn`;
   * consolidation.ts ReadyReplicas): what consolidation moves surge-first by (consolidateDecision). Absent where
   * llmcap does not run the pods (LLMCAP_WORKLOADS), and then nothing moves; decide does not read it.
   */
  ready?: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /**
   * Of those, the replicas on nodes that take no pods (cordoned, long NotReady, warned of a Spot reclaim:
   * supply.ts replicasGoing): they are going, so they hold no node slot ahead of replicas that stay.
   */
  going?: Readonly<Record<string, Readonly<Record<string, number>>>>;
}

/** Per model and compute, Ready replicas on nodes that take pods: those admission must not stop (restoreHeadroom). */
export type StandingReplicas = Readonly<Record<string, Readonly<Record<string, number>>>>;

/** World.ready less World.going; undefined without `ready` (llmcap does not see the pods). */
export function standingReplicas(world: Pick<World, 'ready' | 'going'>): StandingReplicas | undefined {
  if (!world.ready) return undefined;
  const out: Record<string, Record<string, number>> = {};
  for (const [model, on] of Object.entries(world.ready)) {
    const going = world.going?.[model] ?? {};
    out[model] = Object.fromEntries(
      Object.entries(on).map(([c, n]) => [c, Math.max(0, n - (going[c] ?? 0))]),
    );
  }
  return out;
}

/**
 * The cluster as admitted so far: every unit put back where it was placed. A unit that no longer fits there
 * (its compute was removed or shrunk, has idle nodes it cannot replace within maxNodes, or cannot launch the
 * nodes it lacks past the grace, at `now`) is dropped from the admission, so the pass places it again: on the
 * next profile or compute the model allows, or pending.
 *
 * Where a compute has fewer slots than units, the order decides which go: first the units with a replica Ready on
 * a node that takes pods (`standing`; every unit, without it), then the rest; each time every model's minimum
 * before the replicas above it. So a replica that is not running, or runs on a node that is going (cordoned,
 * reclaimed), never keeps a slot by stopping a Ready replica of another model, whatever the admissions' order.
 * Where everything fits, the units are put back as stored (that order only when something does not).
 */
export function restoreHeadroom(
  computes: readonly ComputeLike[],
  admissions: readonly ModelAdmission[],
  models: readonly Pick<Model, 'name' | 'spec' | 'owner'>[],
  tree: ScopeTree,
  now?: string,
  standing?: StandingReplicas,
): { headroom: PlacementHeadroom; admissions: ModelAdmission[] } {
  const slots = admissibleComputes(computes, now);
  const byModel = new Map(models.map((m) => [m.name, m]));
  const restoreAll = (order: readonly (readonly [ModelAdmission, AdmittedUnit])[]) => {
    const headroom = PlacementHeadroom.create(slots);
    const restored = new Map<AdmittedUnit, AdmittedUnit | undefined>();
    for (const [a, u] of order) {
      const m = byModel.get(a.model);
      // A unit on a compute its owner may not use (stored before tenants were isolated) is placed again.
      const reach = tree.reach(m?.owner);
      // A critical model's minimum on a Spot compute (the compute or the class changed since) is placed again.
      // (Critical is never implied by scaling: only a class set so.)
      const critical = m?.spec.class === 'critical';
      restored.set(u, restoreUnit(headroom, u, m?.spec.profiles, reach, critical && u.kind === 'min'));
    }
    return { headroom, restored };
  };
  const stored = admissions.flatMap((a) => a.units.map((u) => [a, u] as const));
  // As stored first: where everything fits the order changes nothing (and first-fit keeps the packing it had).
  let { headroom, restored } = restoreAll(stored);
  if (stored.some(([, u]) => restored.get(u) !== u)) {
    // Something no longer fits: again in the order above, so that what goes is what stops no Ready replica.
    const stands = standingUnits(admissions, standing);
    const rank = (u: AdmittedUnit) => (stands(u) ? 0 : 2) + (u.kind === 'min' ? 0 : 1);
    ({ headroom, restored } = restoreAll(
      stored
        .map((e, i) => [e, i] as const)
        .sort((x, y) => rank(x[0][1]) - rank(y[0][1]) || x[1] - y[1])
        .map(([e]) => e),
    ));
  }
  const kept = admissions.map((a) => {
    if (a.units.every((u) => restored.get(u) === u)) return a;
    return { ...a, units: a.units.flatMap((u) => restored.get(u) ?? []) };
  });
  return { headroom, admissions: kept };
}

/**
 * Whether a unit has a replica Ready on a node that takes pods. A model's pods on a compute are alike, so its
 * standing replicas there are given to its units in their order (the minimum first). Without `standing`, all do.
 */
function standingUnits(
  admissions: readonly ModelAdmission[],
  standing: StandingReplicas | undefined,
): (u: AdmittedUnit) => boolean {
  if (!standing) return () => true;
  const out = new Set<AdmittedUnit>();
  for (const a of admissions) {
    const left: Record<string, number> = { ...standing[a.model] };
    for (const u of a.units) {
      let any = false;
      for (const p of u.placements) {
        const n = Math.min(p.replicas, left[p.compute] ?? 0);
        if (n > 0) any = true;
        left[p.compute] = (left[p.compute] ?? 0) - n;
      }
      if (any) out.add(u);
    }
  }
  return (u) => out.has(u);
}

/** The headroom's id of the replicas a unit moving back to a preferred profile has started there (surge-back.ts). */
export const backId = (unitId: string) => `${unitId}>back`;

/**
 * Puts one unit back; undefined when it no longer fits. A unit being moved whose new replica no longer fits keeps
 * its running ones, the move dropped (moves.ts tells it as given up). A unit moving back to a preferred profile
 * (domain/surge-back.ts: `moving.profile`) holds its own profile's placements under its id and the new ones under
 * backId with the preferred profile's request; when those no longer fit the move is dropped, the unit kept.
 */
function restoreUnit(
  headroom: PlacementHeadroom,
  u: AdmittedUnit,
  profiles: readonly Profile[] | undefined,
  reach: Reach,
  onDemandOnly = false,
): AdmittedUnit | undefined {
  const back = u.moving?.profile;
  if (back === undefined || back === u.profile) {
    if (headroom.restore(u.id, unitProfile(profiles, u), u.placements, reach, onDemandOnly)) return u;
    if (!u.moving) return undefined;
    // A consolidation move whose new replica no longer fits: the move is dropped, the running replicas kept.
    const to = u.moving.to;
    const own = u.placements
      .map((p) => (p.compute === to ? { ...p, replicas: p.replicas - 1 } : p))
      .filter((p) => p.replicas > 0);
    if (!headroom.restore(u.id, unitProfile(profiles, u), own, reach, onDemandOnly)) return undefined;
    const { moving: _, ...rest } = u;
    return { ...rest, placements: own };
  }
  const own = u.placements.filter((p) => p.profile !== back);
  if (!headroom.restore(u.id, unitProfile(profiles, u), own, reach, onDemandOnly)) return undefined;
  const preferred = profiles?.find((p) => p.name === back);
  const ahead = u.placements.filter((p) => p.profile === back);
  if (preferred && headroom.restore(backId(u.id), preferred, ahead, reach, onDemandOnly)) return u;
  const { moving: _, ...rest } = u;
  return { ...rest, placements: own };
}

/** The profile a placement of `u` runs: its own, or the preferred one a move back started it on. */
export function placementProfile(
  profiles: readonly Profile[] | undefined,
  u: Pick<AdmittedUnit, 'profile' | 'resources'>,
  placement: UnitPlacement,
): Profile {
  const own = unitProfile(profiles, u);
  if (placement.profile === u.profile) return own;
  return profiles?.find((p) => p.name === placement.profile) ?? own;
}

/** One decision over the world; `only` restricts it to some models' requests. */
export function decideWorld(world: World, now: string, only?: string[]): Decision {
  const tree = new ScopeTree(world.scopes);
  const restored = restoreHeadroom(
    world.computes,
    world.admissions,
    world.models,
    tree,
    now,
    standingReplicas(world),
  );
  return decide(
    {
      scopes: tree,
      quotas: world.quotas,
      models: world.models,
      admissions: restored.admissions,
      headroom: restored.headroom,
      now,
      ...(world.demand ? { demand: world.demand } : {}),
    },
    only ? { only: { models: only } } : {},
  );
}

/**
 * The API's check of a catalog change before it is stored as intent: a model owned by no scope is refused (409
 * UnknownScope), so is a start that can never fit (409 LimitExceeded or Headroom, checkStart). With `preview`
 * (a dry run) it also decides the changed model alone, as the admitter would: its replicas admitted, placed or
 * left pending, and take-backs. `computes` are those the catalog was validated against.
 */
export function checkCatalogChange(
  world: Pick<World, 'scopes' | 'quotas' | 'admissions' | 'computes' | 'demand'>,
  change: ChangeResult,
  now: string,
  opts: { preview?: boolean } = {},
): Decision | undefined {
  const after = change.after;
  const name = (after ?? change.before ?? change.replacesSkipped)!.name;
  const tree = new ScopeTree(world.scopes);
  if (after?.owner && !tree.has(after.owner)) {
    throw conflict(
      `scope ${after.owner} does not exist; create it (POST /v1/scopes) before it owns models`,
      'UnknownScope',
    );
  }
  if (!after && !opts.preview) return undefined;
  // A model with no minimum asks nothing to start, so nothing can refuse it: such a write (a scaling change of
  // an autoscaled or idle model) need not rebuild the world's headroom.
  if (after && after.spec.scaling.min === 0 && !opts.preview) return undefined;
  const restored = restoreHeadroom(world.computes, world.admissions, change.next, tree, now);
  const input = {
    scopes: tree,
    quotas: world.quotas,
    models: change.next,
    admissions: restored.admissions,
    now,
    // Without it, an edit of an autoscaled model would fall back to scaling.target until the next pass.
    ...(world.demand ? { demand: world.demand } : {}),
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
  if (!opts.preview) return undefined;
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

/**
 * What the admitter writes after deciding the world: the admissions the decision changed, and every model's whose
 * stored admission is of an older version of the model, stamped with the version decided (`modelVersion`), so
 * that a write the decision leaves as it was still reads as decided. Nothing when all is as stored: the admitter
 * is triggered by the table's own stream, and a write of nothing new would trigger it again.
 */
export function admitterWrites(
  world: { models: readonly Pick<Model, 'name' | 'version'>[]; admissions: readonly ModelAdmission[] },
  d: Decision,
): { next: ModelAdmission[]; removed: string[] } {
  const version = new Map(world.models.map((m) => [m.name, m.version as number | undefined]));
  const stored = new Map(world.admissions.map((a) => [a.model, a.modelVersion]));
  const changed = new Set(d.changed);
  const next: ModelAdmission[] = [];
  for (const a of d.admissions) {
    const v = version.get(a.model);
    if (!changed.has(a.model) && stored.has(a.model) && stored.get(a.model) === v) continue;
    const { modelVersion: _old, ...rest } = a;
    next.push(v === undefined ? rest : { ...rest, modelVersion: v });
  }
  return { next, removed: d.removed };
}

/** Releases before admissions: every prefix of a decision committed in slices is within every limit. */
export function admitterOrder(
  before: readonly ModelAdmission[],
  after: readonly ModelAdmission[],
  removed: readonly string[],
): (model: string) => number {
  const was = new Map(before.map((a) => [a.model, heldReplicas(a)]));
  const next = new Map(after.map((a) => [a.model, heldReplicas(a)]));
  const gone = new Set(removed);
  return (m) => (gone.has(m) ? -Number.MAX_SAFE_INTEGER : (next.get(m) ?? 0) - (was.get(m) ?? 0));
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
      for (const pl of u.placements) {
        units.push({
          id: pl.profile === u.profile ? `${u.id}@${pl.compute}` : `${backId(u.id)}@${pl.compute}`,
          model: a.model,
          profiles: [{ ...placementProfile(m?.spec.profiles, u, pl), compute: pl.compute }],
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
