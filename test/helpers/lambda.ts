import { resetClients } from '../../lambdas/shared/clients';
import { resetConfig } from '../../lambdas/shared/config';
import { type LocalHandler, type LocalLambda, startLocalLambda } from '../../local/lambda';

/**
 * A local Lambda for the in-process API tests, which run no control plane: POST /v1/reconcile reaches it
 * through @aws-sdk/client-lambda as it would AWS, and `handler` stands in for the reconciler (by default it
 * does nothing, so the pass stays QUEUED and the table changes only by the API's own writes).
 */
export async function reconcilerLambda(
  handler: LocalHandler = async () => ({ stub: true }),
): Promise<LocalLambda> {
  const lambda = await startLocalLambda({
    functions: { 'llmcap-test-reconcile': { handler, reservedConcurrency: 1, timeoutSeconds: 300 } },
  });
  process.env.AWS_ENDPOINT_URL_LAMBDA = lambda.endpoint;
  process.env.LLMCAP_RECONCILE_FUNCTION = 'llmcap-test-reconcile';
  resetConfig();
  resetClients();
  return lambda;
}
