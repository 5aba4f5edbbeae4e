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
