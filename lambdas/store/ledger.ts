import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { conflict, DomainError } from '../domain/errors';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { keys } from './keys';

/**
 * Every decision that depends on more than one item (a catalog change validated against the whole next
 * catalog, a quota checked against the tree, an admission against every limit) is made against a ledger
 * version and written in one transaction that also moves the ledger from that version to the next. Two
 * racing decisions cannot both commit: the loser re-reads and decides again against the winner's state.
 */

export type TxItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export async function ledgerVersion(): Promise<number> {
  const out = await documentClient().send(
    new GetCommand({ TableName: config().table, Key: keys.ledger(), ConsistentRead: true }),
  );
  return (out.Item?.version as number | undefined) ?? 0;
}

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

/** Which item of a cancelled transaction failed its condition: the ledger (index 0) or one of ours. */
function cancelledAt(e: unknown): number[] {
  if (!(e instanceof TransactionCanceledException)) return [];
  return (e.CancellationReasons ?? [])
    .map((r, i) => (r.Code === 'ConditionalCheckFailed' ? i : -1))
    .filter((i) => i >= 0);
}

export interface LedgerOptions {
  by: string;
  attempts?: number;
  /** Called when one of our own items (not the ledger) failed its condition: explain it to the caller. */
  onItemConflict?: (index: number) => Error;
}

/**
 * Runs `decide` against a fresh ledger version and commits what it returns with the ledger bump; retries on a
 * lost race. `decide` must read everything it depends on itself, so each retry sees the winner's writes.
 */
export async function withLedger<T>(
  decide: () => Promise<{ items: TxItem[]; result: T }>,
  opts: LedgerOptions,
): Promise<T> {
  const attempts = opts.attempts ?? 12;
  for (let attempt = 1; ; attempt++) {
    const version = await ledgerVersion();
    const { items, result } = await decide();
    if (items.length === 0) return result;
    if (items.length > 99)
      throw new Error(`a ledger transaction holds at most 99 items, got ${items.length}`);
    try {
      await documentClient().send(
        new TransactWriteCommand({ TransactItems: [ledgerBump(version, opts.by), ...items] }),
      );
      return result;
    } catch (e) {
      const failed = cancelledAt(e);
      const ledgerLost = failed.includes(0) || (e as Error).name === 'TransactionConflictException';
      const txConflict =
        e instanceof TransactionCanceledException &&
        (e.CancellationReasons ?? []).some((r) => r.Code === 'TransactionConflict');
      if ((ledgerLost || txConflict) && attempt < attempts) {
        // Jittered backoff keeps a crowd of racers from colliding again on the next version.
        await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
        continue;
      }
      const own = failed.find((i) => i > 0);
      if (own !== undefined && opts.onItemConflict) throw opts.onItemConflict(own - 1);
      if (ledgerLost || txConflict) {
        throw conflict('too many concurrent changes; retry the request', 'ConcurrentUpdate');
      }
      if (e instanceof DomainError) throw e;
      throw e;
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
      await documentClient().send(new TransactWriteCommand({ TransactItems: [ledgerBump(v, by), ...slice] }));
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
