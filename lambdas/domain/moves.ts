import type { World } from './admission-world';
import {
  type ConsolidationPolicy,
  type ConsolidationStep,
  consolidationWorld,
  type Move,
  stepConsolidation,
} from './consolidation';
import type { ResourceEvent } from './events';
import type { Decision, ModelAdmission } from './quota';
import { type SurgeBackStep, stepSurgeBack } from './surge-back';

/**
 * The moves the admitter makes after deciding (issue 34 §3 consolidation, issue 32 §3 surge-back): one step of
 * each over the admissions `decision` just made, merged into it so that all commit in the admitter's one fenced
 * commit. Surge-back goes first (a model's own order of preference); consolidation leaves a model with a move in
 * flight alone. Both move only what they see Ready, so without `World.ready` (llmcap does not run the pods,
 * LLMCAP_WORKLOADS) nothing moves. The computes are those admission may fill at `now` (supply.ts
 * admissibleComputes), so no replica moves onto a compute that cannot launch nodes or whose nodes take no pods.
 */
export function stepMoves(
  world: World,
  decision: Decision,
  policy: ConsolidationPolicy,
  now: string,
): { decision: Decision; consolidation?: ConsolidationStep; surgeBack?: SurgeBackStep } {
  if (!world.ready) return { decision };
  const surgeBack = stepSurgeBack(
    consolidationWorld(world, decision.admissions, now),
    world.ready,
    policy,
    now,
    world.admissions,
  );
  const afterBack = merge(decision.admissions, surgeBack.admissions);
  // Consolidation moves admission's restore dropped (the new replica's room is gone): given up, and written.
  const dropped = droppedMoves(world.admissions, decision.admissions);
  // Off, with no move of its own in flight, consolidation has nothing to do: its plan (three placements of the
  // whole fleet) is not made on every run for nothing.
  const inFlight = afterBack.some((a) => a.units.some((u) => u.moving && u.moving.profile === undefined));
  const stepped =
    policy.enabled || inFlight || dropped.length > 0
      ? stepConsolidation(consolidationWorld(world, afterBack, now), world.ready, policy, now)
      : undefined;
  const consolidation = stepped && { ...stepped, abandoned: [...dropped, ...stepped.abandoned] };
  const changed = [
    ...surgeBack.admissions.map((a) => a.model),
    ...(consolidation?.admissions ?? []).map((a) => a.model),
    ...dropped.map((m) => m.model),
  ];
  const steps = { ...(consolidation ? { consolidation } : {}), surgeBack };
  if (changed.length === 0) return { decision, ...steps };
  return {
    decision: {
      ...decision,
      admissions: merge(afterBack, consolidation?.admissions ?? []),
      changed: [...new Set([...decision.changed, ...changed])],
    },
    ...steps,
  };
}

/** Consolidation moves stored in `before` whose unit admission kept without them in `after`. */
function droppedMoves(before: readonly ModelAdmission[], after: readonly ModelAdmission[]): Move[] {
  const decided = new Map(after.map((a) => [a.model, a]));
  const out: Move[] = [];
  for (const b of before) {
    const a = decided.get(b.model);
    for (const u of b.units) {
      if (!u.moving || u.moving.profile !== undefined) continue;
      const kept = a?.units.find((x) => x.id === u.id);
      if (kept && !kept.moving)
        out.push({ model: b.model, unitId: u.id, from: u.moving.from, to: u.moving.to });
    }
  }
  return out;
}

function merge(admissions: readonly ModelAdmission[], changed: readonly ModelAdmission[]): ModelAdmission[] {
  const next = new Map(changed.map((a) => [a.model, a]));
  return admissions.map((a) => next.get(a.model) ?? a);
}

/** Moves started, ended and given up in one admitter run, of both kinds (0 each when none). */
export function moveCounts(r: { consolidation?: ConsolidationStep; surgeBack?: SurgeBackStep }) {
  const n = (k: 'started' | 'finished' | 'abandoned') =>
    (r.consolidation?.[k].length ?? 0) + (r.surgeBack?.[k].length ?? 0);
  return { started: n('started'), finished: n('finished'), abandoned: n('abandoned') };
}

/** What a run's moves did, as events of each model moved (describe model): the computes, and for a start why. */
export function moveEvents(
  r: { consolidation?: ConsolidationStep; surgeBack?: SurgeBackStep },
  createdAt: (model: string) => string | undefined,
  at: string,
): ResourceEvent[] {
  const out: ResourceEvent[] = [];
  const push = (
    moves: readonly Move[] | undefined,
    type: ResourceEvent['type'],
    reason: string,
    say: (m: Move) => string,
  ) => {
    for (const m of moves ?? []) {
      const of = createdAt(m.model);
      if (of === undefined) continue;
      out.push({ kind: 'model', key: m.model, of, type, reason, message: say(m), source: 'admitter', at });
    }
  };
  const c = r.consolidation;
  const saving = c ? `$${c.plan.savingPerHour.toFixed(4)}/h` : '';
  push(
    c?.started,
    'Normal',
    'Moving',
    (m) =>
      `consolidation moves 1 replica from ${m.from} to ${m.to}: the new one starts beside the old, which goes once it is Ready (the plan saves ${saving})`,
  );
  push(
    c?.finished,
    'Normal',
    'Moved',
    (m) => `1 replica moved from ${m.from} to ${m.to}: the new one is Ready, the old one goes`,
  );
  push(
    c?.abandoned,
    'Warning',
    'MoveAbandoned',
    (m) =>
      `the replica started on ${m.to} was not Ready in time, or its room there is gone: it is removed and the one on ${m.from} kept`,
  );
  const b = r.surgeBack;
  push(
    b?.started,
    'Normal',
    'MovingBack',
    (m) =>
      `${m.to} can launch nodes again: replicas start there under the profile the model prefers, beside those on ${m.from}, which go once they are Ready`,
  );
  push(
    b?.finished,
    'Normal',
    'MovedBack',
    (m) =>
      `replicas moved back from ${m.from} to ${m.to}, the profile the model prefers: the new ones are Ready`,
  );
  push(
    b?.abandoned,
    'Warning',
    'MoveBackAbandoned',
    (m) =>
      `the replicas started on ${m.to} were not Ready in time, or it cannot launch nodes again: they are removed and those on ${m.from} kept`,
  );
  return out;
}
