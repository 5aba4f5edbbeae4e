import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { keys } from './keys';

/**
 * Idempotency-Key support: the first request with a key claims it, and its response is stored for a day, so a
 * client retrying after a timeout gets the same answer instead of doing the work twice.
 */
const TTL_SECONDS = 24 * 3600;

export interface StoredResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type Claim =
  | { kind: 'claimed' }
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'in-progress' }
  | { kind: 'mismatch' };

export async function claimKey(principal: string, key: string, fingerprint: string): Promise<Claim> {
  const now = Math.floor(Date.now() / 1000);
  try {
    await documentClient().send(
      new PutCommand({
        TableName: config().table,
        Item: {
          ...keys.idempotency(principal, key),
          fingerprint,
          state: 'IN_PROGRESS',
          ttl: now + TTL_SECONDS,
        },
        // An expired claim (TTL deletion is lazy) may be taken again.
        ConditionExpression: 'attribute_not_exists(pk) OR #ttl < :now',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':now': now },
      }),
    );
    return { kind: 'claimed' };
  } catch (e) {
    if (!(e instanceof ConditionalCheckFailedException)) throw e;
  }
  const out = await documentClient().send(
    new GetCommand({
      TableName: config().table,
      Key: keys.idempotency(principal, key),
      ConsistentRead: true,
    }),
  );
  const item = out.Item;
  if (!item) return { kind: 'in-progress' };
  if (item.fingerprint !== fingerprint) return { kind: 'mismatch' };
  if (item.state !== 'DONE') return { kind: 'in-progress' };
  return { kind: 'replay', response: item.response as StoredResponse };
}

export async function completeKey(principal: string, key: string, response: StoredResponse): Promise<void> {
  await documentClient().send(
    new UpdateCommand({
      TableName: config().table,
      Key: keys.idempotency(principal, key),
      UpdateExpression: 'SET #state = :done, #response = :r',
      ExpressionAttributeNames: { '#state': 'state', '#response': 'response' },
      ExpressionAttributeValues: { ':done': 'DONE', ':r': response },
    }),
  );
}

/** A failed request releases its key, so that the client can fix the request and send it again. */
export async function releaseKey(principal: string, key: string): Promise<void> {
  await documentClient().send(
    new DeleteCommand({ TableName: config().table, Key: keys.idempotency(principal, key) }),
  );
}
