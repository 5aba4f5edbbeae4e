import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';

/** Every item of one partition (one kind: computes, models, scopes...), page by page, strongly consistent. */
export async function queryPartition(pk: string): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const out = await documentClient().send(
      new QueryCommand({
        TableName: config().table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ExclusiveStartKey: start,
        ConsistentRead: true,
      }),
    );
    items.push(...((out.Items ?? []) as Record<string, unknown>[]));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}
