import * as z from 'zod';
import { scopeRef } from '../../domain/compute';
import { MAX_COST_PERIOD_DAYS } from '../../domain/cost';
import { refineWith, whenParsed } from '../../domain/rules';
import type { Services } from '../../service';
import { json, parseQuery, scopeKey } from '../http';
import { ListQuery, listPage } from '../paging';
import type { Router } from '../router';
import type { CallerOf } from './computes';

/** What the node groups cost per scope (docs/design.md §3.6), now and over a period. */

const HOUR = 3_600_000;
const instant = z.iso.datetime({ offset: true, message: 'an ISO 8601 time, e.g. 2026-01-31T09:00:00Z' });

export const CostsQuery = z
  .strictObject({
    from: instant.optional().describe('start of the period (default: 24 hours before `to`)'),
    to: instant.optional().describe('end of the period (default: now)'),
    scope: scopeRef.optional().describe('this scope and those beneath it'),
    buckets: z.coerce
      .number()
      .int()
      .min(1)
      .max(200)
      .optional()
      .describe('how many equal slices the period is split into for `series` (default 24)'),
  })
  .superRefine(
    ...refineWith(
      (q: { from?: string; to?: string }) => {
        if (!q.from || !q.to) return [];
        const ms = Date.parse(q.to) - Date.parse(q.from);
        if (ms <= 0) return [{ path: ['to'], message: `must be after from (${q.from})` }];
        if (ms > MAX_COST_PERIOD_DAYS * 24 * HOUR)
          return [
            { path: ['from'], message: `a period is at most ${MAX_COST_PERIOD_DAYS} days; ask for several` },
          ];
        return [];
      },
      whenParsed('from', 'to'),
    ),
  );

export function costRoutes(router: Router, svc: Services, callerOf: CallerOf): void {
  router.add(
    'GET',
    '/v1/costs',
    async (req) => {
      const caller = await callerOf(req);
      const q = parseQuery(CostsQuery, req.query);
      const to = q.to ? new Date(q.to) : svc.deps.clock();
      const from = q.from ? new Date(q.from) : new Date(to.getTime() - 24 * HOUR);
      // One bound alone may still make an empty or too long period: the same rule as both given.
      parseQuery(CostsQuery, { from: from.toISOString(), to: to.toISOString() });
      return json(
        200,
        await svc.costs.view(caller, {
          from,
          to,
          buckets: q.buckets ?? 24,
          ...(q.scope ? { scope: scopeKey(caller, q.scope) } : {}),
        }),
      );
    },
    {
      summary:
        'What the node groups cost per scope you can read: per hour now, over the period, and in slices; idle cost per compute',
      query: CostsQuery,
      responses: {
        200: 'scopes: perHour and cost; computes: nodes, perHour, idlePerHour, cost, idle; series; total (platform admins)',
      },
    },
  );
}

/** The stage's alarms the caller may see, with their state (service/alarms.ts). */
export function alarmRoutes(router: Router, svc: Services, callerOf: CallerOf): void {
  router.add(
    'GET',
    '/v1/alarms',
    async (req) => {
      const caller = await callerOf(req);
      return json(
        200,
        await listPage(
          req,
          () => svc.alarms.list(caller),
          (a) => [a.name],
        ),
      );
    },
    {
      summary:
        "The stage's alarms you may see and their state: your scopes' CapacityAtLimit, your computes' NodegroupFailed, and (platform admins) the stage's own; a page at a time",
      query: ListQuery,
      responses: {
        200: 'items: name, kind, subject, state, reason, updatedAt, description; metadata.continue when more follow',
      },
    },
  );
}
