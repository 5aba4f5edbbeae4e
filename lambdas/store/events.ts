import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  EVENT_RETENTION_DAYS,
  type EventKind,
  eventId,
  type ResourceEvent,
  type StoredEvent,
} from '../domain/events';
import { config } from '../shared/config';
import { keys } from './keys';
import { queryPartition } from './query';
import { sendWrite } from './write';

/**
 * Events of each resource (domain/events.ts), one partition per resource, one item per reason and message: a
 * repeat bumps its count and last time and pushes its expiry (DynamoDB TTL) out again. Written after the
 * decision they tell of has committed, so an event never tells of a decision that did not happen.
 */

const ttl = (at: string) => Math.floor(Date.parse(at) / 1000) + EVENT_RETENTION_DAYS * 86_400;

export async function recordEvents(events: readonly ResourceEvent[]): Promise<void> {
  await Promise.all(
    events.map((e) =>
      sendWrite(
        new UpdateCommand({
          TableName: config().table,
          Key: keys.event(e.kind, e.key, eventId(e)),
          UpdateExpression:
            'SET #of = :of, #type = :type, reason = :reason, message = :message, #source = :source, ' +
            'firstAt = if_not_exists(firstAt, :at), lastAt = :at, #ttl = :ttl ADD #count :one',
          ExpressionAttributeNames: {
            '#of': 'of',
            '#type': 'type',
            '#source': 'source',
            '#ttl': 'ttl',
            '#count': 'count',
          },
          ExpressionAttributeValues: {
            ':of': e.of,
            ':type': e.type,
            ':reason': e.reason,
            ':message': e.message,
            ':source': e.source,
            ':at': e.at,
            ':ttl': ttl(e.at),
            ':one': 1,
          },
        }),
      ),
    ),
  );
}

export async function listEvents(kind: EventKind, key: string, now = Date.now()): Promise<StoredEvent[]> {
  const items = await queryPartition(keys.events(kind, key).pk);
  // TTL deletes lazily: an expired item may still be there for a while.
  return items
    .filter((i) => typeof i.ttl !== 'number' || i.ttl * 1000 > now)
    .map(({ pk: _pk, sk: _sk, ttl: _ttl, ...rest }) => rest as unknown as StoredEvent);
}
