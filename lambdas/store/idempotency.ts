import { createHash } from 'node:crypto';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { isConditionFailure } from './conditions';
import { keys } from './keys';
import { sendWrite } from './write';

/**
 * Idempotency-Key support: the first request with a key claims it, and its response is stored for a day, so a
 * client retrying after a timeout gets the same answer instead of doing the work twice.
 *
 * A claim whose Lambda died before answering (a crash, a timeout) would block the key until it expired: it
 * expires once no invocation can still be running it, the function's timeout plus a margin for the clocks of
 * different hosts. Written by hand rather than with Powertools' idempotency utility, which keys its own record
 * layout on a payload hash and reads the remaining time from the Lambda context; this store keeps the table's
 * pk/sk and `ttl` attribute and the API's 409 reasons (docs/operations.md).
 */
export const REPLAY_SECONDS = 24 * 3600;
export const IN_PROGRESS_MARGIN_SECONDS = 30;

/** The request a key stands for: a key sent again with another method, path or body is refused. */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${JSON.stringify(body ?? null)}`)
    .digest('hex');
}

export interface StoredResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export type Claim =
  | { kind: 'claimed' }
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'in-progress'; retryAfterSeconds: number }
  | { kind: 'mismatch' };

export async function claimKey(principal: string, key: string, fingerprint: string): Promise<Claim> {
  const now = Math.floor(Date.now() / 1000);
  try {
    await sendWrite(
      new PutCommand({
        TableName: config().table,
        Item: {
          ...keys.idempotency(principal, key),
          fingerprint,
          state: 'IN_PROGRESS',
          ttl: now + config().functionTimeoutSeconds + IN_PROGRESS_MARGIN_SECONDS,
        },
        // An expired claim (TTL deletion is lazy) may be taken again.
        ConditionExpression: 'attribute_not_exists(pk) OR #ttl < :now',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':now': now },
      }),
    );
    return { kind: 'claimed' };
  } catch (e) {
    if (!isConditionFailure(e)) throw e;
  }
  const out = await documentClient().send(
    new GetCommand({
      TableName: config().table,
      Key: keys.idempotency(principal, key),
      ConsistentRead: true,
    }),
  );
  const item = out.Item;
  // Gone between the two reads: the claim was released or expired; the client may simply retry.
  if (!item) return { kind: 'in-progress', retryAfterSeconds: 1 };
  if (item.fingerprint !== fingerprint) return { kind: 'mismatch' };
  if (item.state !== 'DONE') {
    return { kind: 'in-progress', retryAfterSeconds: Math.max(1, Number(item.ttl) - now + 1) };
  }
  return { kind: 'replay', response: item.response as StoredResponse };
}

export async function completeKey(principal: string, key: string, response: StoredResponse): Promise<void> {
  await sendWrite(
    new UpdateCommand({
      TableName: config().table,
      Key: keys.idempotency(principal, key),
      UpdateExpression: 'SET #state = :done, #response = :r, #ttl = :ttl',
      ExpressionAttributeNames: { '#state': 'state', '#response': 'response', '#ttl': 'ttl' },
      ExpressionAttributeValues: {
        ':done': 'DONE',
        ':r': response,
        ':ttl': Math.floor(Date.now() / 1000) + REPLAY_SECONDS,
      },
    }),
  );
}

/** A failed request releases its key, so that the client can fix the request and send it again. */
export async function releaseKey(principal: string, key: string): Promise<void> {
  await sendWrite(new DeleteCommand({ TableName: config().table, Key: keys.idempotency(principal, key) }));
}
