import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import type { Clock } from './cloud-sim';

/**
 * Runs one invocation of a Lambda handler in this process the way the Lambda runtime does: a context object, the
 * function's timeout, the START/END/REPORT lines, and everything the invocation writes to stdout captured as its
 * log lines (what CloudWatch Logs receives, and extracts EMF from, in AWS). Writes are attributed by async
 * context, so concurrent API requests or tests writing to stdout never end up in an invocation's log. It also
 * reports what Lambda publishes in AWS/Lambda: Invocations, Errors, Throttles and Duration.
 * Queueing, reserved concurrency and retries are the Invoke API's (local/lambda.ts), which runs each attempt here.
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

export type LocalHandler = (event: unknown, context: Context) => Promise<unknown>;

export interface RuntimeOptions {
  functionName: string;
  handler: LocalHandler;
  region?: string;
  accountId?: string;
  /** Default 128, as in AWS. */
  memoryMb?: number;
  /** Default 3 s, as in AWS. */
  timeoutMs?: number;
  /** Timestamps of the AWS/Lambda metrics and of the log events (the simulated CloudWatch's clock). */
  clock?: Clock;
  /** Every line the invocation wrote to stdout, with the runtime's START/END/REPORT lines around them. */
  onLog?: (events: { timestamp: number; message: string }[]) => void;
  onMetric?: (d: LambdaMetricDatum) => void;
}

export interface FunctionError {
  errorType: string;
  errorMessage: string;
  trace?: string[];
}

export interface Invocation<R = unknown> {
  requestId: string;
  /** The handler's result, when it returned. */
  result?: R;
  /** What Lambda reports for a failed invocation (FunctionError: Unhandled); Sandbox.Timedout at the timeout. */
  error?: FunctionError;
  durationMs: number;
  logLines: string[];
  /**
   * Set when the invocation timed out: Node cannot stop the handler, which runs on where Lambda would have ended
   * it; this settles when it does.
   */
  straggler?: Promise<void>;
}

export interface LambdaRuntime {
  functionName: string;
  functionArn: string;
  logGroupName: string;
  /** One invocation of the handler with a copy of `event` (as Lambda hands it a parsed payload). */
  run(event: unknown, requestId?: string): Promise<Invocation>;
  /** Counts an invocation Lambda refused or held back for want of concurrency (AWS/Lambda Throttles). */
  throttled(): void;
}

function errorOf(e: unknown): FunctionError {
  const err = e instanceof Error ? e : new Error(String(e));
  return {
    errorType: err.name || 'Error',
    errorMessage: err.message,
    ...(err.stack ? { trace: err.stack.split('\n') } : {}),
  };
}

export function lambdaRuntime(o: RuntimeOptions): LambdaRuntime {
  patchStdout();
  const region = o.region ?? process.env.AWS_REGION ?? 'us-east-1';
  const accountId = o.accountId ?? '000000000000';
  const functionArn = `arn:aws:lambda:${region}:${accountId}:function:${o.functionName}`;
  const logGroupName = `/aws/lambda/${o.functionName}`;
  const timeoutMs = o.timeoutMs ?? 3000;
  const memoryMb = o.memoryMb ?? 128;
  const now = () => (o.clock ?? { now: () => Date.now() }).now();
  const dims = [{ Name: 'FunctionName', Value: o.functionName }];
  const metric = (
    name: LambdaMetricDatum['name'],
    value: number,
    at: number,
    unit: LambdaMetricDatum['unit'] = 'Count',
  ) => o.onMetric?.({ namespace: 'AWS/Lambda', name, dimensions: dims, timestamp: at, value, unit });

  async function run(event: unknown, requestId: string = randomUUID()): Promise<Invocation> {
    const at = now();
    const started = Date.now();
    const context: Context = {
      callbackWaitsForEmptyEventLoop: true,
      functionName: o.functionName,
      functionVersion: '$LATEST',
      invokedFunctionArn: functionArn,
      memoryLimitInMB: String(memoryMb),
      awsRequestId: requestId,
      logGroupName,
      logStreamName: `${new Date(at).toISOString().slice(0, 10).replace(/-/g, '/')}/[$LATEST]${requestId.replace(/-/g, '')}`,
      getRemainingTimeInMillis: () => Math.max(0, timeoutMs - (Date.now() - started)),
      done: () => undefined,
      fail: () => undefined,
      succeed: () => undefined,
    };
    const capture: Capture = { lines: [`START RequestId: ${requestId} Version: $LATEST`], partial: '' };
    const work = invocation.run(capture, () =>
      Promise.resolve().then(() => o.handler(structuredClone(event), context)),
    );
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((r) => {
      timer = setTimeout(() => r('timeout'), timeoutMs);
    });
    const outcome = await Promise.race([
      work.then(
        (result) => ({ result }),
        (e: unknown) => ({ error: errorOf(e) }),
      ),
      timedOut,
    ]);
    clearTimeout(timer);
    let result: unknown;
    let error: FunctionError | undefined;
    let straggler: Promise<void> | undefined;
    if (outcome === 'timeout') {
      const message = `${new Date(now()).toISOString()} ${requestId} Task timed out after ${(timeoutMs / 1000).toFixed(2)} seconds`;
      error = { errorType: 'Sandbox.Timedout', errorMessage: message };
      capture.lines.push(message);
      straggler = work.then(
        () => undefined,
        () => undefined,
      );
    } else if ('error' in outcome) {
      error = outcome.error;
      capture.lines.push(
        `${new Date(now()).toISOString()}\t${requestId}\tERROR\tInvoke Error \t${JSON.stringify({ errorType: error.errorType, errorMessage: error.errorMessage, stack: error.trace ?? [] })}`,
      );
    } else {
      result = outcome.result;
    }
    if (capture.partial) capture.lines.push(capture.partial);
    const durationMs = Date.now() - started;
    capture.lines.push(
      `END RequestId: ${requestId}`,
      `REPORT RequestId: ${requestId}\tDuration: ${durationMs.toFixed(2)} ms\tBilled Duration: ${Math.ceil(durationMs)} ms\tMemory Size: ${memoryMb} MB${outcome === 'timeout' ? '\tStatus: timeout' : ''}`,
    );
    metric('Invocations', 1, at);
    metric('Errors', error ? 1 : 0, at);
    metric('Duration', durationMs, at, 'Milliseconds');
    o.onLog?.(capture.lines.map((message) => ({ timestamp: at, message })));
    return {
      requestId,
      ...(error ? { error } : { result }),
      durationMs,
      logLines: capture.lines,
      ...(straggler ? { straggler } : {}),
    };
  }

  return {
    functionName: o.functionName,
    functionArn,
    logGroupName,
    run,
    throttled: () => metric('Throttles', 1, now()),
  };
}
