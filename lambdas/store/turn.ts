import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { conflict } from '../domain/errors';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { logger } from '../shared/logger';
import { keys } from './keys';

/**
 * Ledger writers take turns instead of racing. Racing is correct (the ledger's version condition lets one
 * decision commit and sends the rest back to re-read the world), but under load every loser re-reads the whole
 * catalog, so work grows with the square of the writers and nobody finishes: 50 concurrent clients measured
 * 500s and a 27 s p99. A turn is two things:
 *  - in this process (the local control plane, or a Lambda container), a FIFO queue, so writers that share a
 *    process never contend at all;
 *  - across processes (Lambda containers), a short lease item in the table, taken with a conditional put and
 *    waited for with cheap reads.
 * The lease only orders traffic; safety stays with the ledger version. A holder that stalls past its lease or
 * crashes costs the others at most `leaseMs` of waiting, never a lost or doubled write.
 */

export interface TurnOptions {
  /** Who takes the turn, recorded on the lease for an operator reading the table. */
  by: string;
  /** Give up (409 ConcurrentUpdate, nothing written) when the turn has not come by then. */
  waitMs?: number;
  /** How long the lease is honoured if its holder never releases it (it crashed or stalled). */
  leaseMs?: number;
}

/** The API's budget is 29 s per request; waiting 20 s leaves time to decide and commit. */
const DEFAULT_WAIT_MS = 20_000;
/** A normal turn lasts tens of milliseconds; a holder that takes 10 s has stalled or died. */
const DEFAULT_LEASE_MS = 10_000;

interface Lease {
  holder: string;
  expiresAt: number;
}

// In-process FIFO. A waiter that gives up removes itself, so a timed-out request never holds up those behind it.
// A leaving holder hands its lease to the next waiter, so a queue in one process pays for the lease once.
let busy = false;
const waiters: Array<(lease?: Lease) => void> = [];

function enterLocal(deadline: number): Promise<{ ok: boolean; lease?: Lease }> {
  if (!busy) {
    busy = true;
    return Promise.resolve({ ok: true });
  }
  return new Promise((resolve) => {
    const go = (lease?: Lease) => {
      clearTimeout(timer);
      resolve({ ok: true, lease });
    };
    const timer = setTimeout(
      () => {
        const i = waiters.indexOf(go);
        if (i >= 0) waiters.splice(i, 1);
        resolve({ ok: false });
      },
      Math.max(0, deadline - Date.now()),
    );
    waiters.push(go);
  });
}

/** Passes the turn (and the lease, when it still has time) to the next waiter, if there is one. */
function handOver(lease: Lease | undefined): boolean {
  const next = waiters.shift();
  if (!next) return false;
  next(lease && lease.expiresAt > Date.now() ? lease : undefined);
  return true;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Takes the lease before the deadline; returns its holder id, or undefined when the deadline passed. */
async function takeLease(by: string, leaseMs: number, deadline: number): Promise<Lease | undefined> {
  const holder = randomUUID();
  const table = config().table;
  for (let attempt = 0; ; attempt++) {
    const now = Date.now();
    try {
      await documentClient().send(
        new PutCommand({
          TableName: table,
          Item: {
            ...keys.ledgerLease(),
            holder,
            by,
            expiresAt: now + leaseMs,
            takenAt: new Date(now).toISOString(),
          },
          ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :now',
          ExpressionAttributeValues: { ':now': now },
        }),
      );
      return { holder, expiresAt: now + leaseMs };
    } catch (e) {
      if (!(e instanceof ConditionalCheckFailedException)) throw e;
    }
    // Someone else holds it: wait with reads (cheaper than failed conditional writes on a hot item) until it
    // looks free or expired, backing off so a crowd of containers does not hammer one partition.
    for (let poll = 0; ; poll++) {
      const backoff = Math.min(100, 5 * 2 ** Math.min(attempt + poll, 5));
      const wait = backoff / 2 + Math.random() * backoff;
      if (Date.now() + wait > deadline) return undefined;
      await sleep(wait);
      const out = await documentClient().send(
        new GetCommand({ TableName: table, Key: keys.ledgerLease(), ConsistentRead: true }),
      );
      const expiresAt = out.Item?.expiresAt as number | undefined;
      if (expiresAt === undefined || expiresAt < Date.now()) break;
    }
  }
}

/** Extends a lease this process holds; undefined when it expired and someone else took it. */
async function renewLease(lease: Lease, leaseMs: number): Promise<Lease | undefined> {
  const expiresAt = Date.now() + leaseMs;
  try {
    await documentClient().send(
      new UpdateCommand({
        TableName: config().table,
        Key: keys.ledgerLease(),
        UpdateExpression: 'SET expiresAt = :e',
        ConditionExpression: 'holder = :me',
        ExpressionAttributeValues: { ':e': expiresAt, ':me': lease.holder },
      }),
    );
    return { holder: lease.holder, expiresAt };
  } catch (e) {
    if (e instanceof ConditionalCheckFailedException) return undefined;
    throw e;
  }
}

async function releaseLease(holder: string): Promise<void> {
  try {
    await documentClient().send(
      new DeleteCommand({
        TableName: config().table,
        Key: keys.ledgerLease(),
        ConditionExpression: 'holder = :me',
        ExpressionAttributeValues: { ':me': holder },
      }),
    );
  } catch (e) {
    // Our lease expired and someone else holds it now: theirs to release. Anything else is worth a log line,
    // not a failed request: the write itself has committed, and the lease expires on its own.
    if (!(e instanceof ConditionalCheckFailedException))
      logger.warn('could not release the ledger lease; it expires on its own', {
        error: (e as Error).message,
      });
  }
}

const inTurn = new AsyncLocalStorage<true>();

/** Whether the caller runs inside a ledger turn already. */
export const isInTurn = () => inTurn.getStore() === true;

/**
 * Runs `fn` while holding the ledger turn: alone in this process, and holding the table's lease. Nested calls
 * (a decision that calls another ledger writer) run inside the turn they are in instead of waiting for themselves.
 */
export async function inLedgerTurn<T>(fn: () => Promise<T>, opts: TurnOptions): Promise<T> {
  if (inTurn.getStore()) return fn();
  const t0 = Date.now();
  const waitMs = opts.waitMs ?? DEFAULT_WAIT_MS;
  const deadline = t0 + waitMs;
  const busyError = () =>
    conflict(
      `llmcap is busy with other changes (waited ${Math.round(waitMs / 1000)} s for its turn); nothing was written, retry the request`,
      'ConcurrentUpdate',
    );
  const leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
  const entry = await enterLocal(deadline);
  if (!entry.ok) throw busyError();
  let lease = entry.lease;
  try {
    // A lease handed over with little time left is extended first, so this turn is covered.
    if (lease && lease.expiresAt - Date.now() < leaseMs / 2) lease = await renewLease(lease, leaseMs);
    lease ??= await takeLease(opts.by, leaseMs, deadline);
    if (!lease) throw busyError();
    const waited = Date.now() - t0;
    if (waited > 5_000) logger.warn('waited long for the ledger turn', { waitedMs: waited, by: opts.by });
    return await inTurn.run(true, fn);
  } finally {
    if (!handOver(lease)) {
      if (lease) await releaseLease(lease.holder);
      // Someone may have queued while the lease was being released: they take a lease of their own.
      if (!handOver(undefined)) busy = false;
    }
  }
}
