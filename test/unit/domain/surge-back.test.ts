import { decideWorld, restoreHeadroom, unitsOf } from '../../../lambdas/domain/admission-world';
import type { ConsolidationPolicy, ReadyReplicas } from '../../../lambdas/domain/consolidation';
import { moveEvents, stepMoves } from '../../../lambdas/domain/moves';
import type { ModelAdmission } from '../../../lambdas/domain/quota';
import { ScopeTree } from '../../../lambdas/domain/quota';

/**
 * Issue 32 §3, surge-back: a model prefers its L4 profile (compute l4-first) over A10G (a10g-next). While
 * l4-first cannot launch nodes its second replica is placed on a10g-next; once l4-first can launch again the
 * replica moves back, surge-first: placed again on l4-first beside the one running, which goes only when the
 * new one is Ready. Admissions come from admission's own decision (decideWorld), as the admitter stores them.
 */

const T0 = '2026-12-06T01:00:00.000Z';
const at = (minutes: number) => new Date(Date.parse(T0) + minutes * 60_000).toISOString();

const gpu = (name: string, type: string, extra: object = {}) => ({
  name,
  spec: {
    node: { cpu: 8, memoryGb: 32, gpu: { type, count: 1, memoryGb: 24 } },
    nodeGroup: { maxNodes: 4 },
    cost: { perHour: 1 },
  },
  status: { readyNodes: 1 },
  ...extra,
});
/** l4-first, short of capacity from T0 until its next probe (+30 min), past its grace from `countedUntil`. */
const short = (since = T0, nextProbeAt = at(30), countedUntil = since) =>
  gpu('l4-first', 'L4', {
    supply: {
      shortOfCapacity: {
        since,
        message: 'InsufficientInstanceCapacity',
        lastFailureAt: since,
        probes: 0,
        nextProbeAt,
        countedUntil,
      },
    },
  });
const A10G = gpu('a10g-next', 'A10G');

const chat = {
  name: 'chat',
  createdAt: T0,
  spec: {
    profiles: [
      { name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'l4-first' },
      { name: 'a10g', gpus: 1, gpuType: 'A10G', cpuCores: 4, minMemoryGb: 16, compute: 'a10g-next' },
    ],
    scaling: { min: 1, max: 2, target: 2 },
  },
};

const POLICY: ConsolidationPolicy = {
  enabled: false,
  minSavingShare: 0.05,
  minSavingPerHour: 1,
  movesPerModelPerHour: 2,
  protectedWindows: [],
  readyTimeoutMinutes: 30,
};

const world = (computes: object[], admissions: ModelAdmission[], ready?: ReadyReplicas) =>
  ({ computes, models: [chat], scopes: [], quotas: [], admissions, ...(ready ? { ready } : {}) }) as never;

/** Every placed replica Ready, less those listed per compute. */
function allReady(admissions: readonly ModelAdmission[], notYet: Record<string, number> = {}): ReadyReplicas {
  const per: Record<string, number> = {};
  for (const u of admissions[0]!.units)
    for (const p of u.placements) per[p.compute] = (per[p.compute] ?? 0) + p.replicas;
  for (const [c, n] of Object.entries(notYet)) per[c] = (per[c] ?? 0) - n;
  return { chat: per };
}
const where = (admissions: readonly ModelAdmission[]) =>
  admissions[0]!.units
    .flatMap((u) => u.placements.map((p) => `${u.id} ${p.profile}@${p.compute}:${p.replicas}`))
    .sort();

/** One admitter run: decide, then the moves, at `now`. */
function run(computes: object[], admissions: ModelAdmission[], ready: ReadyReplicas, now: string) {
  const w = world(computes, admissions, ready);
  return stepMoves(w, decideWorld(w, now), POLICY, now);
}

/** The fallback: l4-first has one node and cannot launch a second, so the second replica runs on A10G. */
function fellBack(): ModelAdmission[] {
  return decideWorld(world([short(), A10G], []), at(1)).admissions;
}

describe('surge-back (stepSurgeBack through stepMoves)', () => {
  it('moves a replica back to the profile its model prefers once that compute can launch, new Ready before old goes', () => {
    let admissions = fellBack();
    expect(where(admissions)).toEqual(['chat#1 a10g@a10g-next:1', 'chat#min l4@l4-first:1']);

    // Still short: nothing moves.
    const still = run([short(), A10G], admissions, allReady(admissions), at(2));
    expect(still.surgeBack!.started).toEqual([]);

    // Capacity returned (a launch succeeded): the replica is placed again on l4-first, beside the one on A10G.
    let r = run([gpu('l4-first', 'L4'), A10G], admissions, allReady(admissions), at(3));
    expect(r.surgeBack!.started).toEqual([
      { model: 'chat', unitId: 'chat#1', from: 'a10g-next', to: 'l4-first' },
    ]);
    expect(r.decision.changed).toContain('chat');
    admissions = r.decision.admissions;
    expect(where(admissions)).toEqual([
      'chat#1 a10g@a10g-next:1',
      'chat#1 l4@l4-first:1',
      'chat#min l4@l4-first:1',
    ]);
    // The reconciler sizes for both: two nodes on l4-first.
    const units = unitsOf(admissions, [chat] as never, new ScopeTree([]));
    expect(
      units.filter((u) => u.profiles[0]!.compute === 'l4-first').reduce((n, u) => n + u.replicas, 0),
    ).toBe(2);
    // Admission's next decision keeps the move as it is, the room of both held.
    const again = decideWorld(world([gpu('l4-first', 'L4'), A10G], admissions), at(4));
    expect(where(again.admissions)).toEqual(where(admissions));
    expect(again.changed).toEqual([]);

    // Not Ready yet: the A10G replica stays, and a run writes nothing.
    r = run([gpu('l4-first', 'L4'), A10G], admissions, allReady(admissions, { 'l4-first': 1 }), at(5));
    expect(r.surgeBack).toMatchObject({ started: [], finished: [], abandoned: [] });
    expect(r.decision.changed).toEqual([]);

    // Ready: the unit is on its preferred profile, the A10G replica goes.
    r = run([gpu('l4-first', 'L4'), A10G], admissions, allReady(admissions), at(6));
    expect(r.surgeBack!.finished).toHaveLength(1);
    admissions = r.decision.admissions;
    expect(where(admissions)).toEqual(['chat#1 l4@l4-first:1', 'chat#min l4@l4-first:1']);
    expect(admissions[0]!.units.find((u) => u.id === 'chat#1')).toMatchObject({
      profile: 'l4',
      resources: { gpus: 1, cores: 4, memoryGb: 16 },
    });
    expect(moveEvents(r, () => T0, at(6)).map((e) => e.reason)).toEqual(['MovedBack']);
  });

  it('starts at the probe, and gives the move up when the probe fails, the running replica kept', () => {
    const admissions = fellBack();
    // At nextProbeAt admission counts on l4-first again: the move back is the probe.
    const probing = run([short(T0, at(30)), A10G], admissions, allReady(admissions), at(31));
    expect(probing.surgeBack!.started).toHaveLength(1);
    // The probe fails at +31: past its grace (countedUntil) l4-first cannot launch, so the move is given up.
    const failed = short(T0, at(60), at(31));
    const moving = probing.decision.admissions;
    const r = run([failed, A10G], moving, allReady(moving, { 'l4-first': 1 }), at(32));
    expect(r.surgeBack!.abandoned).toEqual(probing.surgeBack!.started);
    expect(where(r.decision.admissions)).toEqual(['chat#1 a10g@a10g-next:1', 'chat#min l4@l4-first:1']);
    // A failed probe takes nothing from the hourly budget: nothing running stopped.
    expect(movedAt(r.decision.admissions)).toEqual([]);
  });

  it('waits while a replica of the model is not Ready, and moves nothing without observed pods', () => {
    const admissions = fellBack();
    const degraded = run(
      [gpu('l4-first', 'L4'), A10G],
      admissions,
      allReady(admissions, { 'a10g-next': 1 }),
      at(3),
    );
    expect(degraded.surgeBack!.started).toEqual([]);
    const w = world([gpu('l4-first', 'L4'), A10G], admissions);
    expect(stepMoves(w, decideWorld(w, at(3)), POLICY, at(3)).surgeBack).toBeUndefined();
  });

  it('gives up a move whose new replica is not Ready within the timeout', () => {
    const admissions = run([gpu('l4-first', 'L4'), A10G], fellBack(), allReady(fellBack()), at(3)).decision
      .admissions;
    const r = run([gpu('l4-first', 'L4'), A10G], admissions, allReady(admissions, { 'l4-first': 1 }), at(34));
    expect(r.surgeBack!.abandoned).toHaveLength(1);
    expect(where(r.decision.admissions)).toEqual(['chat#1 a10g@a10g-next:1', 'chat#min l4@l4-first:1']);
    expect(movedAt(admissions)).toHaveLength(1);
    expect(movedAt(r.decision.admissions)).toEqual([]);
    // The headroom holds what is placed, nothing of the move.
    const { admissions: restored } = restoreHeadroom(
      [gpu('l4-first', 'L4'), A10G] as never,
      r.decision.admissions,
      [chat] as never,
      new ScopeTree([]),
    );
    expect(where(restored)).toEqual(where(r.decision.admissions));
  });

  it('does not move back to a profile that needs more than the unit holds', () => {
    const big = {
      ...chat,
      spec: {
        ...chat.spec,
        profiles: [{ ...chat.spec.profiles[0]!, cpuCores: 6 }, chat.spec.profiles[1]!],
      },
    };
    const w0 = { ...(world([short(), A10G], []) as object), models: [big] } as never;
    const admissions = decideWorld(w0, at(1)).admissions;
    const w = {
      ...(world([gpu('l4-first', 'L4'), A10G], admissions, allReady(admissions)) as object),
      models: [big],
    } as never;
    expect(stepMoves(w, decideWorld(w, at(3)), POLICY, at(3)).surgeBack!.started).toEqual([]);
  });
});

/** Every start time a model's units keep in their hourly move budget. */
function movedAt(admissions: readonly { units: readonly { movedAt?: readonly string[] }[] }[]): string[] {
  return admissions.flatMap((a) => a.units.flatMap((u) => u.movedAt ?? []));
}
