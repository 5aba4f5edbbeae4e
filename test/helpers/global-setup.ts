import { startDynamoDbLocal } from '../../local/dynamodb-local';

// One DynamoDB Local for the whole integration run; each test file makes its own table (test/helpers/table.ts).
export default async function globalSetup(): Promise<void> {
  const ddb = await startDynamoDbLocal();
  process.env.LLMCAP_DYNAMODB_ENDPOINT = ddb.endpoint;
  (globalThis as { __ddbLocal?: typeof ddb }).__ddbLocal = ddb;
}
