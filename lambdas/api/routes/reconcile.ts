import * as z from 'zod';
import type { Caller } from '../../domain/access';
import { notFound } from '../../domain/errors';
import { PASS_ID_PATTERN, PASS_RETENTION_DAYS, passView } from '../../domain/reconcile-pass';
import { config } from '../../shared/config';
import { invokeAsync } from '../../shared/lambda';
import { abandonPass, getPass, listPasses, requestPass } from '../../store/reconcile-passes';
import type { ApiRequest } from '../http';
import { HttpError, json, parseQuery } from '../http';
import type { Router } from '../router';

/**
 * Reconcile passes on demand (platform admins). A pass can take minutes (the Lambda's timeout is 5) and the
 * API has 29 s, so POST only queues one: it answers 202 with the pass id and a Location to read it, and
 * invokes the reconcile Lambda asynchronously. A POST while a pass is queued joins that pass (it has not
 * started, so it covers this request too); a POST while one runs queues the next, since the running one may
 * have read the state before the request.
 */

type CallerOf = (req: ApiRequest) => Promise<Caller>;

export const ReconcileListQuery = z.strictObject({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .optional()
    .describe('how many passes, newest first (default 20)'),
});

const location = (id: string) => `/v1/reconcile/${id}`;

export function reconcileRoutes(router: Router, callerOf: CallerOf): void {
  const admin = async (req: ApiRequest, what: string) => (await callerOf(req)).requirePlatformAdmin(what);

  router.add(
    'POST',
    '/v1/reconcile',
    async (req) => {
      await admin(req, 'running a reconcile');
      const fn = config().reconcileFunction;
      if (!fn) {
        throw new HttpError(
          503,
          'no reconciler is configured here (LLMCAP_RECONCILE_FUNCTION is unset); set it to the reconcile Lambda',
          { title: 'Service unavailable' },
        );
      }
      const { pass, coalesced } = await requestPass(req.principal);
      if (!coalesced) {
        try {
          await invokeAsync(fn, { source: 'llmcap.api', passId: pass.id });
        } catch (e) {
          const why = `${(e as Error).name}: ${(e as Error).message}`;
          await abandonPass(pass.id, `could not invoke the reconcile Lambda ${fn}: ${why}`);
          throw new HttpError(
            503,
            `could not start a reconcile pass (${why}); pass ${pass.id} is recorded FAILED. Retry, or wait for the scheduled pass`,
            { title: 'Service unavailable', headers: { 'retry-after': '30' } },
          );
        }
      }
      return json(202, { ...passView(pass, Date.now()), coalesced }, { location: location(pass.id) });
    },
    {
      summary:
        'Queue a reconcile pass (platform admins): 202 with its id and Location; joins a pass still queued',
      responses: { 202: 'the queued pass: id, state, coalesced' },
    },
  );

  router.add(
    'GET',
    '/v1/reconcile',
    async (req) => {
      await admin(req, 'reading reconcile passes');
      const q = parseQuery(ReconcileListQuery, req.query);
      const now = Date.now();
      return json(200, { items: (await listPasses(q.limit ?? 20)).map((p) => passView(p, now)) });
    },
    {
      summary: 'The latest reconcile passes, newest first, without summaries (platform admins)',
      responses: { 200: 'items: passes' },
      query: ReconcileListQuery,
    },
  );

  router.add(
    'GET',
    '/v1/reconcile/{id}',
    async (req) => {
      await admin(req, 'reading reconcile passes');
      const id = req.params.id!;
      if (!PASS_ID_PATTERN.test(id)) {
        throw new HttpError(400, `${id} is not a reconcile pass id; POST /v1/reconcile returns one`, {
          errors: [{ path: 'id', message: 'a pass id such as 20260105T101502123Z-0a1b2c3d' }],
        });
      }
      const pass = await getPass(id);
      if (!pass)
        throw notFound(
          `reconcile pass ${id} does not exist (passes are kept ${PASS_RETENTION_DAYS} days); GET /v1/reconcile lists them`,
        );
      return json(200, passView(pass, Date.now()));
    },
    {
      summary:
        'One reconcile pass: QUEUED, RUNNING, SUCCEEDED with its summary, or FAILED with the error (platform admins)',
      responses: { 200: 'the pass' },
    },
  );
}
