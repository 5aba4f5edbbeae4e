import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient, dynamoEndpoint } from '../shared/clients';
import { config } from '../shared/config';

/**
 * Point reads batched (Karpenter's provisioning batcher, for GetItem): every key asked in one turn of the event
 * loop goes out in one BatchGetItem, up to 100 keys a request. 64 concurrent writes each reading their model's
 * pods then cost one request per round trip, not 64; and a write's own reads go together instead of one after
 * the other, each paying the SDK's signing and parsing. A batch is sent after every caller in it asked, so it is
 * as fresh for each as its own GetItem; nothing is kept once it has answered.
 */

export type Key = { pk: string; sk: string };
type Item = Record<string, unknown>;

interface Asked {
  key: Key;
  resolve: (item: Item | undefined) => void;
  reject: (e: unknown) => void;
}

/** BatchGetItem's limit of keys per request. */
const MAX_KEYS = 100;
/** Keys DynamoDB leaves unprocessed (throttling) are asked again, backing off, this many times before failing. */
const MAX_RETRIES = 8;

// The keys asked this turn, per endpoint, table and consistency: tests with several tables never share a batch.
const pending = new Map<string, { table: string; consistent: boolean; asked: Asked[] }>();

/** One item by key, in the batch of this turn; `consistent` for a strongly consistent read. */
export function batchGet(key: Key, opts: { consistent?: boolean } = {}): Promise<Item | undefined> {
  const table = config().table;
  const consistent = opts.consistent === true;
  const k = `${dynamoEndpoint() ?? ''}|${table}|${consistent}`;
  let batch = pending.get(k);
  if (!batch) {
    batch = { table, consistent, asked: [] };
    pending.set(k, batch);
    // Sent once this turn has asked all it will.
    setImmediate(() => {
      pending.delete(k);
      void send(batch!);
    });
  }
  const b = batch;
  return new Promise((resolve, reject) => b.asked.push({ key, resolve, reject }));
}

const id = (k: Key) => `${k.pk}\u0000${k.sk}`;

async function send(batch: { table: string; consistent: boolean; asked: Asked[] }): Promise<void> {
  const distinct = [...new Map(batch.asked.map((a) => [id(a.key), a.key])).values()];
  const chunks: Key[][] = [];
  for (let i = 0; i < distinct.length; i += MAX_KEYS) chunks.push(distinct.slice(i, i + MAX_KEYS));
  try {
    const found = new Map<string, Item>();
    await Promise.all(chunks.map((keys) => getAll(batch.table, keys, batch.consistent, found)));
    for (const a of batch.asked) a.resolve(found.get(id(a.key)));
  } catch (e) {
    for (const a of batch.asked) a.reject(e);
  }
}

async function getAll(table: string, keys: Key[], consistent: boolean, found: Map<string, Item>) {
  let ask: Key[] = keys;
  for (let attempt = 0; ask.length > 0; attempt++) {
    if (attempt > MAX_RETRIES)
      throw new Error(
        `DynamoDB left ${ask.length} reads unprocessed after ${MAX_RETRIES} retries (throttled); retry the request`,
      );
    if (attempt > 0)
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(1000, 20 * 2 ** attempt)));
    const out = await documentClient().send(
      new BatchGetCommand({ RequestItems: { [table]: { Keys: ask, ConsistentRead: consistent } } }),
    );
    for (const item of out.Responses?.[table] ?? []) found.set(id(item as Key), item);
    ask = (out.UnprocessedKeys?.[table]?.Keys ?? []) as Key[];
  }
}
