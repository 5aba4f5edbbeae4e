import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { spotWarning } from '../domain/supply';
import { createReconciler, type Reconciler, type ReconcileSummary } from '../service/reconcile';
import { logger } from '../shared/logger';
import { publishMetricSet } from '../shared/metrics';

/**
 * Publishes a pass's figures as EMF metrics (namespace llmcap): per scope {service, stage, Scope}, per compute
 * {service, stage, Compute}, and per pass {service, stage}, all stamped with the pass's scheduled time so that a
 * pass lands in its own minute however long it ran.
 */
export function publishMetrics(s: ReconcileSummary, at: Date = new Date()): void {
  for (const sc of s.scopes) {
    publishMetricSet({ Scope: sc.scope }, at, (m) => {
      for (const r of ['gpus', 'cores', 'memoryGb'] as const) {
        m.addMetric(`Usage_${r}`, MetricUnit.Count, sc.usage[r]);
        m.addMetric(`Guarantee_${r}`, MetricUnit.Count, sc.guarantee[r]);
        m.addMetric(`Borrowed_${r}`, MetricUnit.Count, sc.borrowed[r]);
        if (sc.limit[r] !== undefined) m.addMetric(`Limit_${r}`, MetricUnit.Count, sc.limit[r]!);
      }
      m.addMetric('PendingReplicas', MetricUnit.Count, sc.pendingReplicas);
      m.addMetric('CapacityAtLimit', MetricUnit.Count, s.atLimit.includes(sc.scope) ? 1 : 0);
    });
  }
  for (const c of s.computes) {
    publishMetricSet({ Compute: c.compute }, at, (m) => {
      m.addMetric('DesiredNodes', MetricUnit.Count, c.desiredNodes);
      m.addMetric('ReadyNodes', MetricUnit.Count, c.readyNodes);
      m.addMetric('NeededNodes', MetricUnit.Count, c.neededNodes);
      m.addMetric('NodegroupFailed', MetricUnit.Count, c.failed ? 1 : 0);
    });
  }
  publishMetricSet({}, at, (m) => {
    // One per pass, whatever happened: what the ReconcileStale alarm misses when passes stop.
    m.addMetric('ReconcilePasses', MetricUnit.Count, 1);
    m.addMetric('ReconcileErrors', MetricUnit.Count, s.errors.length);
    m.addMetric('ReconcileDuration', MetricUnit.Milliseconds, s.durationMs);
    // Only where llmcap runs the pods and so sees them: ReplicasUnscheduled's figure.
    if (s.workloads) m.addMetric('UnscheduledReplicas', MetricUnit.Count, s.workloads.unscheduled);
  });
}

/**
 * One pass, the per-scope alarms kept in step, and its metrics, stamped `at` (the schedule's scheduledTime, or
 * when the invocation started).
 */
async function reconcileOnce(r: Reconciler, at: Date): Promise<ReconcileSummary> {
  const summary = await r.run();
  // Before the metrics, so that a failure to keep the alarms counts in this pass's ReconcileErrors.
  try {
    await r.syncAlarms(summary);
  } catch (e) {
    summary.errors.push(`keeping alarms: ${(e as Error).message}`);
  }
  publishMetrics(summary, at);
  const repaired = summary.workloads?.repaired ?? [];
  // The line says it in words too: drift set back is what an operator looks for in the log.
  logger.info(
    repaired.length ? `reconcile pass: drift repaired in ${repaired.length} object(s)` : 'reconcile pass',
    {
      durationMs: summary.durationMs,
      ...(repaired.length ? { driftRepaired: repaired } : {}),
      workflows: summary.workflows,
      atLimit: summary.atLimit,
      errors: summary.errors,
    },
  );
  // Errors are reported, not thrown: one bad compute must not stop the pass for the others; the alarm on
  // ReconcileErrors pages instead.
  return summary;
}

// Built on the first invocation of a container; it reads the configuration on each use (service/index.ts).
let reconciler: Reconciler | undefined;

/**
 * The reconcile Lambda, invoked asynchronously by the schedule and by POST /v1/reconcile (which names the
 * pass it queued); the pass is recorded from start to end, so its summary can be read afterwards.
 */
export const handler = middy(async (event: unknown, context: Context) => {
  reconciler ??= createReconciler();
  const r = reconciler;
  // EventBridge's Spot warning (issue 32 §4): counted and its node marked, then a pass at once, so the replicas
  // it ran are replaced before EC2 takes it two minutes later.
  const warning = spotWarning(event);
  if (warning) {
    try {
      const compute = await r.spotInterruption(warning);
      logger.info('Spot interruption warning', { ...warning, compute: compute ?? null });
    } catch (e) {
      logger.error('Spot interruption warning not recorded', { ...warning, error: e as Error });
    }
  }
  // The pass it asks for is one of the reconciler's own ({}), as a scheduled pass without its time.
  return r.services.passes.recorded(warning ? {} : event, context, (at) => reconcileOnce(r, at));
}).use(injectLambdaContext(logger, { resetKeys: true }));
