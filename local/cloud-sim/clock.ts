/**
 * Time source of the simulator. Every lifecycle step is computed against `now()` when a request arrives,
 * so a driven clock makes the whole simulation deterministic and lets tests jump minutes in microseconds.
 */
export interface Clock {
  now(): number;
}

export class RealClock implements Clock {
  now(): number {
    return Date.now();
  }
}

/** A clock that only moves when told to; it starts at a fixed instant so timestamps are reproducible. */
export class DrivenClock implements Clock {
  private t: number;

  constructor(start: number = Date.UTC(2026, 0, 1)) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  advance(ms: number): number {
    if (!Number.isFinite(ms) || ms < 0) throw new Error(`cannot advance the clock by ${ms} ms`);
    this.t += ms;
    return this.t;
  }

  set(ms: number): void {
    if (ms < this.t) throw new Error('the driven clock cannot go backwards');
    this.t = ms;
  }
}

export function isDrivenClock(c: Clock): c is DrivenClock {
  return c instanceof DrivenClock;
}
