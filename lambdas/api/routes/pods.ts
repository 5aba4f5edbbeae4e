import * as z from 'zod';
import { computeName } from '../../domain/compute';
import { modelName } from '../../domain/model';
import type { Services } from '../../service';
import { json } from '../http';
import { firstPage, LIST_PARAMS, pageOf, parseListQuery } from '../paging';
import type { Router } from '../router';
import type { CallerOf } from './computes';

/** Kubernetes object names: a DNS-1123 label (namespaces) or subdomain (nodes). */
const dnsName = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'a Kubernetes name: lowercase letters, digits, - and .');

/** Every filter narrows the list; together they must all match. The list comes a page at a time. */
export const PodsQuery = z.strictObject({
  ...LIST_PARAMS,
  model: modelName.optional().describe('the pods of this model'),
  compute: computeName.optional().describe('the pods placed on this compute'),
  profile: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,30}$/, 'a profile name is 1 to 31 lowercase letters, digits and -')
    .optional()
    .describe('the pods of this profile'),
  node: dnsName.optional().describe('the pods scheduled on this node'),
  namespace: dnsName.optional().describe('the pods in this namespace'),
  ready: z.enum(['true', 'false']).optional().describe('only the Ready pods (true) or the others (false)'),
});

export function podRoutes(router: Router, svc: Services, callerOf: CallerOf): void {
  router.add(
    'GET',
    '/v1/pods',
    async (req) => {
      const caller = await callerOf(req);
      const parsed = parseListQuery(PodsQuery, req);
      const { ready, limit: _l, continue: _c, ...q } = parsed.query;
      const r = await svc.pods.list(caller, { ...q, ...(ready ? { ready: ready === 'true' } : {}) });
      return json(200, {
        ...(await pageOf(
          req,
          r.items,
          (p) => [p.model, p.name, p.namespace],
          (p) => p,
          parsed,
        )),
        ...(r.observedAt ? { observedAt: r.observedAt } : {}),
        // A note on the whole list, so the first page carries it.
        ...(r.truncated.length && firstPage(req) ? { truncated: r.truncated } : {}),
        ...(r.deployed
          ? {}
          : {
              message:
                'llmcap does not run the model servers in this stage (LLMCAP_WORKLOADS=off), so it knows no pods; deploy with workloads on to see them',
            }),
      });
    },
    {
      summary:
        'Pods of the models you can see, as the reconciler last observed them: node, phase, readiness, why not ready',
      query: PodsQuery,
      responses: {
        200: 'items: pods; observedAt: when the pods were last listed; metadata.continue when more follow',
      },
    },
  );
}
