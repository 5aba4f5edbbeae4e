import type { APIGatewayProxyEventV2WithIAMAuthorizer, APIGatewayProxyResultV2 } from 'aws-lambda';
import type * as z from 'zod';
import type { Caller } from '../domain/access';
import { SCOPE_REF_PATTERN } from '../domain/compute';
import { DomainError, type FieldIssue, type RefusalReason } from '../domain/errors';
import { resolveScopeRef, speakValue } from '../domain/names';
import type { Identity } from '../domain/principal';
import type { ScopeTree } from '../domain/quota';
import { formatPath } from '../domain/rules';

/** What a route handler sees: the parsed request and the caller's identity, never the raw event. */
export interface ApiRequest {
  method: string;
  path: string;
  params: Record<string, string>;
  query: Record<string, string | undefined>;
  headers: Record<string, string | undefined>;
  body: unknown;
  /** Who signed the request, parsed once; admins and members are matched against it. */
  caller: Identity;
  /** The caller's ARN as API Gateway presented it: what `createdBy` and idempotency keys record. */
  principal: string;
  requestId: string;
  /** `?dryRun=All` on a write (kubectl's convention): decide everything, write nothing. */
  dryRun: boolean;
}

/** The one value `dryRun` takes, as kubectl sends it; anything else is refused rather than guessed at. */
export const DRY_RUN_VALUE = 'All';

/** Reads `?dryRun`: absent is a real write, `All` a dry run, anything else a 400 naming the allowed value. */
export function dryRunOf(query: ApiRequest['query']): boolean {
  const v = query.dryRun;
  if (v === undefined) return false;
  if (v === DRY_RUN_VALUE) return true;
  throw new HttpError(400, `dryRun must be ${DRY_RUN_VALUE} (validate and decide, write nothing), not ${v}`, {
    errors: [{ path: 'dryRun', message: `allowed value: ${DRY_RUN_VALUE}` }],
  });
}

export interface ApiResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type Event = APIGatewayProxyEventV2WithIAMAuthorizer;
export type Result = Exclude<APIGatewayProxyResultV2, string>;

export const MAX_BODY_BYTES = 256 * 1024;
/**
 * Deepest nesting of objects and arrays a body may have. Manifests nest six levels at most; validation and
 * storage walk a body recursively, so a deeper one would exhaust the stack (a RangeError, a 500).
 */
export const MAX_JSON_DEPTH = 32;

/**
 * How deep a JSON text nests, read without recursion so that the measuring cannot overflow the stack itself;
 * brackets inside strings do not count. Malformed text is measured as far as it goes (JSON.parse refuses it).
 */
export function jsonDepth(raw: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) max = Math.max(max, ++depth);
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

/**
 * Where a JSON value holds a key named `__proto__`. JSON.parse keeps it as an own key, but every object built
 * from it drops it or turns it into a prototype (zod's records skip it), so an entry the caller sent would
 * vanish without a word; the body is refused instead, each such key named.
 */
export function protoKeyPaths(value: unknown, at: (string | number)[] = []): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => protoKeyPaths(v, [...at, i]));
  if (value === null || typeof value !== 'object') return [];
  return Object.keys(value).flatMap((k) => [
    ...(k === '__proto__' ? [formatPath([...at, k])] : []),
    ...protoKeyPaths((value as Record<string, unknown>)[k], [...at, k]),
  ]);
}

/** `application/json` or a `+json` type such as `application/merge-patch+json`, with any parameters. */
export function isJsonMediaType(type: string | undefined): boolean {
  const essence = (type ?? '').split(';')[0]!.trim().toLowerCase();
  return /^application\/([\w.-]+\+)?json$/.test(essence);
}

/** RFC 9457 problem details; `errors` lists every field issue so a client can show them all at once. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  reason?: RefusalReason;
  errors?: FieldIssue[];
}

const TITLES: Record<number, string> = {
  400: 'Invalid request',
  401: 'Unauthenticated',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  413: 'Payload too large',
  415: 'Unsupported media type',
  500: 'Internal error',
  503: 'Service unavailable',
};

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly extra: {
      reason?: RefusalReason;
      errors?: FieldIssue[];
      title?: string;
      headers?: Record<string, string>;
    } = {},
  ) {
    super(detail);
    this.name = 'HttpError';
  }
}

export function problem(status: number, detail: string, extra: HttpError['extra'] = {}): Result {
  const body: Problem = {
    type: `https://llmcap.dev/problems/${slug(extra.reason ?? TITLES[status] ?? 'error')}`,
    title: extra.title ?? TITLES[status] ?? 'Error',
    status,
    detail,
    ...(extra.reason ? { reason: extra.reason } : {}),
    ...(extra.errors?.length ? { errors: extra.errors } : {}),
  };
  return {
    statusCode: status,
    headers: { 'content-type': 'application/problem+json', ...(extra.headers ?? {}) },
    // A refusal speaks names, as every answer does (domain/names.ts): it is llmcap's own text throughout.
    body: JSON.stringify(speakValue(body)),
  };
}

function slug(s: string): string {
  return s
    .replace(/([a-z])([A-Z])/g, '$1-$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-');
}

const KIND_STATUS: Record<DomainError['kind'], number> = {
  invalid: 400,
  forbidden: 403,
  'not-found': 404,
  conflict: 409,
  precondition: 409,
  unavailable: 503,
};

/** How long a client should wait before it retries a write AWS could not check (the SDK has retried already). */
const UNAVAILABLE_RETRY_AFTER_S = '5';

/** Maps any thrown error to a response; only unexpected errors become 500, and they hide their details. */
export function errorToResult(err: unknown): Result {
  if (err instanceof HttpError) return problem(err.status, err.detail, err.extra);
  if (err instanceof DomainError) {
    return problem(KIND_STATUS[err.kind], err.message, {
      reason: err.details.reason ?? (err.kind === 'precondition' ? 'VersionMismatch' : undefined),
      errors: err.details.errors,
      title: err.details.title,
      ...(err.kind === 'unavailable' ? { headers: { 'retry-after': UNAVAILABLE_RETRY_AFTER_S } } : {}),
    });
  }
  return problem(
    500,
    'an unexpected error occurred; the request id in the logs tells an operator where to look',
  );
}

/**
 * Zod issues as `{path, message}`, with paths in the one format of every issue (domain/rules.ts formatPath:
 * `spec.profiles[0].gpus`). A union that failed speaks through the branch the value was meant for (a list of
 * members, not a map), rather than as zod's bare "Invalid input".
 */
export function zodIssues(error: z.ZodError, prefix = ''): FieldIssue[] {
  return flatIssues(error.issues, []).map(({ path, message }) => {
    const p = formatPath(path);
    return { path: [prefix, p].filter(Boolean).join(p.startsWith('[') ? '' : '.') || '(body)', message };
  });
}

function flatIssues(
  issues: readonly z.core.$ZodIssue[],
  base: PropertyKey[],
): { path: PropertyKey[]; message: string }[] {
  return issues.flatMap((i) => {
    const path = [...base, ...i.path];
    if (i.code === 'invalid_union' && i.errors.length) {
      const rootType = (b: readonly z.core.$ZodIssue[]) =>
        b.length > 0 && b.every((x) => x.path.length === 0 && x.code === 'invalid_type');
      const meant = i.errors.filter((b) => !rootType(b));
      if (meant.length === 1) return flatIssues(meant[0]!, path);
      if (meant.length === 0) {
        const expected = i.errors.flatMap((b) => b.map((x) => (x as { expected?: string }).expected ?? ''));
        return [{ path, message: `expected ${[...new Set(expected)].filter(Boolean).join(' or ')}` }];
      }
    }
    let message = i.message;
    if (i.code === 'unrecognized_keys')
      message = `unknown field(s) ${i.keys.map((k) => `'${k}'`).join(', ')}`;
    return [{ path, message }];
  });
}

/**
 * Parses a payload with its schema, or throws one 400 that lists every issue: type errors and the schema's
 * cross-field rules (which run on whatever parsed), numbers DynamoDB could not store, and `also` (issues the
 * route finds in the raw body, such as a name that disagrees with the path). Nothing is written then. `reason`
 * is the refusal reason the payload's kind answers with (a model's: InvalidModel); `at` is where the body sits
 * in the resource's manifest when it is a part of it (`spec.scaling`), so a field has one path on every route.
 */
export function parseBody<S extends z.ZodType>(
  schema: S,
  body: unknown,
  opts: { also?: FieldIssue[]; reason?: RefusalReason; at?: string } = {},
): z.output<S> {
  if (body === undefined) throw new HttpError(400, 'a JSON body is required', { errors: [] });
  const r = schema.safeParse(body);
  const found = [...(r.success ? [] : zodIssues(r.error, opts.at)), ...(opts.also ?? [])];
  // A number zod refused already (too big for its field) is not named twice.
  const named = new Set(found.map((i) => i.path));
  const errors = [...found, ...storableNumberIssues(body, opts.at).filter((i) => !named.has(i.path))];
  if (errors.length) {
    const detail =
      errors.length === 1
        ? `${errors[0]!.path}: ${errors[0]!.message}`
        : `the request has ${errors.length} invalid field(s); fix each one listed in errors`;
    throw new HttpError(400, detail, { errors, ...(opts.reason ? { reason: opts.reason } : {}) });
  }
  return r.data as z.output<S>;
}

/** The routes that take `?owner=`: those that name one compute or model (the OpenAPI lists it on them). */
export const takesOwner = (path: string) => /^\/v1\/(models|computes)\/\{name\}/.test(path);

/**
 * `?owner=<scope>` or `?owner=shared`: whose compute or model a name means when the caller sees two of that
 * name (domain/names.ts). Absent: the only one the caller sees. Given, it means that owner's resource only:
 * none of that owner's is a 404, never another resource of the name.
 */
export function ownerParam(req: ApiRequest, caller: Caller<ScopeTree>): string | undefined {
  const v = req.query.owner;
  if (v === undefined) return undefined;
  if (v !== 'shared' && !SCOPE_REF_PATTERN.test(v)) {
    throw new HttpError(400, `owner must be a scope such as team:ml, or shared, not ${v}`, {
      errors: [{ path: 'owner', message: 'a scope (org:, team:, project: and a name) or shared' }],
    });
  }
  return v === 'shared' ? v : scopeKey(caller, v);
}

/**
 * The key of the scope a request names, among those the caller sees (domain/names.ts resolveScopeRef). A plain
 * name the caller sees none of stays as it is, for the use case to refuse as any unknown scope; a qualified one
 * (`team:ml/project:a`) that means nothing is 404.
 */
export function scopeKey(caller: Caller<ScopeTree>, ref: string): string {
  const key = resolveScopeRef(ref, caller.tenancy, (k) => caller.can('read', k));
  if (key !== undefined) return key;
  if (ref.includes('/')) throw new HttpError(404, `scope ${ref} does not exist`);
  return ref;
}

/** scopeKey for an optional reference ('' and null mean none). */
export function scopeKeyOf(caller: Caller<ScopeTree>, ref: string | null | undefined): string | undefined {
  return ref ? scopeKey(caller, ref) : undefined;
}

/**
 * Parses the query string with its schema, or throws a 400 that lists every issue, with `also` (what the route
 * finds beyond the schema, such as a continue token of another list).
 */
export function parseQuery<S extends z.ZodType>(
  schema: S,
  query: ApiRequest['query'],
  also: FieldIssue[] = [],
): z.output<S> {
  const r = schema.safeParse(query);
  if (!r.success || also.length) {
    const errors = [
      ...(r.success ? [] : zodIssues(r.error)).map((i) =>
        i.path === '(body)' ? { path: '(query)', message: i.message.replace('field(s)', 'parameter(s)') } : i,
      ),
      ...also,
    ];
    throw new HttpError(
      400,
      `the query has ${errors.length} invalid parameter(s); fix each one listed in errors`,
      {
        errors,
      },
    );
  }
  return r.data as z.output<S>;
}

// DynamoDB stores numbers between 1e-130 and 1e126 in magnitude; anything else would fail the write with 500.
const DYNAMO_MIN = 1e-130;
const DYNAMO_MAX = 9.99e125;

/** Numbers a schema accepted but DynamoDB cannot store, as field issues, so they are refused with 400. */
export function storableNumberIssues(value: unknown, path = ''): FieldIssue[] {
  if (typeof value === 'number') {
    const a = Math.abs(value);
    if (!Number.isFinite(value) || (a !== 0 && (a < DYNAMO_MIN || a > DYNAMO_MAX))) {
      return [{ path: path || '(body)', message: 'a number between 1e-130 and 1e125 in magnitude, or 0' }];
    }
    return [];
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => storableNumberIssues(v, `${path}[${i}]`));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => {
      const at = formatPath([k]);
      return storableNumberIssues(v, path && !at.startsWith('[') ? `${path}.${at}` : `${path}${at}`);
    });
  }
  return [];
}

/**
 * A PUT names the resource twice (path and manifest); they must agree, or the write would land elsewhere. An
 * issue for parseBody's `also`, read from the raw body so that it comes in the same answer as the others.
 */
export function nameFromPathIssues(body: unknown, pathName: string): FieldIssue[] {
  const name = (body as { metadata?: { name?: unknown } } | undefined)?.metadata?.name;
  if (typeof name !== 'string' || name === pathName) return [];
  return [{ path: 'metadata.name', message: `is ${name} but the path names ${pathName}; make them agree` }];
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): ApiResponse {
  return { status, body, headers };
}
