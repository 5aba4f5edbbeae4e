import { ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../../lambdas/shared/clients';
import { keys } from '../../lambdas/store/keys';
import { testAdmitter } from './admitter';

/**
 * Every item of the current test table, sorted: compare before and after a refused request. What earlier writes
 * asked of the admitter (test/helpers/admitter.ts) is decided first, so its writes are not taken for the request's.
 */
export async function dumpTable(): Promise<Record<string, unknown>[]> {
  await testAdmitter()?.settled();
  const out: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await documentClient().send(
      new ScanCommand({
        TableName: process.env.LLMCAP_TABLE!,
        ExclusiveStartKey: start,
        ConsistentRead: true,
      }),
    );
    out.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  // Idempotency claims are bookkeeping, not user data.
  return out
    .filter((i) => i.pk !== 'IDEMPOTENCY')
    .sort((a, b) => `${a.pk}/${a.sk}`.localeCompare(`${b.pk}/${b.sk}`));
}

/** What reconcile or a workflow would write when AWS reports a node group. */
export async function setNodegroupStatus(compute: string, status: string): Promise<void> {
  await documentClient().send(
    new UpdateCommand({
      TableName: process.env.LLMCAP_TABLE!,
      Key: keys.compute(compute),
      UpdateExpression: 'SET #s.nodegroupStatus = :v',
      ExpressionAttributeNames: { '#s': 'status' },
      ExpressionAttributeValues: { ':v': status },
    }),
  );
}
