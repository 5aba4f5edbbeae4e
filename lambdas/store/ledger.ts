import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { conflict } from '../domain/errors';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { keys } from './keys';
import {
  applyToOverlay,
  decidingAt,
  knownLedgerVersion,
  ledgerVersion,
  noteCommitted,
  overlayAt,
  replayable,
  type TxItem,
} from './ledger-cache';
import { LEDGER_MAX_ITEMS, TRANSACTION_MAX_ITEMS } from './limits';
import {
  inWriterTurn,
  isInTurn,
  leaseThisTurn,
  noteContention,
  type TurnOptions,
  turnHoldsLease,
} from './turn';

/**
 * Every decision that depends on more than one item (a catalog change validated against the whole next
 * catalog, a quota checked against the tree, an admission against every limit) is made against a ledger
 * version and written in one transaction that also moves the ledger from that version to the next. Two
 * racing decisions cannot both commit: the loser re-reads and decides again against the winner's state.
 *
 * In a free turn (turn.ts: no other process has been seen writing lately) a decision is made against the version
 * this process last saw, without reading the ledger, and its commit also checks that nobody holds the lease: the
 * ledger condition proves nobody committed since, the lease check that nobody is deciding under the lease. A free
 * commit that fails either check takes the lease and decides again. A free decision that commits nothing (a
 * refusal, a no-op) confirms the version with one read before it answers, since no commit proved it current.
 */

export { ledgerVersion, type TxItem };

function ledgerBump(version: number, by: string): TxItem {
  return {
    Update: {
      TableName: config().table,
      Key: keys.ledger(),
      UpdateExpression: 'SET #v = :next, updatedAt = :now, updatedBy = :by',
      ConditionExpression: version === 0 ? 'attribute_not_exists(#v) OR #v = :cur' : '#v = :cur',
      ExpressionAttributeNames: { '#v': 'version' },
      ExpressionAttributeValues: {
        ':next': version + 1,
        ':cur': version,
        ':now': new Date().toISOString(),
        ':by': by,
      },
    },
  };
}

/** In a free turn's commit: nobody holds the lease (or it expired), so nobody is deciding under it. */
function leaseIsFree(): TxItem {
  return {
    ConditionCheck: {
      TableName: config().table,
      Key: keys.ledgerLease(),
      ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :now',
      ExpressionAttributeValues: { ':now': Date.now() },
    },
  };
}

/**
 * Commits `items` with the ledger moving from `version`; in a free turn the lease check goes last, so the
 * indices of a cancellation stay: 0 the ledger, 1..n ours, n+1 the lease.
 */
async function commit(version: number, items: TxItem[], by: string): Promise<void> {
  // A transaction holds 100 items: one too full for the lease check takes the lease instead.
  if (!turnHoldsLease() && items.length + 2 > TRANSACTION_MAX_ITEMS)
    await leaseThisTurn({ contended: false });
  const free = !turnHoldsLease();
  await documentClient().send(
    new TransactWriteCommand({
      TransactItems: [ledgerBump(version, by), ...items, ...(free ? [leaseIsFree()] : [])],
    }),
  );
  noteCommitted(version, items);
}

/**
 * The version a turn decides against: in a free turn the one this process last saw (cached: no commit has
 * proved it current yet), else a fresh read. A leased turn that finds the ledger moved by someone else notes it.
 */
async function turnVersion(): Promise<{ version: number; cached: boolean }> {
  const last = knownLedgerVersion();
  if (last !== undefined && !turnHoldsLease()) return { version: last, cached: true };
  const version = await ledgerVersion();
  if (last !== undefined && last !== version) noteContention();
  return { version, cached: false };
}

/** Whether a decision made against a cached version stands: the ledger has not moved since. */
async function stillAt(version: number): Promise<boolean> {
  return (await ledgerVersion()) === version;
}

/** Which item of a cancelled transaction failed its condition: the ledger (index 0) or one of ours. */
function cancelledAt(e: unknown): number[] {
  if (!(e instanceof TransactionCanceledException)) return [];
  return (e.CancellationReasons ?? [])
    .map((r, i) => (r.Code === 'ConditionalCheckFailed' ? i : -1))
    .filter((i) => i >= 0);
}

/**
 * The transaction lost to another ledger write: the version moved, someone holds the lease (index `lease`, a
 * free turn's check), or DynamoDB saw a concurrent transaction.
 */
function lostLedger(e: unknown, failed: number[], lease: number): boolean {
  return (
    failed.includes(0) ||
    failed.includes(lease) ||
    (e as Error).name === 'TransactionConflictException' ||
    (e instanceof TransactionCanceledException &&
      (e.CancellationReasons ?? []).some((r) => r.Code === 'TransactionConflict'))
  );
}

// Jittered backoff keeps racers (writers of other processes, past an expired lease) from colliding again.
const backoff = (attempt: number) => new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));

const tooManyChanges = () => conflict('too many concurrent changes; retry the request', 'ConcurrentUpdate');

export interface LedgerOptions extends TurnOptions {
  attempts?: number;
  /** Called when one of our own items (not the ledger) failed its condition: explain it to the caller. */
  onItemConflict?: (index: number) => Error;
  /**
   * The decision reads the ledger partitions only through the repositories' list functions and writes them
   * only with Put and Delete, so it can be decided in memory after others and committed with them (groupCommit).
   */
  groupable?: boolean;
}

type Decide<T> = () => Promise<{ items: TxItem[]; result: T }>;

interface Job {
  decide: Decide<unknown>;
  opts: LedgerOptions;
  settle: (outcome: { ok: true; value: unknown } | { ok: false; error: unknown }) => void;
  done: boolean;
  /** Being decided in another job's group: its own turn's timeout must wait for the group's outcome. */
  claimed: boolean;
  expired?: unknown;
  /** Hands the settled outcome to the caller; called once the turn that settled the job has ended. */
  deliver: () => void;
}

// The writers of this process waiting for the turn, oldest first.
const pending: Job[] = [];

/**
 * Runs `decide` against a fresh ledger version and commits what it returns with the ledger bump, in the ledger
 * turn (turn.ts), so writers queue rather than race; still retries on a lost race (a lease that expired under a
 * stalled holder). `decide` must read everything it depends on itself, so each retry sees the winner's writes.
 * Groupable decisions waiting in this process are committed together by whoever's turn comes first.
 */
export function withLedger<T>(decide: Decide<T>, opts: LedgerOptions): Promise<T> {
  if (isInTurn()) return decideAndCommit(decide, opts);
  return new Promise<T>((resolve, reject) => {
    let settled: { ok: true; value: unknown } | { ok: false; error: unknown } | undefined;
    const job: Job = {
      decide,
      opts,
      done: false,
      claimed: false,
      settle: (o) => {
        if (job.done) return;
        job.done = true;
        const i = pending.indexOf(job);
        if (i >= 0) pending.splice(i, 1);
        settled = o;
      },
      deliver: () => {
        if (!settled) return;
        if (settled.ok) resolve(settled.value as T);
        else reject(settled.error);
      },
    };
    pending.push(job);
    // The caller hears the outcome only after the turn has ended, lease released: a Lambda container is frozen
    // once its handler answers, and a release still in flight then leaves the lease to block every other
    // container until it expires.
    const group = new Set<Job>([job]);
    inWriterTurn(async () => {
      // An earlier turn may have committed this job with its own group; then there is nothing left to do.
      if (job.done) return;
      if (!opts.groupable) {
        job.settle(await outcome(() => decideAndCommit(decide, opts)));
        return;
      }
      await groupCommit(job, group);
    }, opts)
      .catch((error) => {
        if (job.claimed) job.expired = error;
        else job.settle({ ok: false, error });
      })
      .finally(() => {
        // This turn's job and those its group settled; a job another turn settles is delivered by that turn.
        for (const j of group) if (!j.claimed) j.deliver();
      });
  });
}

async function outcome(fn: () => Promise<unknown>) {
  try {
    return { ok: true as const, value: await fn() };
  } catch (error) {
    return { ok: false as const, error };
  }
}

/** The most decisions one group makes: each reads the whole catalog in memory, and a turn should stay short. */
const GROUP_JOBS = 24;

/** The identity of the item a transaction item touches: one transaction may touch an item once. */
function itemKey(it: TxItem): string {
  const op = it.Put ?? it.Delete ?? it.Update ?? it.ConditionCheck;
  const k =
    (it.Put ? { pk: it.Put.Item?.pk, sk: it.Put.Item?.sk } : (op as { Key?: Record<string, unknown> }).Key) ??
    {};
  return `${op?.TableName}|${String(k.pk)}|${String(k.sk)}`;
}

/**
 * Group commit: the turn's own job and the groupable jobs queued behind it are decided one after another against
 * the ledger partitions in memory (each sees the writes of those before it), and committed in one transaction
 * with one ledger bump. Under a queue of writers this turns one commit per request into one per group, which is
 * what lets the local control plane (one process, one CPU for everything) hold 200 concurrent clients. Each
 * outcome, refusals included, is settled only once the group's transaction has committed, because every decision
 * was made against the state that transaction creates. Two writes to one item merge (see merge); a job that
 * cannot join (it checks an item the group writes, or the group is full) is left for its own turn.
 */
async function groupCommit(first: Job, claimed: Set<Job>): Promise<void> {
  try {
    await decideGroup(first, claimed);
  } finally {
    for (const j of claimed) {
      j.claimed = false;
      // Its turn ran out while the group had it: it was not committed, so it gets its turn's answer now.
      if (!j.done && j.expired !== undefined) j.settle({ ok: false, error: j.expired });
    }
  }
}

/** Where an item of the group's transaction came from: the first job that touched it, and its index there. */
interface Slot {
  op: TxItem;
  job: Job;
  index: number;
}

const CONDITION_FIELDS = [
  'ConditionExpression',
  'ExpressionAttributeNames',
  'ExpressionAttributeValues',
] as const;

function condition(it: TxItem): Record<string, unknown> {
  const op = (it.Put ?? it.Delete ?? it.ConditionCheck ?? {}) as Record<string, unknown>;
  return Object.fromEntries(CONDITION_FIELDS.filter((f) => op[f] !== undefined).map((f) => [f, op[f]]));
}

/**
 * A later job's write to an item an earlier job of the group wrote: one write with the later job's content and
 * the earlier job's condition, which is the condition on the item as the table holds it now.
 */
function merge(earlier: TxItem, later: TxItem): TxItem {
  const cond = condition(earlier);
  const strip = <O extends object>(o: O) =>
    Object.fromEntries(
      Object.entries(o).filter(([k]) => !(CONDITION_FIELDS as readonly string[]).includes(k)),
    );
  if (later.Put) return { Put: { ...strip(later.Put), ...cond } as NonNullable<TxItem['Put']> };
  return { Delete: { ...strip(later.Delete!), ...cond } as NonNullable<TxItem['Delete']> };
}

/**
 * Adds one job's writes to the group's slots, or says they cannot join: a check on an item the group writes (or a
 * different check on one it checks), or more items than a transaction holds. Two writes to one item merge.
 */
function join(slots: Map<string, Slot>, job: Job, mine: readonly TxItem[]): boolean {
  const next = new Map(slots);
  for (const [index, it] of mine.entries()) {
    const k = itemKey(it);
    const had = next.get(k);
    if (!had) next.set(k, { op: it, job, index });
    else if (it.ConditionCheck || had.op.ConditionCheck) {
      if (!(it.ConditionCheck && had.op.ConditionCheck && sameJson(condition(it), condition(had.op))))
        return false;
    } else if (it.Update || had.op.Update) return false;
    else next.set(k, { ...had, op: merge(had.op, it) });
  }
  if (next.size > LEDGER_MAX_ITEMS) return false;
  slots.clear();
  for (const [k, v] of next) slots.set(k, v);
  return true;
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

async function decideGroup(first: Job, claimed: Set<Job>): Promise<void> {
  const attempts = first.opts.attempts ?? 12;
  for (let attempt = 1; ; attempt++) {
    const { version, cached } = await turnVersion();
    const overlay = await overlayAt(version);
    const candidates = [first, ...pending.filter((j) => j !== first && !j.done && j.opts.groupable)];
    const joined: { job: Job; outcome: Awaited<ReturnType<typeof outcome>> }[] = [];
    const slots = new Map<string, Slot>();
    for (const job of candidates) {
      if (slots.size >= LEDGER_MAX_ITEMS || joined.length >= GROUP_JOBS) break;
      if (job.done) continue;
      job.claimed = true;
      claimed.add(job);
      let mine: TxItem[] = [];
      const o = await outcome(async () => {
        const d = await decidingAt(version, job.decide, overlay);
        mine = d.items;
        return d.result;
      });
      // join() changes the group only when the job fits it.
      if (!(replayable(mine) && join(slots, job, mine))) {
        // Its own turn decides it again; the first job fits an empty group unless it writes outside the overlay.
        if (job === first) {
          first.settle(await outcome(() => decideAndCommit(first.decide, first.opts)));
          return;
        }
        continue;
      }
      applyToOverlay(overlay, mine);
      joined.push({ job, outcome: o });
    }
    const settleAll = () => {
      for (const j of joined) j.job.settle(j.outcome);
    };
    const order = [...slots.values()];
    const items = order.map((s) => s.op);
    if (items.length === 0) {
      // Nothing to commit proves the cached version current: read it before answering.
      if (cached && !(await stillAt(version))) {
        await leaseThisTurn();
        continue;
      }
      return settleAll();
    }
    try {
      await commit(version, items, first.opts.by);
      return settleAll();
    } catch (e) {
      const failed = cancelledAt(e);
      if (lostLedger(e, failed, items.length + 1)) {
        // Lost to another process: a free turn takes the lease and decides again, a leased one backs off.
        if (!turnHoldsLease()) {
          await leaseThisTurn();
          continue;
        }
        if (attempt >= attempts) throw tooManyChanges();
        await backoff(attempt);
        continue;
      }
      const own = failed.find((i) => i > 0);
      if (own === undefined) throw e;
      // An item failed its condition: the job that first touched it is told why, the others decide again.
      const slot = order[own - 1];
      if (slot) {
        const error =
          slot.job.opts.onItemConflict?.(slot.index) ??
          conflict('a concurrent change got there first; retry the request', 'ConcurrentUpdate');
        slot.job.settle({ ok: false, error });
      }
      if (first.done) return;
    }
  }
}

async function decideAndCommit<T>(
  decide: () => Promise<{ items: TxItem[]; result: T }>,
  opts: LedgerOptions,
): Promise<T> {
  const attempts = opts.attempts ?? 12;
  for (let attempt = 1; ; attempt++) {
    const { version, cached } = await turnVersion();
    let decided: { items: TxItem[]; result: T };
    try {
      decided = await decidingAt(version, decide);
    } catch (e) {
      // A refusal made against a cached version stands only if the ledger is still there.
      if (cached && !(await stillAt(version))) {
        await leaseThisTurn();
        continue;
      }
      throw e;
    }
    const { items, result } = decided;
    if (items.length === 0) {
      if (cached && !(await stillAt(version))) {
        await leaseThisTurn();
        continue;
      }
      return result;
    }
    if (items.length > LEDGER_MAX_ITEMS)
      throw new Error(`a ledger transaction holds at most ${LEDGER_MAX_ITEMS} items, got ${items.length}`);
    try {
      await commit(version, items, opts.by);
      return result;
    } catch (e) {
      const failed = cancelledAt(e);
      const lost = lostLedger(e, failed, items.length + 1);
      if (lost && !turnHoldsLease()) {
        await leaseThisTurn();
        continue;
      }
      if (lost && attempt < attempts) {
        await backoff(attempt);
        continue;
      }
      const own = failed.find((i) => i > 0);
      if (own !== undefined && opts.onItemConflict) throw opts.onItemConflict(own - 1);
      throw lost ? tooManyChanges() : e;
    }
  }
}

/**
 * Commits one decision that is too large for one transaction as a chain of transactions, each moving the
 * ledger one version on from the last. If anything else moves the ledger in between, the chain stops and
 * returns how many slices landed; the caller decides again from the stored state. Callers order the slices
 * so that every prefix is a valid state on its own (releases before admissions).
 */
export async function commitChain(
  version: number,
  slices: TxItem[][],
  by: string,
): Promise<{ committed: number; complete: boolean }> {
  let v = version;
  let committed = 0;
  for (const slice of slices) {
    if (slice.length === 0) continue;
    try {
      await commit(v, slice, by);
    } catch (e) {
      if (e instanceof TransactionCanceledException || (e as Error).name === 'TransactionConflictException') {
        return { committed, complete: false };
      }
      throw e;
    }
    v++;
    committed++;
  }
  return { committed, complete: true };
}
