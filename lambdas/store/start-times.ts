import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { StartTimes } from '../domain/autoscaling';
import { config } from '../shared/config';
import { keys } from './keys';
import { queryPartition } from './query';
import { sendWrite } from './write';

/**
 * What the reconciler last saw of a new replica's way to Ready on each compute (domain/autoscaling.ts
 * StartTimes), one item per compute, written only when a newer node or replica turned Ready. A wake's expected
 * time to Ready reads it. Not an admission input: admission never reads it, so its writes wake no admitter.
 */
export async function listStartTimes(): Promise<StartTimes[]> {
  return (await queryPartition(keys.allStartTimes().pk)).map((item) => {
    const { pk: _pk, sk: _sk, ...rest } = item;
    return rest as unknown as StartTimes;
  });
}

export async function recordStartTimes(t: StartTimes): Promise<void> {
  await sendWrite(
    new PutCommand({ TableName: config().table, Item: { ...keys.startTimes(t.compute), ...t } }),
  );
}
