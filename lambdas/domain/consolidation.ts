import * as z from 'zod';
import { restoreHeadroom, unitsOf, type World } from './admission-world';
import type { ReplicaUnit, UnitPlacement } from './headroom';
import type { Model } from './model';
import { effectiveClass } from './model';
import { type ComputeLike, planPlacement } from './placement';
import { type AdmittedUnit, type ModelAdmission, ScopeTree } from './quota';
import { unitProfile } from './resources';
import { admissibleComputes } from './supply';

/**
 * Consolidation (issue 34 §3): when what runs costs more than the same replicas placed afresh by more than a
 * threshold, replicas move to where the fresh plan puts them, surge-first, and the nodes they leave are
 * freed by the sizing that follows. Pure: `planConsolidation` says what would move and what it saves (the
 * capacity view shows it before anything acts); `stepConsolidation` advances the moves by one pass and
 * returns the admissions to write, for the one writer of admissions to commit with its own decisions.
 *
 * A move is one replica of one admitted unit, from one compute to another: the new replica is placed beside
 * the old ones (the unit's placements then hold one replica more than the unit, the room of both held), and
 * the old one is removed only once the new one is Ready and every other replica of the model is too, so the
 * model's PodDisruptionBudget (one unavailable at most, none of a single replica) is never what gives way.
 */

/** Windows, in UTC, during which no replica of a critical model moves. */
export interface ProtectedWindow {
  /** Days of the week (0 Sunday to 6 Saturday, UTC); every day when absent. */
  days?: number[];
  /** "HH:MM" UTC; a window whose end is before its start runs past midnight. */
  from: string;
  to: string;
}

export interface ConsolidationPolicy {
  /**
   * Whether the admitter moves replicas at all. Off by default: a move restarts a model server elsewhere (image
   * pull and weights load, minutes for an LLM) and holds a second node during the surge, so a stage opts in
   * once it has read the plan (`llmcap capacity --consolidation`). Moves in flight end either way.
   */
  enabled: boolean;
  /** The least saving worth a move, as a share of what the pool costs per hour now (0.05: 5%). */
  minSavingShare: number;
  /** And in dollars per hour: a plan acts only when its saving reaches both. */
  minSavingPerHour: number;
  /** Replicas of one model moved in any rolling hour. */
  movesPerModelPerHour: number;
  /** Critical models do not move inside these windows. */
  protectedWindows: ProtectedWindow[];
  /** A new replica not Ready after this many minutes is given up (removed) and the old one kept. */
  readyTimeoutMinutes: number;
}

/**
 * What consolidation reads of the world admission decides over (World in admission-world.ts; a stored World
 * satisfies it): the computes with their prices, the models, the scope tree (for reach), the admissions.
 */
export interface ConsolidationWorld {
  computes: readonly ComputeLike[];
  models: readonly Pick<Model, 'name' | 'spec' | 'owner'>[];
  scopes: World['scopes'];
  admissions: readonly ModelAdmission[];
}

export const DEFAULT_CONSOLIDATION: ConsolidationPolicy = {
  enabled: false,
  minSavingShare: 0.05,
  minSavingPerHour: 1,
  movesPerModelPerHour: 2,
  protectedWindows: [],
  readyTimeoutMinutes: 30,
};

const timeOfDay = (example: string) =>
  z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, `a time of day in UTC such as ${example}`);

/** The policy as the stage config (and LLMCAP_CONSOLIDATION) gives it; each field defaults to DEFAULT_CONSOLIDATION's. */
export const ConsolidationPolicySchema = z.strictObject({
  enabled: z.boolean().default(DEFAULT_CONSOLIDATION.enabled),
  minSavingShare: z.number().min(0).max(1).default(DEFAULT_CONSOLIDATION.minSavingShare),
  minSavingPerHour: z.number().min(0).default(DEFAULT_CONSOLIDATION.minSavingPerHour),
  movesPerModelPerHour: z.number().int().min(0).max(1000).default(DEFAULT_CONSOLIDATION.movesPerModelPerHour),
  protectedWindows: z
    .array(
      z.strictObject({
        days: z.array(z.number().int().min(0).max(6)).min(1).optional(),
        from: timeOfDay('08:00'),
        to: timeOfDay('18:00'),
      }),
    )
    .default([]),
  readyTimeoutMinutes: z.number().int().min(1).max(1440).default(DEFAULT_CONSOLIDATION.readyTimeoutMinutes),
});

/** Ready replicas observed in the cluster, per model and per compute (absent: none Ready). */
export type ReadyReplicas = Readonly<Record<string, Readonly<Record<string, number>>>>;

/** One replica of a unit to move (or being moved), from one compute to another. */
export interface Move {
  model: string;
  unitId: string;
  from: string;
  to: string;
}

/** Why a replica the fresh plan would move is not moved now. */
export type HeldReason = 'budget' | 'protected-window' | 'in-flight' | 'not-ready';

export interface ConsolidationPlan {
  /** What the admitted placements cost per hour, their nodes packed as reconcile sizes them. */
  currentPerHour: number;
  /** What the same replicas cost placed afresh, the held ones left where they are. */
  plannedPerHour: number;
  savingPerHour: number;
  /** The saving a plan must reach to act: the larger of the policy's share of the current cost and its amount. */
  thresholdPerHour: number;
  /**
   * The saving reaches the threshold, so the moves start (surge-first, one replica per model at a time) when the
   * policy is `enabled`.
   */
  acts: boolean;
  /** The stage's policy lets the admitter move replicas (ConsolidationPolicy.enabled). */
  enabled: boolean;
  /** Replicas to move, one entry per replica, models in name order. */
  moves: Move[];
  /** Replicas being moved now (new replica placed, the old one not yet removed). */
  inFlight: Move[];
  /** Units the fresh plan would move that the policy keeps where they are, per model, with why. */
  held: { model: string; replicas: number; reason: HeldReason }[];
  /** Computes whose nodes change: fewer (freed) or more (the moves' destinations). */
  nodes: { compute: string; before: number; after: number; perHour: number }[];
}

const dollars = (x: number) => Math.round(x * 1e6) / 1e6;
const HOUR_MS = 3_600_000;

/** True when `now` falls inside one of the windows. */
export function inProtectedWindow(windows: readonly ProtectedWindow[], now: string): boolean {
  const t = new Date(now);
  const minute = t.getUTCHours() * 60 + t.getUTCMinutes();
  const day = t.getUTCDay();
  const hm = (s: string) => {
    const [h, m] = s.split(':').map(Number);
    return h! * 60 + m!;
  };
  return windows.some((w) => {
    const from = hm(w.from);
    const to = hm(w.to);
    if (from <= to) return (!w.days || w.days.includes(day)) && minute >= from && minute < to;
    // Past midnight: the part after midnight belongs to the window that started the day before.
    if (minute >= from) return !w.days || w.days.includes(day);
    return minute < to && (!w.days || w.days.includes((day + 6) % 7));
  });
}

/** Replicas of a model moved (started) within the hour before `now`. */
function movedInHour(a: ModelAdmission, now: string): number {
  const since = Date.parse(now) - HOUR_MS;
  let n = 0;
  for (const u of a.units) for (const at of u.movedAt ?? []) if (Date.parse(at) > since) n++;
  return n;
}

const placed = (u: Pick<AdmittedUnit, 'placements'>) => u.placements.reduce((n, p) => n + p.replicas, 0);
const readyOf = (ready: ReadyReplicas, model: string) =>
  Object.values(ready[model] ?? {}).reduce((n, r) => n + r, 0);

/**
 * What consolidation would do now. Units already moving, of a model not all Ready, of a critical model inside
 * a protected window, or of a model that used its hourly budget stay where they are; the rest are placed
 * afresh (planPlacement, the joint kind choice) and each replica the fresh plan puts elsewhere is a move,
 * netted per kind of replica so that two identical replicas never trade places. The plan is where the moves
 * lead: its saving is what they buy once all are done, and the budget paces them (one replica per model at a
 * time, at most the budget's per rolling hour).
 */
export function planConsolidation(
  world: ConsolidationWorld,
  ready: ReadyReplicas,
  policy: ConsolidationPolicy,
  now: string,
): ConsolidationPlan {
  const tree = new ScopeTree(world.scopes);
  const { admissions } = restoreHeadroom(world.computes, world.admissions, world.models, tree);
  const sorted = [...admissions].sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
  const models = new Map(world.models.map((m) => [m.name, m]));
  const pinnedUnits = unitsOf(sorted, world.models, tree);
  const current = planPlacement(world.computes, pinnedUnits);

  const window = inProtectedWindow(policy.protectedWindows, now);
  const held = new Map<string, HeldReason>();
  const budget = new Map<string, number>();
  const inFlight: Move[] = [];
  for (const a of sorted) {
    const m = models.get(a.model);
    for (const u of a.units) if (u.moving) inFlight.push({ model: a.model, unitId: u.id, ...u.moving });
    const left = policy.movesPerModelPerHour - movedInHour(a, now);
    budget.set(a.model, left);
    const reason: HeldReason | undefined = a.units.some((u) => u.moving)
      ? 'in-flight'
      : m && window && effectiveClass(m.spec) === 'critical'
        ? 'protected-window'
        : left <= 0
          ? 'budget'
          : readyOf(ready, a.model) < a.units.reduce((n, u) => n + placed(u), 0)
            ? 'not-ready'
            : undefined;
    if (reason) held.set(a.model, reason);
  }

  const result = plan(true);
  // What the held models would move were they free: a plan with nothing held, made only when something is.
  const free = held.size ? plan(false) : result;
  const heldCount = new Map<string, { replicas: number; reason: HeldReason }>();
  for (const a of sorted) {
    const reason = held.get(a.model);
    if (!reason) continue;
    const wouldMove = a.units.reduce((n, u) => n + (free.wouldMove.get(u.id) ?? 0), 0);
    if (wouldMove > 0) heldCount.set(a.model, { replicas: wouldMove, reason });
  }

  const currentPerHour = current.totals.costPerHour;
  const plannedPerHour = result.moves.length ? result.target.totals.costPerHour : currentPerHour;
  const savingPerHour = dollars(currentPerHour - plannedPerHour);
  const thresholdPerHour = dollars(Math.max(policy.minSavingShare * currentPerHour, policy.minSavingPerHour));
  const price = new Map(world.computes.map((c) => [c.name, c.spec.cost.perHour]));
  const nodes = current.computes
    .map((c, i) => ({
      compute: c.compute,
      before: c.neededNodes,
      after: result.moves.length ? result.target.computes[i]!.neededNodes : c.neededNodes,
      perHour: price.get(c.compute) ?? 0,
    }))
    .filter((n) => n.before !== n.after);
  return {
    currentPerHour,
    plannedPerHour,
    savingPerHour,
    thresholdPerHour,
    acts: result.moves.length > 0 && savingPerHour >= thresholdPerHour - 1e-9 && savingPerHour > 0,
    enabled: policy.enabled,
    moves: result.moves,
    inFlight,
    held: [...heldCount].map(([model, h]) => ({ model, ...h })),
    nodes,
  };

  /** The fresh plan (the held models' replicas where they are, when `pinHeld`), and the moves it implies. */
  function plan(pinHeld: boolean) {
    const units: ReplicaUnit[] = [];
    // Where each unit runs now: the fresh plan improves on it, so replicas move only where that saves.
    const start = new Map<string, readonly UnitPlacement[]>();
    const movable: { model: string; unit: AdmittedUnit; key: string }[] = [];
    for (const a of sorted) {
      const m = models.get(a.model);
      const reach = tree.reach(m?.owner);
      for (const u of a.units) {
        if ((pinHeld && held.has(a.model)) || u.takeBack) {
          for (const pinned of unitsOf([{ ...a, units: [u] }], world.models, tree)) {
            const p = pinned.profiles[0]!;
            start.set(pinned.id, [{ compute: p.compute!, profile: p.name, replicas: pinned.replicas }]);
            units.push(pinned);
          }
          continue;
        }
        const profile = unitProfile(m?.spec.profiles, u);
        units.push({ id: u.id, model: a.model, profiles: [profile], replicas: u.replicas, reach });
        start.set(u.id, u.placements);
        // Replicas of the same request, pin and reach are interchangeable: moves are netted per such kind.
        const key = JSON.stringify([
          profile.gpus,
          profile.gpuType ?? '',
          profile.cpuCores,
          profile.minMemoryGb ?? 0,
          profile.compute ?? '',
          reach,
        ]);
        movable.push({ model: a.model, unit: u, key });
      }
    }
    // Improved from where things run (few moves), unless placing afresh saves more than the threshold on top:
    // the improvement alone stops in local optima a fresh plan gets out of.
    const warm = planPlacement(world.computes, units, { start });
    const fresh = planPlacement(world.computes, units);
    const threshold = Math.max(policy.minSavingShare * current.totals.costPerHour, policy.minSavingPerHour);
    const target = fresh.totals.costPerHour < warm.totals.costPerHour - threshold + 1e-9 ? fresh : warm;
    const targetOf = new Map(target.placements.map((p) => [p.unitId, p.placements]));
    const wouldMove = new Map<string, number>();
    const byKind = new Map<string, typeof movable>();
    for (const mv of movable) {
      const list = byKind.get(mv.key) ?? [];
      list.push(mv);
      byKind.set(mv.key, list);
      const t = targetOf.get(mv.unit.id);
      if (t) wouldMove.set(mv.unit.id, movedReplicas(mv.unit.placements, t));
    }
    const moves: Move[] = [];
    for (const list of byKind.values()) moves.push(...netMoves(list, targetOf));
    // A unit the fresh plan could not place (its compute gone) keeps its admission's placements.
    return { target, moves, wouldMove };
  }
}

/** Replicas of a unit on other computes in `to` than in `from`. */
function movedReplicas(from: readonly UnitPlacement[], to: readonly UnitPlacement[]): number {
  let n = 0;
  for (const t of to)
    n += Math.max(0, t.replicas - (from.find((f) => f.compute === t.compute)?.replicas ?? 0));
  return n;
}

/**
 * The fewest moves that take one kind of replica from its admitted computes to the fresh plan's: per compute
 * the surplus leaves for the computes short of it, each replica taken from a unit the fresh plan itself moves
 * off that compute when there is one.
 */
function netMoves(
  list: readonly { model: string; unit: AdmittedUnit }[],
  targetOf: ReadonlyMap<string, readonly UnitPlacement[]>,
): Move[] {
  const delta = new Map<string, number>();
  for (const { unit } of list) {
    const t = targetOf.get(unit.id);
    if (!t) continue;
    for (const p of unit.placements) delta.set(p.compute, (delta.get(p.compute) ?? 0) - p.replicas);
    for (const p of t) delta.set(p.compute, (delta.get(p.compute) ?? 0) + p.replicas);
  }
  const names = [...delta.keys()].sort();
  const sinks = names.filter((c) => delta.get(c)! > 0);
  const moves: Move[] = [];
  for (const from of names) {
    let surplus = -delta.get(from)!;
    if (surplus <= 0) continue;
    // Units with replicas here, those the fresh plan moves away first.
    const here = list
      .map(({ model, unit }) => {
        const have = unit.placements.find((p) => p.compute === from)?.replicas ?? 0;
        const want = targetOf.get(unit.id)?.find((p) => p.compute === from)?.replicas ?? have;
        return { model, unit, have, leaving: have - want };
      })
      .filter((x) => x.have > 0 && targetOf.has(x.unit.id))
      .sort((a, b) => b.leaving - a.leaving || (a.unit.id < b.unit.id ? -1 : 1));
    for (const h of here) {
      let can = h.have;
      while (surplus > 0 && can > 0) {
        const to = sinks.find((c) => delta.get(c)! > 0);
        if (!to) break;
        moves.push({ model: h.model, unitId: h.unit.id, from, to });
        delta.set(to, delta.get(to)! - 1);
        surplus--;
        can--;
      }
    }
  }
  return moves;
}

/** What one pass of consolidation writes: the admissions it changed, and what it did. */
export interface ConsolidationStep {
  plan: ConsolidationPlan;
  /** Whole admissions, each as it should be written (only those changed). */
  admissions: ModelAdmission[];
  started: Move[];
  finished: Move[];
  abandoned: Move[];
}

/**
 * One pass: moves whose new replica is Ready (and every replica of the model with it) end, their old replica
 * removed; moves whose new replica is not Ready within the policy's timeout are given up, the new placement
 * removed; then, when the plan acts, each model with nothing moving starts its first move, the new replica
 * placed beside the old (and only where admission's own packing finds it room, so restoring the headroom
 * never drops the unit).
 */
export function stepConsolidation(
  world: ConsolidationWorld,
  ready: ReadyReplicas,
  policy: ConsolidationPolicy,
  now: string,
): ConsolidationStep {
  const changed = new Map<string, ModelAdmission>();
  const finished: Move[] = [];
  const abandoned: Move[] = [];
  const admissions = world.admissions.map((a) => {
    // A move back to a preferred profile is surge-back.ts's to end.
    if (!a.units.some((u) => u.moving && u.moving.profile === undefined)) return a;
    const total = a.units.reduce((n, u) => n + placed(u), 0);
    const allReady = readyOf(ready, a.model) >= total;
    const units = a.units.map((u) => {
      if (!u.moving || u.moving.profile !== undefined) return u;
      const { from, to, since } = u.moving;
      const move = { model: a.model, unitId: u.id, from, to };
      // Every replica the model has placed on the destination, the new one included, is Ready.
      const atTo = a.units.reduce(
        (n, x) => n + (x.placements.find((p) => p.compute === to)?.replicas ?? 0),
        0,
      );
      if (allReady && (ready[a.model]?.[to] ?? 0) >= atTo) {
        finished.push(move);
        const { moving: _, ...rest } = u;
        return { ...rest, placements: shift(u.placements, from, -1) };
      }
      if (Date.parse(now) - Date.parse(since) > policy.readyTimeoutMinutes * 60_000) {
        abandoned.push(move);
        const { moving: _, ...rest } = u;
        return { ...rest, placements: shift(u.placements, to, -1) };
      }
      return u;
    });
    // A move still waiting changes nothing: a run over a world as stored writes nothing.
    if (units.every((u, i) => u === a.units[i])) return a;
    const next = { ...a, units };
    changed.set(a.model, next);
    return next;
  });
  const after = { ...world, admissions };
  const plan = planConsolidation(after, ready, policy, now);
  const started: Move[] = [];
  if (plan.acts && policy.enabled) {
    const tree = new ScopeTree(world.scopes);
    const { headroom } = restoreHeadroom(world.computes, admissions, world.models, tree);
    const models = new Map(world.models.map((m) => [m.name, m]));
    const byModel = new Map(admissions.map((a) => [a.model, a]));
    const first = new Set<string>();
    for (const mv of plan.moves) {
      if (first.has(mv.model)) continue;
      const a = changed.get(mv.model) ?? byModel.get(mv.model)!;
      const u = a.units.find((x) => x.id === mv.unitId)!;
      const m = models.get(mv.model);
      const placements = shift(u.placements, mv.to, 1, u.profile);
      // The surge must fit admission's own packing on the destination, or the next restore would drop the unit.
      headroom.release(u.id);
      const profile = unitProfile(m?.spec.profiles, u);
      // A critical model's minimum never moves onto Spot (docs/quotas.md): the restore refuses it there.
      const onDemandOnly = m?.spec.class === 'critical' && u.kind === 'min';
      if (!headroom.restore(u.id, profile, placements, tree.reach(m?.owner), onDemandOnly)) {
        headroom.restore(u.id, profile, u.placements, tree.reach(m?.owner), onDemandOnly);
        continue;
      }
      first.add(mv.model);
      started.push(mv);
      const cutoff = Date.parse(now) - HOUR_MS;
      const unit: AdmittedUnit = {
        ...u,
        placements,
        moving: { from: mv.from, to: mv.to, since: now },
        movedAt: [...(u.movedAt ?? []).filter((t) => Date.parse(t) > cutoff), now],
      };
      changed.set(mv.model, { ...a, units: a.units.map((x) => (x.id === u.id ? unit : x)) });
    }
  }
  return { plan, admissions: [...changed.values()], started, finished, abandoned };
}

/** A unit's placements with `by` replicas more (or fewer) on `compute`, in compute order, none left at zero. */
function shift(placements: readonly UnitPlacement[], compute: string, by: number, profile?: string) {
  const out = placements.map((p) => ({ ...p }));
  const p = out.find((x) => x.compute === compute);
  if (p) p.replicas += by;
  else out.push({ compute, profile: profile ?? placements[0]!.profile, replicas: by });
  return out
    .filter((x) => x.replicas > 0)
    .sort((a, b) => (a.compute < b.compute ? -1 : a.compute > b.compute ? 1 : 0));
}

/** Who reads a plan: the API's Caller (domain/quota/telling.ts's Reader). */
export interface PlanReader {
  readonly isPlatformAdmin: boolean;
  canSee(scope: string | undefined): boolean;
}

/** A plan as one caller may read it. */
export interface ConsolidationView
  extends Pick<
    ConsolidationPlan,
    | 'currentPerHour'
    | 'plannedPerHour'
    | 'savingPerHour'
    | 'thresholdPerHour'
    | 'acts'
    | 'enabled'
    | 'moves'
    | 'inFlight'
    | 'held'
  > {
  nodes: (ConsolidationPlan['nodes'][number] & { owner?: string })[];
  /** What concerns models (and computes) the reader may not see: counted, never named. */
  others: { moves: number; inFlight: number; held: number; computes: number };
}

/**
 * The plan as `reader` may read it (docs/security.md, What names tell): moves, moves in flight and holds of
 * models it can see, each model with its owner; those of others counted without names, as take-backs are
 * told (domain/quota/telling.ts); computes it cannot see counted too. The pool's cost and saving are the
 * cluster's totals, which every reader of the capacity view sees.
 */
export function consolidationView(
  plan: ConsolidationPlan,
  world: Pick<ConsolidationWorld, 'computes' | 'models'>,
  reader: PlanReader,
): ConsolidationView {
  const ownerOf = new Map(world.models.map((m) => [m.name, m.owner]));
  const computeOwner = new Map(world.computes.map((c) => [c.name, c.owner]));
  const sees = (model: string) => reader.isPlatformAdmin || reader.canSee(ownerOf.get(model));
  const withOwner = <T extends { model: string }>(x: T) => {
    const owner = ownerOf.get(x.model);
    return owner ? { ...x, owner } : x;
  };
  const split = <T extends { model: string }>(xs: readonly T[]) => {
    const seen = xs.filter((x) => sees(x.model));
    return { seen: seen.map(withOwner), hidden: xs.length - seen.length };
  };
  const moves = split(plan.moves);
  const inFlight = split(plan.inFlight);
  const held = split(plan.held);
  const nodes = plan.nodes.filter(
    (n) => reader.isPlatformAdmin || reader.canSee(computeOwner.get(n.compute)),
  );
  return {
    currentPerHour: plan.currentPerHour,
    plannedPerHour: plan.plannedPerHour,
    savingPerHour: plan.savingPerHour,
    thresholdPerHour: plan.thresholdPerHour,
    acts: plan.acts,
    enabled: plan.enabled,
    moves: moves.seen,
    inFlight: inFlight.seen,
    held: held.seen,
    nodes: nodes.map((n) => {
      const owner = computeOwner.get(n.compute);
      return owner ? { ...n, owner } : n;
    }),
    others: {
      moves: moves.hidden,
      inFlight: inFlight.hidden,
      held: held.hidden,
      computes: plan.nodes.length - nodes.length,
    },
  };
}

/** Every placed replica as Ready: what the API assumes, since it does not observe pods (the admitter does). */
export function placedAsReady(admissions: readonly ModelAdmission[]): ReadyReplicas {
  const out: Record<string, Record<string, number>> = {};
  for (const a of admissions) {
    const per: Record<string, number> = {};
    for (const u of a.units)
      for (const p of u.placements) per[p.compute] = (per[p.compute] ?? 0) + p.replicas;
    out[a.model] = per;
  }
  return out;
}

/**
 * Ready replicas per model and compute as the reconciler last saw them (its WORKLOAD items' `readyOn`,
 * domain/workloads.ts workloadStatus): a model without an item has none Ready.
 */
export function observedReady(
  workloads: readonly { model: string; readyOn?: Readonly<Record<string, number>> }[],
): ReadyReplicas {
  const out: Record<string, Readonly<Record<string, number>>> = {};
  for (const w of workloads) if (w.readyOn) out[w.model] = w.readyOn;
  return out;
}

/**
 * What consolidation plans over: the world's models and tree, `admissions`, and the computes as admission may
 * fill them at `now` (idle nodes and computes short of capacity count as admission counts them).
 */
export function consolidationWorld(
  world: Pick<World, 'computes' | 'models' | 'scopes'>,
  admissions: readonly ModelAdmission[],
  now: string,
): ConsolidationWorld {
  return {
    computes: admissibleComputes(world.computes, now),
    models: world.models,
    scopes: world.scopes,
    admissions,
  };
}
