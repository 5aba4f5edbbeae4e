import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/**
 * AWS clients are built once per Lambda container (or local process) and reused. Endpoints come from the
 * environment so that the same code talks to AWS or to the local control plane.
 */
let ddbDoc: DynamoDBDocumentClient | undefined;

export function dynamoEndpoint(): string | undefined {
  return process.env.LLMCAP_DYNAMODB_ENDPOINT || undefined;
}

export function dynamoClient(endpoint = dynamoEndpoint()): DynamoDBClient {
  return new DynamoDBClient({ endpoint, maxAttempts: 5 });
}

export function documentClient(): DynamoDBDocumentClient {
  ddbDoc ??= DynamoDBDocumentClient.from(dynamoClient(), {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  return ddbDoc;
}

/** For tests and the local control plane, which point at a fresh endpoint after start. */
export function resetClients(): void {
  ddbDoc = undefined;
}
