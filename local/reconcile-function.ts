import { RECONCILE_ASYNC, RECONCILE_TIMEOUT_SECONDS } from '../lambdas/domain/reconcile-pass';
import { handler } from '../lambdas/reconcile/handler';
import type { LocalFunction } from './lambda';

/**
 * "The reconcile function" of the local control plane, as the local Lambda runs it: the real handler (middy and
 * all) with the stack's settings (reserved concurrency 1, so passes never overlap; its timeout and memory; no
 * retries, six minutes of event age, and an on-failure destination). Every local pass goes through it: the
 * schedule, cp.reconcile() and POST /v1/reconcile (through @aws-sdk/client-lambda).
 */
export function reconcileFunction(o: { onFailure: string; timeoutSeconds?: number }): LocalFunction {
  return {
    handler: (event, context) => handler(event, context),
    reservedConcurrency: 1,
    timeoutSeconds: o.timeoutSeconds ?? RECONCILE_TIMEOUT_SECONDS,
    memoryMb: 1024,
    async: {
      maximumRetryAttempts: RECONCILE_ASYNC.retryAttempts,
      maximumEventAgeSeconds: RECONCILE_ASYNC.maxEventAgeSeconds,
      onFailure: o.onFailure,
    },
  };
}

/**
 * A warning or error the handler logged (Powertools JSON) to stdout; undefined otherwise. A failed invocation is
 * reported by its on-failure record instead.
 */
export function shownLine(message: string): string | undefined {
  if (!message.startsWith('{') || message.includes('"_aws"')) return undefined;
  try {
    const l = JSON.parse(message) as { level?: string; message?: string };
    if (l.level === 'WARN' || l.level === 'ERROR' || l.level === 'CRITICAL')
      return `reconcile ${l.level.toLowerCase()}: ${l.message}`;
  } catch {
    // not JSON: an ordinary line
  }
  return undefined;
}
