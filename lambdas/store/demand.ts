import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { config } from '../shared/config';
import { keys } from './keys';
import { type ReadAge, sharedQuery } from './shared-read';
import { sendWrite } from './write';

/**
 * What load asks of each autoscaled model (docs/workloads.md, Autoscaling): one small item per model, the one
 * thing admission reads of the loop. Its partition is one the admitter's stream filter wakes on
 * (table.ts ADMISSION_INPUTS), and it is written only when the replicas asked for change, so a steady load
 * wakes no admitter; the recommendation history, the metric and the pods stay in the WORKLOAD item, which
 * admission does not read.
 */
export interface StoredDemand {
  model: string;
  /** The replicas load asks for, within [min, max]. */
  desired: number;
  /** The wake this demand includes, if any (a wake newer than what the reconciler read stands). */
  wokenAt?: string;
  at: string;
}

/** Every model's demand; requests that ask together share one Query (sharedQuery), as fresh for each as its own. */
export async function listDemands(age?: ReadAge): Promise<StoredDemand[]> {
  return (await sharedQuery(keys.demands().pk, age)).map((item) => {
    const { pk: _pk, sk: _sk, ...rest } = item;
    return rest as unknown as StoredDemand;
  });
}

/**
 * Writes a model's demand. Unless `wake`, it is not written over a wake newer than the one the caller read
 * (`wokenAt`), as the WORKLOAD item is not (store/workloads.ts): false when such a wake stands.
 */
export async function recordDemand(d: StoredDemand, opts: { wake?: boolean } = {}): Promise<boolean> {
  try {
    await sendWrite(
      new PutCommand({
        TableName: config().table,
        Item: { ...keys.demand(d.model), ...d },
        ...(opts.wake
          ? {}
          : d.wokenAt
            ? {
                ConditionExpression: 'attribute_not_exists(wokenAt) OR wokenAt <= :w',
                ExpressionAttributeValues: { ':w': d.wokenAt },
              }
            : { ConditionExpression: 'attribute_not_exists(wokenAt)' }),
      }),
    );
    return true;
  } catch (e) {
    if ((e as Error).name === 'ConditionalCheckFailedException') return false;
    throw e;
  }
}

/** A model no longer autoscaled (or gone) asks for nothing. */
export async function removeDemand(model: string): Promise<void> {
  await sendWrite(new DeleteCommand({ TableName: config().table, Key: keys.demand(model) }));
}
