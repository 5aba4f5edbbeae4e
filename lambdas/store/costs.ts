import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { COST_RETENTION_DAYS, type CostSample } from '../domain/cost';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { keys } from './keys';
import { sendWrite } from './write';

/**
 * Cost samples (domain/cost.ts): one item per reconcile pass under one partition, sorted by time, expiring
 * (the table's `ttl`) after COST_RETENTION_DAYS. Two passes in the same millisecond write the same item, and
 * either one's figures are the cost at that moment.
 */

const table = () => config().table;

export async function putCostSample(s: CostSample): Promise<void> {
  const ttl = Math.floor(Date.parse(s.at) / 1000) + COST_RETENTION_DAYS * 86_400;
  await sendWrite(
    new PutCommand({
      TableName: table(),
      Item: { ...keys.costSample(s.at), currency: s.currency, computes: s.computes, ttl },
    }),
  );
}

const sample = (i: Record<string, unknown>): CostSample => ({
  at: i.sk as string,
  currency: i.currency as string,
  computes: i.computes as CostSample['computes'],
});

/**
 * The samples taken in [from, to), oldest first, led by the last one before `from` (whose rates were in force
 * when the period began). An item past its TTL that DynamoDB has not deleted yet is left out.
 */
export async function listCostSamples(from: Date, to: Date): Promise<CostSample[]> {
  const pk = keys.costSamples().pk;
  const alive = (i: Record<string, unknown>) => typeof i.ttl !== 'number' || i.ttl * 1000 > Date.now();
  const before = await documentClient().send(
    new QueryCommand({
      TableName: table(),
      KeyConditionExpression: 'pk = :pk AND sk < :from',
      ExpressionAttributeValues: { ':pk': pk, ':from': from.toISOString() },
      ScanIndexForward: false,
      Limit: 1,
    }),
  );
  const items = (before.Items ?? []).filter(alive);
  let start: Record<string, unknown> | undefined;
  do {
    const out = await documentClient().send(
      new QueryCommand({
        TableName: table(),
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':pk': pk, ':from': from.toISOString(), ':to': to.toISOString() },
        ExclusiveStartKey: start,
      }),
    );
    items.push(...((out.Items ?? []) as Record<string, unknown>[]).filter(alive));
    start = out.LastEvaluatedKey;
  } while (start);
  return items.map(sample);
}
