/** mulberry32: a tiny seeded generator of numbers in [0, 1); the simulator, the benches and the fuzzer use it. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Seeded pseudo-random numbers. Separate streams for identifiers and for faults, so that creating one more
 * node group does not change which later requests get throttled.
 */
export class Rng {
  readonly next: () => number;

  constructor(seed: number) {
    this.next = mulberry32(seed);
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
