import { DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient, dynamoClient } from '../../../lambdas/shared/clients';
import { config } from '../../../lambdas/shared/config';
import { sharedQuery, sharedRead } from '../../../lambdas/store/shared-read';
import { sendWrite } from '../../../lambdas/store/write';
import { freshTable } from '../../helpers/table';

/**
 * This process's readings (store/shared-read.ts) on DynamoDB Local: what a write's first decision may read. A
 * reading is reused only while young, holds every write of this process at once, and is never replaced by an
 * answer to a read sent before a write of this process landed. Another container is a client of its own.
 */

let other: DynamoDBDocumentClient;
let queries = 0;
const PK = 'READING';
const YOUNG = { maxAgeMs: 60_000 };

beforeAll(async () => {
  await freshTable('reads');
  other = DynamoDBDocumentClient.from(dynamoClient());
  documentClient().middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'QueryCommand') queries++;
      return next(args);
    },
    { step: 'initialize', name: 'countQueries' },
  );
});
afterAll(() => other.destroy());

const put = (sk: string, v: number) =>
  sendWrite(new PutCommand({ TableName: config().table, Item: { pk: PK, sk, v, note: undefined } }));
const values = async (age?: { maxAgeMs: number }) =>
  (await sharedQuery(PK, age)).map((r) => `${r.sk}=${r.v}`);

it('reuses a young reading without asking DynamoDB, and holds this process write at once, in key order', async () => {
  await put('b', 1);
  expect(await values()).toEqual(['b=1']);
  const before = queries;
  await put('a', 2);
  await put('b', 3);
  expect(await values(YOUNG)).toEqual(['a=2', 'b=3']);
  expect(queries).toBe(before);
  // As DynamoDB stores it: the undefined attribute the document client drops is not in the row either.
  expect((await sharedQuery(PK, YOUNG)).find((r) => r.sk === 'a')).not.toHaveProperty('note');
});

it("does not see another container's write until the reading is too old; a fresh read does", async () => {
  await other.send(new PutCommand({ TableName: config().table, Item: { pk: PK, sk: 'c', v: 4 } }));
  expect(await values(YOUNG)).toEqual(['a=2', 'b=3']);
  expect(await values({ maxAgeMs: 0 })).toEqual(['a=2', 'b=3', 'c=4']);
  expect(await values(YOUNG)).toEqual(['a=2', 'b=3', 'c=4']);
});

it('drops the reading on a write it cannot replay (an update), so the next asks DynamoDB', async () => {
  await sendWrite(
    new UpdateCommand({
      TableName: config().table,
      Key: { pk: PK, sk: 'a' },
      UpdateExpression: 'SET v = :v',
      ExpressionAttributeValues: { ':v': 5 },
    }),
  );
  const before = queries;
  expect(await values(YOUNG)).toEqual(['a=5', 'b=3', 'c=4']);
  expect(queries).toBe(before + 1);
});

it('keeps no answer to a read that was in flight when a write of this process landed', async () => {
  // A read of another partition held in flight (its answer, from before the write, released by hand) while this
  // process writes there: the answer reaches its callers, and is not kept as the reading.
  let release!: (rows: Record<string, unknown>[]) => void;
  const inFlight = sharedRead(
    'partition#LATE',
    () => new Promise<Record<string, unknown>[]>((r) => (release = r)),
  );
  await new Promise((r) => setImmediate(r));
  await sendWrite(new PutCommand({ TableName: config().table, Item: { pk: 'LATE', sk: 'x', v: 7 } }));
  release([]);
  expect(await inFlight).toEqual([]);
  const before = queries;
  expect((await sharedQuery('LATE', YOUNG)).map((r) => r.v)).toEqual([7]);
  expect(queries).toBe(before + 1);
});
