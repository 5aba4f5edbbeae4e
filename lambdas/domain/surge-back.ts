import { backId, restoreHeadroom } from './admission-world';
import {
  type ConsolidationPolicy,
  type ConsolidationWorld,
  inProtectedWindow,
  type Move,
  type ReadyReplicas,
} from './consolidation';
import type { UnitPlacement } from './headroom';
import { effectiveClass, type Profile } from './model';
import { type AdmittedUnit, type ModelAdmission, ScopeTree } from './quota';
import { perReplica } from './resources';
import { type ComputeSupply, cannotLaunch } from './supply';

/**
 * Surge-back (issue 32 §3): a unit placed on a later profile of its model, because the computes of an earlier
 * one could not launch nodes (supply.ts, admissibleComputes), moves back once they can: the unit's replicas are
 * placed again under the earlier profile beside the ones running (`moving.profile`), and those go only once the
 * new ones and every other replica of the model are Ready. A new replica is never what a Ready one is traded
 * for: a move whose new replicas are not Ready within the policy's timeout, or whose destination cannot launch
 * again (the probe failed), is given up and the running replicas stay. Pure; the admitter takes one step a run
 * (consolidateDecision), before consolidation's, which leaves a model with a move in flight alone.
 *
 * Only to a profile whose replica needs no more of any resource than the unit holds, so that a quota the unit
 * is within stays met once it has moved. The policy's budget per model and hour, protected windows and
 * timeout apply as to consolidation's moves; `enabled` does not: it is the model's own order of preference.
 */

export interface SurgeBackStep {
  admissions: ModelAdmission[];
  started: Move[];
  finished: Move[];
  abandoned: Move[];
}

/** What surge-back reads of a compute beyond placement (a stored Compute has it): whether it can launch now. */
type WithSupply = { supply?: ComputeSupply };

const HOUR_MS = 3_600_000;
const total = (a: ModelAdmission) =>
  a.units.reduce((n, u) => n + u.placements.reduce((k, p) => k + p.replicas, 0), 0);
const readyOf = (ready: ReadyReplicas, model: string) =>
  Object.values(ready[model] ?? {}).reduce((n, r) => n + r, 0);
const onCompute = (a: ModelAdmission, c: string) =>
  a.units.reduce(
    (n, u) => n + u.placements.filter((p) => p.compute === c).reduce((k, p) => k + p.replicas, 0),
    0,
  );

/** No resource of `p`'s replica exceeds what the unit holds per replica. */
function fitsWithin(p: Profile, u: AdmittedUnit): boolean {
  const r = perReplica(p);
  return r.gpus <= u.resources.gpus && r.cores <= u.resources.cores && r.memoryGb <= u.resources.memoryGb;
}

/**
 * One step. `stored` are the admissions as stored before admission decided `world.admissions`: a move whose new
 * replicas no longer fit where they were placed (restoreHeadroom drops it, the unit kept) is told as given up,
 * and its model written.
 */
export function stepSurgeBack(
  world: ConsolidationWorld,
  ready: ReadyReplicas,
  policy: ConsolidationPolicy,
  now: string,
  stored: readonly ModelAdmission[] = [],
): SurgeBackStep {
  const models = new Map(world.models.map((m) => [m.name, m]));
  const supply = new Map(world.computes.map((c) => [c.name, (c as WithSupply).supply]));
  const changed = new Map<string, ModelAdmission>();
  const finished: Move[] = [];
  const abandoned: Move[] = [];
  const touched = new Set<string>();

  // 0. Moves admission's restore dropped (their new replicas' room is gone): given up.
  const decided = new Map(world.admissions.map((a) => [a.model, a]));
  for (const before of stored) {
    const a = decided.get(before.model);
    if (!a) continue;
    for (const u of before.units) {
      const mv = u.moving;
      if (mv?.profile === undefined) continue;
      const kept = a.units.find((x) => x.id === u.id);
      if (!kept || kept.moving) continue;
      abandoned.push({ model: a.model, unitId: u.id, from: mv.from, to: mv.to });
      const refunded = { ...a, units: a.units.map((x) => (x === kept ? refund(kept, mv.since) : x)) };
      decided.set(a.model, refunded);
      changed.set(a.model, refunded);
      touched.add(a.model);
    }
  }

  // 1. Moves in flight end (their new replicas Ready) or are given up (late, or the destination cannot launch).
  const admissions = world.admissions.map((decidedA) => {
    // As step 0 left it (a move it gave up already refunded).
    const a = decided.get(decidedA.model) ?? decidedA;
    if (!a.units.some((u) => u.moving?.profile !== undefined)) return a;
    const allReady = readyOf(ready, a.model) >= total(a);
    const units = a.units.map((u) => {
      const back = u.moving?.profile;
      if (!u.moving || back === undefined) return u;
      const move = { model: a.model, unitId: u.id, from: u.moving.from, to: u.moving.to };
      const ahead = u.placements.filter((p) => p.profile === back);
      const own = u.placements.filter((p) => p.profile !== back);
      const { moving: _, ...rest } = u;
      const m = models.get(a.model);
      const preferred = m?.spec.profiles.find((p) => p.name === back);
      if (
        preferred &&
        allReady &&
        ahead.every((p) => (ready[a.model]?.[p.compute] ?? 0) >= onCompute(a, p.compute))
      ) {
        finished.push(move);
        return { ...rest, profile: back, resources: perReplica(preferred), placements: ahead };
      }
      const late = Date.parse(now) - Date.parse(u.moving.since) > policy.readyTimeoutMinutes * 60_000;
      const stuck = ahead.some((p) => cannotLaunch(supply.get(p.compute)?.shortOfCapacity, now));
      if (late || stuck || !preferred) {
        abandoned.push(move);
        return refund({ ...rest, placements: own }, u.moving.since);
      }
      return u;
    });
    // A move still waiting changes nothing: a run over a world as stored writes nothing.
    if (units.every((u, i) => u === a.units[i])) return a;
    const next = { ...a, units };
    changed.set(a.model, next);
    touched.add(a.model);
    return next;
  });

  // 2. Each model with nothing moving, all Ready, budget left and not protected now starts one move back.
  const tree = new ScopeTree(world.scopes);
  const { headroom } = restoreHeadroom(world.computes, admissions, world.models, tree);
  const window = inProtectedWindow(policy.protectedWindows, now);
  const started: Move[] = [];
  const since = Date.parse(now) - HOUR_MS;
  for (const a of [...admissions].sort((x, y) => (x.model < y.model ? -1 : x.model > y.model ? 1 : 0))) {
    const m = models.get(a.model);
    // A model whose move just ended or was given up starts none in the same run: the budget paces retries.
    if (!m || touched.has(a.model) || a.units.some((u) => u.moving)) continue;
    if (window && effectiveClass(m.spec) === 'critical') continue;
    if (readyOf(ready, a.model) < total(a)) continue;
    const moved = a.units.reduce(
      (n, u) => n + (u.movedAt ?? []).filter((t) => Date.parse(t) > since).length,
      0,
    );
    if (moved >= policy.movesPerModelPerHour) continue;
    const order = m.spec.profiles.map((p) => p.name);
    for (const u of a.units) {
      const i = order.indexOf(u.profile);
      if (i <= 0 || u.takeBack) continue;
      const earlier = m.spec.profiles.slice(0, i).filter((p) => fitsWithin(p, u));
      if (earlier.length === 0) continue;
      const res = headroom.place({
        id: backId(u.id),
        model: a.model,
        profiles: earlier,
        replicas: u.replicas,
        reach: tree.reach(m.owner),
      });
      if (!res.ok) continue;
      const placements: UnitPlacement[] = [...u.placements, ...res.placements];
      const move = {
        model: a.model,
        unitId: u.id,
        from: u.placements[0]!.compute,
        to: res.placements[0]!.compute,
      };
      const unit: AdmittedUnit = {
        ...u,
        placements,
        moving: { from: move.from, to: move.to, since: now, profile: res.profile.name },
        movedAt: [...(u.movedAt ?? []).filter((t) => Date.parse(t) > since), now],
      };
      started.push(move);
      changed.set(a.model, { ...a, units: a.units.map((x) => (x === u ? unit : x)) });
      break;
    }
  }
  return { admissions: [...changed.values()], started, finished, abandoned };
}

/**
 * A move back given up takes nothing from the model's hourly budget: its running replicas never stopped, and the
 * next try waits for the compute's next probe anyway. Otherwise two failed probes would hold a model on its
 * fallback for an hour after capacity came back.
 */
function refund(u: AdmittedUnit, since: string): AdmittedUnit {
  const movedAt = (u.movedAt ?? []).filter((t) => t !== since);
  const { movedAt: _, ...rest } = u;
  return movedAt.length ? { ...rest, movedAt } : rest;
}
