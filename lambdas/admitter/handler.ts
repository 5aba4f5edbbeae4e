import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import { type AdmitterSummary, summarize } from '../service/admitter';
import { type AdmitterServices, createAdmitterServices } from '../service/for-admitter';
import { logger } from '../shared/logger';

/**
 * The admitter Lambda (service/admitter.ts), reserved concurrency 1: invoked by the table's stream through an
 * event source mapping (a batch of writes to models, computes, scopes, quotas, node types or workloads), and by
 * each reconcile pass before it places. Whatever the trigger, it decides the whole world once; the records say
 * which partitions changed, which a run reads again. A failure throws, so Lambda retries the batch (the stream)
 * or the pass reports it.
 */

// Built on the first invocation of a container; it reads the configuration on each use (service/index.ts).
let services: AdmitterServices | undefined;

export const handler = middy(async (event: unknown): Promise<AdmitterSummary> => {
  services ??= createAdmitterServices();
  const batch = (event as { Records?: { dynamodb?: { Keys?: { pk?: { S?: string } } } }[] } | null)?.Records;
  const records = batch?.length;
  // The partitions the records name: a run re-reads those, and keeps its readings of the rest (service/admitter.ts).
  const written = batch && [...new Set(batch.map((r) => r.dynamodb?.Keys?.pk?.S ?? ''))];
  const summary = summarize(await services.admitter.run(written && !written.includes('') ? { written } : {}));
  // One line per run that changed something: what an operator looks for when a write stays Queued.
  if (summary.commits > 0 || records === undefined)
    logger.info('admitter run', {
      trigger: records === undefined ? 'reconcile' : `stream (${records} records)`,
      written: summary.written.length,
      removed: summary.removed.length,
      commits: summary.commits,
      admitted: summary.admitted,
      released: summary.released,
      victims: summary.victims,
      pendingReplicas: summary.pendingReplicas,
    });
  return summary;
}).use(injectLambdaContext(logger));

/** For tests: forget the services built for the configuration of the time. */
export function resetAdmitter(): void {
  services = undefined;
}
