import { applyCooldown, type CooldownState, DEFAULT_COOLDOWN_MS } from '../../../../lambdas/domain/placement';

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
