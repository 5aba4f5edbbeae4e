import {
  CreateTableCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';

/**
 * One table holds everything. Items are grouped by kind under one partition key each (`COMPUTE`, `MODEL`,
 * ...) with the name as sort key, so that every list is a Query and no request path ever Scans. Only the store
 * modules know these formats; workflows receive the key they must write in their input.
 */
export function tableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'sk', AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
  };
}

/** Creates the table if missing: the local control plane and the tests use the same definition as CDK. */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(new CreateTableCommand(tableDefinition(tableName)));
  } catch (e) {
    if ((e as Error).name !== 'ResourceInUseException') throw e;
  }
}
