import type { Headroom, PlaceResult, ReplicaUnit, UnitPlacement } from '../headroom';
import type { Profile } from '../model';
import {
  type Candidates,
  type ComputeInfo,
  type ComputeLike,
  computeInfos,
  describeReplicas,
  type Reach,
  type ReplicaRequest,
  rankCandidates,
} from './request';

/**
 * Admission's incremental headroom: each compute is maxNodes node slots, and a replica goes first-fit into
 * the first slot with room on the best-ranked candidate compute (an empty slot is a node the group can still
 * grow). Everything is flat typed arrays so that place() costs microseconds, and clone() is copy-on-write so
 * that a trial plan costs O(computes), not O(replicas).
 */

/** One compute's node slots. Shared between clones until one of them writes (see `owner`). */
class Slots {
  owner: object;
  readonly freeG: Int32Array;
  readonly freeM: Int32Array;
  readonly freeMi: Int32Array;
  /** Replicas on each slot; a slot with 0 is a node the group does not need. */
  readonly count: Int32Array;
  usedNodes = 0;
  replicas = 0;
  // The smallest request known not to fit since the last release: anything at least as large fails at once,
  // because placing only ever takes room away. Safe to share between clones, since it describes equal state.
  failG = Number.POSITIVE_INFINITY;
  failM = Number.POSITIVE_INFINITY;
  failMi = Number.POSITIVE_INFINITY;
  // Upper bounds of any slot's free room per dimension: exact after a failed full scan, raised by releases,
  // left alone by placements (which only lower the truth). They turn a scan of a full compute into 3 compares.
  maxG: number;
  maxM: number;
  maxMi: number;

  constructor(owner: object, info: ComputeInfo | Slots) {
    this.owner = owner;
    if (info instanceof Slots) {
      this.freeG = info.freeG.slice();
      this.freeM = info.freeM.slice();
      this.freeMi = info.freeMi.slice();
      this.count = info.count.slice();
      this.usedNodes = info.usedNodes;
      this.replicas = info.replicas;
      this.failG = info.failG;
      this.failM = info.failM;
      this.failMi = info.failMi;
      this.maxG = info.maxG;
      this.maxM = info.maxM;
      this.maxMi = info.maxMi;
    } else {
      const n = info.maxNodes;
      this.freeG = new Int32Array(n).fill(info.alloc.gpus);
      this.freeM = new Int32Array(n).fill(info.alloc.millicores);
      this.freeMi = new Int32Array(n).fill(info.alloc.memoryMiB);
      this.count = new Int32Array(n);
      this.maxG = info.alloc.gpus;
      this.maxM = info.alloc.millicores;
      this.maxMi = info.alloc.memoryMiB;
    }
  }

  /**
   * First-fit from slot `from`: the slot with room, or -1. Reads only, apart from remembering a failure,
   * which is true of this state whoever shares it. The caller vouches that no slot before `from` fits.
   */
  find(g: number, m: number, mi: number, from: number): number {
    if (g > this.maxG || m > this.maxM || mi > this.maxMi) return -1;
    if (g >= this.failG && m >= this.failM && mi >= this.failMi) return -1;
    const { freeG, freeM, freeMi } = this;
    let xg = 0;
    let xm = 0;
    let xmi = 0;
    for (let s = from; s < freeG.length; s++) {
      const fg = freeG[s]!;
      const fm = freeM[s]!;
      const fmi = freeMi[s]!;
      if (fg >= g && fm >= m && fmi >= mi) return s;
      if (fg > xg) xg = fg;
      if (fm > xm) xm = fm;
      if (fmi > xmi) xmi = fmi;
    }
    if (from === 0) {
      this.maxG = xg;
      this.maxM = xm;
      this.maxMi = xmi;
    }
    this.failG = g;
    this.failM = m;
    this.failMi = mi;
    return -1;
  }

  takeAt(g: number, m: number, mi: number, s: number): void {
    this.freeG[s]! -= g;
    this.freeM[s]! -= m;
    this.freeMi[s]! -= mi;
    if (this.count[s]!++ === 0) this.usedNodes++;
    this.replicas++;
  }

  give(g: number, m: number, mi: number, s: number): void {
    this.freeG[s]! += g;
    this.freeM[s]! += m;
    this.freeMi[s]! += mi;
    if (--this.count[s]! === 0) this.usedNodes--;
    this.replicas--;
    if (this.freeG[s]! > this.maxG) this.maxG = this.freeG[s]!;
    if (this.freeM[s]! > this.maxM) this.maxM = this.freeM[s]!;
    if (this.freeMi[s]! > this.maxMi) this.maxMi = this.freeMi[s]!;
    this.failG = this.failM = this.failMi = Number.POSITIVE_INFINITY;
  }
}

/**
 * What a unit holds: per replica, the compute and the slot, so release can give back exactly that. Plain
 * arrays, not typed ones: a unit has a handful of replicas, and a small typed array costs some six times the
 * memory and time of an array (a 30,000-replica plan holds 17,000 of them).
 */
export interface UnitRecord {
  unitId: string;
  profile: Profile;
  request: ReplicaRequest;
  computes: number[];
  slots: number[];
  /**
   * Grouped per compute when first read (PlacementHeadroom.placementsOf): the batch plan usually places the
   * unit elsewhere, and grouping every unit's replicas up front was a tenth of a 30,000-replica plan's objects.
   */
  placements: UnitPlacement[] | undefined;
  /**
   * The ranked computes place() chose among, when ranked for any capacity type (not a critical minimum's
   * on-demand-only list): the batch plan reads them here instead of looking the profile up again.
   */
  candidates?: Candidates;
}

const TOMB = Symbol('released');
interface Layer<V> {
  map: Map<string, V | typeof TOMB>;
  parent: Layer<V> | undefined;
}

/**
 * A map that forks cheaply: a fork freezes the current layer and both sides write to new layers above it.
 * Frozen layers are merged (into new maps, since other forks may share them) while a layer is at least half
 * the size of the one below, like a binary counter, so the chain stays O(log n) deep and each entry is
 * copied O(log n) times however many trial plans are adopted.
 */
class ForkableMap<V> {
  constructor(private top: Layer<V> = { map: new Map(), parent: undefined }) {}

  get(k: string): V | undefined {
    for (let l: Layer<V> | undefined = this.top; l; l = l.parent) {
      const v = l.map.get(k);
      if (v !== undefined) return v === TOMB ? undefined : v;
    }
    return undefined;
  }

  set(k: string, v: V): void {
    this.top.map.set(k, v);
  }

  delete(k: string): void {
    if (this.top.parent) this.top.map.set(k, TOMB);
    else this.top.map.delete(k);
  }

  fork(): ForkableMap<V> {
    // Nothing written since the last fork: the clone can share the frozen chain below our empty layer.
    if (this.top.map.size === 0) return new ForkableMap({ map: new Map(), parent: this.top.parent });
    let frozen = this.top;
    while (frozen.parent && frozen.parent.map.size <= 2 * frozen.map.size) {
      const below = frozen.parent;
      const merged = new Map(below.map);
      for (const [k, v] of frozen.map) {
        // At the bottom a tombstone has nothing left to hide.
        if (v === TOMB && !below.parent) merged.delete(k);
        else merged.set(k, v);
      }
      frozen = { map: merged, parent: below.parent };
    }
    this.top = { map: new Map(), parent: frozen };
    return new ForkableMap({ map: new Map(), parent: frozen });
  }

  /** Live entries, in insertion order of the oldest layer first. */
  flat(): Map<string, V> {
    const chain: Layer<V>[] = [];
    for (let l: Layer<V> | undefined = this.top; l; l = l.parent) chain.push(l);
    const out = new Map<string, V>();
    for (let i = chain.length - 1; i >= 0; i--) {
      for (const [k, v] of chain[i]!.map) {
        if (v === TOMB) out.delete(k);
        else out.set(k, v);
      }
    }
    return out;
  }
}

/** State shared by every clone: the computes and the ranked candidates per profile, both immutable. */
class Shared {
  constructor(readonly infos: ComputeInfo[]) {}

  /** Per reach and profile name: the answer for each distinct profile of that name (compared field by field). */
  private readonly byReach = new Map<string, Map<string, { p: Profile; c: Candidates }[]>>();

  candidates(p: Profile, reach?: Reach, onDemandOnly = false): Candidates {
    const r = onDemandOnly ? (reach ? `od|${reach.join(' ')}` : 'od|') : reach ? reach.join(' ') : '';
    let byName = this.byReach.get(r);
    if (!byName) {
      byName = new Map();
      this.byReach.set(r, byName);
    }
    // Equal profiles, the same object or built afresh, share one answer. Compared field by field among the few
    // of one name, not through a key string (a string per unit on 30k replicas) nor a map by object (an entry
    // per unit: a 30k plan spent a tenth of admission's pass inserting them).
    let same = byName.get(p.name);
    if (!same) {
      same = [];
      byName.set(p.name, same);
    }
    let c = same.find((e) => e.p === p || sameProfile(e.p, p))?.c;
    if (!c) {
      c = rankCandidates(this.infos, p, reach, onDemandOnly);
      same.push({ p, c });
    }
    return c;
  }
}

/** Equal for ranking: what rankCandidates reads of a profile (a missing value and '' alike, as before). */
function sameProfile(a: Profile, b: Profile): boolean {
  return (
    a.gpus === b.gpus &&
    (a.gpuType ?? '') === (b.gpuType ?? '') &&
    a.cpuCores === b.cpuCores &&
    (a.minMemoryGb ?? '') === (b.minMemoryGb ?? '') &&
    (a.compute ?? '') === (b.compute ?? '') &&
    (a.computes === b.computes || (a.computes?.join(',') ?? '') === (b.computes?.join(',') ?? ''))
  );
}

/** How many candidate computes a message names before "and N more". */
const NAMED_IN_MESSAGE = 3;

export class PlacementHeadroom implements Headroom {
  private token: object = {};
  /**
   * Per ranked candidates list: how many of its first computes have no slot left for its request, and on the
   * next one, the slot before which none has room for it (where the last unit of that kind ended). Placing only
   * takes room, so both hold until something is given back (which forgets them all), and the next unit of that
   * kind starts there: a 30k plan asked 215,000 computes for a slot and looked at 500,000 full slots, from the
   * first each time. Each headroom, clones included, keeps its own (a clone starts without), so it is never
   * wrong for another.
   */
  private full: Map<Candidates, { compute: number; slot: number }> | undefined;

  private constructor(
    private readonly shared: Shared,
    private readonly slots: Slots[],
    private readonly units: ForkableMap<UnitRecord>,
  ) {}

  static create(computes: readonly ComputeLike[]): PlacementHeadroom {
    const shared = new Shared(computeInfos(computes));
    const h = new PlacementHeadroom(shared, [], new ForkableMap());
    for (const info of shared.infos) h.slots.push(new Slots(h.token, info));
    return h;
  }

  private writable(ci: number): Slots {
    const s = this.slots[ci]!;
    if (s.owner === this.token) return s;
    const copy = new Slots(this.token, s);
    this.slots[ci] = copy;
    return copy;
  }

  place(unit: ReplicaUnit): PlaceResult {
    const r = this.placeRecord(unit);
    return 'ok' in r ? r : { ok: true, profile: r.profile, placements: this.placementsOf(r) };
  }

  /** place(), answering with what the unit now holds: the batch plan reads its slots without a second lookup. */
  placeRecord(unit: ReplicaUnit): UnitRecord | Extract<PlaceResult, { ok: false }> {
    if (this.units.get(unit.id)) {
      return {
        ok: false,
        message: `unit ${unit.id} is already placed; release it first`,
        candidateComputes: [],
      };
    }
    const reasons: string[] = [];
    const n = unit.replicas;
    const computes = new Array<number>(n);
    const slots = new Array<number>(n);
    for (const profile of unit.profiles) {
      const cand = this.shared.candidates(profile, unit.reach, unit.onDemandOnly);
      if (!cand.ok) {
        reasons.push(cand.reason);
        continue;
      }
      const { gpus: g, millicores: m, memoryMiB: mi } = cand.request;
      let done = 0;
      const list = cand.computes;
      const at = this.full?.get(cand);
      // Computes are left only once full, so the one being filled is always the first not known full.
      let e = at?.compute ?? 0;
      let from = at?.slot ?? 0;
      for (; e < list.length; e++, from = 0) {
        const ci = list[e]!.index;
        while (done < n) {
          const s = this.slots[ci]!.find(g, m, mi, from);
          if (s < 0) break;
          // Only copy a shared compute once a replica actually lands there.
          this.writable(ci).takeAt(g, m, mi, s);
          computes[done] = ci;
          slots[done] = s;
          done++;
          // Identical replicas and a state that only fills: the next one cannot fit in an earlier slot.
          from = s;
        }
        // Placed: the next unit of this kind starts at this compute and slot. Otherwise this compute refused the
        // request from `from` on, and its slots before that refused it earlier: it is full.
        if (done === n) break;
      }
      if (done === n) {
        if (at) {
          at.compute = e;
          at.slot = from;
        } else {
          this.full ??= new Map();
          this.full.set(cand, { compute: e, slot: from });
        }
        const record: UnitRecord = {
          unitId: unit.id,
          profile,
          request: cand.request,
          computes,
          slots,
          placements: undefined,
          candidates: unit.onDemandOnly ? undefined : cand,
        };
        this.units.set(unit.id, record);
        return record;
      }
      for (let i = done - 1; i >= 0; i--) this.slots[computes[i]!]!.give(g, m, mi, slots[i]!);
      this.full = undefined;
      // What each compute had room for, in the refusal's words: the replicas it took before the rest failed.
      const took = computes.slice(0, done);
      const room = cand.computes
        .slice(0, NAMED_IN_MESSAGE)
        .map((c) => took.filter((ci) => ci === c.index).length);
      reasons.push(this.capacityReason(profile, n, cand.computes, room, unit.profiles.length > 1));
    }
    return {
      ok: false,
      message: reasons.join('; ') || `unit ${unit.id} has no profile`,
      candidateComputes: this.candidateComputes(unit),
    };
  }

  private capacityReason(
    p: Profile,
    n: number,
    cands: ComputeInfo[],
    room: number[],
    named: boolean,
  ): string {
    const parts = cands.slice(0, NAMED_IN_MESSAGE).map((c, i) => {
      const r = room[i] ?? 0;
      // A compute with fewer nodes than its maxNodes says why (domain/supply.ts).
      const max = c.fewerNodesBecause
        ? `the ${c.maxNodes} nodes it can have now (${c.fewerNodesBecause})`
        : `its maxNodes ${c.maxNodes}`;
      return r === 0 ? `${c.name} is at ${max}` : `${c.name} has room for ${r} within ${max}`;
    });
    if (cands.length > NAMED_IN_MESSAGE)
      parts.push(`and ${cands.length - NAMED_IN_MESSAGE} more computes are full`);
    const what = `no compute can take ${describeReplicas(p, n)}${named ? ` (profile ${p.name})` : ''}`;
    return `${what}: ${parts.join(', ')}`;
  }

  /**
   * Puts back a unit admitted in an earlier pass exactly where it was (the store keeps its placements), so a
   * new pass starts from the cluster as it is. Returns false, holding nothing, when it no longer fits there
   * (the compute was removed or shrunk, or is Spot and the unit may not be there): the caller then treats the
   * unit as not placed.
   */
  restore(
    unitId: string,
    profile: Profile,
    placements: readonly UnitPlacement[],
    reach?: Reach,
    onDemandOnly = false,
  ): boolean {
    if (this.units.get(unitId)) return false;
    const cand = this.shared.candidates(profile, reach, onDemandOnly);
    if (!cand.ok) return false;
    const { gpus: g, millicores: m, memoryMiB: mi } = cand.request;
    const n = placements.reduce((k, pl) => k + pl.replicas, 0);
    const computes = new Array<number>(n);
    const slots = new Array<number>(n);
    let done = 0;
    for (const pl of placements) {
      const info = cand.computes.find((c) => c.name === pl.compute);
      let ok = info !== undefined;
      for (let r = 0; ok && r < pl.replicas; r++) {
        const s = this.slots[info!.index]!.find(g, m, mi, 0);
        if (s < 0) {
          ok = false;
          break;
        }
        this.writable(info!.index).takeAt(g, m, mi, s);
        computes[done] = info!.index;
        slots[done] = s;
        done++;
      }
      if (!ok) {
        for (let i = done - 1; i >= 0; i--) this.writable(computes[i]!).give(g, m, mi, slots[i]!);
        this.full = undefined;
        return false;
      }
    }
    this.units.set(unitId, {
      unitId,
      profile,
      request: cand.request,
      computes,
      slots,
      placements: placements.map((pl) => ({ ...pl })),
    });
    return true;
  }

  release(unitId: string): void {
    const rec = this.units.get(unitId);
    if (!rec) return;
    const { gpus: g, millicores: m, memoryMiB: mi } = rec.request;
    for (let i = 0; i < rec.computes.length; i++)
      this.writable(rec.computes[i]!).give(g, m, mi, rec.slots[i]!);
    this.full = undefined;
    this.units.delete(unitId);
  }

  clone(): PlacementHeadroom {
    const copy = new PlacementHeadroom(this.shared, this.slots.slice(), this.units.fork());
    // Neither side owns any compute now: whichever writes first copies that compute.
    this.token = {};
    return copy;
  }

  candidateComputes(unit: ReplicaUnit): string[] {
    const seen = new Set<string>();
    for (const p of unit.profiles) {
      const cand = this.shared.candidates(p, unit.reach, unit.onDemandOnly);
      if (cand.ok) for (const c of cand.computes) seen.add(c.name);
    }
    return [...seen];
  }

  /** The computes a profile's replica may use, best first, as place() ranks them (cached per profile). */
  candidatesOf(profile: Profile, reach?: Reach): Candidates {
    return this.shared.candidates(profile, reach);
  }

  /** What a placed unit holds, or undefined. */
  placementOf(unitId: string): { profile: Profile; placements: UnitPlacement[] } | undefined {
    const rec = this.units.get(unitId);
    return rec ? { profile: rec.profile, placements: this.placementsOf(rec) } : undefined;
  }

  /** A record's placements, grouped per compute on first read (the record's computes never change). */
  placementsOf(rec: UnitRecord): UnitPlacement[] {
    rec.placements ??= groupPlacements(
      this.shared.infos,
      rec.profile.name,
      rec.computes,
      rec.computes.length,
    );
    return rec.placements;
  }

  /** What a placed unit holds, slot by slot; for the batch plan. */
  record(unitId: string): UnitRecord | undefined {
    return this.units.get(unitId);
  }

  /** Every placed unit with its slots; for tests. */
  records(): UnitRecord[] {
    const out = [...this.units.flat().values()];
    for (const rec of out) this.placementsOf(rec);
    return out;
  }

  /** Per compute, in the order given to create(): nodes in use (first-fit) and replicas placed. */
  usage(): { compute: string; usedNodes: number; replicas: number; maxNodes: number }[] {
    return this.shared.infos.map((info, i) => ({
      compute: info.name,
      usedNodes: this.slots[i]!.usedNodes,
      replicas: this.slots[i]!.replicas,
      maxNodes: info.maxNodes,
    }));
  }

  computeInfos(): readonly ComputeInfo[] {
    return this.shared.infos;
  }
}

function groupPlacements(
  infos: ComputeInfo[],
  profile: string,
  computes: readonly number[],
  n: number,
): UnitPlacement[] {
  if (n === 0) return [];
  // Started as a one-element literal: most units sit on one compute, and a first push would reserve room for 17.
  const out: UnitPlacement[] = [{ compute: infos[computes[0]!]!.name, profile, replicas: 0 }];
  for (let i = 0; i < n; i++) {
    const name = infos[computes[i]!]!.name;
    const last = out[out.length - 1]!;
    if (last.compute === name) last.replicas++;
    else out.push({ compute: name, profile, replicas: 1 });
  }
  return out;
}
