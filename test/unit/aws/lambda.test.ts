import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { invokeAdmitter, invokeAsync } from '../../../lambdas/aws/lambda';
import { ADMITTER_TIMEOUT_SECONDS } from '../../../lambdas/domain/reconcile-pass';
import { resetClients } from '../../../lambdas/shared/clients';
import { resetConfig } from '../../../lambdas/shared/config';
import { type LocalLambda, startLocalLambda } from '../../../local/lambda';

/**
 * The Lambda adapter's timeouts, through the one Lambda client of clients.ts over the wire: the reconcile pass's
 * synchronous invoke of the admitter waits as long as the admitter may run, while an Event invoke, which Lambda
 * answers in milliseconds, is still flagged once it takes longer than the client's short requestTimeout. A run
 * past that timeout was flagged on every pass in AWS (and would have failed every pass, were it enforced).
 */

/** Longer than the Lambda client's 2 s requestTimeout for Event invokes (clients.ts). */
const PAST_EVENT_TIMEOUT_MS = 2_500;

let lambda: LocalLambda;
let slowEvents: Server;
let warnings: string[];

beforeAll(async () => {
  lambda = await startLocalLambda({
    functions: {
      'llmcap-test-admitter': {
        reservedConcurrency: 1,
        timeoutSeconds: ADMITTER_TIMEOUT_SECONDS,
        handler: async () => {
          await new Promise((r) => setTimeout(r, PAST_EVENT_TIMEOUT_MS));
          return { admitted: 3, commits: 1 };
        },
      },
    },
  });
  // A Lambda endpoint that takes too long to queue an event: 202, but only after the Event timeout.
  slowEvents = createServer((req, res) => {
    req.resume();
    setTimeout(() => {
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end();
    }, PAST_EVENT_TIMEOUT_MS);
  });
  await new Promise<void>((r) => slowEvents.listen(0, '127.0.0.1', r));
});

afterAll(async () => {
  delete process.env.AWS_ENDPOINT_URL_LAMBDA;
  resetConfig();
  resetClients();
  slowEvents.closeAllConnections();
  slowEvents.close();
  await lambda.stop();
});

beforeEach(() => {
  warnings = [];
  jest.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => {
    warnings.push(args.map(String).join(' '));
  });
});
afterEach(() => jest.restoreAllMocks());

function pointLambdaAt(endpoint: string): void {
  process.env.AWS_ENDPOINT_URL_LAMBDA = endpoint;
  resetConfig();
  resetClients();
}

describe('the Lambda adapter', () => {
  it("waits for the admitter's whole run, however much longer it takes than an Event invoke", async () => {
    pointLambdaAt(lambda.endpoint);
    const t0 = Date.now();
    await expect(invokeAdmitter('llmcap-test-admitter')).resolves.toEqual({ admitted: 3, commits: 1 });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(PAST_EVENT_TIMEOUT_MS);
    expect(warnings.filter((w) => w.includes('requestTimeout'))).toEqual([]);
  });

  it('still flags an Event invoke that takes longer than Lambda takes to queue an event', async () => {
    const { port } = slowEvents.address() as AddressInfo;
    pointLambdaAt(`http://127.0.0.1:${port}`);
    await invokeAsync('llmcap-test-reconcile', { source: 'test' });
    expect(warnings.filter((w) => w.includes('requestTimeout'))).toEqual([
      expect.stringContaining('exceeded the configured 2000 ms requestTimeout'),
    ]);
  });
});

describe("the reconcile pass's wait for a busy admitter", () => {
  it('asks again until its deadline, then says the stream kept the admitter busy', async () => {
    pointLambdaAt(lambda.endpoint);
    // Another run holds the admitter's one concurrency for PAST_EVENT_TIMEOUT_MS, as a stream batch does.
    let held = true;
    const holding = invokeAdmitter('llmcap-test-admitter').finally(() => {
      held = false;
    });
    await new Promise((r) => setTimeout(r, 300));
    // Through the SDK's own retries a wait of 200 ms ran for seconds (past the other run's end) and ended with
    // Lambda's "Rate Exceeded" or with a run of its own.
    await expect(invokeAdmitter('llmcap-test-admitter', 200)).rejects.toThrow(
      /the admitter stayed busy with the table's stream for 0 s .*this pass places what it decided last/,
    );
    // Given up at its deadline, while the other run still held the admitter.
    expect(held).toBe(true);
    await holding;
  });

  it('asks again after a Lambda 5xx, as the SDK policy it no longer goes through did', async () => {
    let asked = 0;
    const flaky = createServer((req, res) => {
      req.resume();
      asked++;
      if (asked === 1) {
        res.writeHead(500, { 'content-type': 'application/json', 'x-amzn-errortype': 'ServiceException' });
        res.end(JSON.stringify({ message: 'internal' }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ admitted: 1 }));
    });
    await new Promise<void>((r) => flaky.listen(0, '127.0.0.1', r));
    try {
      pointLambdaAt(`http://127.0.0.1:${(flaky.address() as AddressInfo).port}`);
      await expect(invokeAdmitter('llmcap-test-admitter', 5_000)).resolves.toEqual({ admitted: 1 });
      expect(asked).toBe(2);
    } finally {
      flaky.closeAllConnections();
      flaky.close();
    }
  });
});
