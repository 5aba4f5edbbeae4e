import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { logger } from '../shared/logger';
import { metrics } from '../shared/metrics';
import { syncAlarms } from './cloudwatch-alarms';
import { recordedPass } from './pass';
import { type ReconcileSummary, runReconcile } from './reconcile';

/** Publishes a pass's figures as EMF metrics (namespace llmcap), per scope and per compute. */
export function publishMetrics(s: ReconcileSummary): void {
  for (const sc of s.scopes) {
    const m = metrics.singleMetric();
    m.addDimension('Scope', sc.scope);
    for (const r of ['gpus', 'cores', 'memoryGb'] as const) {
      m.addMetric(`Usage_${r}`, MetricUnit.Count, sc.usage[r]);
      m.addMetric(`Guarantee_${r}`, MetricUnit.Count, sc.guarantee[r]);
      m.addMetric(`Borrowed_${r}`, MetricUnit.Count, sc.borrowed[r]);
      if (sc.limit[r] !== undefined) m.addMetric(`Limit_${r}`, MetricUnit.Count, sc.limit[r]!);
    }
    m.addMetric('PendingReplicas', MetricUnit.Count, sc.pendingReplicas);
    m.addMetric('CapacityAtLimit', MetricUnit.Count, s.atLimit.includes(sc.scope) ? 1 : 0);
  }
  for (const c of s.computes) {
    const m = metrics.singleMetric();
    m.addDimension('Compute', c.compute);
    m.addMetric('DesiredNodes', MetricUnit.Count, c.desiredNodes);
    m.addMetric('ReadyNodes', MetricUnit.Count, c.readyNodes);
    m.addMetric('NeededNodes', MetricUnit.Count, c.neededNodes);
    m.addMetric('NodegroupFailed', MetricUnit.Count, c.failed ? 1 : 0);
  }
  metrics.addMetric('ReconcileErrors', MetricUnit.Count, s.errors.length);
  metrics.addMetric('ReconcileDuration', MetricUnit.Milliseconds, s.durationMs);
}

/** One pass, its metrics, and the per-scope alarms kept in step. */
async function reconcileOnce(): Promise<ReconcileSummary> {
  const summary = await runReconcile();
  publishMetrics(summary);
  await syncAlarms(summary);
  logger.info('reconcile pass', {
    durationMs: summary.durationMs,
    workflows: summary.workflows,
    atLimit: summary.atLimit,
    errors: summary.errors,
  });
  // Errors are reported, not thrown: one bad compute must not stop the pass for the others; the alarm on
  // ReconcileErrors pages instead.
  return summary;
}

/**
 * The reconcile Lambda, invoked asynchronously by the schedule and by POST /v1/reconcile (which names the
 * pass it queued); the pass is recorded from start to end, so its summary can be read afterwards.
 */
export const handler = middy(async (event: unknown, context: Context) =>
  recordedPass(event, context, reconcileOnce),
)
  .use(injectLambdaContext(logger, { resetKeys: true }))
  .use(logMetrics(metrics));
