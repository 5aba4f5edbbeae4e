import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ModelLoad } from '../domain/autoscaling';
import { sameValue } from '../domain/compute';
import { deepFreeze } from '../domain/freeze';
import { type WorkloadStatus, workloadStatus } from '../domain/workloads';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { batchGet } from './batch-get';
import { keys } from './keys';
import { type ReadAge, sharedQuery, sharedRead } from './shared-read';
import { sendWrite } from './write';

/**
 * What the reconciler last saw of each model's pods, one item per model (keys.workload): the model's
 * `status.running`, its pods and why the others do not serve. Written by reconcile only when it changed, read
 * by the models and pods API beside the admission record. An item's `observedAt` is when it last changed; one
 * more item (keys.podsObserved) says when a pass last listed every pod, which is what all items are as of.
 */

export interface StoredWorkload extends WorkloadStatus {
  model: string;
  observedAt: string;
}

function fromItem(item: Record<string, unknown>): StoredWorkload {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as unknown as StoredWorkload;
}

// Every model list and the admitter read all of them: requests that ask together share one Query (sharedQuery),
// as fresh for each as its own.
export async function listWorkloads(): Promise<StoredWorkload[]> {
  return (await sharedQuery(keys.workloads().pk)).map(fromItem);
}

// Both items are written by reconcile alone, and every model answer reads the pass stamp: readers
// that ask together share one GetItem (sharedRead), as fresh for each as its own, so 64 concurrent writes make
// one read of the stamp per round trip rather than 64. Shared, so frozen.
export function getWorkload(model: string, age?: ReadAge): Promise<StoredWorkload | undefined> {
  const key = keys.workload(model);
  return sharedRead(
    `${key.pk}#${key.sk}`,
    async () => {
      const item = await batchGet(key);
      return item ? deepFreeze(fromItem(item)) : undefined;
    },
    age,
  );
}

/** When the reconciler last listed every pod of llmcap's namespaces; absent before its first such pass. */
export function lastObserved(age?: ReadAge): Promise<string | undefined> {
  const key = keys.podsObserved();
  return sharedRead(
    `${key.pk}#${key.sk}`,
    async () => {
      const item = await batchGet(key);
      return typeof item?.observedAt === 'string' ? item.observedAt : undefined;
    },
    age,
  );
}

/**
 * Writes what changed since the last pass: a model whose pods are gone loses its item. Returns the writes made,
 * so that a steady pass can be seen to write nothing but its stamp: one put per pass, rather than one per model,
 * keeps "when was this last observed" true without rewriting 10,000 unchanged items.
 */
export async function recordWorkloads(seen: Map<string, WorkloadStatus>, now: string): Promise<number> {
  const before = new Map((await listWorkloads()).map((w) => [w.model, w]));
  let writes = 0;
  for (const [model, w] of seen) {
    const prev = before.get(model);
    if (prev && sameValue({ ...prev, observedAt: undefined, model: undefined }, w)) continue;
    writes++;
    try {
      await sendWrite(
        new PutCommand({
          TableName: config().table,
          Item: { ...keys.workload(model), model, observedAt: now, ...w },
          // A wake written since this pass read the item stands (recordWake); the next pass starts from it.
          ...(w.autoscaling ? notNewerWake(w.autoscaling.wokenAt) : {}),
        }),
      );
    } catch (e) {
      if ((e as Error).name !== 'ConditionalCheckFailedException') throw e;
      writes--;
    }
  }
  for (const model of before.keys()) {
    if (seen.has(model)) continue;
    writes++;
    await sendWrite(new DeleteCommand({ TableName: config().table, Key: keys.workload(model) }));
  }
  await sendWrite(
    new PutCommand({ TableName: config().table, Item: { ...keys.podsObserved(), observedAt: now } }),
  );
  return writes;
}

function notNewerWake(wokenAt: string | undefined) {
  return wokenAt
    ? {
        ConditionExpression: 'attribute_not_exists(autoscaling.wokenAt) OR autoscaling.wokenAt <= :w',
        ExpressionAttributeValues: { ':w': wokenAt },
      }
    : { ConditionExpression: 'attribute_not_exists(autoscaling.wokenAt)' };
}

/**
 * A wake (POST /v1/models/{name}/wake): the model's item gets `autoscaling` as `next` computes it from the
 * stored one, written only if the item is still as read (the reconciler rewrites it each pass), retried
 * otherwise. An item is made for a model the reconciler has not yet seen.
 */
export async function recordWake(
  model: string,
  next: (prev: ModelLoad | undefined) => ModelLoad,
  now: string,
): Promise<ModelLoad> {
  for (let attempt = 0; ; attempt++) {
    const out = await documentClient().send(
      new GetCommand({ TableName: config().table, Key: keys.workload(model), ConsistentRead: true }),
    );
    const prev = out.Item ? fromItem(out.Item) : undefined;
    const autoscaling = next(prev?.autoscaling);
    const item = prev
      ? { ...out.Item, autoscaling }
      : { ...keys.workload(model), model, observedAt: now, ...workloadStatus([]), autoscaling };
    try {
      await sendWrite(
        new PutCommand({
          TableName: config().table,
          Item: item,
          ConditionExpression: prev ? 'observedAt = :o' : 'attribute_not_exists(pk)',
          ...(prev ? { ExpressionAttributeValues: { ':o': prev.observedAt } } : {}),
        }),
      );
      return autoscaling;
    } catch (e) {
      if ((e as Error).name !== 'ConditionalCheckFailedException' || attempt >= 5) throw e;
    }
  }
}
