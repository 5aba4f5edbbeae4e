import { ADMITTER_TIMEOUT_SECONDS } from '../domain/reconcile-pass';
import { lambdaClient, lambdaClientOneAttempt } from '../shared/clients';

/**
 * Invokes the reconcile Lambda for POST /v1/reconcile. The Lambda SDK is loaded on first use (only that route
 * needs it, so the api Lambda's cold start does not pay for it); its endpoint is the SDK's own business: in AWS
 * the regional one, locally AWS_ENDPOINT_URL_LAMBDA, which points it at the local Lambda.
 */

/** Queues `event` for the function (InvocationType Event): Lambda answers 202 once the event is queued. */
export async function invokeAsync(functionName: string, event: unknown): Promise<void> {
  const { InvokeCommand } = await import('@aws-sdk/client-lambda');
  const out = await lambdaClient().send(
    new InvokeCommand({
      FunctionName: functionName,
      InvocationType: 'Event',
      Payload: Buffer.from(JSON.stringify(event)),
    }),
  );
  if (out.StatusCode !== 202) throw new Error(`Lambda answered ${out.StatusCode} to an Event invoke`);
}

/**
 * How long a synchronous invoke of the admitter may take: Lambda answers once the run ends, which may be its whole
 * timeout after an init phase (at most 10 s on demand). The Lambda client's own requestTimeout (clients.ts) is
 * for Event invokes, which answer in milliseconds: a run that outlasts it would be flagged (or, should the SDK
 * enforce it, aborted) on every pass.
 */
export const ADMITTER_INVOKE_TIMEOUT_MS = (ADMITTER_TIMEOUT_SECONDS + 10) * 1000;

/** Connection errors Node reports when a request is cut off: as the SDK's policy, they are asked again. */
const DROPPED = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT']);

/** Most often the pass asks a busy admitter again: 4 a second, well under Lambda's invoke rate for one function. */
const ADMITTER_POLL_MS = 250;

/**
 * Runs the admitter once, synchronously (InvocationType RequestResponse), for the reconcile pass, and answers
 * its summary. The admitter has reserved concurrency 1, so while a stream batch runs it Lambda answers 429: that
 * is waited out (up to `waitMs`, asking again every ADMITTER_POLL_MS at most), since the pass places what the
 * admitter decided. Each ask is one attempt (lambdaClientOneAttempt): the SDK's own retries would ask less often
 * and overrun the wait.
 */
export async function invokeAdmitter<T>(functionName: string, waitMs = 60_000): Promise<T> {
  const { InvokeCommand } = await import('@aws-sdk/client-lambda');
  const end = Date.now() + waitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      const out = await lambdaClientOneAttempt().send(
        new InvokeCommand({
          FunctionName: functionName,
          InvocationType: 'RequestResponse',
          Payload: Buffer.from(JSON.stringify({ source: 'llmcap.reconcile' })),
        }),
        { requestTimeout: ADMITTER_INVOKE_TIMEOUT_MS },
      );
      const text = out.Payload ? Buffer.from(out.Payload).toString('utf8') : '';
      if (out.FunctionError) throw new Error(`the admitter failed: ${text.slice(0, 500)}`);
      return JSON.parse(text) as T;
    } catch (e) {
      const err = e as Error & {
        code?: string;
        $retryable?: unknown;
        $metadata?: { httpStatusCode?: number };
      };
      const busy = err.name === 'TooManyRequestsException';
      // What the SDK's policy retried before: Lambda's 5xx, the errors the SDK marks retryable, a dropped
      // connection. Asking again at worst runs the admitter twice, which decides the same.
      const transient =
        (err.$metadata?.httpStatusCode ?? 0) >= 500 ||
        err.$retryable !== undefined ||
        err.name === 'TimeoutError' ||
        DROPPED.has(err.code ?? '');
      if (!busy && !transient) throw e;
      if (Date.now() > end && !busy) throw e;
      if (Date.now() > end)
        throw new Error(
          `the admitter stayed busy with the table's stream for ${Math.round(waitMs / 1000)} s (reserved concurrency 1): ` +
            "this pass places what it decided last; the stream's runs decide on this pass's observations",
        );
      await new Promise((r) => setTimeout(r, Math.min(ADMITTER_POLL_MS, 50 * attempt)));
    }
  }
}
