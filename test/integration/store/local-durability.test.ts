import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { dynamoClient } from '../../../lambdas/shared/clients';
import { type DynamoDbLocal, startDynamoDbLocal } from '../../../local/dynamodb-local';

/**
 * DynamoDB Local answers TransactWriteItems before its SQLite COMMIT has run (issue 30 §6): killed at that
 * moment, it comes back without the transaction. Persisted, it is run behind a proxy that answers a
 * transaction only once the COMMIT is done (local/dynamodb-local.ts), so a write the API acknowledged survives
 * a kill -9 of `npm start -- --persist`. Here the JVM is killed the instant each transaction resolves; without that
 * wait, every one of them was lost (8 of 8 in an experiment).
 */

const TABLE = 'durability';
let dir: string;
let ddb: DynamoDbLocal;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'llmcap-durability-'));
  ddb = await startDynamoDbLocal({ persistDir: dir });
  const c = dynamoClient(ddb.endpoint);
  await c.send(
    new CreateTableCommand({
      TableName: TABLE,
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  c.destroy();
});

afterAll(async () => {
  await ddb?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('keeps every transaction it answered when DynamoDB Local is killed the instant it answers', async () => {
  const lost: number[] = [];
  for (let i = 0; i < 3; i++) {
    const c = DynamoDBDocumentClient.from(dynamoClient(ddb.endpoint));
    await c.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: TABLE, Item: { pk: `a${i}`, v: i } } },
          { Put: { TableName: TABLE, Item: { pk: `b${i}`, v: i } } },
        ],
      }),
    );
    process.kill(ddb.pid, 'SIGKILL');
    c.destroy();
    await ddb.stop();
    ddb = await startDynamoDbLocal({ persistDir: dir });
    const after = DynamoDBDocumentClient.from(dynamoClient(ddb.endpoint));
    const got = await after.send(
      new GetCommand({ TableName: TABLE, Key: { pk: `a${i}` }, ConsistentRead: true }),
    );
    after.destroy();
    if (!got.Item) lost.push(i);
  }
  expect(lost).toEqual([]);
}, 120_000);
