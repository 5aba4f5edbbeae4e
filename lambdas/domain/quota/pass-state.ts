import type { ModelClass, Profile } from '../model';
import type { Resources } from '../resources';
import type {
  AdmissionModel,
  AdmittedUnit,
  Binding,
  ModelAdmission,
  PendingEntry,
  PendingReason,
  TakenBack,
  VictimReason,
  VictimRef,
} from './types';

/**
 * The working state of one admission pass (admission.ts) and of the plans that make room in it (make-room.ts):
 * the models, the units they hold, the requests and the ways a request can be placed. Internal to the quota
 * domain; nothing here is stored.
 */

/** Comparisons of amounts that went through sums of fractions. */
export const EPS = 1e-9;

/** Resources as the three indices the typed arrays use: 0 gpus, 1 cores, 2 memoryGb. */
export const vec = (r: Resources) => [r.gpus, r.cores, r.memoryGb] as const;

export const cmpStr = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A model in the pass. */
export interface MState {
  m: AdmissionModel;
  /** The owner's scope id; -1 shared, -2 an owner that is not a scope. */
  scope: number;
  cls: ModelClass;
  rank: number;
  min: number;
  target: number;
  prev?: ModelAdmission;
  held: Held[];
  pending: PendingEntry[];
  /** Replicas taken from the model that have not run again (stored across passes, unlike `pending`). */
  takenBack: TakenBack[];
  since: string;
  /** Set when a request of the model failed or was taken: later requests of the model wait with it. */
  blocked?: { reason: PendingReason; message: string; binding?: Binding; behind?: VictimRef };
  active: boolean;
  dirty: boolean;
  /** A unit of the model was admitted in this pass: its min is then no victim either (its extras go with it). */
  admittedNow?: boolean;
}

/** A unit a model holds, charged to its owner's path. */
export interface Held {
  ms: MState;
  unit: AdmittedUnit;
  scope: number;
  total: Resources;
  alive: boolean;
  /** Admitted in this pass: never a victim in the same pass (no admit-then-evict churn). */
  fresh: boolean;
  t: number;
}

/** A model's start (its min, all or none) or one replica beyond it. */
export interface Request {
  ms: MState;
  kind: 'min' | 'extra';
  id: string;
  replicas: number;
  within: boolean;
}

/** A limit (or a critical model's guarantee) the request would break, and by how much. */
export interface Violation {
  kind: 'own-limit' | 'critical-guarantee' | 'ancestor-limit';
  scope: number;
  /** index in the owner's path (0 = owner). */
  at: number;
  k: number;
  deficit: number;
  cap: number;
  usage: number;
}

/** The request with one of its profiles: what it would hold, and what that breaks. */
export interface Option {
  p: Profile;
  per: Resources;
  tot: Resources;
  viol: Violation[];
}

/** A unit chosen to make room, and why. */
export interface Chosen {
  h: Held;
  reason: VictimReason;
  /** The take-back level it was found at; -1 for displacement. */
  level: number;
  /** The min unit whose take-back forced this extra along. */
  forcedBy?: Chosen;
  /** Put back by fill-back: not needed after all. */
  dropped?: boolean;
}

/** The number after `#` (0 for min): among units admitted at the same time, the higher was admitted later. */
export const seq = (id: string) => Number(id.slice(id.lastIndexOf('#') + 1)) || 0;

/** Victim order inside a scope: lowest class, extras before min, most recently started, smallest replica. */
export function victimOrder(a: Held, b: Held): number {
  return (
    b.ms.rank - a.ms.rank ||
    (a.unit.kind === b.unit.kind ? 0 : a.unit.kind === 'extra' ? -1 : 1) ||
    b.t - a.t ||
    a.unit.resources.gpus - b.unit.resources.gpus ||
    a.unit.resources.cores - b.unit.resources.cores ||
    a.unit.resources.memoryGb - b.unit.resources.memoryGb ||
    seq(b.unit.id) - seq(a.unit.id) ||
    cmpStr(a.unit.id, b.unit.id)
  );
}
