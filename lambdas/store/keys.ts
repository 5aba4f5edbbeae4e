/**
 * Key formats, in one place. Each aggregate lives under one partition (its kind) with its name as the sort
 * key: lists are single-partition Queries, and a transaction can touch any set of items by name.
 */
export const keys = {
  compute: (name: string) => ({ pk: 'COMPUTE', sk: name }),
  computes: () => ({ pk: 'COMPUTE' }),
  model: (name: string) => ({ pk: 'MODEL', sk: name }),
  models: () => ({ pk: 'MODEL' }),
  scope: (name: string) => ({ pk: 'SCOPE', sk: name }),
  scopes: () => ({ pk: 'SCOPE' }),
  quota: (scope: string) => ({ pk: 'QUOTA', sk: scope }),
  quotas: () => ({ pk: 'QUOTA' }),
  admission: (model: string) => ({ pk: 'ADMISSION', sk: model }),
  admissions: () => ({ pk: 'ADMISSION' }),
  /** What nodes of an instance type report as allocatable (store/computes.ts, domain/allocatable.ts). */
  nodeType: (instanceType: string) => ({ pk: 'NODETYPE', sk: instanceType }),
  /** A rule's guard (store/commit.ts): a version that every write under the rule reads and bumps. */
  guard: (name: string) => ({ pk: 'GUARD', sk: name }),
  /**
   * The admitter's fence (service/admitter.ts): every admission commit moves it by one from the version the
   * admitter read, so a second admitter running by mistake cannot interleave its writes with the first's.
   */
  admitter: () => ({ pk: 'ADMITTER', sk: 'STATE' }),
  /** What the reconciler last saw of a model's pods (store/workloads.ts): status.running and its reasons. */
  workload: (model: string) => ({ pk: 'WORKLOAD', sk: model }),
  workloads: () => ({ pk: 'WORKLOAD' }),
  /** What load asks of an autoscaled model (store/demand.ts): the part of the loop admission reads. */
  demand: (model: string) => ({ pk: 'DEMAND', sk: model }),
  demands: () => ({ pk: 'DEMAND' }),
  /** A new replica's way to Ready as last seen on a compute (store/start-times.ts), for a wake's estimate. */
  startTimes: (compute: string) => ({ pk: 'STARTTIMES', sk: compute }),
  allStartTimes: () => ({ pk: 'STARTTIMES' }),
  /** When the reconciler last listed every pod (store/workloads.ts): what the WORKLOAD items are as of. */
  podsObserved: () => ({ pk: 'WORKLOAD_OBSERVED', sk: 'LAST' }),
  idempotency: (principal: string, key: string) => ({ pk: 'IDEMPOTENCY', sk: `${principal}#${key}` }),
  /** One reconcile pass; ids start with the time, so the partition lists newest first (reconcile-passes.ts). */
  reconcilePass: (id: string) => ({ pk: 'RECONCILE', sk: id }),
  reconcilePasses: () => ({ pk: 'RECONCILE' }),
  /** The pass queued for the next reconcile to start, if any: requests while it waits join it. */
  reconcileQueue: () => ({ pk: 'RECONCILE_QUEUE', sk: 'NEXT' }),
  /** What the node groups cost per hour as one pass found them (store/costs.ts); sorted by time. */
  costSample: (at: string) => ({ pk: 'COST', sk: at }),
  costSamples: () => ({ pk: 'COST' }),
  /** A resource's events (store/events.ts): one partition per resource, one item per reason and message. */
  event: (kind: string, key: string, id: string) => ({ pk: `EVENT#${kind}#${key}`, sk: id }),
  events: (kind: string, key: string) => ({ pk: `EVENT#${kind}#${key}` }),
} as const;

export type Key = { pk: string; sk: string };

/** The key in DynamoDB JSON, as Step Functions' DynamoDB tasks take it in their input. */
export function attributeKey(k: Key): { pk: { S: string }; sk: { S: string } } {
  return { pk: { S: k.pk }, sk: { S: k.sk } };
}
