import type { Headroom, PlaceResult, ReplicaUnit, UnitPlacement } from '../../lambdas/domain/headroom';
import type { Profile } from '../../lambdas/domain/model';
import { perReplica } from '../../lambdas/domain/resources';

/**
 * A test double, kept out of the Lambda bundle: a deliberately simple Headroom for admission tests and the
 * benchmark. Each compute offers `maxNodes` nodes of one shape, and a compute takes replicas while the sum of
 * what they request fits `maxNodes` nodes in every dimension (a replica must also fit one node). No bin packing: the real placement
 * (lambdas/domain/placement) implements the same interface and replaces this one in production.
 */

export interface SimpleCompute {
  name: string;
  /** Per node. */
  gpus: number;
  gpuType?: string;
  cores: number;
  memoryGb: number;
  maxNodes: number;
  perHour?: number;
}

interface Shape {
  gpus: number;
  cores: number;
  memoryGb: number;
}

const shapeOf = (p: Profile): Shape => perReplica(p);

export function describeShape(s: Shape): string {
  return s.gpus > 0 ? `${s.gpus}-gpu` : `${s.cores}-core`;
}

interface UnitRecord {
  placements: UnitPlacement[];
  shape: Shape;
}

/**
 * The placed units, cheap to clone: a shared base that nobody changes plus small per-copy changes, folded
 * back into a new base when they grow. Decisions clone the headroom for every plan they try.
 */
class Units {
  constructor(
    private base: Map<string, UnitRecord> = new Map(),
    private own: Map<string, UnitRecord> = new Map(),
    private gone: Set<string> = new Set(),
  ) {}

  get(id: string): UnitRecord | undefined {
    if (this.gone.has(id)) return undefined;
    return this.own.get(id) ?? this.base.get(id);
  }

  set(id: string, u: UnitRecord): void {
    this.gone.delete(id);
    this.own.set(id, u);
  }

  delete(id: string): void {
    this.own.delete(id);
    if (this.base.has(id)) this.gone.add(id);
  }

  clone(): Units {
    if (this.own.size + this.gone.size > 64 + this.base.size / 16) {
      const flat = new Map(this.base);
      for (const id of this.gone) flat.delete(id);
      for (const [id, u] of this.own) flat.set(id, u);
      this.base = flat;
      this.own = new Map();
      this.gone = new Set();
    }
    return new Units(this.base, new Map(this.own), new Set(this.gone));
  }
}

export interface ComputeUse {
  name: string;
  maxNodes: number;
  neededNodes: number;
  used: Shape;
  capacity: Shape;
}

export class SimpleHeadroom implements Headroom {
  private readonly used: Float64Array;

  private constructor(
    private readonly computes: readonly SimpleCompute[],
    private readonly index: Map<string, number>,
    used: Float64Array | undefined,
    private readonly units: Units,
  ) {
    this.used = used ?? new Float64Array(computes.length * 3);
  }

  static of(computes: readonly SimpleCompute[]): SimpleHeadroom {
    // Cheapest first, then by name: the order placement prefers, fixed so decisions are deterministic.
    const sorted = [...computes].sort(
      (a, b) => (a.perHour ?? 0) - (b.perHour ?? 0) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    );
    return new SimpleHeadroom(sorted, new Map(sorted.map((c, i) => [c.name, i])), undefined, new Units());
  }

  private fitsNode(c: SimpleCompute, p: Profile, s: Shape): boolean {
    if (p.compute !== undefined && p.compute !== c.name) return false;
    // GPU nodes are tainted against CPU-only pods, and a GPU replica needs GPU nodes of its type.
    if (s.gpus > 0 !== c.gpus > 0) return false;
    if (s.gpus > 0 && p.gpuType && p.gpuType.toUpperCase() !== (c.gpuType ?? '').toUpperCase()) return false;
    return s.gpus <= c.gpus && s.cores <= c.cores && s.memoryGb <= c.memoryGb;
  }

  /** How many more replicas of the shape fit the compute within maxNodes. */
  private room(i: number, s: Shape): number {
    const c = this.computes[i]!;
    let n = Number.POSITIVE_INFINITY;
    const caps = [c.gpus, c.cores, c.memoryGb];
    const req = [s.gpus, s.cores, s.memoryGb];
    for (let k = 0; k < 3; k++) {
      if (req[k]! <= 0) continue;
      const free = caps[k]! * c.maxNodes - this.used[i * 3 + k]!;
      n = Math.min(n, Math.floor(free / req[k]! + 1e-9));
    }
    return Math.max(0, n);
  }

  place(unit: ReplicaUnit): PlaceResult {
    const full: string[] = [];
    let anyCandidate = false;
    for (const p of unit.profiles) {
      const s = shapeOf(p);
      const plan: UnitPlacement[] = [];
      let left = unit.replicas;
      for (let i = 0; i < this.computes.length && left > 0; i++) {
        const c = this.computes[i]!;
        if (!this.fitsNode(c, p, s)) continue;
        anyCandidate = true;
        const n = Math.min(left, this.room(i, s));
        if (n > 0) {
          plan.push({ compute: c.name, profile: p.name, replicas: n });
          left -= n;
        } else if (!full.includes(c.name)) full.push(c.name);
      }
      if (left === 0) {
        for (const pl of plan) this.charge(pl, s, 1);
        this.units.set(unit.id, { placements: plan, shape: s });
        return { ok: true, profile: p, placements: plan };
      }
      for (const pl of plan) if (!full.includes(pl.compute)) full.push(pl.compute);
    }
    const first = unit.profiles[0];
    const what = first ? describeShape(shapeOf(first)) : 'such a';
    const many = unit.replicas > 1 ? ` (${unit.replicas} replicas together)` : '';
    if (!anyCandidate) {
      return {
        ok: false,
        message: `no compute can take a ${what} replica${many}: no compute has a node that large of the right kind`,
        candidateComputes: [],
      };
    }
    const detail = full
      .map((name) => `${name} is at its maxNodes ${this.computes[this.index.get(name)!]!.maxNodes}`)
      .join(', ');
    return {
      ok: false,
      message: `no compute can take a ${what} replica${many}: ${detail}`,
      candidateComputes: this.candidateComputes(unit),
    };
  }

  private charge(pl: UnitPlacement, s: Shape, sign: 1 | -1): void {
    const i = this.index.get(pl.compute)!;
    this.used[i * 3] = this.used[i * 3]! + sign * s.gpus * pl.replicas;
    this.used[i * 3 + 1] = this.used[i * 3 + 1]! + sign * s.cores * pl.replicas;
    this.used[i * 3 + 2] = this.used[i * 3 + 2]! + sign * s.memoryGb * pl.replicas;
  }

  release(unitId: string): void {
    const u = this.units.get(unitId);
    if (!u) return;
    for (const pl of u.placements) this.charge(pl, u.shape, -1);
    this.units.delete(unitId);
  }

  /**
   * Loads a unit admitted earlier where it was placed, without checking room (what is running is a fact;
   * a quota or maxNodes lowered since does not evict it).
   */
  restore(unitId: string, resources: Shape, placements: readonly UnitPlacement[]): void {
    this.release(unitId);
    const kept = placements.filter((pl) => this.index.has(pl.compute));
    for (const pl of kept) this.charge(pl, resources, 1);
    this.units.set(unitId, { placements: kept.map((pl) => ({ ...pl })), shape: { ...resources } });
  }

  clone(): SimpleHeadroom {
    return new SimpleHeadroom(this.computes, this.index, this.used.slice(), this.units.clone());
  }

  candidateComputes(unit: ReplicaUnit): string[] {
    const out: string[] = [];
    for (const c of this.computes) {
      if (unit.profiles.some((p) => this.fitsNode(c, p, shapeOf(p)))) out.push(c.name);
    }
    return out;
  }

  placementsOf(unitId: string): UnitPlacement[] | undefined {
    return this.units.get(unitId)?.placements;
  }

  /** Per compute: nodes needed for what is placed, and what is used of maxNodes' worth. */
  summary(): ComputeUse[] {
    return this.computes.map((c, i) => {
      const used = { gpus: this.used[i * 3]!, cores: this.used[i * 3 + 1]!, memoryGb: this.used[i * 3 + 2]! };
      const need = (u: number, per: number) => (per > 0 ? Math.ceil(u / per - 1e-9) : 0);
      return {
        name: c.name,
        maxNodes: c.maxNodes,
        neededNodes: Math.max(
          need(used.gpus, c.gpus),
          need(used.cores, c.cores),
          need(used.memoryGb, c.memoryGb),
        ),
        used,
        capacity: {
          gpus: c.gpus * c.maxNodes,
          cores: c.cores * c.maxNodes,
          memoryGb: c.memoryGb * c.maxNodes,
        },
      };
    });
  }
}
