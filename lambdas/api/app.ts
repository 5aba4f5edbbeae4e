import { createHash } from 'node:crypto';
import { BuiltinsInvalid } from '../domain/hardware';
import { speakNames, speakValue } from '../domain/names';
import { FORMS_SENTENCE, parseCaller } from '../domain/principal';
import type { Services } from '../service';
import { createApiServices } from '../service/for-api';
import { logger } from '../shared/logger';
import {
  type ApiRequest,
  dryRunOf,
  type Event,
  errorToResult,
  HttpError,
  isJsonMediaType,
  jsonDepth,
  MAX_BODY_BYTES,
  MAX_JSON_DEPTH,
  problem,
  protoKeyPaths,
  type Result,
} from './http';
import { openApiDocument } from './openapi';
import { Router } from './router';
import type { CallerOf } from './routes/computes';
import { computeRoutes } from './routes/computes';
import { alarmRoutes, costRoutes } from './routes/costs';
import { modelRoutes } from './routes/models';
import { podRoutes } from './routes/pods';
import { reconcileRoutes } from './routes/reconcile';
import { tenancyRoutes } from './routes/tenancy';

/**
 * The API application: builds the router once per container and turns API Gateway v2 events into route calls.
 * Everything here is transport: the routes call the services (lambdas/service), which hold the use cases.
 */

export function buildRouter(svc: Services = createApiServices()): Router {
  const router = new Router();
  // Roles come from the scope tree, read per request so a membership change holds at once.
  const callerOf: CallerOf = (req, opts) => svc.access.callerOf(req.caller, opts);
  router.add('GET', '/v1/healthz', async () => ({ status: 200, body: { status: 'ok' } }), {
    summary: 'Liveness',
  });
  let spec: Record<string, unknown> | undefined;
  router.add(
    'GET',
    '/v1/openapi.json',
    async () => {
      spec ??= openApiDocument(router);
      return { status: 200, body: spec };
    },
    { summary: 'This OpenAPI document' },
  );
  computeRoutes(router, svc, callerOf);
  modelRoutes(router, svc, callerOf);
  podRoutes(router, svc, callerOf);
  tenancyRoutes(router, svc, callerOf);
  reconcileRoutes(router, svc, callerOf);
  costRoutes(router, svc, callerOf);
  alarmRoutes(router, svc, callerOf);
  return router;
}

/**
 * Built-ins are loaded once per handler, before its first request, so they are there on a fresh install and
 * follow a new config/computes.yaml at once. When the table already holds them as resolved from this same file
 * (by an earlier container or the reconciler, which resolves them every pass), the cold start asks AWS nothing.
 */
function seeder(svc: Services): () => Promise<unknown> {
  let seeded: Promise<unknown> | undefined;
  return () =>
    (seeded ??= svc.computes.seedBuiltins({ unlessAsDeclared: true }).catch((e) => {
      seeded = undefined;
      // A wrong config/computes.yaml is the operator's to fix: every answer says so until it is.
      if (e instanceof BuiltinsInvalid)
        throw new HttpError(503, `the built-in computes cannot be loaded: ${e.message}`);
      throw e;
    }));
}

let container: ((event: Event) => Promise<Result>) | undefined;

/** Forgets this container's services and router, so the next request builds them from the configuration again. */
export function resetApp(): void {
  container = undefined;
}

function decodeBody(event: Event): string | undefined {
  if (event.body === undefined || event.body === null || event.body === '') return undefined;
  return event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
}

function lowerHeaders(h: Event['headers']): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(h ?? {})) out[k.toLowerCase()] = v;
  return out;
}

const WRITES = new Set(['POST', 'PUT', 'PATCH']);

function parseRequest(event: Event, params: Record<string, string>): ApiRequest {
  const headers = lowerHeaders(event.headers);
  const raw = decodeBody(event);
  if (raw !== undefined && Buffer.byteLength(raw, 'utf8') > MAX_BODY_BYTES) {
    throw new HttpError(413, `the body is over ${MAX_BODY_BYTES / 1024} KiB; send a smaller manifest`);
  }
  const method = event.requestContext.http.method.toUpperCase();
  const type = headers['content-type'];
  // A write is read as JSON only when it says it is JSON: a form or text/plain POST is refused, not guessed at.
  if (raw !== undefined && WRITES.has(method) && !isJsonMediaType(type)) {
    throw new HttpError(
      415,
      `send the body as JSON with content-type application/json, not ${type ? `'${type}'` : 'without a content-type'}`,
    );
  }
  let body: unknown;
  if (raw !== undefined) {
    if (jsonDepth(raw) > MAX_JSON_DEPTH) {
      throw new HttpError(
        400,
        `the body is nested deeper than ${MAX_JSON_DEPTH} levels; no manifest needs that`,
        {
          errors: [{ path: '(body)', message: `objects and arrays nested at most ${MAX_JSON_DEPTH} deep` }],
        },
      );
    }
    try {
      body = JSON.parse(raw);
    } catch (e) {
      throw new HttpError(400, `the body is not valid JSON: ${(e as Error).message}`, {
        errors: [{ path: '(body)', message: 'malformed JSON' }],
      });
    }
    const proto = protoKeyPaths(body);
    if (proto.length) {
      throw new HttpError(
        400,
        `the body has a key named __proto__ (at ${proto.join(', ')}), which names nothing llmcap holds; remove it`,
        { errors: proto.map((path) => ({ path, message: '__proto__ is not a name llmcap accepts' })) },
      );
    }
  }
  const iam = event.requestContext.authorizer?.iam;
  if (typeof iam?.userArn !== 'string')
    throw new HttpError(401, 'the request carries no IAM identity; sign it with SigV4');
  // An empty name is refused as any other name that is no principal is: it names nobody, least of all an admin.
  const caller = parseCaller(iam.userArn, iam.accountId);
  if (!caller.ok) {
    throw new HttpError(
      401,
      `the caller ${iam.userArn || "''"} is not an identity llmcap recognises (${caller.problem}); sign as ${FORMS_SENTENCE}`,
    );
  }
  return {
    method,
    path: event.rawPath,
    params,
    query: event.queryStringParameters ?? {},
    headers,
    body,
    caller: caller.value,
    principal: caller.value.arn,
    requestId: event.requestContext.requestId,
    dryRun: false,
  };
}

/**
 * An answer as it is sent, spoken once: names, never keys, in what llmcap composed (a twin's mark would tell
 * that another exists), and what a caller sent as sent (domain/names.ts speakValue). No serialized text is
 * rewritten. An Idempotency-Key keeps the spoken answer, so a replay is sent as it is.
 */
function spoken(res: { status: number; body?: unknown; headers?: Record<string, string> }) {
  const headers = Object.fromEntries(Object.entries(res.headers ?? {}).map(([k, v]) => [k, speakNames(v)]));
  return { status: res.status, body: speakValue(res.body), headers };
}

/** An answer as the handler sends it: spoken (above), then serialized. */
export function answer(res: { status: number; body?: unknown; headers?: Record<string, string> }): Result {
  return toResult(spoken(res));
}

function toResult(res: { status: number; body?: unknown; headers?: Record<string, string> }): Result {
  const headers = res.headers ?? {};
  if (res.body === undefined) return { statusCode: res.status, headers };
  return {
    statusCode: res.status,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(res.body),
  };
}

/**
 * A read without an ETag of its own (the lists) gets one of its content, and If-None-Match with it is answered
 * 304 with no body: `llmcap get -w` polls a list cheaply and learns when anything in it changed. Item reads keep
 * their version as ETag, which If-Match on a write compares.
 */
function withContentTag(req: ApiRequest, res: Result): Result {
  if (res.statusCode !== 200 || res.body === undefined || res.headers?.etag) return res;
  const etag = `W/"${createHash('sha256').update(res.body).digest('base64url').slice(0, 22)}"`;
  const headers = { ...res.headers, etag };
  if (req.headers['if-none-match'] === etag) return { statusCode: 304, headers: { etag } };
  return { ...res, headers };
}

/** The API over the services given: a test hands in its own dependencies (service/index.ts createServices). */
export function createHandler(svc: Services): (event: Event) => Promise<Result> {
  const router = buildRouter(svc);
  const ensureSeeded = seeder(svc);
  const { claimKey, completeKey, releaseKey, requestFingerprint } = svc.idempotency;
  return async (event) => {
    try {
      const { route, params } = router.match(event.requestContext.http.method.toUpperCase(), event.rawPath);
      const req = parseRequest(event, params);
      if (route.write) req.dryRun = dryRunOf(req.query);
      await ensureSeeded();
      // A dry run writes nothing, so there is no outcome for an Idempotency-Key to remember.
      const idemKey = route.write && !req.dryRun ? req.headers['idempotency-key'] : undefined;
      if (!idemKey) {
        const res = answer(await route.handler(req));
        return req.method === 'GET' ? withContentTag(req, res) : res;
      }
      if (idemKey.length > 128) throw new HttpError(400, 'Idempotency-Key is at most 128 characters');
      const claim = await claimKey(
        req.principal,
        idemKey,
        requestFingerprint(req.method, req.path, req.body),
      );
      if (claim.kind === 'replay') {
        const r = claim.response;
        return toResult({ ...r, headers: { ...(r.headers ?? {}), 'idempotent-replayed': 'true' } });
      }
      if (claim.kind === 'mismatch') {
        throw new HttpError(409, 'this Idempotency-Key was used for a different request; use a new key', {
          reason: 'IdempotencyKeyReused',
        });
      }
      if (claim.kind === 'in-progress') {
        throw new HttpError(
          409,
          `a request with this Idempotency-Key is still in progress; retry after ${claim.retryAfterSeconds} s, when it has either answered or expired`,
          {
            reason: 'IdempotencyKeyInProgress',
            headers: { 'retry-after': String(claim.retryAfterSeconds) },
          },
        );
      }
      try {
        const res = spoken(await route.handler(req));
        await completeKey(req.principal, idemKey, res);
        return toResult(res);
      } catch (e) {
        await releaseKey(req.principal, idemKey);
        throw e;
      }
    } catch (err) {
      const res = errorToResult(err);
      if (res.statusCode === 500)
        logger.error('request failed', { error: err as Error, path: event.rawPath });
      return res;
    }
  };
}

/** The API of this container, wired with the default dependencies on its first request. */
export function handle(event: Event): Promise<Result> {
  container ??= createHandler(createApiServices());
  return container(event);
}

export { problem };
