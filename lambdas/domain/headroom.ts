import type { Profile } from './model';

/**
 * The seam between admission (quota accounting and decisions) and placement (physical capacity). Admission
 * asks "does this unit fit on some compute within maxNodes?" and placement answers, keeping its own state;
 * neither knows the other's internals (the way Kueue keeps its cache apart from the scheduler).
 */

/** A unit of admission: a model's `min` replicas together, or one replica beyond min. */
export interface ReplicaUnit {
  /** Unique within a pass, e.g. `llama-3-70b#min` or `llama-3-70b#3`. */
  id: string;
  model: string;
  /** In order of preference; the first that fits wins. */
  profiles: Profile[];
  /** Identical replicas placed together, all or none. */
  replicas: number;
  /** Owners whose computes the unit may use besides platform ones (placement's Reach); absent: none. */
  reach?: readonly string[];
  /** A critical model's minimum: no Spot compute (issue 32 §4; placement's rankCandidates onDemandOnly). */
  onDemandOnly?: boolean;
}

export interface UnitPlacement {
  compute: string;
  profile: string;
  replicas: number;
}

export type PlaceResult =
  | { ok: true; profile: Profile; placements: UnitPlacement[] }
  | { ok: false; message: string; candidateComputes: string[] };

export interface Headroom {
  /** Places every replica of the unit with one profile, or nothing; state changes only on success. */
  place(unit: ReplicaUnit): PlaceResult;
  /** Frees what a unit placed; a no-op for an unknown id. */
  release(unitId: string): void;
  /** An independent copy, so that a plan can be tried and dropped (all or nothing). */
  clone(): Headroom;
  /** Computes that could host the unit if they had room: where take-back victims for headroom are found. */
  candidateComputes(unit: ReplicaUnit): string[];
}
