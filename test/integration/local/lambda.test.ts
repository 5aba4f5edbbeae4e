import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { type LocalLambda, startLocalLambda } from '../../../local/lambda';
import { until } from '../../helpers/passes';

/**
 * The local Lambda (local/lambda.ts) through the real @aws-sdk/client-lambda: the Invoke semantics llmcap
 * depends on (docs/local.md lists them), each as AWS documents it.
 */

let lambda: LocalLambda;
let client: LambdaClient;
const calls: { fn: string; event: unknown; at: number }[] = [];
let active = 0;
let maxActive = 0;
const gates: (() => void)[] = [];
const DEST = 'arn:aws:sqs:us-east-1:000000000000:failures';

beforeAll(async () => {
  lambda = await startLocalLambda({
    retryDelayScale: 0.0001,
    functions: {
      echo: async (event) => ({ got: event }),
      // One at a time; each call waits for the test to open its gate.
      serial: {
        reservedConcurrency: 1,
        timeoutSeconds: 30,
        handler: async (event) => {
          calls.push({ fn: 'serial', event, at: Date.now() });
          maxActive = Math.max(maxActive, ++active);
          await new Promise<void>((r) => gates.push(r));
          active--;
          return { done: event };
        },
      },
      flaky: {
        async: { maximumRetryAttempts: 1, onFailure: DEST },
        handler: async (event) => {
          calls.push({ fn: 'flaky', event, at: Date.now() });
          throw new TypeError('the dependency is down');
        },
      },
      slow: {
        timeoutSeconds: 0.05,
        async: { maximumRetryAttempts: 0, onFailure: DEST },
        handler: () => new Promise((r) => setTimeout(r, 200)),
      },
      aging: {
        reservedConcurrency: 1,
        async: { maximumRetryAttempts: 0, maximumEventAgeSeconds: 0.05, onFailure: DEST },
        handler: async (event) => {
          calls.push({ fn: 'aging', event, at: Date.now() });
          await new Promise<void>((r) => gates.push(r));
        },
      },
    },
  });
  client = new LambdaClient({ endpoint: lambda.endpoint, region: 'us-east-1', maxAttempts: 1 });
});
afterAll(async () => {
  for (const g of gates.splice(0)) g();
  client.destroy();
  await lambda.stop();
});

const invoke = (name: string, payload: unknown, type?: 'Event' | 'RequestResponse' | 'DryRun') =>
  client.send(
    new InvokeCommand({
      FunctionName: name,
      ...(type ? { InvocationType: type } : {}),
      Payload: Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload)),
    }),
  );
const text = (p?: Uint8Array) => (p ? Buffer.from(p).toString('utf8') : '');
const openGates = async (n: number) => {
  await until(
    async () => gates.length,
    (l) => l >= n,
  );
  for (const g of gates.splice(0, n)) g();
};

describe('Invoke', () => {
  it('answers a synchronous invoke with the result, by name or ARN; DryRun with 204', async () => {
    const r = await invoke('echo', { a: 1 });
    expect(r.StatusCode).toBe(200);
    expect(r.ExecutedVersion).toBe('$LATEST');
    expect(JSON.parse(text(r.Payload))).toEqual({ got: { a: 1 } });
    const byArn = await invoke('arn:aws:lambda:us-east-1:000000000000:function:echo', { b: 2 });
    expect(JSON.parse(text(byArn.Payload))).toEqual({ got: { b: 2 } });
    expect((await invoke('echo', {}, 'DryRun')).StatusCode).toBe(204);
  });

  it('reports a function error as 200 with FunctionError Unhandled and the error as payload', async () => {
    const r = await invoke('flaky', { sync: true });
    expect(r.StatusCode).toBe(200);
    expect(r.FunctionError).toBe('Unhandled');
    expect(JSON.parse(text(r.Payload))).toMatchObject({
      errorType: 'TypeError',
      errorMessage: 'the dependency is down',
    });
  });

  it('refuses an unknown function, a payload that is not JSON, and one over the size limit', async () => {
    await expect(invoke('nope', {}, 'Event')).rejects.toMatchObject({
      name: 'ResourceNotFoundException',
      message: 'Function not found: arn:aws:lambda:us-east-1:000000000000:function:nope',
      $metadata: { httpStatusCode: 404 },
    });
    await expect(invoke('echo', '{"a":', 'RequestResponse')).rejects.toMatchObject({
      name: 'InvalidRequestContentException',
    });
    await expect(invoke('echo', { x: 'y'.repeat(1024 * 1024) }, 'Event')).rejects.toMatchObject({
      name: 'RequestTooLargeException',
      $metadata: { httpStatusCode: 413 },
    });
  });
});

describe('asynchronous invocations', () => {
  it('queues Event invocations (202) and runs them one at a time under reserved concurrency 1', async () => {
    calls.length = 0;
    maxActive = 0;
    const answers = await Promise.all([1, 2, 3].map((n) => invoke('serial', { n }, 'Event')));
    expect(answers.map((a) => a.StatusCode)).toEqual([202, 202, 202]);
    // While one runs, a synchronous invoke finds no concurrency left.
    await until(
      async () => active,
      (a) => a === 1,
    );
    await expect(invoke('serial', { n: 4 })).rejects.toMatchObject({
      name: 'TooManyRequestsException',
      Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded',
      $metadata: { httpStatusCode: 429 },
    });
    for (let i = 0; i < 3; i++) await openGates(1);
    await lambda.waitForIdle(10_000);
    expect(calls.map((c) => c.event)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(maxActive).toBe(1);
  });

  it('retries a failed event as configured, then sends its record to the on-failure destination', async () => {
    calls.length = 0;
    expect((await invoke('flaky', { job: 7 }, 'Event')).StatusCode).toBe(202);
    await lambda.waitForIdle(10_000);
    expect(calls.filter((c) => c.fn === 'flaky')).toHaveLength(2);
    expect(lambda.destinations.get(DEST)?.at(-1)).toEqual({
      version: '1.0',
      timestamp: expect.any(String),
      requestContext: {
        requestId: expect.any(String),
        functionArn: 'arn:aws:lambda:us-east-1:000000000000:function:flaky:$LATEST',
        condition: 'RetriesExhausted',
        approximateInvokeCount: 2,
      },
      requestPayload: { job: 7 },
      responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
      responsePayload: expect.objectContaining({
        errorType: 'TypeError',
        errorMessage: 'the dependency is down',
      }),
    });
  });

  it('ends a handler at its timeout, as a failure', async () => {
    await invoke('slow', { late: true }, 'Event');
    const rec = await until(
      async () => lambda.destinations.get(DEST)?.find((r) => (r.requestPayload as any)?.late),
      Boolean,
    );
    expect(rec?.responsePayload).toMatchObject({
      errorType: 'Sandbox.Timedout',
      errorMessage: expect.stringMatching(/Task timed out after 0\.05 seconds$/),
    });
    await lambda.waitForIdle(10_000);
  });

  it('discards an event that waited past its maximum age, unrun, to the destination', async () => {
    calls.length = 0;
    await invoke('aging', { first: true }, 'Event');
    await until(
      async () => calls.length,
      (n) => n === 1,
    );
    await invoke('aging', { second: true }, 'Event');
    // The second waits behind the first for longer than its 50 ms.
    await until(
      async () => Date.now(),
      (t) => t > calls[0]!.at + 100,
    );
    await openGates(1);
    await lambda.waitForIdle(10_000);
    expect(calls.map((c) => c.event)).toEqual([{ first: true }]);
    expect(lambda.destinations.get(DEST)?.at(-1)).toMatchObject({
      requestContext: { condition: 'EventAgeExceeded', approximateInvokeCount: 0 },
      requestPayload: { second: true },
    });
  });
});

describe('each attempt, through the Lambda runtime', () => {
  let own: LocalLambda;
  let c: LambdaClient;
  const logs: { fn: string; lines: string[] }[] = [];
  const metrics: { name: string; value: number }[] = [];
  const held: (() => void)[] = [];
  beforeAll(async () => {
    own = await startLocalLambda({
      functions: {
        printer: {
          reservedConcurrency: 1,
          timeoutSeconds: 30,
          async: { maximumRetryAttempts: 0 },
          handler: async (event) => {
            process.stdout.write(`${JSON.stringify({ printed: event })}\n`);
            await new Promise<void>((r) => held.push(r));
            if ((event as { fail?: boolean }).fail) throw new Error('asked to fail');
            return 'ok';
          },
        },
      },
      onLog: (fn, events) => logs.push({ fn, lines: events.map((e) => e.message) }),
      onMetric: (d) => metrics.push({ name: d.name, value: d.value }),
    });
    c = new LambdaClient({ endpoint: own.endpoint, region: 'us-east-1', maxAttempts: 1 });
  });
  afterAll(async () => {
    for (const r of held.splice(0)) r();
    c.destroy();
    await own.stop();
  });
  const send = (payload: unknown, type?: 'Event') =>
    c.send(
      new InvokeCommand({
        FunctionName: 'printer',
        ...(type ? { InvocationType: type } : {}),
        Payload: Buffer.from(JSON.stringify(payload)),
      }),
    );
  const release = async () => {
    await until(
      async () => held.length,
      (n) => n > 0,
    );
    held.shift()!();
  };

  it("keeps each invocation's stdout as its own log, and counts invocations, errors and throttles", async () => {
    await send({ n: 1 }, 'Event');
    await send({ n: 2, fail: true }, 'Event');
    await until(
      async () => held.length,
      (n) => n === 1,
    );
    // Printed by someone else while the invocation runs: not part of its log.
    process.stdout.write('printed by the test, not by the function\n');
    await expect(send({ n: 3 })).rejects.toMatchObject({ name: 'TooManyRequestsException' });
    await release();
    await release();
    await own.waitForIdle(10_000);
    expect(logs.map((l) => l.fn)).toEqual(['printer', 'printer']);
    const [first, second] = logs.map((l) => l.lines);
    expect(first).toEqual([
      expect.stringMatching(/^START RequestId: \S+ Version: \$LATEST$/),
      '{"printed":{"n":1}}',
      expect.stringMatching(/^END RequestId: /),
      expect.stringMatching(/^REPORT RequestId: .*\tDuration: /),
    ]);
    expect(second).toContain('{"printed":{"n":2,"fail":true}}');
    expect(logs.flatMap((l) => l.lines)).not.toContain('printed by the test, not by the function');
    expect(second!.some((l) => /\tERROR\tInvoke Error \t.*asked to fail/.test(l))).toBe(true);
    const sum = (name: string) => metrics.filter((m) => m.name === name).reduce((a, m) => a + m.value, 0);
    // The second event waited for the concurrency and the synchronous one was refused: two throttles.
    expect({
      invocations: sum('Invocations'),
      errors: sum('Errors'),
      throttles: sum('Throttles'),
    }).toEqual({ invocations: 2, errors: 1, throttles: 2 });
  });
});
