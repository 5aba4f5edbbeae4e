import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  PutCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { conflict } from '../domain/errors';
import { config } from '../shared/config';
import { batchGet } from './batch-get';
import { keys } from './keys';
import { TRANSACTION_MAX_ITEMS } from './limits';
import type { ReadAge } from './shared-read';
import { sendWrite } from './write';

/**
 * How a write use case commits (docs/design.md §2.1): it reads what its rules depend on, decides, and writes its
 * items in one request whose conditions are on what it read: the item it changes at the version it read, the
 * computes it pins at theirs. A rule that spans items no single condition can hold (a name unique along a line of
 * the tree, the quota tree's sums) names a guard: one small item per such rule, read before the decision and bumped
 * with its commit, so two decisions under the same guard cannot both commit; the loser decides again. Admission
 * is not decided here: the admitter (service/admitter.ts) is its only writer.
 */

export type TxItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export interface CommitOptions {
  /** The guards the decision's rules read (keys.guard), bumped with its commit. */
  guards?: readonly string[];
  /**
   * Guards the decision's rules depend on but its change does not move: checked at the version read, not bumped.
   * A model's resources fit only some computes; a compute deleted meanwhile (which bumps `computes`) must send
   * the write back to decide again, yet two such writes need not exclude each other.
   */
  checks?: readonly string[];
  /**
   * How long to keep deciding again while others keep changing what this one read, before 409; default 15 s,
   * half the API's 29 s budget. Time, not a count: 64 writers of one item need some 64 rounds between them.
   */
  budgetMs?: number;
  /** One of the decision's own items (its index in `items`) still failed its condition at the last attempt. */
  onItemConflict?: (index: number) => Error;
  /**
   * The first decision may read answers this process already has, this young (store/shared-read.ts); its
   * conditions catch what changed since. A refusal, or "nothing to change", is only answered from fresh reads;
   * a decision under a guard always reads fresh.
   */
  snapshotMs?: number;
  /**
   * Writes of this process with the same key (a model's name) decide and commit one after another: they could
   * only race each other for one item, every one but the winner reading again and retrying, so a hot model took
   * seconds a write. Each still commits on its own conditions, and other processes' writes race as before. The
   * wait counts against the budget.
   */
  oneAtATime?: string;
}

/** One decision, on reads no older than `age` (fresh when absent). */
export type Decide<T> = (age?: ReadAge) => Promise<{ items: TxItem[]; result: T }>;

// The last write of this process in line for each key (CommitOptions.oneAtATime): the next waits for it to end.
const inLine = new Map<string, Promise<void>>();

/** Decides and commits, deciding again when a guard moved meanwhile; what the decision answers once it committed. */
export async function commitDecision<T>(decide: Decide<T>, opts: CommitOptions = {}): Promise<T> {
  const until = Date.now() + (opts.budgetMs ?? 15_000);
  if (!opts.oneAtATime) return decideAndCommit(decide, opts, until);
  // Keyed by endpoint and table as well, so tests with several tables in one process never wait on each other.
  const key = `${config().endpoints.dynamodb ?? ''}|${config().table}|${opts.oneAtATime}`;
  const before = inLine.get(key);
  let done!: () => void;
  const mine = new Promise<void>((r) => {
    done = r;
  });
  inLine.set(key, mine);
  try {
    await before;
    return await decideAndCommit(decide, opts, until);
  } finally {
    done();
    if (inLine.get(key) === mine) inLine.delete(key);
  }
}

async function decideAndCommit<T>(decide: Decide<T>, opts: CommitOptions, until: number): Promise<T> {
  const guards = opts.guards ?? [];
  const checks = opts.checks ?? [];
  const read = [...guards, ...checks];
  // Under a guard every read must be at least as fresh as the guard's version, which a reading may predate: a
  // name taken elsewhere before the guard was read would be missing from it, and the commit would still land.
  let age: ReadAge | undefined =
    opts.snapshotMs && read.length === 0 ? { maxAgeMs: opts.snapshotMs } : undefined;
  for (let attempt = 1; ; attempt++) {
    // The guards first: a write that lands after this read moves them, so a decision on stale reads cannot commit.
    const versions = await Promise.all(read.map(guardVersion));
    let decided: Awaited<ReturnType<Decide<T>>>;
    try {
      decided = await decide(age);
    } catch (e) {
      if (!age) throw e;
      age = undefined; // refused on a snapshot: what is stored now may allow it
      continue;
    }
    const { items, result } = decided;
    if (items.length === 0) {
      if (!age) return result;
      age = undefined; // "nothing to change" against a snapshot: the item may have moved since
      continue;
    }
    const all = [
      ...guards.map((g, i) => guardBump(g, versions[i]!)),
      ...checks.map((g, i) => guardCheck(g, versions[guards.length + i]!)),
      ...items,
    ];
    if (all.length > TRANSACTION_MAX_ITEMS)
      throw conflict(`this change writes ${items.length} items at once; split it and retry`, 'TooLarge');
    try {
      await write(all);
      return result;
    } catch (e) {
      const failed = failedAt(e, all.length);
      if (!lostRace(e, failed)) throw e;
      age = undefined;
      // Something the decision read changed before it landed (its item, a guard, a checked item): decide again
      // on what is there now, so the rules answer (a version asked for that no longer matches, a name now taken).
      if (Date.now() < until) {
        // Full jitter, growing to 250 ms: many writers of one item spread out instead of colliding again.
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(250, 5 * 2 ** attempt)));
        continue;
      }
      const own = failed.find((i) => i >= read.length);
      throw own !== undefined && opts.onItemConflict
        ? opts.onItemConflict(own - read.length)
        : conflict('too many concurrent changes; retry the request', 'ConcurrentUpdate');
    }
  }
}

/** One item goes as a plain conditional write (half a transaction's cost); more as one transaction. */
async function write(items: TxItem[]): Promise<void> {
  if (items.length > 1) {
    await sendWrite(new TransactWriteCommand({ TransactItems: items }));
    return;
  }
  const it = items[0]!;
  if (it.Put) await sendWrite(new PutCommand(it.Put));
  else if (it.Delete) await sendWrite(new DeleteCommand(it.Delete));
  else if (it.Update) await sendWrite(new UpdateCommand(it.Update));
  // A lone ConditionCheck writes nothing; there is nothing to check it against but the read.
}

/** Which items of the write failed their condition (a single write: item 0). */
function failedAt(e: unknown, n: number): number[] {
  if (e instanceof ConditionalCheckFailedException && n === 1) return [0];
  if (!(e instanceof TransactionCanceledException)) return [];
  return (e.CancellationReasons ?? [])
    .map((r, i) => (r.Code === 'ConditionalCheckFailed' ? i : -1))
    .filter((i) => i >= 0);
}

/** A guard moved, or DynamoDB saw another transaction on the same items: decide again. */
function lostRace(e: unknown, failed: number[]): boolean {
  return (
    failed.length > 0 ||
    (e as Error).name === 'TransactionConflictException' ||
    (e instanceof TransactionCanceledException &&
      (e.CancellationReasons ?? []).some((r) => r.Code === 'TransactionConflict'))
  );
}

async function guardVersion(name: string): Promise<number> {
  const item = await batchGet(keys.guard(name), { consistent: true });
  return (item?.version as number | undefined) ?? 0;
}

/** The condition that a guard item is at `version` (0: never written). */
function atVersion(version: number) {
  return {
    ConditionExpression: version === 0 ? 'attribute_not_exists(#v)' : '#v = :cur',
    ExpressionAttributeNames: { '#v': 'version' },
  };
}

function guardBump(name: string, version: number): TxItem {
  return {
    Update: {
      TableName: config().table,
      Key: keys.guard(name),
      UpdateExpression: 'SET #v = :next',
      ...atVersion(version),
      ExpressionAttributeValues: version === 0 ? { ':next': 1 } : { ':next': version + 1, ':cur': version },
    },
  };
}

function guardCheck(name: string, version: number): TxItem {
  return {
    ConditionCheck: {
      TableName: config().table,
      Key: keys.guard(name),
      ...atVersion(version),
      ...(version === 0 ? {} : { ExpressionAttributeValues: { ':cur': version } }),
    },
  };
}

/** The guards of this project's rules, named once. */
export const GUARDS = {
  /** Names unique along a line of the tree (domain/names.ts keyForNew) for models of this name. */
  modelName: (name: string) => `model-name#${name}`,
  /** The computes as a set: names along a line, the node group quota, the models that pin one. */
  computes: 'computes',
  /** The scope tree and its quotas: a quota is checked against its parent's and its children's. */
  tenancy: 'tenancy',
} as const;
