import { ADMITTER_TIMEOUT_SECONDS } from '../domain/reconcile-pass';
import { lambdaClient } from '../shared/clients';

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

/**
 * Runs the admitter once, synchronously (InvocationType RequestResponse), for the reconcile pass, and answers
 * its summary. The admitter has reserved concurrency 1, so while a stream batch runs it Lambda answers 429: that
 * is waited out (up to `waitMs`), since the pass places what the admitter decided.
 */
export async function invokeAdmitter<T>(functionName: string, waitMs = 60_000): Promise<T> {
  const { InvokeCommand } = await import('@aws-sdk/client-lambda');
  const end = Date.now() + waitMs;
  for (let attempt = 1; ; attempt++) {
    try {
      const out = await lambdaClient().send(
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
      if ((e as Error).name !== 'TooManyRequestsException' || Date.now() > end) throw e;
      await new Promise((r) => setTimeout(r, Math.min(1000, 50 * attempt)));
    }
  }
}
