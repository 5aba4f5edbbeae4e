import { createHash, randomBytes } from 'node:crypto';
import type { Caller } from '../domain/access';
import { notFound } from '../domain/errors';
import {
  DEADLINE_GRACE_MS,
  PASS_RETENTION_DAYS,
  type PassDigest,
  type PassRecord,
  parseReconcileEvent,
  passId,
} from '../domain/reconcile-pass';
import { logger } from '../shared/logger';
import type { Dependencies } from '.';
import type { ReconcileSummary } from './reconcile';

/**
 * Reconcile passes (domain/reconcile-pass.ts), both ends. The API's: POST /v1/reconcile queues a pass (or joins
 * the one queued) and invokes the reconcile Lambda asynchronously; passes are read back by id. The reconciler's:
 * each invocation runs one recorded pass, claiming the pass the API queued if one waits, else recording one of
 * the schedule's own, from RUNNING to SUCCEEDED with its summary or FAILED with the error.
 */

export type PassRequest =
  | { kind: 'queued'; pass: PassRecord; coalesced: boolean }
  /** No reconcile Lambda is configured here (LLMCAP_RECONCILE_FUNCTION). */
  | { kind: 'no-reconciler' }
  /** Invoke failed: the pass is recorded FAILED with the reason. */
  | { kind: 'not-started'; pass: PassRecord; functionName: string; why: string };

export interface InvocationContext {
  getRemainingTimeInMillis(): number;
}

/** What an invocation that found nothing to run returns (its pass was covered by an earlier one). */
export interface SkippedPass {
  skipped: string;
  passId?: string;
}

// Passes of this process still running, including one whose invocation middy already ended at its timeout
// (in AWS the container is frozen with it; the local control plane waits for it before it stops).
const inFlight = new Set<Promise<unknown>>();

/** Resolves once every pass this process started has ended. */
export async function passesSettled(): Promise<void> {
  while (inFlight.size) await Promise.allSettled([...inFlight]);
}

export function digestOf(s: ReconcileSummary): PassDigest {
  return {
    durationMs: s.durationMs,
    workflows: s.workflows.length,
    errors: s.errors.length,
    admitted: s.admission.admitted,
    pendingReplicas: s.admission.pendingReplicas,
    atLimit: s.atLimit.length,
  };
}

export function passService(deps: Dependencies) {
  const store = deps.store.passes;

  return {
    /** Queues a pass for a platform admin, or joins the one still queued, and starts the reconcile Lambda. */
    async request(caller: Caller, by: string): Promise<PassRequest> {
      caller.requirePlatformAdmin('running a reconcile');
      const fn = deps.config().reconcileFunction;
      if (!fn) return { kind: 'no-reconciler' };
      const { pass, coalesced } = await store.requestPass(by);
      if (!coalesced) {
        try {
          await deps.invoke(fn, { source: 'llmcap.api', passId: pass.id });
        } catch (e) {
          const why = `${(e as Error).name}: ${(e as Error).message}`;
          await store.abandonPass(pass.id, `could not invoke the reconcile Lambda ${fn}: ${why}`);
          return { kind: 'not-started', pass, functionName: fn, why };
        }
      }
      return { kind: 'queued', pass, coalesced };
    },

    async list(caller: Caller, limit: number): Promise<PassRecord[]> {
      caller.requirePlatformAdmin('reading reconcile passes');
      return store.listPasses(limit);
    },

    async get(caller: Caller, id: string): Promise<PassRecord> {
      caller.requirePlatformAdmin('reading reconcile passes');
      const pass = await store.getPass(id);
      if (!pass)
        throw notFound(
          `reconcile pass ${id} does not exist (passes are kept ${PASS_RETENTION_DAYS} days); GET /v1/reconcile lists them`,
        );
      return pass;
    },

    /**
     * Runs one reconcile invocation as a recorded pass; `run` gets the time the pass's metrics are stamped with:
     * the schedule's scheduledTime when the event has one (so a pass lands in the minute it was scheduled for,
     * however late it started), else the time this invocation started. A failure is recorded and rethrown, so
     * Lambda counts it and sends the event to the on-failure destination.
     */
    async recorded(
      event: unknown,
      context: InvocationContext,
      run: (at: Date) => Promise<ReconcileSummary>,
    ): Promise<ReconcileSummary | SkippedPass> {
      const ev = parseReconcileEvent(event);
      const now = deps.clock();
      const remaining = context.getRemainingTimeInMillis();
      const start = { now, deadline: now.getTime() + remaining + DEADLINE_GRACE_MS };
      let id = await store.claimQueuedPass(start);
      if (!id && ev.kind === 'api') {
        // Its pass was started by an earlier invocation (the schedule's, or a redelivery): nothing left to do.
        logger.info('reconcile pass already covered', { passId: ev.passId });
        return {
          skipped: 'the pass this event asked for was started by an earlier invocation',
          passId: ev.passId,
        };
      }
      const at = ev.kind === 'schedule' && ev.scheduledTime ? new Date(ev.scheduledTime) : now;
      if (!id) {
        const suffix =
          ev.kind === 'schedule' && ev.executionId
            ? createHash('sha256').update(ev.executionId).digest('hex').slice(0, 8)
            : randomBytes(4).toString('hex');
        const scheduled = passId(at, suffix);
        id = await store.startScheduledPass(scheduled, {
          ...start,
          ...(ev.kind === 'schedule' && ev.scheduledTime ? { scheduledTime: ev.scheduledTime } : {}),
        });
        if (!id) {
          logger.info('reconcile event delivered twice; its pass ran already', { passId: scheduled });
          return {
            skipped: 'this scheduled event was delivered before; its pass ran already',
            passId: scheduled,
          };
        }
      }
      const pass = id;
      logger.appendKeys({ passId: pass });
      // Lambda gives no word at its timeout, so the pass records the failure itself just before.
      const margin = Math.min(2000, remaining / 4);
      const timer = setTimeout(() => {
        store
          .finishPass(pass, {
            error: `the pass did not finish within the reconcile Lambda's ${Math.ceil(remaining / 1000)} s timeout and was stopped; the reconcile log group says where it was`,
            timedOut: true,
          })
          .catch((e) => logger.error('could not record the timed-out pass', { error: e as Error }));
      }, remaining - margin);
      const killAt = now.getTime() + remaining;
      const work = run(at);
      inFlight.add(work);
      work.then(
        () => inFlight.delete(work),
        () => inFlight.delete(work),
      );
      try {
        const summary = await work;
        await store.finishPass(pass, {
          summary,
          digest: digestOf(summary),
          beforeTimeout: Date.now() < killAt,
        });
        return summary;
      } catch (e) {
        const error = `${(e as Error).name}: ${(e as Error).message}`;
        await store
          .finishPass(pass, { error, beforeTimeout: Date.now() < killAt })
          .catch((w) => logger.error('could not record the failed pass', { error: w as Error }));
        throw e;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

export type PassService = ReturnType<typeof passService>;
