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

/**
 * The partitions admission reads: a write to any of them is a reason for the admitter to decide again (the
 * event source mapping's filter, in infra and locally). Its own ADMISSION and ADMITTER writes are not, so a run
 * never triggers another.
 */
// WORKLOAD is not among them: the reconciler rewrites it as pods and load move; what admission reads of load
// is the DEMAND item, written only when the replicas asked for change (store/demand.ts).
export const ADMISSION_INPUTS = ['MODEL', 'COMPUTE', 'SCOPE', 'QUOTA', 'NODETYPE', 'DEMAND'] as const;
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
    // The admitter's trigger (lambdas/admitter): keys are all it needs, since it decides the whole world each run.
    StreamSpecification: { StreamEnabled: true, StreamViewType: 'KEYS_ONLY' },
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
