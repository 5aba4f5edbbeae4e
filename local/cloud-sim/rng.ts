/**
 * Seeded pseudo-random numbers (mulberry32). Separate streams for identifiers and for faults, so that
 * creating one more node group does not change which later requests get throttled.
 */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  hex(chars: number): string {
    let s = '';
    while (s.length < chars)
      s += Math.floor(this.next() * 0x10000)
        .toString(16)
        .padStart(4, '0');
    return s.slice(0, chars);
  }

  /** UUID-shaped but not v4, like the ids EKS puts in node group ARNs (e.g. 02babd44-f044-264a-9dc4-...). */
  uuidLike(): string {
    const h = this.hex(32);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  /** A v4 UUID, the shape of EKS update ids. */
  uuidV4(): string {
    const h = this.hex(32).split('');
    h[12] = '4';
    h[16] = '89ab'[Number.parseInt(h[16] ?? '0', 16) & 3] ?? '8';
    const s = h.join('');
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
  }
}
