import type { Status } from './types';

/**
 * metav1.Status failures worded as the API server words them (k8s.io/apimachinery/pkg/api/errors), so that
 * kubectl prints "Error from server (NotFound): ..." and client code can switch on `reason` and `code`.
 */

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface Qualified {
  /** Resource plural, e.g. `deployments`. */
  resource: string;
  /** API group, '' for the core group. */
  group: string;
}

export class K8sError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: {
      name?: string;
      group?: string;
      kind?: string;
      causes?: StatusCause[];
      retryAfterSeconds?: number;
    },
  ) {
    super(message);
  }

  status(): Status {
    const out: Status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    if (this.details) out.details = this.details as Status['details'];
    return out;
  }
}

/** `deployments.apps`, or `pods` for the core group: how the API server names a resource in messages. */
export function qualified(q: Qualified): string {
  return q.group ? `${q.resource}.${q.group}` : q.resource;
}

function detailsOf(q: Qualified, name: string) {
  return { name, ...(q.group ? { group: q.group } : {}), kind: q.resource };
}

export const notFound = (q: Qualified, name: string) =>
  new K8sError(404, 'NotFound', `${qualified(q)} "${name}" not found`, detailsOf(q, name));

export const alreadyExists = (q: Qualified, name: string) =>
  new K8sError(409, 'AlreadyExists', `${qualified(q)} "${name}" already exists`, detailsOf(q, name));

/** An update with a stale metadata.resourceVersion. */
export const staleConflict = (q: Qualified, name: string) =>
  new K8sError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${qualified(q)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    detailsOf(q, name),
  );

export interface FieldError {
  /** `Required value`, `Invalid value`, `Unsupported value`, `Forbidden`, `Duplicate value`. */
  type: 'FieldValueRequired' | 'FieldValueInvalid' | 'FieldValueNotSupported' | 'FieldValueForbidden';
  field: string;
  /** The value shown after `Invalid value:`; omitted for the other types. */
  value?: unknown;
  detail: string;
}

function fieldErrorText(e: FieldError): string {
  switch (e.type) {
    case 'FieldValueRequired':
      return `Required value${e.detail ? `: ${e.detail}` : ''}`;
    case 'FieldValueForbidden':
      return `Forbidden${e.detail ? `: ${e.detail}` : ''}`;
    case 'FieldValueNotSupported':
      return `Unsupported value: ${JSON.stringify(e.value)}${e.detail ? `: ${e.detail}` : ''}`;
    default:
      return `Invalid value: ${typeof e.value === 'string' ? JSON.stringify(e.value) : JSON.stringify(e.value ?? null)}: ${e.detail}`;
  }
}

/** 422 Invalid: `Deployment.apps "x" is invalid: spec.replicas: Invalid value: -1: must be ...`, every error listed. */
export function invalid(kind: string, group: string, name: string, errors: FieldError[]): K8sError {
  const qualifiedKind = group ? `${kind}.${group}` : kind;
  const parts = errors.map((e) => `${e.field}: ${fieldErrorText(e)}`);
  const list = parts.length === 1 ? parts[0] : `[${parts.join(', ')}]`;
  return new K8sError(422, 'Invalid', `${qualifiedKind} "${name}" is invalid: ${list}`, {
    name,
    ...(group ? { group } : {}),
    kind,
    causes: errors.map((e) => ({ reason: e.type, message: fieldErrorText(e), field: e.field })),
  });
}

export const badRequest = (message: string) => new K8sError(400, 'BadRequest', message);

export const methodNotAllowed = (message: string) => new K8sError(405, 'MethodNotAllowed', message);

export const unsupportedMediaType = (contentType: string) =>
  new K8sError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got ${contentType})`,
  );

export const unauthorized = () => new K8sError(401, 'Unauthorized', 'Unauthorized');

/** RBAC's denial: `pods is forbidden: User "x" cannot list resource "pods" in API group "" in the namespace "y"`. */
export function forbidden(
  user: string,
  verb: string,
  q: Qualified & { subresource?: string; name?: string },
  namespace: string | undefined,
): K8sError {
  const res = q.subresource ? `${q.resource}/${q.subresource}` : q.resource;
  const target = q.name ? `${qualified(q)} "${q.name}"` : qualified(q);
  const where = namespace ? ` in the namespace "${namespace}"` : ' at the cluster scope';
  return new K8sError(
    403,
    'Forbidden',
    `${target} is forbidden: User "${user}" cannot ${verb} resource "${res}" in API group "${q.group}"${where}`,
    { ...(q.name ? { name: q.name } : {}), ...(q.group ? { group: q.group } : {}), kind: q.resource },
  );
}

export const notFoundPath = () =>
  new K8sError(404, 'NotFound', 'the server could not find the requested resource', {});

export const tooManyRequests = (message: string, causes: StatusCause[] = []) =>
  new K8sError(429, 'TooManyRequests', message, { causes });
