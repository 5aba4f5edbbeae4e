import type {
  BatchWriteCommand,
  BatchWriteCommandOutput,
  DeleteCommand,
  DeleteCommandOutput,
  PutCommand,
  PutCommandOutput,
  TransactWriteCommand,
  TransactWriteCommandOutput,
  UpdateCommand,
  UpdateCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../shared/clients';
import { sawWrite, type Written } from './shared-read';

/**
 * Every write the store makes goes through here, so that this process's readings (store/shared-read.ts) always
 * hold its own writes: a decision made on a young reading never misses what this process wrote. A condition
 * that failed wrote nothing; any other error may have written, so its items' readings are dropped.
 */
export function sendWrite(c: PutCommand): Promise<PutCommandOutput>;
export function sendWrite(c: UpdateCommand): Promise<UpdateCommandOutput>;
export function sendWrite(c: DeleteCommand): Promise<DeleteCommandOutput>;
export function sendWrite(c: TransactWriteCommand): Promise<TransactWriteCommandOutput>;
export function sendWrite(c: BatchWriteCommand): Promise<BatchWriteCommandOutput>;
export async function sendWrite(
  c: PutCommand | UpdateCommand | DeleteCommand | TransactWriteCommand | BatchWriteCommand,
): Promise<unknown> {
  const written = writtenBy(c);
  try {
    const out = await documentClient().send(c as PutCommand);
    for (const w of written) sawWrite(w, true);
    return out;
  } catch (e) {
    const name = (e as Error).name;
    if (name !== 'ConditionalCheckFailedException' && name !== 'TransactionCanceledException')
      for (const w of written) sawWrite(w, false);
    throw e;
  }
}

type Key = Record<string, unknown> | undefined;

/** The items one write command changes (a ConditionCheck changes none), with the item a Put stores. */
function writtenBy(c: { input: object; constructor: { name: string } }): Written[] {
  // Every item of this table is keyed by a string pk and sk (store/keys.ts).
  const one = (table: string | undefined, key: Key, put?: Record<string, unknown>): Written[] =>
    key && table ? [{ table, pk: String(key.pk), sk: String(key.sk), put }] : [];
  const input = c.input as Record<string, any>;
  if ('TransactItems' in input)
    return (input.TransactItems ?? []).flatMap((it: Record<string, any>) =>
      it.Put
        ? one(it.Put.TableName, it.Put.Item, it.Put.Item)
        : one((it.Update ?? it.Delete)?.TableName, (it.Update ?? it.Delete)?.Key),
    );
  if ('RequestItems' in input)
    return Object.entries((input.RequestItems ?? {}) as Record<string, Record<string, any>[]>).flatMap(
      ([table, reqs]) => reqs.flatMap((q) => one(table, q.PutRequest?.Item ?? q.DeleteRequest?.Key)),
    );
  if ('Item' in input) return one(input.TableName, input.Item, input.Item);
  return one(input.TableName, input.Key);
}
