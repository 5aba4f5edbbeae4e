import { randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import {
  DEADLINE_GRACE_MS,
  PASS_RETENTION_DAYS,
  type PassDigest,
  type PassRecord,
  passId,
  RECONCILE_ASYNC,
} from '../domain/reconcile-pass';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { isConditionFailure } from './conditions';
import { keys } from './keys';
import { sendWrite } from './write';

/**
 * Reconcile pass records (domain/reconcile-pass.ts). A requested pass is written QUEUED together with the
 * queue pointer, in one transaction; while it waits, further requests join it instead of queuing more. The
 * first reconcile Lambda to start, whatever invoked it, claims the queued pass (pointer deleted in the same
 * transaction), so a request is covered by the next pass that starts after it and never by one that started
 * before it. Every state change is conditional on the state before, so a redelivered event cannot run or
 * finish a pass twice.
 */

const LIST_FIELDS =
  'id, #trigger, #state, requestedBy, requests, queuedAt, scheduledTime, startedAt, finishedAt, deadline, #error, digest, summaryNote';
const NAMES = { '#trigger': 'trigger', '#state': 'state', '#error': 'error' };

/** A summary larger than this is stored gzipped; one a DynamoDB item cannot hold at all is dropped. */
const PLAIN_SUMMARY_BYTES = 100 * 1024;
const MAX_STORED_SUMMARY_BYTES = 350 * 1024;

const ttl = (now: Date) => Math.floor(now.getTime() / 1000) + PASS_RETENTION_DAYS * 86_400;
const table = () => config().table;

function fromItem(item: Record<string, unknown>): PassRecord {
  const { pk: _pk, sk: _sk, ttl: _ttl, summaryGzip, timedOut: _t, ...rest } = item;
  const r = rest as unknown as PassRecord;
  if (summaryGzip instanceof Uint8Array) r.summary = JSON.parse(gunzipSync(summaryGzip).toString('utf8'));
  return r;
}

function conditionFailed(e: unknown): boolean {
  return (
    isConditionFailure(e) ||
    (e instanceof TransactionCanceledException &&
      (e.CancellationReasons ?? []).some((r) => r.Code === 'ConditionalCheckFailed'))
  );
}

export async function getPass(id: string): Promise<PassRecord | undefined> {
  const out = await documentClient().send(
    new GetCommand({ TableName: table(), Key: keys.reconcilePass(id), ConsistentRead: true }),
  );
  return out.Item ? fromItem(out.Item) : undefined;
}

/** The latest passes, newest first, without their summaries (GET /v1/reconcile/{id} has those). */
export async function listPasses(limit: number): Promise<PassRecord[]> {
  const out = await documentClient().send(
    new QueryCommand({
      TableName: table(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.reconcilePasses().pk },
      ExpressionAttributeNames: NAMES,
      ProjectionExpression: LIST_FIELDS,
      ScanIndexForward: false,
      Limit: limit,
    }),
  );
  return (out.Items ?? []).map(fromItem);
}

async function queued(now: Date): Promise<{ passId: string; deadline: number } | undefined> {
  const out = await documentClient().send(
    new GetCommand({ TableName: table(), Key: keys.reconcileQueue(), ConsistentRead: true }),
  );
  const item = out.Item as { passId: string; deadline: number } | undefined;
  return item && item.deadline >= now.getTime() ? item : undefined;
}

/**
 * Queues a pass for `by`, or joins the one already queued (coalesced): that pass has not started, so it will
 * see everything written before this request. A pass already RUNNING may have read the state before the
 * request, so a request while one runs queues the next.
 */
export async function requestPass(
  by: string,
  now = new Date(),
): Promise<{ pass: PassRecord; coalesced: boolean }> {
  const deadline = now.getTime() + RECONCILE_ASYNC.maxEventAgeSeconds * 1000 + DEADLINE_GRACE_MS;
  for (let attempt = 0; attempt < 5; attempt++) {
    const pass: PassRecord = {
      id: passId(now, randomBytes(4).toString('hex')),
      trigger: 'api',
      state: 'QUEUED',
      requestedBy: by,
      requests: 1,
      queuedAt: now.toISOString(),
      deadline,
    };
    try {
      await sendWrite(
        new TransactWriteCommand({
          TransactItems: [
            {
              // A pointer past its deadline names a pass that never started: a new request replaces it.
              Put: {
                TableName: table(),
                Item: { ...keys.reconcileQueue(), passId: pass.id, deadline, ttl: ttl(now) },
                ConditionExpression: 'attribute_not_exists(pk) OR deadline < :now',
                ExpressionAttributeValues: { ':now': now.getTime() },
              },
            },
            {
              Put: {
                TableName: table(),
                Item: { ...keys.reconcilePass(pass.id), ...pass, ttl: ttl(now) },
                ConditionExpression: 'attribute_not_exists(pk)',
              },
            },
          ],
        }),
      );
      return { pass, coalesced: false };
    } catch (e) {
      if (!conditionFailed(e)) throw e;
    }
    const next = await queued(now);
    if (!next) continue; // claimed or expired in between: queue a new one
    try {
      const out = await sendWrite(
        new UpdateCommand({
          TableName: table(),
          Key: keys.reconcilePass(next.passId),
          UpdateExpression: 'ADD requests :one',
          ConditionExpression: '#state = :queued',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':one': 1, ':queued': 'QUEUED' },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { pass: fromItem(out.Attributes!), coalesced: true };
    } catch (e) {
      if (!conditionFailed(e)) throw e;
    }
  }
  throw new Error('reconcile passes kept starting while this request was queued; send it again');
}

/**
 * Moves the QUEUED pass `id` on (SET `set`) and takes it off the queue, in one transaction; false when it was
 * no longer queued (another invocation claimed it, or it was abandoned).
 */
async function leaveQueue(id: string, set: string, values: Record<string, unknown>): Promise<boolean> {
  try {
    await sendWrite(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: table(),
              Key: keys.reconcilePass(id),
              UpdateExpression: set,
              ConditionExpression: '#state = :queued',
              ExpressionAttributeNames: {
                '#state': 'state',
                ...(set.includes('#error') ? { '#error': 'error' } : {}),
              },
              ExpressionAttributeValues: { ':queued': 'QUEUED', ...values },
            },
          },
          {
            Delete: {
              TableName: table(),
              Key: keys.reconcileQueue(),
              ConditionExpression: 'passId = :id',
              ExpressionAttributeValues: { ':id': id },
            },
          },
        ],
      }),
    );
    return true;
  } catch (e) {
    if (conditionFailed(e)) return false;
    throw e;
  }
}

/**
 * The reconciler could not be invoked: the queued pass fails at once and leaves the queue to the next request.
 * If another invocation claimed it meanwhile, it runs after all and there is nothing to abandon.
 */
export async function abandonPass(id: string, error: string, now = new Date()): Promise<void> {
  await leaveQueue(id, 'SET #state = :failed, finishedAt = :now, #error = :error REMOVE deadline', {
    ':failed': 'FAILED',
    ':now': now.toISOString(),
    ':error': error,
  });
}

export interface StartOptions {
  now: Date;
  /** Epoch ms after which the pass is presumed lost: its Lambda's timeout and some grace. */
  deadline: number;
}

/** Starts the queued pass, if one waits; returns its id, or undefined when none is queued. */
export async function claimQueuedPass(o: StartOptions): Promise<string | undefined> {
  const next = await queued(o.now);
  if (!next) return undefined;
  const claimed = await leaveQueue(
    next.passId,
    'SET #state = :running, startedAt = :now, deadline = :deadline',
    {
      ':running': 'RUNNING',
      ':now': o.now.toISOString(),
      ':deadline': o.deadline,
    },
  );
  return claimed ? next.passId : undefined;
}

/** Records a pass the schedule started; undefined when this id exists already (a redelivered event). */
export async function startScheduledPass(
  id: string,
  o: StartOptions & { scheduledTime?: string },
): Promise<string | undefined> {
  const pass: PassRecord = {
    id,
    trigger: 'schedule',
    state: 'RUNNING',
    ...(o.scheduledTime ? { scheduledTime: o.scheduledTime } : {}),
    startedAt: o.now.toISOString(),
    deadline: o.deadline,
  };
  try {
    await sendWrite(
      new PutCommand({
        TableName: table(),
        Item: { ...keys.reconcilePass(id), ...pass, ttl: ttl(o.now) },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return id;
  } catch (e) {
    if (conditionFailed(e)) return undefined;
    throw e;
  }
}

export type PassOutcome = (
  | { summary: unknown; digest: PassDigest }
  /** `timedOut`: recorded just before the Lambda's timeout; the pass may still finish in the last moment. */
  | { error: string; timedOut?: boolean }
) & {
  /** The Lambda's time is not up yet: an outcome may replace a timeout recorded in its last moments. */
  beforeTimeout?: boolean;
};

function summaryAttributes(summary: unknown): Record<string, unknown> {
  const text = JSON.stringify(summary ?? null);
  if (Buffer.byteLength(text) <= PLAIN_SUMMARY_BYTES) return { summary };
  const gz = gzipSync(text);
  if (gz.length <= MAX_STORED_SUMMARY_BYTES) return { summaryGzip: gz };
  return {
    summaryNote: `the summary (${Buffer.byteLength(text)} bytes) is too large to keep; the reconcile log has it`,
  };
}

/** Records how a running pass ended; false when it had ended already (a redelivery, or a late finish). */
export async function finishPass(id: string, outcome: PassOutcome, now = new Date()): Promise<boolean> {
  const values: Record<string, unknown> = { ':running': 'RUNNING', ':now': now.toISOString() };
  if (outcome.beforeTimeout || ('timedOut' in outcome && outcome.timedOut)) values[':true'] = true;
  const set = ['#state = :state', 'finishedAt = :now'];
  const remove = ['deadline'];
  if ('error' in outcome) {
    values[':state'] = 'FAILED';
    values[':error'] = outcome.error;
    set.push('#error = :error');
    if (outcome.timedOut) set.push('timedOut = :true');
  } else {
    values[':state'] = 'SUCCEEDED';
    values[':digest'] = outcome.digest;
    set.push('digest = :digest');
    for (const [k, v] of Object.entries(summaryAttributes(outcome.summary))) {
      values[`:${k}`] = v;
      set.push(`${k} = :${k}`);
    }
    remove.push('#error', 'timedOut');
  }
  try {
    await sendWrite(
      new UpdateCommand({
        TableName: table(),
        Key: keys.reconcilePass(id),
        UpdateExpression: `SET ${set.join(', ')} REMOVE ${remove.join(', ')}`,
        // A pass recorded as timed out may still end in its last second, and then that is how it ended.
        ConditionExpression: outcome.beforeTimeout
          ? '#state = :running OR timedOut = :true'
          : '#state = :running',
        ExpressionAttributeNames: { '#state': 'state', '#error': 'error' },
        ExpressionAttributeValues: values,
      }),
    );
    return true;
  } catch (e) {
    if (conditionFailed(e)) return false;
    throw e;
  }
}
