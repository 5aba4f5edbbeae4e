import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { batchGet } from '../../../lambdas/store/batch-get';

/**
 * The point-read batcher's adapter (store/batch-get.ts): what one turn asks goes as one BatchGetItem, a key asked
 * twice once, keys DynamoDB leaves unprocessed are asked again, and a failure reaches every caller. DynamoDB
 * itself answers it in the integration tests (test/integration/api/write-reads.test.ts).
 */

const ddb = mockClient(DynamoDBDocumentClient);
const table = 'batch-get-unit';
const saved = process.env.LLMCAP_TABLE;
beforeAll(() => {
  process.env.LLMCAP_TABLE = table;
});
afterAll(() => {
  if (saved === undefined) delete process.env.LLMCAP_TABLE;
  else process.env.LLMCAP_TABLE = saved;
  ddb.restore();
});
beforeEach(() => ddb.reset());

const item = (pk: string, sk: string, v: number) => ({ pk, sk, v });
const sent = () => ddb.commandCalls(BatchGetCommand).map((c) => c.args[0].input.RequestItems![table]!);

it('sends the keys of one turn in one request, a key asked twice once, and answers each caller its item', async () => {
  ddb.on(BatchGetCommand).resolves({ Responses: { [table]: [item('A', '1', 1), item('B', '2', 2)] } });
  const [a, b, again, missing] = await Promise.all([
    batchGet({ pk: 'A', sk: '1' }),
    batchGet({ pk: 'B', sk: '2' }),
    batchGet({ pk: 'A', sk: '1' }),
    batchGet({ pk: 'C', sk: '3' }),
  ]);
  expect([a?.v, b?.v, again?.v, missing]).toEqual([1, 2, 1, undefined]);
  expect(sent()).toHaveLength(1);
  expect(sent()[0]!.Keys).toHaveLength(3);
  expect(sent()[0]!.ConsistentRead).toBe(false);
});

it('keeps strongly consistent reads in a request of their own', async () => {
  ddb.on(BatchGetCommand).resolves({ Responses: { [table]: [] } });
  await Promise.all([batchGet({ pk: 'A', sk: '1' }, { consistent: true }), batchGet({ pk: 'B', sk: '2' })]);
  expect(
    sent()
      .map((r) => r.ConsistentRead)
      .sort(),
  ).toEqual([false, true]);
});

it('asks again for the keys DynamoDB left unprocessed', async () => {
  ddb
    .on(BatchGetCommand)
    .resolvesOnce({
      Responses: { [table]: [item('A', '1', 1)] },
      UnprocessedKeys: { [table]: { Keys: [{ pk: 'B', sk: '2' }] } },
    })
    .resolves({ Responses: { [table]: [item('B', '2', 2)] } });
  const [a, b] = await Promise.all([batchGet({ pk: 'A', sk: '1' }), batchGet({ pk: 'B', sk: '2' })]);
  expect([a?.v, b?.v]).toEqual([1, 2]);
  expect(sent()[1]!.Keys).toEqual([{ pk: 'B', sk: '2' }]);
});

it('fails every caller of a batch that failed', async () => {
  ddb.on(BatchGetCommand).rejects(new Error('ProvisionedThroughputExceededException'));
  const all = await Promise.allSettled([batchGet({ pk: 'A', sk: '1' }), batchGet({ pk: 'B', sk: '2' })]);
  expect(all.map((r) => r.status)).toEqual(['rejected', 'rejected']);
});
