import type { UnitPlacement } from '../headroom';
import type { ModelClass, ModelSpec } from '../model';
import type { Resource, Resources } from '../resources';

/**
 * The admission state the store persists, one item per model, and the vocabulary of reasons
 * (docs/reference/quota-semantics.md §6). Everything here is plain JSON so it round-trips through DynamoDB unchanged.
 */

export const PENDING_REASONS = [
  'LimitExceeded',
  'InsufficientQuota',
  'Headroom',
  'NoLongerFits',
  'PendingTakeBack',
  'TakenBackForScope',
  'DisplacedByHigherClass',
] as const;
export type PendingReason = (typeof PENDING_REASONS)[number];
export type VictimReason = 'TakenBackForScope' | 'DisplacedByHigherClass';

/** What stopped a request, for the API's problem detail and for tests; `scope`/`resource` where one binds. */
export interface Binding {
  kind:
    | 'own-limit'
    | 'critical-guarantee'
    | 'ancestor-limit'
    | 'headroom'
    | 'victim'
    | 'min-pending'
    | 'take-back';
  scope?: string;
  resource?: Resource;
  /** How much more of `resource` the request needs than is left. */
  needed?: number;
}

export interface VictimRef {
  model: string;
  unitId: string;
  /** The victim's owner, so that only who may read it is told its name (absent in records made before). */
  scope?: string;
}

/** A unit held by a model: its `min` replicas together, or one replica beyond min. */
export interface AdmittedUnit {
  /** `<model>#min` or `<model>#<n>`; also the id the headroom knows the unit by. */
  id: string;
  kind: 'min' | 'extra';
  replicas: number;
  /** The profile placement chose; its resources are what the unit holds. */
  profile: string;
  /** Per replica. */
  resources: Resources;
  placements: UnitPlacement[];
  /** ISO time; "most recently started" in take-back order. */
  admittedAt: string;
  /** Some scope on the owner's path ended above its guarantee when this unit was admitted. */
  borrowed: boolean;
  /**
   * The room this unit took from victims. While any of them is still stopping (DecideInput.draining) the unit
   * is shown pending `PendingTakeBack`; its room is held for it all along, so nobody else can take it.
   */
  takeBack?: { victims: VictimRef[]; since: string };
  /**
   * Consolidation (domain/consolidation.ts) is moving one replica of this unit: a replica was placed on `to`
   * beside the others (the placements then hold one more than `replicas`) and the one on `from` goes once it
   * is Ready. Only consolidation sets or clears it. With `profile`, the unit moves back to a profile its model
   * prefers (domain/surge-back.ts): all its replicas were placed again under that profile, on `to` and wherever
   * else the placements of that profile say, and its own go once those are Ready.
   */
  moving?: { from: string; to: string; since: string; profile?: string };
  /** ISO times of this unit's moves started within the last hour: the model's disruption budget. */
  movedAt?: string[];
}

export interface PendingEntry {
  reason: PendingReason;
  message: string;
  replicas: number;
  /** ISO time the model has waited since; "the oldest" in the order of a pass. */
  since: string;
  binding?: Binding;
  /** For a victim: the request it waits behind. */
  behind?: VictimRef;
  /** For a victim taken back: its own scope's usage against its guarantee, in words (domain/quota/telling.ts). */
  ownFigures?: string;
}

/**
 * Replicas a model lost to a take-back or a displacement, kept with its admission until they run again, beside
 * what they wait for now (as Kueue keeps a workload's Preempted condition next to its pending message): the
 * pending entry of the pass that took them is replaced on the next pass by the constraint that then binds.
 */
export interface TakenBack {
  reason: VictimReason;
  message: string;
  replicas: number;
  /** What took them: the request's model and unit, its owner scope and class. */
  by: { model: string; unitId: string; scope: string; class: ModelClass };
  /** ISO time of the pass that took them. */
  at: string;
  /** For a take-back: the victim's own scope's usage against its guarantee, in words (telling.ts). */
  ownFigures?: string;
}

/** One item per model in the store. */
export interface ModelAdmission {
  model: string;
  units: AdmittedUnit[];
  pending: PendingEntry[];
  /** Absent or empty when nothing taken from the model still waits to run again. */
  takenBack?: TakenBack[];
  /**
   * The model's version this admission was decided for (the admitter stamps it); a model at a later version has
   * a decision still to come (status `observedVersion` below `version`, reason Queued). Absent for declared models.
   */
  modelVersion?: number;
}

/** The fields of a catalog Model the decision reads (a stored Model satisfies it). */
export interface AdmissionModel {
  name: string;
  /** Empty or absent: a shared model (counts against no scope, never takes back, never taken back). */
  owner?: string;
  spec: Pick<ModelSpec, 'profiles' | 'scaling' | 'class' | 'autoscaling'>;
  createdAt: string;
}

export interface Victim extends VictimRef {
  /** The victim's owner. */
  scope: string;
  replicas: number;
  reason: VictimReason;
  message: string;
  forModel: string;
  forUnit: string;
}
