import { handler, type ReconcileEvent } from '../lambdas/reconcile/handler';
import type { ReconcileSummary } from '../lambdas/reconcile/reconcile';
import type { CloudSim } from './cloud-sim';
import { type Invocation, localFunction } from './lambda-runtime';

/**
 * "The reconcile function" of the local control plane: the real handler (middy and all) run by the local Lambda
 * runtime, its stdout sent to the simulated CloudWatch Logs (where its EMF becomes metrics) and its AWS/Lambda
 * metrics to the simulated CloudWatch. Every local pass goes through invoke(): the schedule, cp.reconcile() and
 * POST /v1/reconcile.
 */

export interface ReconcileFunctionOptions {
  sim: CloudSim;
  functionName: string;
  /** Lines a person should see (warnings and errors the handler logged, a failed invocation). */
  log?: (line: string) => void;
}

export interface ReconcileFunction {
  functionName: string;
  functionArn: string;
  /**
   * Runs one invocation. Invocations wait for each other: in AWS, reserved concurrency 1 throttles a second one
   * and Lambda retries it from its queue, so passes never overlap.
   */
  invoke(event?: ReconcileEvent): Promise<Invocation<ReconcileSummary>>;
  /** Resolves once no invocation is running or waiting. */
  idle(): Promise<void>;
}

export function startReconcileFunction(o: ReconcileFunctionOptions): ReconcileFunction {
  const cw = o.sim.cloudwatch;
  const fn = localFunction<ReconcileEvent, ReconcileSummary>({
    functionName: o.functionName,
    handler: (event, context) => handler(event, context) as Promise<ReconcileSummary>,
    region: o.sim.region,
    memoryMb: 1024,
    timeoutMs: 300_000,
    reservedConcurrency: 1,
    clock: o.sim.metricsClock,
    onLog: (events) => {
      cw.putLogEvents(events);
      for (const e of events) {
        const shown = shownLine(e.message);
        if (shown) o.log?.(shown);
      }
    },
    onMetric: (d) => cw.putDatapoint(d.namespace, d.name, d.dimensions, d.timestamp, [d.value], d.unit),
  });
  let queue: Promise<unknown> = Promise.resolve();
  return {
    functionName: fn.functionName,
    functionArn: fn.functionArn,
    invoke(event = {}) {
      const run = queue.then(() => fn.invoke(event));
      queue = run.catch(() => undefined);
      return run;
    },
    async idle() {
      let seen: Promise<unknown>;
      do {
        seen = queue;
        await seen;
      } while (seen !== queue);
    },
  };
}

/** A warning or error the handler logged (Powertools JSON), or the runtime's error line; undefined otherwise. */
function shownLine(message: string): string | undefined {
  if (message.includes('\tERROR\tInvoke Error')) return `reconcile failed: ${message.split('\t').at(-1)}`;
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
