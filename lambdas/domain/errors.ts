/**
 * Domain errors carry an HTTP-independent kind; the API maps kinds to status codes. Messages say what to do.
 */
export type DomainErrorKind =
  | 'invalid' // 400: the request itself is malformed
  | 'forbidden' // 403
  | 'not-found' // 404
  | 'conflict' // 409: the request conflicts with the rules or the current state
  | 'precondition' // 409: If-Match did not match
  | 'unavailable'; // 503: an AWS service the decision needs did not answer; nothing was written

/**
 * Every `reason` a refusal (a problem+json answer) may carry, the way PENDING_REASONS lists why a replica waits:
 * clients branch on these, so the list is closed and each one means one thing.
 */
export const REFUSAL_REASONS = [
  /** A compute, model or scope of that name exists. */
  'AlreadyExists',
  /** The caller sees two resources of that name (owned in unrelated scopes): `?owner=` says which. */
  'AmbiguousName',
  /** An AWS quota of the cluster would be exceeded (managed node groups per cluster, nodes per node group). */
  'AwsQuota',
  /** A built-in compute cannot be renamed (clone it). */
  'BuiltIn',
  /** The pre-add check says the model cannot run (engine, weights, hardware). */
  'CannotRun',
  /** The next catalog breaks a rule against other models or the computes (fallback, fit). */
  'CatalogRule',
  /** Others kept changing what this write read for its whole budget: nothing was written, retry. */
  'ConcurrentUpdate',
  /** The model is declared in config/catalog.yaml, which wins. */
  'Declared',
  /** The compute is being deleted. */
  'Deleting',
  /** The model is another model's fallback. */
  'FallbackInUse',
  /** Computes use an instance family the scope's new family list leaves out. */
  'FamilyInUse',
  /** A start that no compute can hold, even with nothing else running. */
  'Headroom',
  /** The Idempotency-Key is taken by a request still running. */
  'IdempotencyKeyInProgress',
  /** The Idempotency-Key was used for a different request. */
  'IdempotencyKeyReused',
  /** Models use the compute. */
  'InUse',
  /** The model breaks a rule on its own. */
  'InvalidModel',
  /** A start that a limit refuses (the owner's, an ancestor's, or a critical model's guarantee). */
  'LimitExceeded',
  /** The compute has a node group, or a workflow is making one: its hardware and name are frozen. */
  'NodegroupExists',
  /** A wake of a model without spec.autoscaling: it runs its scaling.target and never sleeps. */
  'NotAutoscaled',
  /** The model's stored row is left out of the catalog. */
  'Skipped',
  /** The change would write more than one transaction holds. */
  'TooLarge',
  /** The model's owner is not a scope. */
  'UnknownScope',
  /** If-Match (or metadata.version) names another version than the stored one. */
  'VersionMismatch',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

export interface FieldIssue {
  path: string;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    readonly details: { reason?: RefusalReason; errors?: FieldIssue[]; title?: string } = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const invalid = (message: string, errors?: FieldIssue[]) =>
  new DomainError('invalid', message, { errors });
export const notFound = (message: string) => new DomainError('not-found', message);
export const conflict = (message: string, reason?: RefusalReason) =>
  new DomainError('conflict', message, { reason });
export const forbidden = (message: string) => new DomainError('forbidden', message);
/** AWS did not answer what a write must be checked against (EC2, the Price List, EKS): 503, retry later. */
export const unavailable = (message: string) => new DomainError('unavailable', message);
/** If-Match (or the manifest's version) does not match: 409 VersionMismatch. */
export const versionMismatch = (message: string) =>
  new DomainError('precondition', message, { reason: 'VersionMismatch' });
