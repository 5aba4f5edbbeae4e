import { AsyncLocalStorage } from 'node:async_hooks';
import { GetCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { deepFreeze } from '../domain/freeze';
import { documentClient, dynamoEndpoint } from '../shared/clients';
import { config } from '../shared/config';
import { keys } from './keys';
import { queryPartition } from './query';

/**
 * The partitions llmcap writes only in ledger transactions (models, quotas, admissions) cannot change while the
 * ledger version stands still. So a process keeps the rows it read at a version and serves them for as long as
 * the version is the same (one GetItem instead of a Query of the whole partition and its unmarshalling), and a
 * ledger commit moves them to the next version by applying its own writes. Under load, re-reading these
 * partitions was most of the API's work. A hand edit in the console does not move the ledger; MAX_AGE_MS bounds
 * how long it stays unseen.
 */

export type TxItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];
export type LedgerPartition = 'MODEL' | 'QUOTA' | 'ADMISSION';

const PARTITIONS: readonly string[] = ['MODEL', 'QUOTA', 'ADMISSION'] satisfies LedgerPartition[];
const MAX_AGE_MS = 5_000;

interface Cached {
  version: number;
  at: number;
  rows: readonly Record<string, unknown>[];
}
const cached = new Map<string, Cached>();
const cacheKey = (pk: string) => `${dynamoEndpoint() ?? ''}|${config().table}|${pk}`;

/** The ledger version this process last saw (read, or moved by its own commit), and when. */
interface Known {
  version: number;
  at: number;
}
const known = new Map<string, Known>();
const knownKey = () => `${dynamoEndpoint() ?? ''}|${config().table}`;

export async function ledgerVersion(): Promise<number> {
  const asked = Date.now();
  const out = await documentClient().send(
    new GetCommand({ TableName: config().table, Key: keys.ledger(), ConsistentRead: true }),
  );
  const version = (out.Item?.version as number | undefined) ?? 0;
  // A read is the truth as of when it was asked, unless something newer was learned since.
  const k = knownKey();
  if ((known.get(k)?.at ?? 0) <= asked) known.set(k, { version, at: asked });
  return version;
}

/**
 * The ledger version as this process last saw it, if that was within MAX_AGE_MS: what a free turn decides
 * against without reading the ledger (its commit is conditional on it, so a stale guess costs a retry).
 */
export function knownLedgerVersion(): number | undefined {
  const k = known.get(knownKey());
  return k && Date.now() - k.at < MAX_AGE_MS ? k.version : undefined;
}

/**
 * What a ledger decision is being made against: its version (reads inside it need not fetch it again) and, when
 * it is one of a group committed together, the partitions as the decisions before it in the group left them.
 */
interface Deciding {
  version: number;
  overlay?: Overlay;
}
export type Overlay = Map<string, readonly Record<string, unknown>[]>;
const deciding = new AsyncLocalStorage<Deciding>();

export function decidingAt<T>(version: number, fn: () => Promise<T>, overlay?: Overlay): Promise<T> {
  return deciding.run({ version, overlay }, fn);
}

/** Partitions written outside the ledger, read once for a whole group of decisions (see readPartition). */
const OUTSIDE = ['COMPUTE', 'SCOPE'] as const;

type Rows = readonly Record<string, unknown>[];

/** The next read of one key, not sent yet: whoever asks before it is sent shares it. */
interface NextRead {
  read: () => Promise<unknown>;
  promise: Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (e: unknown) => void;
}
interface Reads {
  inFlight: boolean;
  next?: NextRead;
}
const reads = new Map<string, Reads>();

/**
 * One read of `key`, shared by every caller that asked before it was sent, so it is as fresh for each of them as
 * a read of their own (it sees every write that ended before they asked). Under load, every request reads the
 * scope tree to know its caller; this makes that one Query per round trip, not one per request. Callers share
 * the value, so `read` freezes what it returns.
 */
export function sharedRead<T>(key: string, read: () => Promise<T>): Promise<T> {
  const k = `${dynamoEndpoint() ?? ''}|${config().table}|${key}`;
  const r = reads.get(k) ?? { inFlight: false };
  reads.set(k, r);
  if (r.next) return r.next.promise as Promise<T>;
  let resolve!: NextRead['resolve'];
  let reject!: NextRead['reject'];
  const promise = new Promise<T>((res, rej) => {
    resolve = res as NextRead['resolve'];
    reject = rej;
  });
  r.next = { read, promise, resolve, reject };
  // Sent once this turn of the event loop has asked all it will; or, if one is in flight, when it returns.
  if (!r.inFlight) setImmediate(() => send(r));
  return promise;
}

function send(r: Reads): void {
  const batch = r.next;
  if (!batch) return;
  r.next = undefined;
  r.inFlight = true;
  batch
    .read()
    .then(batch.resolve, batch.reject)
    .finally(() => {
      r.inFlight = false;
      if (r.next) send(r);
    });
}

/** An outside partition's rows through sharedRead, frozen. */
function sharedQuery(pk: (typeof OUTSIDE)[number]): Promise<Rows> {
  return sharedRead(pk, async () => {
    const rows = await queryPartition(pk);
    for (const row of rows) deepFreeze(row);
    return rows as Rows;
  });
}

/** The ledger partitions at `version`, for a group of decisions to read and write in memory. */
export async function overlayAt(version: number): Promise<Overlay> {
  // Shared by the group's decisions: frozen, so none can change what the next one reads.
  const outside = OUTSIDE.map(async (pk) => [pk, await sharedQuery(pk)] as const);
  const inside = PARTITIONS.map(
    async (pk) => [pk, await decidingAt(version, () => queryLedgerPartition(pk as LedgerPartition))] as const,
  );
  return new Map(await Promise.all([...inside, ...outside]));
}

/**
 * Computes and scopes, read from the table, or from the group's overlay inside a group of decisions: read once
 * per group rather than once per decision, which is as fresh (they change outside the ledger either way) and
 * still safe, because decisions check the computes they pin by version when they commit.
 */
export async function readPartition(pk: (typeof OUTSIDE)[number]): Promise<Rows> {
  return deciding.getStore()?.overlay?.get(pk) ?? sharedQuery(pk);
}

/**
 * Whether one decision's writes can be replayed in memory for the decisions after it in a group: not an Update
 * expression on a ledger partition, nor a write to a partition the overlay does not hold (the next decision
 * would read it from the table, without this write).
 */
export function replayable(items: readonly TxItem[]): boolean {
  const w = writesByPartition(items);
  return !w.foreign && w.unreplayable.size === 0;
}

/** Applies one decision's writes (replayable ones) to the overlay, for the decisions after it in the group. */
export function applyToOverlay(overlay: Overlay, items: readonly TxItem[]): void {
  for (const [pk, writes] of writesByPartition(items).byPk)
    overlay.set(pk, applyWrites(overlay.get(pk) ?? [], writes));
}

/** The writes per ledger partition; those partitions with a write that cannot be replayed; other partitions hit. */
function writesByPartition(items: readonly TxItem[]) {
  const byPk = new Map<string, TxItem[]>();
  const unreplayable = new Set<string>();
  let foreign = false;
  for (const it of items) {
    if (it.ConditionCheck) continue;
    const pk = String(it.Put?.Item?.pk ?? it.Delete?.Key?.pk ?? it.Update?.Key?.pk ?? '');
    if (!PARTITIONS.includes(pk)) foreign = true;
    else if (it.Update) unreplayable.add(pk);
    else byPk.set(pk, [...(byPk.get(pk) ?? []), it]);
  }
  return { byPk, unreplayable, foreign };
}

function applyWrites(rows: Rows, writes: readonly TxItem[]): Rows {
  if (!writes.length) return rows;
  // A Query returns a partition in sort-key order; names are ASCII, so code-unit order is the same. A write
  // replaces, inserts or removes one row in place: a group applies one decision's writes after another, and
  // re-sorting the whole partition each time was most of its cost.
  const out = [...rows];
  for (const w of writes) {
    const sk = String(w.Put ? w.Put.Item?.sk : w.Delete?.Key?.sk);
    let lo = 0;
    let hi = out.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (String(out[mid]!.sk) < sk) lo = mid + 1;
      else hi = mid;
    }
    const here = lo < out.length && String(out[lo]!.sk) === sk;
    if (w.Put) {
      // What a Query would return: plain data, undefined attributes gone (removeUndefinedValues).
      const row = deepFreeze(JSON.parse(JSON.stringify(w.Put.Item)) as Record<string, unknown>);
      out.splice(lo, here ? 1 : 0, row);
    } else if (w.Delete && here) out.splice(lo, 1);
  }
  return out;
}

/** Every item of a ledger partition as of now; frozen, because other requests of this process share them. */
export async function queryLedgerPartition(pk: LedgerPartition): Promise<Rows> {
  const d = deciding.getStore();
  const mine = d?.overlay?.get(pk);
  if (mine) return mine;
  const key = cacheKey(pk);
  const version = d?.version ?? (await ledgerVersion());
  const hit = cached.get(key);
  if (hit && hit.version === version && Date.now() - hit.at < MAX_AGE_MS) return hit.rows;
  const at = Date.now();
  const rows = await queryPartition(pk);
  // Keep them only if no ledger write landed while the Query ran (it may have seen part of one).
  if ((await ledgerVersion()) === version) {
    for (const r of rows) deepFreeze(r);
    cached.set(key, { version, at, rows });
  }
  return rows;
}

/**
 * A ledger transaction moved the ledger from `version` to `version + 1` with `items`: the cached partitions at
 * `version` become the partitions at `version + 1` by applying those writes. A write the cache cannot replay
 * (an Update expression) drops that partition instead.
 */
export function noteCommitted(version: number, items: readonly TxItem[]): void {
  const k = knownKey();
  if ((known.get(k)?.version ?? -1) <= version + 1) known.set(k, { version: version + 1, at: Date.now() });
  const w = writesByPartition(items);
  for (const pk of PARTITIONS) {
    const key = cacheKey(pk);
    const c = cached.get(key);
    if (!c) continue;
    if (c.version !== version || w.unreplayable.has(pk)) cached.delete(key);
    else cached.set(key, { version: version + 1, at: c.at, rows: applyWrites(c.rows, w.byPk.get(pk) ?? []) });
  }
}

/** After writing a ledger partition outside the ledger (tests, tools), so the next read sees the write. */
export function forgetCachedPartitions(): void {
  cached.clear();
  known.clear();
}
