import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import {
  DeleteCommand,
  PutCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../lambdas/shared/clients';

/**
 * The write path's ceiling (issue 31): raw conditional writes on DynamoDB Local, with nothing of llmcap around
 * them. bench/write-path.ts runs this file as a process of its own, so the ceiling is not measured beside the API
 * and the simulators in one event loop, and asks it for one measurement at a time (a JSON line on stdin, the
 * figures as a JSON line on stdout), between its own measurements of the API: each round compares figures taken
 * on the same machine within seconds of each other.
 */

export type Tx = NonNullable<TransactWriteCommandInput['TransactItems']>;

export interface Figures {
  n: number;
  p50: number;
  p99: number;
  mean: number;
  perSecond: number;
}

export const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
export const round = (x: number, d = 2) => +x.toFixed(d);

/** `writers` loops, each doing `each` operations one after another: latency of each and overall throughput. */
export async function drive(
  writers: number,
  each: number,
  op: (w: number, i: number) => Promise<void>,
): Promise<Figures> {
  const ms: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; i < each; i++) {
        const t = performance.now();
        await op(w, i);
        ms.push(performance.now() - t);
      }
    }),
  );
  const elapsed = performance.now() - t0;
  ms.sort((a, b) => a - b);
  return {
    n: ms.length,
    p50: round(pct(ms, 50)),
    p99: round(pct(ms, 99)),
    mean: round(ms.reduce((a, b) => a + b, 0) / ms.length),
    perSecond: Math.round((ms.length / elapsed) * 1000),
  };
}

const table = () => process.env.LLMCAP_TABLE!;

/** Conditional UpdateItem on one item per writer, or all of them on one item. */
export function rawUpdates(writers: number, each: number, oneItem: boolean): Promise<Figures> {
  const tag = randomUUID().slice(0, 8);
  return drive(writers, each, async (w) => {
    await documentClient().send(
      new UpdateCommand({
        TableName: table(),
        Key: { pk: 'BENCH', sk: oneItem ? `one-${tag}` : `item-${tag}-${w}` },
        UpdateExpression: 'ADD #v :one SET updatedAt = :now',
        // Always true, so every write lands however many race on one item; still evaluated, as a real one is.
        ConditionExpression: 'attribute_not_exists(#v) OR #v >= :zero',
        ExpressionAttributeNames: { '#v': 'version' },
        ExpressionAttributeValues: { ':one': 1, ':zero': 0, ':now': new Date().toISOString() },
      }),
    );
  });
}

/**
 * The transaction one API write commits (captured from a real one), replayed on copies of its items: the same
 * number of items, sizes and kinds of condition. Each writer has its own copies, so every condition holds.
 */
export function rawTransactions(tx: Tx, writers: number, each: number): Promise<Figures> {
  const tag = randomUUID().slice(0, 8);
  const rekey = (k: Record<string, unknown>, w: number) => ({
    pk: `BENCH#${k.pk}`,
    sk: `${k.sk}#${tag}#${w}`,
  });
  const items = (w: number): Tx =>
    tx.map((it) => {
      if (it.Update)
        return {
          Update: {
            TableName: table(),
            Key: rekey(it.Update.Key!, w),
            UpdateExpression: 'ADD #v :one SET updatedAt = :now, updatedBy = :by',
            ConditionExpression: 'attribute_not_exists(#v) OR #v >= :zero',
            ExpressionAttributeNames: { '#v': 'version' },
            ExpressionAttributeValues: {
              ':one': 1,
              ':zero': 0,
              ':now': new Date().toISOString(),
              ':by': 'bench',
            },
          },
        };
      if (it.Put)
        return {
          Put: {
            TableName: table(),
            Item: { ...it.Put.Item, ...rekey(it.Put.Item!, w) },
            ConditionExpression: 'attribute_not_exists(pk) OR #v >= :zero',
            ExpressionAttributeNames: { '#v': 'version' },
            ExpressionAttributeValues: { ':zero': 0 },
          },
        };
      if (it.Delete) return { Delete: { TableName: table(), Key: rekey(it.Delete.Key!, w) } };
      // A condition on an item that is not there, as a check of a lease or marker usually is.
      return {
        ConditionCheck: {
          TableName: table(),
          Key: rekey(it.ConditionCheck!.Key!, w),
          ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :now',
          ExpressionAttributeValues: { ':now': Date.now() },
        },
      };
    });
  return drive(writers, each, async (w) => {
    const its = items(w);
    // One item goes as the API sends it: a plain conditional write, not a transaction.
    const one = its.length === 1 ? its[0]! : undefined;
    if (one?.Put) await documentClient().send(new PutCommand(one.Put));
    else if (one?.Update) await documentClient().send(new UpdateCommand(one.Update));
    else if (one?.Delete) await documentClient().send(new DeleteCommand(one.Delete));
    else await documentClient().send(new TransactWriteCommand({ TransactItems: its }));
  });
}

/** One measurement the parent asks for. */
export type CeilingRequest =
  | { op: 'update'; writers: number; each: number; oneItem: boolean }
  | { op: 'tx'; tx: Tx; writers: number; each: number };

function measure(r: CeilingRequest): Promise<Figures> {
  return r.op === 'update'
    ? rawUpdates(r.writers, r.each, r.oneItem)
    : rawTransactions(r.tx, r.writers, r.each);
}

// Run as a process of its own: LLMCAP_DYNAMODB_ENDPOINT and LLMCAP_TABLE say where; one request per line.
if (require.main === module) {
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    measure(JSON.parse(line) as CeilingRequest).then(
      (f) => process.stdout.write(`${JSON.stringify({ ok: f })}\n`),
      (e) => process.stdout.write(`${JSON.stringify({ error: (e as Error).message })}\n`),
    );
  });
}
