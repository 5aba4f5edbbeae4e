import {
  applyCooldown,
  type CooldownState,
  DEFAULT_COOLDOWN_MS,
  nextSizing,
  nodesInForce,
} from '../../../../lambdas/domain/placement';

const MIN = 60_000;
const t0 = Date.parse('2025-01-01T00:00:00Z');

/** Runs one reconcile per minute over the given needs and returns the nodes kept each time. */
function run(needs: number[], start: CooldownState = { neededNodes: 0 }, cooldown = DEFAULT_COOLDOWN_MS) {
  let s = start;
  return needs.map((n, i) => {
    s = applyCooldown(s, n, t0 + i * MIN, cooldown);
    return s.neededNodes;
  });
}

describe('applyCooldown', () => {
  it('scales up at once', () => {
    expect(run([0, 3, 5])).toEqual([0, 3, 5]);
  });

  it('scales down only after the need has been lower for the whole cool-down, to the peak of the window', () => {
    const needs = [4, 2, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2];
    // Lower from minute 1; at minute 11 it has been lower for 10 minutes; the window's peak was 3.
    expect(run(needs)).toEqual([4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3]);
  });

  it('restarts the cool-down when the need comes back up in between (no flapping)', () => {
    const needs = [4, 1, 1, 1, 1, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
    expect(run(needs, { neededNodes: 0 }, 10 * MIN)).toEqual(Array(16).fill(4));
  });

  it('scales a compute with no replicas for the cool-down to 0', () => {
    const needs = [2, ...Array(11).fill(0)];
    expect(run(needs).at(-1)).toBe(0);
    expect(run(needs).at(-2)).toBe(2);
  });

  it('is configurable, and a clock running backwards never scales down', () => {
    expect(run([3, 1, 1, 1], { neededNodes: 0 }, 2 * MIN)).toEqual([3, 3, 3, 1]);
    const s = applyCooldown({ neededNodes: 3 }, 1, t0);
    expect(s).toEqual({ neededNodes: 3, since: new Date(t0).toISOString(), peak: 1 });
    expect(applyCooldown(s, 1, t0 - 60 * MIN).neededNodes).toBe(3);
  });

  it('keeps stepping down through successive windows', () => {
    const needs = [6, 4, ...Array(10).fill(2), ...Array(10).fill(2)];
    const kept = run(needs);
    expect(kept[10]).toBe(6);
    expect(kept[11]).toBe(4);
    expect(kept[21]).toBe(2);
  });
});

describe('nextSizing', () => {
  const plan = (n: number) => ({ neededNodes: n, lowerBoundNodes: n, costPerHour: n * 0.98 });
  const held = nextSizing(undefined, plan(2), new Date(t0), DEFAULT_COOLDOWN_MS, { nodesInForce: 2 }).sizing;
  const later = new Date(t0 + MIN);

  it('keeps the nodes that exist for the cool-down once the need drops', () => {
    const s = nextSizing(held, plan(0), later, DEFAULT_COOLDOWN_MS, { nodesInForce: 2 }).sizing;
    expect(s).toMatchObject({ neededNodes: 2, peak: 0, lowerSince: later.toISOString() });
  });

  it('never holds more nodes than the group has: a lost group is not created again for a hold', () => {
    const s = nextSizing(held, plan(0), later, DEFAULT_COOLDOWN_MS, { nodesInForce: 0 }).sizing;
    expect(s).toEqual({
      neededNodes: 0,
      lowerBoundNodes: 0,
      costPerHour: 0,
      computedAt: later.toISOString(),
    });
    // A group that shrank out of band to 1 keeps 1 of the 2 held, not 2.
    const one = nextSizing(held, plan(0), later, DEFAULT_COOLDOWN_MS, { nodesInForce: 1 }).sizing;
    expect(one.neededNodes).toBe(1);
  });

  it('needs nothing while the compute is deleted, whatever was held or planned', () => {
    const s = nextSizing(held, plan(2), later, DEFAULT_COOLDOWN_MS, { deleting: true, nodesInForce: 2 });
    expect(s.sizing).toMatchObject({ neededNodes: 0, lowerBoundNodes: 0, costPerHour: 0 });
    expect(s.sizing.lowerSince).toBeUndefined();
    expect(s.changed).toBe(true);
  });

  it('counts a group that failed, is being deleted or is not there as holding no nodes', () => {
    const st = (nodegroupStatus: any, desiredNodes = 3) => nodesInForce({ nodegroupStatus, desiredNodes });
    expect(['ACTIVE', 'UPDATING', 'DEGRADED', 'CREATING'].map((s) => st(s))).toEqual([3, 3, 3, 3]);
    expect(['ABSENT', 'FOREIGN', 'CREATE_FAILED', 'DELETING', 'DELETE_FAILED'].map((s) => st(s))).toEqual([
      0, 0, 0, 0, 0,
    ]);
  });
});
