import { createHash } from 'node:crypto';
import { FORMS_SENTENCE, parseCaller } from '../domain/principal';
import { builtinComputes } from '../shared/builtin-config';
import { logger } from '../shared/logger';
import { admissionSummaries } from '../store/admission';
import { seedBuiltins, setComputeUsers } from '../store/computes';
import { claimKey, completeKey, releaseKey } from '../store/idempotency';
import { loadCatalog, modelsUsing } from '../store/models';
import { loadTree, setOwnedModels } from '../store/tenancy';
import { withWorkloads } from '../store/workloads';
import { Caller } from './access';
import {
  type ApiRequest,
  type Event,
  errorToResult,
  HttpError,
  MAX_BODY_BYTES,
  problem,
  type Result,
} from './http';
import { openApiDocument } from './openapi';
import { Router } from './router';
import { computeRoutes } from './routes/computes';
import { modelRoutes, setAdmissionLookup } from './routes/models';
import { reconcileRoutes } from './routes/reconcile';
import { tenancyRoutes } from './routes/tenancy';

/**
 * The API application: builds the router once per container and turns API Gateway v2 events into route calls.
 * Everything here is transport; the rules live in the domain and the store.
 */

/** Roles come from the scope tree, loaded per request so a membership change holds at once. */
const callerOf = async (req: ApiRequest) => new Caller(req.caller, await loadTree());

export function buildRouter(): Router {
  const router = new Router();
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
  computeRoutes(router, callerOf);
  modelRoutes(router, callerOf);
  tenancyRoutes(router);
  reconcileRoutes(router, callerOf);
  // A compute is not deleted or renamed while a model pins it or has no other compute to run on.
  setComputeUsers(modelsUsing);
  // A scope is not deleted while it owns models.
  setOwnedModels(async (scope) =>
    (await loadCatalog()).models.filter((m) => m.owner === scope).map((m) => m.name),
  );
  setAdmissionLookup(withWorkloads(admissionSummaries));
  return router;
}

let router: Router | undefined;
let seeded: Promise<unknown> | undefined;

/** Built-ins are loaded once per container, before its first request, so they are there on a fresh install. */
function ensureSeeded(): Promise<unknown> {
  seeded ??= seedBuiltins(builtinComputes()).catch((e) => {
    seeded = undefined;
    throw e;
  });
  return seeded;
}

export function resetApp(): void {
  router = undefined;
  seeded = undefined;
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

function parseRequest(event: Event, params: Record<string, string>): ApiRequest {
  const headers = lowerHeaders(event.headers);
  const raw = decodeBody(event);
  if (raw !== undefined && Buffer.byteLength(raw, 'utf8') > MAX_BODY_BYTES) {
    throw new HttpError(413, `the body is over ${MAX_BODY_BYTES / 1024} KiB; send a smaller manifest`);
  }
  const type = headers['content-type'];
  if (raw !== undefined && type && !/json/i.test(type)) {
    throw new HttpError(415, `send JSON with content-type application/json, not ${type}`);
  }
  let body: unknown;
  if (raw !== undefined) {
    try {
      body = JSON.parse(raw);
    } catch (e) {
      throw new HttpError(400, `the body is not valid JSON: ${(e as Error).message}`, {
        errors: [{ path: '(body)', message: 'malformed JSON' }],
      });
    }
  }
  const iam = event.requestContext.authorizer?.iam;
  if (!iam?.userArn) throw new HttpError(401, 'the request carries no IAM identity; sign it with SigV4');
  const caller = parseCaller(iam.userArn, iam.accountId);
  if (!caller.ok) {
    throw new HttpError(
      401,
      `the caller ${iam.userArn} is not an identity llmcap recognises (${caller.problem}); sign as ${FORMS_SENTENCE}`,
    );
  }
  return {
    method: event.requestContext.http.method.toUpperCase(),
    path: event.rawPath,
    params,
    query: event.queryStringParameters ?? {},
    headers,
    body,
    caller: caller.value,
    principal: caller.value.arn,
    requestId: event.requestContext.requestId,
  };
}

function toResult(status: number, body: unknown, headers: Record<string, string> = {}): Result {
  if (body === undefined) return { statusCode: status, headers };
  return {
    statusCode: status,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

export async function handle(event: Event): Promise<Result> {
  router ??= buildRouter();
  try {
    const { route, params } = router.match(event.requestContext.http.method.toUpperCase(), event.rawPath);
    const req = parseRequest(event, params);
    await ensureSeeded();
    const idemKey = route.write ? req.headers['idempotency-key'] : undefined;
    if (!idemKey) {
      const res = await route.handler(req);
      return toResult(res.status, res.body, res.headers);
    }
    if (idemKey.length > 128) throw new HttpError(400, 'Idempotency-Key is at most 128 characters');
    const fingerprint = createHash('sha256')
      .update(`${req.method} ${req.path}\n${JSON.stringify(req.body ?? null)}`)
      .digest('hex');
    const claim = await claimKey(req.principal, idemKey, fingerprint);
    if (claim.kind === 'replay') {
      const r = claim.response;
      return toResult(r.status, r.body, { ...(r.headers ?? {}), 'idempotent-replayed': 'true' });
    }
    if (claim.kind === 'mismatch') {
      throw new HttpError(409, 'this Idempotency-Key was used for a different request; use a new key', {
        reason: 'IdempotencyKeyReused',
      });
    }
    if (claim.kind === 'in-progress') {
      throw new HttpError(
        409,
        'a request with this Idempotency-Key is still in progress; retry in a moment',
        {
          reason: 'IdempotencyKeyInProgress',
        },
      );
    }
    try {
      const res = await route.handler(req);
      await completeKey(req.principal, idemKey, { status: res.status, body: res.body, headers: res.headers });
      return toResult(res.status, res.body, res.headers);
    } catch (e) {
      await releaseKey(req.principal, idemKey);
      throw e;
    }
  } catch (err) {
    const res = errorToResult(err);
    if (res.statusCode === 500) logger.error('request failed', { error: err as Error, path: event.rawPath });
    return res;
  }
}

export { problem };
