import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { dynamoClient } from '../../../lambdas/shared/clients';
import { tableDefinition } from '../../../lambdas/store/table';
import { type LocalLambda, startLocalLambda } from '../../../local/lambda';
import { type StreamEvent, type StreamSource, startStreamSource } from '../../../local/stream-source';

/**
 * The local event source mapping (local/stream-source.ts) on DynamoDB Local's own stream, running a function of
 * the local Lambda with reserved concurrency 1, as the admitter of issue 31 is to run: every write reaches the
 * function once it returned, in the order written, in batches of at most the batch size, one at a time; a batch
 * whose invocation fails is sent again, so nothing is skipped.
 */

const endpoint = process.env.LLMCAP_DYNAMODB_ENDPOINT!;
const table = `streams-${randomUUID().slice(0, 8)}`;
const ddb = dynamoClient(endpoint);
const doc = DynamoDBDocumentClient.from(ddb);
let lambda: LocalLambda;
let source: StreamSource;
/** The keys of each batch the function returned from, in order. */
const batches: string[][] = [];
let active = 0;
let maxActive = 0;
/** Attempts of the batch that holds `fail-once`. */
let failOnceAttempts = 0;
/** The `n` of each write of the item `same`, as the function got them. */
const sameN: number[] = [];
const discarded: StreamEvent[] = [];

beforeAll(async () => {
  const t = await ddb.send(
    new CreateTableCommand({
      ...tableDefinition(table),
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_IMAGE' },
    }),
  );
  lambda = await startLocalLambda({
    functions: {
      sink: {
        reservedConcurrency: 1,
        timeoutSeconds: 10,
        // The mapping retries a failed batch itself, as Lambda's poller does: no asynchronous retries on top.
        async: { maximumRetryAttempts: 0 },
        handler: async (event) => {
          maxActive = Math.max(maxActive, ++active);
          try {
            const keys = (event as StreamEvent).Records.map((r) => String(r.dynamodb?.Keys?.sk?.S));
            await new Promise((r) => setTimeout(r, 5));
            // The first batch holding this key fails once: the source must send the same batch again.
            if (keys.includes('fail-once') && failOnceAttempts++ === 0)
              throw new Error('the first attempt fails');
            for (const r of (event as StreamEvent).Records)
              if (r.dynamodb?.Keys?.sk?.S === 'same') sameN.push(Number(r.dynamodb.NewImage?.n?.N));
            batches.push(keys);
            return { ok: keys.length };
          } finally {
            active--;
          }
        },
      },
    },
  });
  source = await startStreamSource({
    endpoint,
    streamArn: t.TableDescription!.LatestStreamArn!,
    batchSize: 100,
    pollMs: 20,
    maximumRetryAttempts: 3,
    onDiscard: (e) => discarded.push(e),
    invoke: async (event) => {
      const inv = await lambda.enqueue('sink', event);
      if (inv.error) throw new Error(inv.error.errorMessage);
    },
  });
});

afterAll(async () => {
  await source.stop();
  await lambda.stop();
  await ddb.send(new DeleteTableCommand({ TableName: table }));
  ddb.destroy();
});

it('hands every write to the function in order, in batches, one at a time, retrying a failed batch', async () => {
  const written = Array.from({ length: 250 }, (_, i) => `k${String(i).padStart(3, '0')}`);
  written.splice(120, 0, 'fail-once');
  // Side by side in groups, so records pile up between two reads of the stream and make batches of several.
  for (let i = 0; i < written.length; i += 50)
    await Promise.all(
      written
        .slice(i, i + 50)
        .map((sk, j) => doc.send(new PutCommand({ TableName: table, Item: { pk: 'K', sk, n: i + j } }))),
    );
  await source.drained(60_000);
  const seen = batches.flat();
  expect(new Set(seen)).toEqual(new Set(written));
  expect(seen).toHaveLength(written.length);
  expect(failOnceAttempts).toBe(2);
  expect(discarded).toEqual([]);
  expect(Math.max(...batches.map((b) => b.length))).toBeLessThanOrEqual(100);
  expect(batches.some((b) => b.length > 1)).toBe(true);
  expect(maxActive).toBe(1);
});

it('keeps the order of the writes to one item', async () => {
  for (let n = 0; n < 20; n++)
    await doc.send(new PutCommand({ TableName: table, Item: { pk: 'K', sk: 'same', n } }));
  await source.drained(60_000);
  expect(sameN).toEqual(Array.from({ length: 20 }, (_, n) => n));
});

it('hands nothing on while the mapping is disabled, and every write it kept once it is enabled again', async () => {
  await source.drained(60_000);
  const before = batches.flat().length;
  source.setEnabled(false);
  try {
    for (let n = 0; n < 5; n++)
      await doc.send(new PutCommand({ TableName: table, Item: { pk: 'K', sk: `held-${n}`, n } }));
    // Several polls' worth of time: a disabled mapping reads nothing.
    await new Promise((r) => setTimeout(r, 300));
    expect(batches.flat().length).toBe(before);
  } finally {
    source.setEnabled(true);
  }
  await source.drained(60_000);
  expect(batches.flat().slice(before)).toEqual(Array.from({ length: 5 }, (_, n) => `held-${n}`));
});
