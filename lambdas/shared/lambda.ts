import type { LambdaClient } from '@aws-sdk/client-lambda';

/**
 * The Lambda client, built once per container and loaded on first use (only POST /v1/reconcile needs it, so
 * the api Lambda's cold start does not pay for it). Its endpoint is the SDK's own business: in AWS the
 * regional one; locally AWS_ENDPOINT_URL_LAMBDA, which the SDK honours, points it at the local Lambda
 * simulator. Timeouts keep an Invoke within the API's 29 s budget when the service is slow to answer.
 */
let sdk: Promise<typeof import('@aws-sdk/client-lambda')> | undefined;
let client: LambdaClient | undefined;

async function lambda() {
  sdk ??= import('@aws-sdk/client-lambda');
  const m = await sdk;
  client ??= new m.LambdaClient({
    maxAttempts: 3,
    requestHandler: { connectionTimeout: 2000, requestTimeout: 5000 },
  });
  return { m, client };
}

export function resetLambdaClient(): void {
  client?.destroy();
  client = undefined;
}

/** Queues `event` for the function (InvocationType Event): Lambda answers 202 once the event is queued. */
export async function invokeAsync(functionName: string, event: unknown): Promise<void> {
  const { m, client: c } = await lambda();
  const out = await c.send(
    new m.InvokeCommand({
      FunctionName: functionName,
      InvocationType: 'Event',
      Payload: Buffer.from(JSON.stringify(event)),
    }),
  );
  if (out.StatusCode !== 202) throw new Error(`Lambda answered ${out.StatusCode} to an Event invoke`);
}
