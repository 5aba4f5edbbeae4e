/**
 * The namespace and `service` dimension of every llmcap metric. One constant for the EMF the Lambdas print and
 * for the alarms that watch it: a metric's identity includes every dimension value, so an alarm naming another
 * service value would watch a metric nobody publishes.
 */
export const METRICS_NAMESPACE = 'llmcap';
export const SERVICE_NAME = 'llmcap';
