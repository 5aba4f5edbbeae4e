import * as z from 'zod';
import { PASS_ID_PATTERN, passView } from '../../domain/reconcile-pass';
import type { Services } from '../../service';
import { HttpError, json, parseQuery } from '../http';
import type { Router } from '../router';
import type { CallerOf } from './computes';

/**
 * Reconcile passes on demand (platform admins). A pass can take minutes (the Lambda's timeout is 5) and the
 * API has 29 s, so POST only queues one: it answers 202 with the pass id and a Location to read it, and
 * invokes the reconcile Lambda asynchronously. A POST while a pass is queued joins that pass (it has not
 * started, so it covers this request too); a POST while one runs queues the next, since the running one may
 * have read the state before the request.
 */

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

export function reconcileRoutes(router: Router, svc: Services, callerOf: CallerOf): void {
  const passes = svc.passes;

  router.add(
    'POST',
    '/v1/reconcile',
    async (req) => {
      const caller = await callerOf(req);
      if (req.dryRun) {
        // A dry run checks who may queue a pass and queues none: 200, since nothing was accepted.
        caller.requirePlatformAdmin('running a reconcile');
        return json(200, { dryRun: true, message: 'a reconcile pass would be queued' });
      }
      const r = await passes.request(caller, req.principal);
      if (r.kind === 'no-reconciler') {
        throw new HttpError(
          503,
          'no reconciler is configured here (LLMCAP_RECONCILE_FUNCTION is unset); set it to the reconcile Lambda',
          { title: 'Service unavailable' },
        );
      }
      if (r.kind === 'not-started') {
        throw new HttpError(
          503,
          `could not start a reconcile pass (${r.why}); pass ${r.pass.id} is recorded FAILED. Retry, or wait for the scheduled pass`,
          { title: 'Service unavailable', headers: { 'retry-after': '30' } },
        );
      }
      const { pass, coalesced } = r;
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
      const caller = await callerOf(req);
      const q = parseQuery(ReconcileListQuery, req.query);
      const now = Date.now();
      return json(200, { items: (await passes.list(caller, q.limit ?? 20)).map((p) => passView(p, now)) });
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
      const caller = await callerOf(req);
      // A caller who may not read passes is told so before being told the id is malformed.
      caller.requirePlatformAdmin('reading reconcile passes');
      const id = req.params.id!;
      if (!PASS_ID_PATTERN.test(id)) {
        throw new HttpError(400, `${id} is not a reconcile pass id; POST /v1/reconcile returns one`, {
          errors: [{ path: 'id', message: 'a pass id such as 20260105T101502123Z-0a1b2c3d' }],
        });
      }
      return json(200, passView(await passes.get(caller, id), Date.now()));
    },
    {
      summary:
        'One reconcile pass: QUEUED, RUNNING, SUCCEEDED with its summary, or FAILED with the error (platform admins)',
      responses: { 200: 'the pass' },
    },
  );
}
