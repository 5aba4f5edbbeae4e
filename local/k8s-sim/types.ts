import type {
  CoreV1Event,
  V1Deployment,
  V1Eviction,
  V1Namespace,
  V1Node,
  V1ObjectMeta,
  V1Pod,
  V1PodDisruptionBudget,
  V1ReplicaSet,
  V1Service,
  V1Status,
} from '@kubernetes/client-node';

/**
 * The simulator keeps objects as the API server sends them: JSON. @kubernetes/client-node's model classes
 * describe the same shapes with `Date` where the wire has RFC 3339 strings, so `Wire<T>` turns those back.
 * Type-only imports: nothing of the client runs in the simulator.
 */
export type Wire<T> = T extends Date
  ? string
  : T extends (infer U)[]
    ? Wire<U>[]
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;

export type Meta = Wire<V1ObjectMeta>;
export type Pod = Wire<V1Pod>;
export type Node = Wire<V1Node>;
export type Deployment = Wire<V1Deployment>;
export type ReplicaSet = Wire<V1ReplicaSet>;
export type Service = Wire<V1Service>;
export type Pdb = Wire<V1PodDisruptionBudget>;
export type Namespace = Wire<V1Namespace>;
export type Event = Wire<CoreV1Event>;
export type Eviction = Wire<V1Eviction>;
export type Status = Wire<V1Status>;

/** Any stored object: what every resource has in common. */
export interface KObject {
  apiVersion?: string;
  kind?: string;
  metadata?: Meta;
  [field: string]: unknown;
}

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: unknown };

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
