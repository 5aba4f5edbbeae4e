import { decideWorld } from '../../../lambdas/domain/admission-world';
import {
  type ConsolidationPolicy,
  type ConsolidationWorld,
  inProtectedWindow,
  observedReady,
  planConsolidation,
  type ReadyReplicas,
  stepConsolidation,
} from '../../../lambdas/domain/consolidation';
import type { ModelClass } from '../../../lambdas/domain/model';
import { moveEvents, stepMoves } from '../../../lambdas/domain/moves';
import type { ComputeLike } from '../../../lambdas/domain/placement';
import type { ModelAdmission } from '../../../lambdas/domain/quota';

/**
 * Issue 34 §3: replicas admitted onto a dear compute move to a cheaper one added later, surge-first, within
 * the policy. Admissions come from admission's own decision (decideWorld), as the admitter would store them.
 */

const kind = (name: string, cpu: number, memoryGb: number, perHour: number): ComputeLike => ({
  name,
  spec: { node: { cpu, memoryGb }, nodeGroup: { maxNodes: 20 }, cost: { perHour } },
});
const R7I = kind('r7i-2xlarge', 8, 64, 0.5292);
const M7I = kind('m7i-2xlarge', 8, 32, 0.4032);

// The fields admission and consolidation read of a model; the rest of a stored Model plays no part here.
const model = (name: string, replicas: number, cls?: ModelClass) =>
  ({
    name,
    createdAt: '2026-12-06T00:00:00.000Z',
    spec: {
      profiles: [{ name: 'cpu', gpus: 0, cpuCores: 2, minMemoryGb: 4 }],
      scaling: { min: replicas, max: replicas },
      ...(cls ? { class: cls } : {}),
    },
  }) as unknown as ConsolidationWorld['models'][number];

const POLICY: ConsolidationPolicy = {
  enabled: true,
  minSavingShare: 0.05,
  minSavingPerHour: 0.1,
  movesPerModelPerHour: 2,
  protectedWindows: [],
  readyTimeoutMinutes: 30,
};

/** Models admitted while only the dear compute existed; then the cheaper one is added. */
function worldAfterCheaperAdded(models = [model('a', 4)]): ConsolidationWorld {
  const d = decideWorld(
    { computes: [R7I], models, scopes: [], quotas: [], admissions: [] } as never,
    '2026-12-06T00:00:00.000Z',
  );
  return { computes: [R7I, M7I], models, scopes: [], admissions: d.admissions };
}

/** Every placed replica Ready, except those listed as not yet. */
function readyOf(admissions: readonly ModelAdmission[], notYet: Record<string, string> = {}): ReadyReplicas {
  const out: Record<string, Record<string, number>> = {};
  for (const a of admissions) {
    const per: Record<string, number> = {};
    for (const u of a.units)
      for (const p of u.placements) per[p.compute] = (per[p.compute] ?? 0) + p.replicas;
    const lagging = notYet[a.model];
    if (lagging && per[lagging]) per[lagging]--;
    out[a.model] = per;
  }
  return out;
}

const placementsOf = (w: ConsolidationWorld, m: string) =>
  w.admissions
    .find((a) => a.model === m)!
    .units.flatMap((u) => u.placements.map((p) => `${p.compute}:${p.replicas}`))
    .sort();
const apply = (w: ConsolidationWorld, changed: readonly ModelAdmission[]): ConsolidationWorld => ({
  ...w,
  admissions: w.admissions.map((a) => changed.find((c) => c.model === a.model) ?? a),
});
const at = (minutes: number) => new Date(Date.UTC(2026, 11, 6, 1, minutes)).toISOString();

describe('planConsolidation', () => {
  it('shows the moves, the saving per hour and the nodes freed when a cheaper compute can hold what runs', () => {
    const w = worldAfterCheaperAdded();
    expect(placementsOf(w, 'a')).toEqual(['r7i-2xlarge:4']);
    const plan = planConsolidation(w, readyOf(w.admissions), POLICY, at(0));
    // 4 replicas of 2 cores: 2 nodes either way, 0.5292 against 0.4032 $/h a node.
    expect(plan).toMatchObject({
      currentPerHour: 1.0584,
      plannedPerHour: 0.8064,
      savingPerHour: 0.252,
      acts: true,
    });
    expect(plan.moves).toHaveLength(4);
    expect(plan.moves.every((m) => m.from === 'r7i-2xlarge' && m.to === 'm7i-2xlarge')).toBe(true);
    expect(plan.nodes).toEqual([
      { compute: 'r7i-2xlarge', before: 2, after: 0, perHour: 0.5292 },
      { compute: 'm7i-2xlarge', before: 0, after: 2, perHour: 0.4032 },
    ]);
  });

  it('does not act when the saving is below either threshold', () => {
    const w = worldAfterCheaperAdded();
    const ready = readyOf(w.admissions);
    // 0.252 $/h is 24% of 1.0584: below an absolute 0.30 $/h, and below a share of 25%.
    for (const policy of [
      { ...POLICY, minSavingPerHour: 0.3 },
      { ...POLICY, minSavingShare: 0.25 },
    ]) {
      const plan = planConsolidation(w, ready, policy, at(0));
      expect(plan.acts).toBe(false);
      expect(plan.moves).toHaveLength(4);
      const step = stepConsolidation(w, ready, policy, at(0));
      expect(step.started).toEqual([]);
      expect(step.admissions).toEqual([]);
    }
  });

  it("keeps critical models where they are inside a protected window, and others' moves go on", () => {
    const w = worldAfterCheaperAdded([model('crit', 4, 'critical'), model('std', 4)]);
    const policy = { ...POLICY, protectedWindows: [{ from: '00:30', to: '02:00' }] };
    const plan = planConsolidation(w, readyOf(w.admissions), policy, at(0));
    expect(plan.held).toEqual([{ model: 'crit', replicas: 4, reason: 'protected-window' }]);
    expect(plan.moves.every((m) => m.model === 'std')).toBe(true);
    expect(plan.moves.length).toBeGreaterThan(0);
    // Outside the window (02:00 on), the critical model moves too.
    const later = planConsolidation(w, readyOf(w.admissions), policy, at(60));
    expect(later.held).toEqual([]);
    expect(later.moves.some((m) => m.model === 'crit')).toBe(true);
  });

  it('tells windows past midnight and by weekday', () => {
    const night = [{ from: '22:00', to: '06:00', days: [5] }];
    // 2026-12-04 is a Friday.
    expect(inProtectedWindow(night, '2026-12-04T23:00:00Z')).toBe(true);
    expect(inProtectedWindow(night, '2026-12-05T05:59:00Z')).toBe(true);
    expect(inProtectedWindow(night, '2026-12-05T06:00:00Z')).toBe(false);
    expect(inProtectedWindow(night, '2026-12-05T23:00:00Z')).toBe(false);
  });
});

describe('stepConsolidation', () => {
  it('moves surge-first: the old replica goes only once the new one is Ready, one at a time, within the budget', () => {
    let w = worldAfterCheaperAdded();
    let s = stepConsolidation(w, readyOf(w.admissions), POLICY, at(0));
    expect(s.started).toEqual([{ model: 'a', unitId: 'a#min', from: 'r7i-2xlarge', to: 'm7i-2xlarge' }]);
    w = apply(w, s.admissions);
    // The new replica is placed beside the four: five placed for a unit of four.
    expect(placementsOf(w, 'a')).toEqual(['m7i-2xlarge:1', 'r7i-2xlarge:4']);
    expect(w.admissions[0]!.units[0]!.replicas).toBe(4);

    // Not Ready yet: nothing removed, nothing more started.
    s = stepConsolidation(w, readyOf(w.admissions, { a: 'm7i-2xlarge' }), POLICY, at(1));
    expect(s).toMatchObject({ started: [], finished: [] });
    // The three still on r7i wait for it.
    expect(s.plan.held).toEqual([{ model: 'a', replicas: 3, reason: 'in-flight' }]);

    // Ready: the old one goes, and the second move (the budget is 2 an hour) starts.
    s = stepConsolidation(w, readyOf(w.admissions), POLICY, at(2));
    expect(s.finished).toHaveLength(1);
    expect(s.started).toHaveLength(1);
    w = apply(w, s.admissions);
    expect(placementsOf(w, 'a')).toEqual(['m7i-2xlarge:2', 'r7i-2xlarge:3']);

    // The second done, the budget is spent until an hour after the first move.
    s = stepConsolidation(w, readyOf(w.admissions), POLICY, at(3));
    w = apply(w, s.admissions);
    expect(s.started).toEqual([]);
    expect(placementsOf(w, 'a')).toEqual(['m7i-2xlarge:2', 'r7i-2xlarge:2']);
    expect(s.plan.held).toEqual([{ model: 'a', replicas: 2, reason: 'budget' }]);

    // An hour on, the rest moves; Ready replicas never fell below the unit's four.
    let minute = 61;
    for (let pass = 0; pass < 10 && placementsOf(w, 'a').some((p) => p.startsWith('r7i')); pass++) {
      const ready = readyOf(w.admissions);
      expect(Object.values(ready.a!).reduce((x, y) => x + y, 0)).toBeGreaterThanOrEqual(4);
      s = stepConsolidation(w, ready, POLICY, at(minute++));
      w = apply(w, s.admissions);
    }
    expect(placementsOf(w, 'a')).toEqual(['m7i-2xlarge:4']);
    expect(planConsolidation(w, readyOf(w.admissions), POLICY, at(minute)).moves).toEqual([]);
  });

  it('waits while any replica of the model is not Ready, so its disruption budget is never what gives way', () => {
    const w = worldAfterCheaperAdded();
    const degraded = readyOf(w.admissions, { a: 'r7i-2xlarge' });
    const s = stepConsolidation(w, degraded, POLICY, at(0));
    expect(s.started).toEqual([]);
    expect(s.plan.held).toEqual([{ model: 'a', replicas: 4, reason: 'not-ready' }]);
  });

  it('gives up a move whose new replica is not Ready in time, keeping the old one', () => {
    let w = worldAfterCheaperAdded();
    const s = stepConsolidation(w, readyOf(w.admissions), POLICY, at(0));
    w = apply(w, s.admissions);
    const late = stepConsolidation(w, readyOf(w.admissions, { a: 'm7i-2xlarge' }), POLICY, at(31));
    expect(late.abandoned).toEqual(s.started);
    const after = apply(w, late.admissions);
    expect(placementsOf(after, 'a').filter((p) => p.startsWith('r7i'))).toEqual(['r7i-2xlarge:4']);
  });

  it("leaves admission's next decision with the move as it was: the surge's room held, nothing re-placed", () => {
    let w = worldAfterCheaperAdded();
    w = apply(w, stepConsolidation(w, readyOf(w.admissions), POLICY, at(0)).admissions);
    const d = decideWorld({ ...w, quotas: [] } as never, at(1));
    const a = d.admissions.find((x) => x.model === 'a') ?? w.admissions[0]!;
    expect(a.units[0]!.moving).toEqual({ from: 'r7i-2xlarge', to: 'm7i-2xlarge', since: at(0) });
    expect(a.units[0]!.placements.map((p) => `${p.compute}:${p.replicas}`)).toEqual([
      'm7i-2xlarge:1',
      'r7i-2xlarge:4',
    ]);
  });
});

describe("the admitter's step (stepMoves)", () => {
  /** The world as the admitter loads it: admission's own decision over it, and the Ready pods as seen. */
  const admitterWorld = (ready?: ReadyReplicas) => {
    const w = worldAfterCheaperAdded();
    const world = { ...w, computes: [R7I, M7I], quotas: [], ...(ready ? { ready } : {}) } as never;
    return { world, decision: decideWorld(world, at(0)) };
  };

  it('starts a surge-first move on what admission decided, and marks the model changed so it commits', () => {
    const { world, decision } = admitterWorld(readyOf(worldAfterCheaperAdded().admissions));
    expect(decision.changed).toEqual([]);
    const { decision: next, consolidation: step } = stepMoves(world, decision, POLICY, at(0));
    expect(step!.started).toEqual([{ model: 'a', unitId: 'a#min', from: 'r7i-2xlarge', to: 'm7i-2xlarge' }]);
    expect(next.changed).toEqual(['a']);
    const unit = next.admissions.find((a) => a.model === 'a')!.units[0]!;
    expect(unit.moving).toEqual({ from: 'r7i-2xlarge', to: 'm7i-2xlarge', since: at(0) });
    expect(unit.placements.map((p) => `${p.compute}:${p.replicas}`)).toEqual([
      'm7i-2xlarge:1',
      'r7i-2xlarge:4',
    ]);
    // What admission decided besides stands.
    expect(next.victims).toBe(decision.victims);
  });

  it('moves nothing where llmcap does not see the pods (no World.ready)', () => {
    const { world, decision } = admitterWorld();
    const r = stepMoves(world, decision, POLICY, at(0));
    expect(r.decision).toBe(decision);
    expect(r.consolidation).toBeUndefined();
  });

  it('starts nothing while the policy is off, but ends a move already in flight', () => {
    const { world, decision } = admitterWorld(readyOf(worldAfterCheaperAdded().admissions));
    const off = { ...POLICY, enabled: false };
    const idle = stepMoves(world, decision, off, at(0));
    // Nothing of its own in flight: no plan is made at all (the capacity view still shows it, acts but off).
    expect(idle.consolidation).toBeUndefined();
    expect(idle.decision).toBe(decision);
    expect(planConsolidation(world, readyOf(decision.admissions), off, at(0))).toMatchObject({
      acts: true,
      enabled: false,
    });

    const moving = stepMoves(world, decision, POLICY, at(0)).decision.admissions;
    const w2 = { ...(world as object), admissions: moving, ready: readyOf(moving) } as never;
    const done = stepMoves(w2, decideWorld(w2, at(1)), off, at(1));
    expect(done.consolidation!.finished).toHaveLength(1);
    const unit = done.decision.admissions.find((a) => a.model === 'a')!.units[0]!;
    expect(unit.moving).toBeUndefined();
    expect(unit.placements.map((p) => `${p.compute}:${p.replicas}`)).toEqual([
      'm7i-2xlarge:1',
      'r7i-2xlarge:3',
    ]);
  });

  it('keeps the running replicas when the room of a move in flight is gone, the move given up and written', () => {
    const { world, decision } = admitterWorld(readyOf(worldAfterCheaperAdded().admissions));
    const moving = stepMoves(world, decision, POLICY, at(0)).decision.admissions;
    // The destination shrinks to no nodes: the surge no longer fits, the four on r7i still do. (Placed afresh,
    // the unit would go to the cheap pool beside: all four replicas at once, none of them Ready.)
    const gone = { ...M7I, spec: { ...M7I.spec, nodeGroup: { maxNodes: 0 } } };
    const other = kind('m7i-other', 8, 32, 0.4032);
    const w = {
      ...(world as object),
      computes: [R7I, gone, other],
      admissions: moving,
      ready: readyOf(moving),
    } as never;
    const r = stepMoves(w, decideWorld(w, at(1)), POLICY, at(1));
    expect(r.consolidation!.abandoned).toEqual([
      { model: 'a', unitId: 'a#min', from: 'r7i-2xlarge', to: 'm7i-2xlarge' },
    ]);
    expect(r.decision.changed).toContain('a');
    // The four running replicas stay; the next move, to the pool that has room, starts surge-first beside them.
    const unit = r.decision.admissions.find((a) => a.model === 'a')!.units[0]!;
    expect(unit.placements).toEqual([
      { compute: 'm7i-other', profile: 'cpu', replicas: 1 },
      { compute: 'r7i-2xlarge', profile: 'cpu', replicas: 4 },
    ]);
    expect(unit.moving).toEqual({ from: 'r7i-2xlarge', to: 'm7i-other', since: at(1) });
  });

  it('never moves onto a compute that cannot launch the nodes the move needs', () => {
    const { world, decision } = admitterWorld(readyOf(worldAfterCheaperAdded().admissions));
    const short = {
      ...M7I,
      status: { readyNodes: 0 },
      supply: {
        shortOfCapacity: {
          since: at(0),
          message: 'InsufficientInstanceCapacity',
          lastFailureAt: at(0),
          probes: 0,
          nextProbeAt: at(30),
          countedUntil: at(0),
        },
      },
    };
    const w = { ...(world as object), computes: [R7I, short] } as never;
    const r = stepMoves(w, decision, POLICY, at(1));
    expect(r.consolidation!.started).toEqual([]);
    expect(r.consolidation!.plan.moves).toEqual([]);
  });

  it("reads the Ready replicas per compute from the reconciler's items, and tells each move as an event", () => {
    expect(observedReady([{ model: 'a', readyOn: { x: 2 } }, { model: 'b' }])).toEqual({ a: { x: 2 } });
    const { world, decision } = admitterWorld(readyOf(worldAfterCheaperAdded().admissions));
    const moved = stepMoves(world, decision, POLICY, at(0));
    const events = moveEvents(moved, (m) => (m === 'a' ? at(0) : undefined), at(0));
    expect(events).toEqual([
      expect.objectContaining({
        key: 'a',
        type: 'Normal',
        reason: 'Moving',
        source: 'admitter',
        message: expect.stringMatching(
          /^consolidation moves 1 replica from r7i-2xlarge to m7i-2xlarge: .*saves \$0\.2520\/h/,
        ),
      }),
    ]);
  });
});
