import { Metrics } from '@aws-lambda-powertools/metrics';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../domain/telemetry';
import { config } from './config';
import { logger } from './logger';

/**
 * Prints the metrics of one dimension set as one EMF document: namespace llmcap, dimensions {service, stage} plus
 * `dims`, stamped `at`. Powertools' singleMetric() flushes on every addMetric and drops the dimensions it was
 * given, so only a scope's first metric carried Scope; an instance per dimension set keeps the whole set on every
 * metric of it.
 */
export function publishMetricSet(dims: Record<string, string>, at: Date, add: (m: Metrics) => void): void {
  const m = new Metrics({
    namespace: METRICS_NAMESPACE,
    serviceName: SERVICE_NAME,
    defaultDimensions: { stage: config().stage, ...dims },
    // Its warnings (a timestamp CloudWatch would drop) as JSON log lines, like every other warning.
    logger,
  });
  m.setTimestamp(at);
  add(m);
  m.publishStoredMetrics();
}
