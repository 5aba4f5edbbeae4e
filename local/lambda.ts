import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from './cloud-sim';
import {
  type FunctionError,
  type Invocation,
  type LambdaMetricDatum,
  type LambdaRuntime,
  type LocalHandler,
  lambdaRuntime,
} from './lambda-runtime';

/**
 * A local Lambda endpoint: the Invoke operation (REST-JSON, `POST /2015-03-31/functions/{name}/invocations`)
 * for the unmodified @aws-sdk/client-lambda, pointed here by AWS_ENDPOINT_URL_LAMBDA. It keeps the
 * semantics llmcap depends on:
 *  - `Event` invocations answer 202 and wait in a queue; they run no more at once than the function's
 *    reserved concurrency (1 for reconcile), each with its timeout;
 *  - a failed or timed-out event is retried per the function's async config (AWS: up to 2 retries, 1 and 2
 *    minutes apart); an event older than its maximum age is discarded unrun; either way, the invocation
 *    record goes to the on-failure destination if one is configured, in the shape Lambda sends;
 *  - `RequestResponse` runs at once and answers the result, or 429 TooManyRequestsException when the reserved
 *    concurrency is in use; a function error answers 200 with X-Amz-Function-Error: Unhandled;
 *  - an unknown function is 404 ResourceNotFoundException; payloads over 6 MB (sync) or 1 MB (async) are
 *    413 RequestTooLargeException; a payload that is not JSON is 400 InvalidRequestContentException.
 * Functions run in this process, each attempt through the Lambda runtime of local/lambda-runtime.ts (context,
 * timeout, the invocation's stdout as its log, AWS/Lambda metrics). Throttles counts a synchronous invoke
 * refused with 429 and an event that had to wait for concurrency (once per event: AWS's poller may count more).
 */

export type { Invocation, LocalHandler } from './lambda-runtime';

export interface LocalFunction {
  handler: LocalHandler;
  /** Reserved concurrency; without it, unreserved (never a limit locally). */
  reservedConcurrency?: number;
  /** Default 3, as in AWS. */
  timeoutSeconds?: number;
  memoryMb?: number;
  /** PutFunctionEventInvokeConfig's settings; AWS's defaults are 2 retries and 6 hours. */
  async?: { maximumRetryAttempts?: number; maximumEventAgeSeconds?: number; onFailure?: string };
}

/** The invocation record Lambda sends to an on-failure destination. */
export interface DestinationRecord {
  version: '1.0';
  timestamp: string;
  requestContext: {
    requestId: string;
    functionArn: string;
    condition: 'RetriesExhausted' | 'EventAgeExceeded';
    approximateInvokeCount: number;
  };
  requestPayload: unknown;
  responseContext?: { statusCode: number; executedVersion: string; functionError: 'Unhandled' };
  responsePayload?: FunctionError;
}

export interface LocalLambdaOptions {
  port?: number;
  host?: string;
  region?: string;
  account?: string;
  functions: Record<string, LocalHandler | LocalFunction>;
  /** Multiplies the delays between retries of a failed event (AWS: 60 s, then 120 s); default 1. */
  retryDelayScale?: number;
  /** Called with each record sent to an on-failure destination (the control plane prints it). */
  onDestination?: (destinationArn: string, record: DestinationRecord) => void;
  /** Called after each attempt, outside its log capture (the control plane reports a pass with it). */
  onInvocation?: (functionName: string, event: unknown, invocation: Invocation) => void;
  /** Timestamps of the AWS/Lambda metrics and log events (the simulated CloudWatch's clock). */
  clock?: Clock;
  /** Each attempt's log events (stdout, START/END/REPORT), as CloudWatch Logs receives them. */
  onLog?: (functionName: string, events: { timestamp: number; message: string }[]) => void;
  onMetric?: (d: LambdaMetricDatum) => void;
  log?: (line: string) => void;
}

export interface LocalLambda {
  endpoint: string;
  functionArn(name: string): string;
  /** Every record sent to each destination ARN, oldest first. */
  destinations: Map<string, DestinationRecord[]>;
  /**
   * Queues an event as an `Event` invoke does, and resolves with its last attempt once it has run (its error
   * set when every attempt failed; an error without log lines when it expired unrun or the Lambda stopped): the
   * schedule and tests use it to drive a pass.
   */
  enqueue(name: string, event: unknown): Promise<Invocation>;
  /** Resolves once no event is queued or running (handlers still running past their timeout included). */
  waitForIdle(timeoutMs?: number): Promise<void>;
  /**
   * Takes one unit of the function's concurrency, as a long invocation would, until `release()`: with reserved
   * concurrency 1 every other invocation is throttled meanwhile (tests hold a reconcile pass this way).
   */
  occupy(name: string): { release(): void };
  stop(): Promise<void>;
}

const SYNC_LIMIT = 6 * 1024 * 1024;
const ASYNC_LIMIT = 1024 * 1024;
const RETRY_DELAYS_MS = [60_000, 120_000];

class LambdaError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status: number,
    readonly extra: Record<string, string> = {},
  ) {
    super(message);
  }
}

interface Queued {
  requestId: string;
  event: unknown;
  enqueuedAt: number;
  attempts: number;
  notBefore: number;
  /** Counted once in Throttles when it first had to wait for concurrency. */
  throttled?: boolean;
  done(result: Invocation): void;
}

interface Fn {
  name: string;
  arn: string;
  cfg: LocalFunction;
  runtime: LambdaRuntime;
  running: number;
  queue: Queued[];
}

/** An outcome no attempt produced: the event expired unrun, or the Lambda stopped before running it. */
const unrun = (requestId: string, error: FunctionError): Invocation => ({
  requestId,
  error,
  durationMs: 0,
  logLines: [],
});

export async function startLocalLambda(opts: LocalLambdaOptions): Promise<LocalLambda> {
  const region = opts.region ?? process.env.AWS_REGION ?? 'us-east-1';
  const account = opts.account ?? '000000000000';
  const log = opts.log ?? (() => undefined);
  const scale = opts.retryDelayScale ?? 1;
  const arnOf = (name: string) => `arn:aws:lambda:${region}:${account}:function:${name}`;
  const fns = new Map<string, Fn>();
  for (const [name, f] of Object.entries(opts.functions)) {
    const cfg = typeof f === 'function' ? { handler: f } : f;
    fns.set(name, {
      name,
      arn: arnOf(name),
      cfg,
      runtime: lambdaRuntime({
        functionName: name,
        handler: cfg.handler,
        region,
        accountId: account,
        timeoutMs: (cfg.timeoutSeconds ?? 3) * 1000,
        ...(cfg.memoryMb ? { memoryMb: cfg.memoryMb } : {}),
        ...(opts.clock ? { clock: opts.clock } : {}),
        ...(opts.onLog ? { onLog: (events) => opts.onLog!(name, events) } : {}),
        ...(opts.onMetric ? { onMetric: opts.onMetric } : {}),
      }),
      running: 0,
      queue: [],
    });
  }
  const destinations = new Map<string, DestinationRecord[]>();
  // Handlers still running after their timeout: Lambda would have stopped them; here they are only awaited.
  const stray = new Set<Promise<unknown>>();
  const timers = new Set<NodeJS.Timeout>();
  const idleWaiters: Array<() => void> = [];
  let stopped = false;

  /** Name, ARN (`arn:aws:lambda:...:function:name`), partial ARN (`account:function:name`), or any with `:$LATEST`. */
  function resolve(raw: string, qualifier?: string): Fn {
    const m =
      /^(?:arn:aws[\w-]*:lambda:[\w-]+:\d{12}:function:|\d{12}:function:)?([\w-]{1,64})(?::([\w$-]+))?$/.exec(
        raw,
      );
    const q = qualifier ?? m?.[2];
    const fn = m ? fns.get(m[1]!) : undefined;
    if (!fn || (q !== undefined && q !== '$LATEST')) {
      const arn = m ? `${arnOf(m[1]!)}${q ? `:${q}` : ''}` : raw;
      throw new LambdaError('ResourceNotFoundException', `Function not found: ${arn}`, 404);
    }
    return fn;
  }

  /** One attempt through the function's runtime; a handler still running past its timeout is awaited on stop. */
  async function runOnce(fn: Fn, event: unknown, requestId: string): Promise<Invocation> {
    const inv = await fn.runtime.run(event, requestId);
    if (inv.straggler) {
      const p: Promise<unknown> = inv.straggler.finally(() => {
        stray.delete(p);
        queueMicrotask(notifyIdle);
      });
      stray.add(p);
    }
    opts.onInvocation?.(fn.name, event, inv);
    return inv;
  }

  function toDestination(
    fn: Fn,
    q: Queued,
    condition: DestinationRecord['requestContext']['condition'],
    error?: FunctionError,
  ) {
    const dest = fn.cfg.async?.onFailure;
    log(
      `lambda ${fn.name}: event ${q.requestId} ${condition === 'EventAgeExceeded' ? 'expired unrun' : `failed ${q.attempts} time(s)`}${error ? ` (${error.errorType}: ${error.errorMessage})` : ''}${dest ? `; record sent to ${dest}` : '; discarded (no on-failure destination)'}`,
    );
    if (!dest) return;
    const record: DestinationRecord = {
      version: '1.0',
      timestamp: new Date().toISOString(),
      requestContext: {
        requestId: q.requestId,
        functionArn: `${fn.arn}:$LATEST`,
        condition,
        approximateInvokeCount: q.attempts,
      },
      requestPayload: q.event,
      ...(error
        ? {
            responseContext: {
              statusCode: 200,
              executedVersion: '$LATEST',
              functionError: 'Unhandled' as const,
            },
            responsePayload: error,
          }
        : {}),
    };
    const list = destinations.get(dest) ?? [];
    list.push(record);
    destinations.set(dest, list);
    opts.onDestination?.(dest, record);
  }

  const limitOf = (fn: Fn) => fn.cfg.reservedConcurrency ?? Number.POSITIVE_INFINITY;

  function busy(): boolean {
    for (const fn of fns.values()) if (fn.running > 0 || fn.queue.length > 0) return true;
    return stray.size > 0;
  }

  function notifyIdle(): void {
    if (busy()) return;
    for (const w of idleWaiters.splice(0)) w();
  }

  /** Starts queued events while the function has concurrency to spare; retries wait their delay. */
  function pump(fn: Fn): void {
    if (stopped) return;
    const maxAge = (fn.cfg.async?.maximumEventAgeSeconds ?? 21_600) * 1000;
    while (fn.running < limitOf(fn)) {
      const now = Date.now();
      const i = fn.queue.findIndex((q) => q.notBefore <= now);
      if (i < 0) break;
      const q = fn.queue.splice(i, 1)[0]!;
      if (now - q.enqueuedAt > maxAge) {
        toDestination(fn, q, 'EventAgeExceeded');
        q.done(
          unrun(q.requestId, { errorType: 'EventAgeExceeded', errorMessage: 'the event expired unrun' }),
        );
        continue;
      }
      fn.running++;
      q.attempts++;
      void runOnce(fn, q.event, q.requestId).then((outcome) => {
        fn.running--;
        if (!outcome.error) q.done(outcome);
        else if (q.attempts <= (fn.cfg.async?.maximumRetryAttempts ?? 2) && !stopped) {
          const delay = (RETRY_DELAYS_MS[q.attempts - 1] ?? RETRY_DELAYS_MS.at(-1)!) * scale;
          q.notBefore = Date.now() + delay;
          fn.queue.push(q);
          const t = setTimeout(() => {
            timers.delete(t);
            pump(fn);
          }, delay);
          timers.add(t);
        } else {
          toDestination(fn, q, 'RetriesExhausted', outcome.error);
          q.done(outcome);
        }
        pump(fn);
        notifyIdle();
      });
    }
    // What is left due could not start: the concurrency is in use, which Lambda counts as a throttle.
    const now = Date.now();
    for (const q of fn.queue)
      if (!q.throttled && q.notBefore <= now && fn.running >= limitOf(fn)) {
        q.throttled = true;
        fn.runtime.throttled();
      }
    notifyIdle();
  }

  function enqueueEvent(fn: Fn, event: unknown, done: Queued['done']): string {
    const requestId = randomUUID();
    if (stopped) {
      done(unrun(requestId, { errorType: 'Stopped', errorMessage: 'the local Lambda has stopped' }));
      return requestId;
    }
    fn.queue.push({ requestId, event, enqueuedAt: Date.now(), attempts: 0, notBefore: 0, done });
    queueMicrotask(() => pump(fn));
    return requestId;
  }

  function readBody(req: IncomingMessage): Promise<Buffer> {
    return new Promise((res, rej) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => res(Buffer.concat(chunks)));
      req.on('error', rej);
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = randomUUID();
    const url = new URL(req.url ?? '/', 'http://localhost');
    const m = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(url.pathname);
    if (req.method !== 'POST' || !m)
      throw new LambdaError(
        'UnknownOperationException',
        `unsupported operation ${req.method} ${url.pathname}`,
        404,
      );
    const fn = resolve(decodeURIComponent(m[1]!), url.searchParams.get('Qualifier') ?? undefined);
    const type = String(req.headers['x-amz-invocation-type'] ?? 'RequestResponse');
    if (!['Event', 'RequestResponse', 'DryRun'].includes(type))
      throw new LambdaError(
        'InvalidParameterValueException',
        `1 validation error detected: Value '${type}' at 'invocationType' failed to satisfy constraint: Member must satisfy enum value set: [Event, RequestResponse, DryRun]`,
        400,
      );
    const body = await readBody(req);
    const limit = type === 'Event' ? ASYNC_LIMIT : SYNC_LIMIT;
    if (body.length > limit)
      throw new LambdaError(
        'RequestTooLargeException',
        `Request must be smaller than ${limit} bytes for the InvokeFunction operation`,
        413,
      );
    let event: unknown;
    try {
      event = body.length ? JSON.parse(body.toString('utf8')) : {};
    } catch {
      throw new LambdaError('InvalidRequestContentException', 'Could not parse request body into json', 400);
    }
    if (type === 'DryRun') {
      res.writeHead(204, { 'x-amzn-requestid': requestId });
      res.end();
      return;
    }
    if (type === 'Event') {
      const id = enqueueEvent(fn, event, () => undefined);
      res.writeHead(202, { 'x-amzn-requestid': id });
      res.end();
      return;
    }
    if (fn.running >= limitOf(fn)) {
      fn.runtime.throttled();
      throw new LambdaError('TooManyRequestsException', 'Rate Exceeded.', 429, {
        Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded',
      });
    }
    fn.running++;
    const outcome = await runOnce(fn, event, requestId).finally(() => {
      fn.running--;
      pump(fn);
    });
    const text = JSON.stringify(outcome.error ?? outcome.result ?? null);
    res.writeHead(200, {
      'content-type': 'application/json',
      'x-amzn-requestid': requestId,
      'x-amz-executed-version': '$LATEST',
      ...(outcome.error ? { 'x-amz-function-error': 'Unhandled' } : {}),
    });
    res.end(text);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      const err =
        e instanceof LambdaError ? e : new LambdaError('ServiceException', (e as Error).message, 500);
      res.writeHead(err.status, {
        'content-type': 'application/json',
        'x-amzn-errortype': err.type,
        'x-amzn-requestid': randomUUID(),
      });
      res.end(
        JSON.stringify({ Type: err.status >= 500 ? 'Service' : 'User', message: err.message, ...err.extra }),
      );
    });
  });
  await new Promise<void>((r, j) => {
    server.once('error', j);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => r());
  });
  const { port } = server.address() as AddressInfo;

  const occupy = (name: string) => {
    const fn = fns.get(name);
    if (!fn) throw new Error(`no function ${name} in this local Lambda`);
    fn.running++;
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        fn.running--;
        pump(fn);
        notifyIdle();
      },
    };
  };

  return {
    occupy,
    endpoint: `http://${opts.host ?? '127.0.0.1'}:${port}`,
    functionArn: (name) => resolve(name).arn,
    destinations,
    enqueue: (name, event) =>
      new Promise((res) => {
        enqueueEvent(resolve(name), event, res);
      }),
    waitForIdle: (timeoutMs = 60_000) =>
      new Promise<void>((res, rej) => {
        if (!busy()) return res();
        const t = setTimeout(
          () => rej(new Error(`Lambda events still queued or running after ${timeoutMs} ms`)),
          timeoutMs,
        );
        idleWaiters.push(() => {
          clearTimeout(t);
          res();
        });
      }),
    async stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      // Queued events are dropped, as a deleted function's would be; running ones are let finish.
      for (const fn of fns.values())
        for (const q of fn.queue.splice(0))
          q.done(unrun(q.requestId, { errorType: 'Stopped', errorMessage: 'the local Lambda stopped' }));
      const deadline = Date.now() + 30_000;
      while ([...fns.values()].some((f) => f.running > 0) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      let t: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...stray]), new Promise((r) => (t = setTimeout(r, 5000)))]);
      clearTimeout(t);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      for (const w of idleWaiters.splice(0)) w();
    },
  };
}
