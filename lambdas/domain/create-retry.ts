import type { CreateRetry, NodegroupStatus, ObservedStatus } from './compute';

/**
 * A node group create that keeps failing (no capacity, an EC2 quota, a bad subnet) is deleted and created again,
 * but not at once: each failure doubles the wait before the next create, up to a bound, so a persistent fault
 * costs a create attempt an hour instead of one every cycle. The failure is held from the first CREATE_FAILED
 * until a create succeeds or nothing needs the compute, and while it is held the compute counts as failed (the
 * NodegroupFailed alarm stays in ALARM instead of clearing while the failed group is deleted and re-created) and
 * its status says what failed and when the next attempt is. Kept in the compute's sizing, so a restart keeps it.
 */

export interface RetryPolicy {
  /** The wait after the first failure. */
  baseMs: number;
  /** The longest wait between two creates. */
  maxMs: number;
}

/** The bound is twelve first waits: an hour at the default of five minutes. */
export const MAX_BACKOFF_FACTOR = 12;

export function retryPolicy(baseSeconds: number): RetryPolicy {
  return { baseMs: baseSeconds * 1000, maxMs: baseSeconds * 1000 * MAX_BACKOFF_FACTOR };
}

/** The wait after the n-th failure in a row (n ≥ 1): base, 2 × base, 4 × base, ..., at most maxMs. */
export function backoffMs(failures: number, p: RetryPolicy): number {
  return Math.min(p.maxMs, p.baseMs * 2 ** Math.max(0, Math.min(failures - 1, 30)));
}

/** Statuses in which the node group was created once (the create succeeded): the failure is over. */
const CREATED: readonly NodegroupStatus[] = ['ACTIVE', 'UPDATING', 'DEGRADED'];

/**
 * The retry state after this pass's observation. `needed` is what placement needs now: a compute nobody needs
 * ends the failure (scaling the models to 0 is how the runbook stops the loop).
 */
export function nextCreateRetry(
  prev: CreateRetry | undefined,
  c: { status: Pick<ObservedStatus, 'nodegroupStatus' | 'statusMessage'>; deleting?: boolean },
  needed: number,
  now: Date,
  policy: RetryPolicy,
): CreateRetry | undefined {
  const s = c.status.nodegroupStatus;
  if (c.deleting || CREATED.includes(s)) return undefined;
  if (s === 'CREATE_FAILED') {
    if (prev?.counted) return prev;
    const failures = (prev?.failures ?? 0) + 1;
    return {
      failures,
      since: prev?.since ?? now.toISOString(),
      lastFailure: `CREATE_FAILED: ${c.status.statusMessage ?? 'no health issue reported'}`,
      nextAttemptAt: new Date(now.getTime() + backoffMs(failures, policy)).toISOString(),
      counted: true,
    };
  }
  if (!prev) return undefined;
  if (s === 'ABSENT' && needed === 0) return undefined;
  // The failed group is gone (ABSENT), or on its way (DELETING), or the next attempt runs (CREATING).
  return s === 'ABSENT' || s === 'CREATING' ? { ...prev, counted: false } : prev;
}

/** Whether a create may start now. */
export function mayCreate(retry: CreateRetry | undefined, now: Date): boolean {
  return !retry || now.getTime() >= Date.parse(retry.nextAttemptAt);
}

/** The status message while a failure is held: what failed, how often, and when llmcap tries again. */
export function retryMessage(retry: CreateRetry): string {
  const n = retry.failures === 1 ? '1 failed create' : `${retry.failures} failed creates in a row`;
  return `${retry.lastFailure} (${n} since ${retry.since}; next create attempt at ${retry.nextAttemptAt})`;
}
