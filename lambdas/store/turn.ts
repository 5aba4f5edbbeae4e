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
 *
 * While no other process writes, the lease is pure cost (a put and a delete around every turn), so ledger
 * writers (inWriterTurn) start in a free turn: queued in this process as always, but without the lease. Their
 * commit proves what the lease would have: it is conditional on the ledger version this process last saw and on
 * nobody holding the lease (ledger.ts). The first sign of another process (a free commit that lost, a lease
 * that had to be waited for, a ledger that moved under us) makes this process take the lease, in that same turn
 * and in every turn for CONTENDED_MS after the last such sign.
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
/** How long after the last sign of another writer this process keeps taking the lease for every turn. */
const CONTENDED_MS = 2_000;

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

let contendedUntil = 0;

/** Another process writes the ledger too: take the lease for the turns of the next CONTENDED_MS. */
export function noteContention(): void {
  contendedUntil = Date.now() + CONTENDED_MS;
}

/** A write on the lease item lost to a transaction that checks it (a free turn's commit): try again. */
const conflicted = (e: unknown) => (e as Error).name === 'TransactionConflictException';

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
      if (!(e instanceof ConditionalCheckFailedException || conflicted(e))) throw e;
      // Someone holds the turn, or commits in a free one: another process is writing.
      noteContention();
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

/** Runs a write on the lease item again while it only lost to a free commit checking the lease meanwhile. */
async function pastFreeCommits<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await write();
    } catch (e) {
      if (!conflicted(e) || attempt >= 5) throw e;
      await sleep(2 + Math.random() * 5 * (attempt + 1));
    }
  }
}

/** Extends a lease this process holds; undefined when it expired and someone else took it. */
async function renewLease(lease: Lease, leaseMs: number): Promise<Lease | undefined> {
  const expiresAt = Date.now() + leaseMs;
  try {
    await pastFreeCommits(() =>
      documentClient().send(
        new UpdateCommand({
          TableName: config().table,
          Key: keys.ledgerLease(),
          UpdateExpression: 'SET expiresAt = :e',
          ConditionExpression: 'holder = :me',
          ExpressionAttributeValues: { ':e': expiresAt, ':me': lease.holder },
        }),
      ),
    );
    return { holder: lease.holder, expiresAt };
  } catch (e) {
    if (e instanceof ConditionalCheckFailedException) return undefined;
    throw e;
  }
}

async function releaseLease(holder: string): Promise<void> {
  try {
    await pastFreeCommits(() =>
      documentClient().send(
        new DeleteCommand({
          TableName: config().table,
          Key: keys.ledgerLease(),
          ConditionExpression: 'holder = :me',
          ExpressionAttributeValues: { ':me': holder },
        }),
      ),
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

/** The turn a caller runs in: who took it, until when it may wait for the lease, and the lease if it holds it. */
interface Turn {
  by: string;
  waitMs: number;
  leaseMs: number;
  deadline: number;
  lease?: Lease;
}

const inTurn = new AsyncLocalStorage<Turn>();

/** Whether the caller runs inside a ledger turn already. */
export const isInTurn = () => inTurn.getStore() !== undefined;

/** Whether the caller's turn holds the table's lease; false in a free turn (or outside any turn). */
export const turnHoldsLease = () => inTurn.getStore()?.lease !== undefined;

const busyError = (waitMs: number) =>
  conflict(
    `llmcap is busy with other changes (waited ${Math.round(waitMs / 1000)} s for its turn); nothing was written, retry the request`,
    'ConcurrentUpdate',
  );

/**
 * A free turn's commit lost to another process: the rest of this turn holds the lease, taken before the turn's
 * deadline (409 busy, nothing written, after it), and so do this process's turns for a while (noteContention)
 * unless the lease is taken for another reason (`contended: false`).
 */
export async function leaseThisTurn(opts: { contended?: boolean } = {}): Promise<void> {
  const turn = inTurn.getStore();
  if (!turn)
    throw new Error('leaseThisTurn must be called inside a ledger turn (inLedgerTurn or inWriterTurn)');
  if (opts.contended !== false) noteContention();
  if (turn.lease) return;
  turn.lease = await takeLease(turn.by, turn.leaseMs, turn.deadline);
  if (!turn.lease) throw busyError(turn.waitMs);
}

/**
 * Runs `fn` while holding the ledger turn: alone in this process, and holding the table's lease (reconcile's
 * chain of commits, which must not be broken by free commits in between). Nested calls (a decision that calls
 * another ledger writer) run inside the turn they are in instead of waiting for themselves.
 */
export function inLedgerTurn<T>(fn: () => Promise<T>, opts: TurnOptions): Promise<T> {
  return runTurn(fn, opts, true);
}

/**
 * The turn of one ledger writer (withLedger): alone in this process, and free of the lease unless this process
 * has seen another writer lately; a free turn's commit checks that nobody holds the lease (ledger.ts).
 */
export function inWriterTurn<T>(fn: () => Promise<T>, opts: TurnOptions): Promise<T> {
  return runTurn(fn, opts, false);
}

async function runTurn<T>(fn: () => Promise<T>, opts: TurnOptions, leased: boolean): Promise<T> {
  if (inTurn.getStore()) return fn();
  const t0 = Date.now();
  const waitMs = opts.waitMs ?? DEFAULT_WAIT_MS;
  const turn: Turn = {
    by: opts.by,
    waitMs,
    leaseMs: opts.leaseMs ?? DEFAULT_LEASE_MS,
    deadline: t0 + waitMs,
  };
  const entry = await enterLocal(turn.deadline);
  if (!entry.ok) throw busyError(waitMs);
  turn.lease = entry.lease;
  try {
    // A lease handed over with little time left is extended first, so this turn is covered.
    if (turn.lease && turn.lease.expiresAt - Date.now() < turn.leaseMs / 2)
      turn.lease = await renewLease(turn.lease, turn.leaseMs);
    if (!turn.lease && (leased || Date.now() < contendedUntil)) {
      turn.lease = await takeLease(opts.by, turn.leaseMs, turn.deadline);
      if (!turn.lease) throw busyError(waitMs);
    }
    const waited = Date.now() - t0;
    if (waited > 5_000) logger.warn('waited long for the ledger turn', { waitedMs: waited, by: opts.by });
    return await inTurn.run(turn, fn);
  } finally {
    if (!handOver(turn.lease)) {
      if (turn.lease) await releaseLease(turn.lease.holder);
      // Someone may have queued while the lease was being released: they take a lease of their own.
      if (!handOver(undefined)) busy = false;
    }
  }
}
