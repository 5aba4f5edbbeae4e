import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import type { Clock } from './cloud-sim';

/**
 * Runs a Lambda handler in this process the way the Lambda runtime does, for the local control plane: a context
 * object, reserved concurrency, the START/END/REPORT lines, and everything the invocation writes to stdout
 * captured as its log lines (what CloudWatch Logs receives, and extracts EMF from, in AWS). Writes are attributed
 * by async context, so concurrent API requests or tests writing to stdout never end up in an invocation's log.
 * It also reports what Lambda publishes in AWS/Lambda: Invocations, Errors, Throttles and Duration.
 */

interface Capture {
  lines: string[];
  partial: string;
}

const invocation = new AsyncLocalStorage<Capture>();
let patched = false;

function patchStdout(): void {
  if (patched) return;
  patched = true;
  const original = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
    const c = invocation.getStore();
    if (!c) return (original as (...a: unknown[]) => boolean)(chunk, ...rest);
    c.partial += typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
    const parts = c.partial.split('\n');
    c.partial = parts.pop() ?? '';
    c.lines.push(...parts);
    const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
    done?.();
    return true;
  }) as typeof process.stdout.write;
}

export interface LambdaMetricDatum {
  namespace: 'AWS/Lambda';
  name: 'Invocations' | 'Errors' | 'Throttles' | 'Duration';
  dimensions: { Name: string; Value: string }[];
  timestamp: number;
  value: number;
  unit: 'Count' | 'Milliseconds';
}

export interface LocalFunctionOptions<E, R> {
  functionName: string;
  handler: (event: E, context: Context) => Promise<R>;
  region?: string;
  accountId?: string;
  memoryMb?: number;
  timeoutMs?: number;
  /** At most this many invocations at once; another one is throttled (TooManyRequestsException). */
  reservedConcurrency?: number;
  /** Timestamps of the AWS/Lambda metrics and of the log events. */
  clock?: Clock;
  /** Every line the invocation wrote to stdout, with the runtime's START/END/REPORT lines around them. */
  onLog?: (events: { timestamp: number; message: string }[]) => void;
  onMetric?: (d: LambdaMetricDatum) => void;
}

export interface Invocation<R> {
  requestId: string;
  /** The handler's result, when it returned. */
  result?: R;
  /** What Lambda reports for a failed invocation (FunctionError: Unhandled). */
  error?: { errorType: string; errorMessage: string };
  durationMs: number;
  logLines: string[];
}

export class TooManyRequestsException extends Error {
  override name = 'TooManyRequestsException';
}

export interface LocalFunction<E, R> {
  functionName: string;
  functionArn: string;
  logGroupName: string;
  invoke(event: E): Promise<Invocation<R>>;
}

export function localFunction<E, R>(o: LocalFunctionOptions<E, R>): LocalFunction<E, R> {
  patchStdout();
  const region = o.region ?? process.env.AWS_REGION ?? 'us-east-1';
  const accountId = o.accountId ?? '000000000000';
  const functionArn = `arn:aws:lambda:${region}:${accountId}:function:${o.functionName}`;
  const logGroupName = `/aws/lambda/${o.functionName}`;
  const timeoutMs = o.timeoutMs ?? 300_000;
  const now = () => (o.clock ?? { now: () => Date.now() }).now();
  const dims = [{ Name: 'FunctionName', Value: o.functionName }];
  const metric = (
    name: LambdaMetricDatum['name'],
    value: number,
    at: number,
    unit: LambdaMetricDatum['unit'] = 'Count',
  ) => o.onMetric?.({ namespace: 'AWS/Lambda', name, dimensions: dims, timestamp: at, value, unit });
  let running = 0;

  async function invoke(event: E): Promise<Invocation<R>> {
    const at = now();
    if (o.reservedConcurrency !== undefined && running >= o.reservedConcurrency) {
      metric('Throttles', 1, at);
      throw new TooManyRequestsException('Rate Exceeded.');
    }
    running++;
    const requestId = randomUUID();
    const started = Date.now();
    const context: Context = {
      callbackWaitsForEmptyEventLoop: true,
      functionName: o.functionName,
      functionVersion: '$LATEST',
      invokedFunctionArn: functionArn,
      memoryLimitInMB: String(o.memoryMb ?? 1024),
      awsRequestId: requestId,
      logGroupName,
      logStreamName: `${new Date(at).toISOString().slice(0, 10).replace(/-/g, '/')}/[$LATEST]${requestId.replace(/-/g, '')}`,
      getRemainingTimeInMillis: () => Math.max(0, timeoutMs - (Date.now() - started)),
      done: () => undefined,
      fail: () => undefined,
      succeed: () => undefined,
    };
    const capture: Capture = { lines: [`START RequestId: ${requestId} Version: $LATEST`], partial: '' };
    let result: R | undefined;
    let error: Invocation<R>['error'];
    try {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`)),
          timeoutMs,
        );
        timer.unref();
      });
      try {
        result = await invocation.run(capture, () => Promise.race([o.handler(event, context), timeout]));
      } finally {
        clearTimeout(timer);
      }
    } catch (e) {
      const err = e as Error;
      error = { errorType: err.name || 'Error', errorMessage: err.message };
      capture.lines.push(
        `${new Date(now()).toISOString()}\t${requestId}\tERROR\tInvoke Error \t${JSON.stringify({ ...error, stack: (err.stack ?? '').split('\n') })}`,
      );
    } finally {
      running--;
    }
    if (capture.partial) capture.lines.push(capture.partial);
    const durationMs = Date.now() - started;
    capture.lines.push(
      `END RequestId: ${requestId}`,
      `REPORT RequestId: ${requestId}\tDuration: ${durationMs.toFixed(2)} ms\tBilled Duration: ${Math.ceil(durationMs)} ms\tMemory Size: ${o.memoryMb ?? 1024} MB`,
    );
    metric('Invocations', 1, at);
    metric('Errors', error ? 1 : 0, at);
    metric('Duration', durationMs, at, 'Milliseconds');
    o.onLog?.(capture.lines.map((message) => ({ timestamp: at, message })));
    return { requestId, ...(error ? { error } : { result }), durationMs, logLines: capture.lines };
  }

  return { functionName: o.functionName, functionArn, logGroupName, invoke };
}
