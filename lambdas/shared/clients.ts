import type { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import type { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { EC2Client } from '@aws-sdk/client-ec2';
import type { EKSClient } from '@aws-sdk/client-eks';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { PricingClient } from '@aws-sdk/client-pricing';
import type { ServiceQuotasClient } from '@aws-sdk/client-service-quotas';
import type { SFNClient } from '@aws-sdk/client-sfn';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { config } from './config';
import { retryOptions } from './retry';

/**
 * Every AWS SDK client, built once per Lambda container (or local process) and reused, all with one retry
 * policy. Endpoints are the SDK's own business (the regional ones; AWS_ENDPOINT_URL_* locally), except the three
 * llmcap overrides of config.ts (DynamoDB Local, the cloud simulator's EKS and Auto Scaling, the local Step
 * Functions). Only DynamoDB is loaded with this module: each other SDK is required on its client's first use, so
 * that the api Lambda's cold start pays for none of the reconciler's (and for Lambda's only on POST /v1/reconcile).
 */

export { RETRY } from './retry';

/** The one retry policy (retry.ts), its waits scaled locally by LLMCAP_SDK_RETRY_TIME_SCALE; one per client. */
function retry(baseDelay?: number) {
  return retryOptions(config().sdkRetryTimeScale, baseDelay);
}

/**
 * Invoke answers an Event invocation in milliseconds; a call that takes longer is stuck. A connection that does
 * not open within 1 s is abandoned and retried; a request past 2 s is only logged as a warning by
 * @smithy/node-http-handler (it aborts it only with throwOnRequestTimeout, which is off). The reconcile pass's
 * synchronous invoke of the admitter waits for the whole run, and sets its own requestTimeout (aws/lambda.ts).
 */
const LAMBDA_TIMEOUTS = { connectionTimeout: 1_000, requestTimeout: 2_000 } as const;

interface Destroyable {
  destroy(): void;
}

const built = new Map<string, Destroyable>();

function once<C extends Destroyable>(key: string, make: () => C): C {
  let c = built.get(key) as C | undefined;
  if (!c) {
    c = make();
    built.set(key, c);
  }
  return c;
}

export function dynamoEndpoint(): string | undefined {
  return config().endpoints.dynamodb;
}

/** A plain DynamoDB client (tests and the local control plane create tables with it; the caller destroys it). */
export function dynamoClient(endpoint = dynamoEndpoint()): DynamoDBClient {
  // 25 ms: the DynamoDB client's own base delay, which the SDK's default policy would use.
  return new DynamoDBClient({ endpoint, ...retry(25) });
}

export function documentClient(): DynamoDBDocumentClient {
  return once('dynamodb', () =>
    DynamoDBDocumentClient.from(dynamoClient(), {
      marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
    }),
  );
}

export function eksClient(): EKSClient {
  return once('eks', () => {
    const { EKSClient } = require('@aws-sdk/client-eks') as typeof import('@aws-sdk/client-eks');
    return new EKSClient({ endpoint: config().endpoints.eks, ...retry() });
  });
}

/** Locally the cloud simulator serves Auto Scaling on the EKS endpoint. */
export function autoScalingClient(): AutoScalingClient {
  return once('autoscaling', () => {
    const { AutoScalingClient } =
      require('@aws-sdk/client-auto-scaling') as typeof import('@aws-sdk/client-auto-scaling');
    return new AutoScalingClient({ endpoint: config().endpoints.eks, ...retry() });
  });
}

export function sfnClient(): SFNClient {
  return once('sfn', () => {
    const { SFNClient } = require('@aws-sdk/client-sfn') as typeof import('@aws-sdk/client-sfn');
    return new SFNClient({ endpoint: config().endpoints.sfn, ...retry() });
  });
}

export function cloudWatchClient(): CloudWatchClient {
  return once('cloudwatch', () => {
    const { CloudWatchClient } =
      require('@aws-sdk/client-cloudwatch') as typeof import('@aws-sdk/client-cloudwatch');
    return new CloudWatchClient(retry());
  });
}

export function lambdaClient(): LambdaClient {
  return once('lambda', () => {
    const { LambdaClient } = require('@aws-sdk/client-lambda') as typeof import('@aws-sdk/client-lambda');
    return new LambdaClient({ ...retry(), requestHandler: LAMBDA_TIMEOUTS });
  });
}

/**
 * One attempt per send, for the admitter's synchronous invoke, which waits out the admitter's 429s itself
 * (aws/lambda.ts invokeAdmitter): through the shared policy every 429 was retried with backoff and slowed the
 * client's rate, so the pass asked only every few seconds and waited up to half a minute past its deadline.
 */
export function lambdaClientOneAttempt(): LambdaClient {
  return once('lambda-one-attempt', () => {
    const { LambdaClient } = require('@aws-sdk/client-lambda') as typeof import('@aws-sdk/client-lambda');
    return new LambdaClient({ maxAttempts: 1, requestHandler: LAMBDA_TIMEOUTS });
  });
}

export function ec2Client(region: string): EC2Client {
  return once(`ec2|${region}`, () => {
    const { EC2Client } = require('@aws-sdk/client-ec2') as typeof import('@aws-sdk/client-ec2');
    return new EC2Client({ region, ...retry() });
  });
}

export function pricingClient(region: string): PricingClient {
  return once(`pricing|${region}`, () => {
    const { PricingClient } = require('@aws-sdk/client-pricing') as typeof import('@aws-sdk/client-pricing');
    return new PricingClient({ region, ...retry() });
  });
}

/** Service Quotas, regional; locally the cloud simulator through the SDK's AWS_ENDPOINT_URL_SERVICE_QUOTAS. */
export function serviceQuotasClient(): ServiceQuotasClient {
  return once('service-quotas', () => {
    const { ServiceQuotasClient } =
      require('@aws-sdk/client-service-quotas') as typeof import('@aws-sdk/client-service-quotas');
    return new ServiceQuotasClient(retry());
  });
}

/**
 * For tests and the local control plane, which point the endpoints elsewhere after start: every client anew. The
 * DynamoDB client is dropped, not destroyed, as requests of the previous table may still be finishing with it.
 */
export function resetClients(): void {
  for (const [key, c] of built) if (key !== 'dynamodb') c.destroy();
  built.clear();
}
