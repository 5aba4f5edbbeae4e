import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { ModelAdmission } from '../domain/quota';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { batchGet } from './batch-get';
import type { TxItem } from './commit';
import { keys } from './keys';
import { ADMISSION_MAX_ITEMS } from './limits';
import { type ReadAge, sharedQuery } from './shared-read';
import { sendWrite } from './write';

/**
 * What admission decided, one item per model. Written only by the admitter (service/admitter.ts), in
 * transactions that each move its fence by one: a second admitter started by mistake cannot interleave its
 * slices with the first's, and whichever loses decides again from what is stored.
 */

const table = () => config().table;

function strip(item: Record<string, unknown>): ModelAdmission {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as unknown as ModelAdmission;
}

export async function listAdmissions(age?: ReadAge): Promise<ModelAdmission[]> {
  return (await sharedQuery(keys.admissions().pk, age)).map(strip);
}

export async function getAdmission(model: string): Promise<ModelAdmission | undefined> {
  const item = await batchGet(keys.admission(model));
  return item ? strip(item) : undefined;
}

/** Transaction items that store the next admission of each changed model and drop those of removed models. */
export function admissionItems(next: readonly ModelAdmission[], removed: readonly string[]): TxItem[] {
  return [
    ...next.map((a) => ({ Put: { TableName: table(), Item: { ...keys.admission(a.model), ...a } } })),
    ...removed.map((m) => ({ Delete: { TableName: table(), Key: keys.admission(m) } })),
  ];
}

/** The model an admission item is of (its sort key), for ordering the slices of a large decision. */
export function admissionItemModel(item: TxItem): string {
  const i = item as { Put?: { Item: Record<string, unknown> }; Delete?: { Key: Record<string, unknown> } };
  return String(i.Put?.Item.sk ?? i.Delete?.Key.sk ?? '');
}

/** The admitter's fence as stored: read before the world, so a decision on an older world cannot commit. */
export async function admitterVersion(): Promise<number> {
  const out = await documentClient().send(
    new GetCommand({ TableName: table(), Key: keys.admitter(), ConsistentRead: true }),
  );
  return (out.Item?.version as number | undefined) ?? 0;
}

function fence(version: number, at: string): TxItem {
  return {
    Update: {
      TableName: table(),
      Key: keys.admitter(),
      UpdateExpression: 'SET #v = :next, decidedAt = :at',
      ConditionExpression: version === 0 ? 'attribute_not_exists(#v)' : '#v = :cur',
      ExpressionAttributeNames: { '#v': 'version' },
      ExpressionAttributeValues: { ':next': version + 1, ':at': at, ...(version ? { ':cur': version } : {}) },
    },
  };
}

/**
 * Commits a decision as slices of at most ADMISSION_MAX_ITEMS items, each with the fence moved one on from the
 * last. Callers order the items so every prefix is valid on its own (releases first). When the fence moved under
 * it (another admitter), it stops and says how many slices landed; the caller decides again.
 */
export async function commitAdmissions(
  version: number,
  items: readonly TxItem[],
  at: string,
): Promise<{ committed: number; complete: boolean }> {
  let v = version;
  let committed = 0;
  for (let i = 0; i < items.length; i += ADMISSION_MAX_ITEMS) {
    const slice = items.slice(i, i + ADMISSION_MAX_ITEMS);
    try {
      await sendWrite(new TransactWriteCommand({ TransactItems: [fence(v, at), ...slice] }));
    } catch (e) {
      if (e instanceof TransactionCanceledException || (e as Error).name === 'TransactionConflictException')
        return { committed, complete: false };
      throw e;
    }
    v++;
    committed++;
  }
  return { committed, complete: true };
}
