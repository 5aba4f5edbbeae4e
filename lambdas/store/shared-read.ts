import { deepFreeze } from '../domain/freeze';
import { dynamoEndpoint } from '../shared/clients';
import { config } from '../shared/config';
import { queryPartition } from './query';

/**
 * Reads that concurrent requests of one process share, and the last answer of each, which a write's decision may
 * reuse while it is young (`ReadAge`).
 *
 * Sharing: under load every request reads the scope tree, the catalog and the admissions; one read per round
 * trip instead of one per request is what lets 64 clients through one process. A shared read is as fresh for
 * each caller as its own: it is sent after every caller asked, so it sees every write that ended before any of
 * them asked.
 *
 * The last answer (docs/design.md §2.1, "a write decides on a snapshot"): the API validates a write against the
 * world as this process last read it, at most `maxAgeMs` old, as a Kubernetes webhook validates against its
 * informer's cache, and commits on conditions that catch what changed meanwhile. Every write of this process
 * (store/write.ts) updates the readings it touches (a Put replaces its row, anything else drops the reading),
 * so a process always sees its own writes; another process's writes are seen within `maxAgeMs`. A read with no
 * age (every read but a write's first decision) is fresh.
 */

/** How old a shared answer a reader accepts; none, or 0, asks DynamoDB. */
export interface ReadAge {
  maxAgeMs: number;
  /**
   * Partitions read fresh whatever their reading's age: those the admitter's trigger says were written since
   * (service/admitter.ts), while the others' readings stand.
   */
  fresh?: ReadonlySet<string>;
}

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
  /** The last answer, and when the read that got it was sent (what it can be older than). */
  last?: { value: unknown; sentAt: number };
  /** Bumped by each write seen: an answer to a read sent before it is not kept as `last`. */
  writes: number;
}
// Keyed by endpoint and table as well, so tests with several tables in one process never share.
const reads = new Map<string, Reads>();

const prefix = (table: string) => `${dynamoEndpoint() ?? ''}|${table}|`;

/**
 * One read of `key`, shared by every caller that asked before it was sent, or, with `age`, the last answer when
 * it is young enough. Callers share the value: freeze it.
 */
export function sharedRead<T>(key: string, read: () => Promise<T>, age?: ReadAge): Promise<T> {
  const k = prefix(config().table) + key;
  const r = reads.get(k) ?? { inFlight: false, writes: 0 };
  reads.set(k, r);
  if (age && r.last && Date.now() - r.last.sentAt <= age.maxAgeMs) return Promise.resolve(r.last.value as T);
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
  const sentAt = Date.now();
  const writes = r.writes;
  batch
    .read()
    .then((value) => {
      if (r.writes === writes) r.last = { value, sentAt };
      batch.resolve(value);
    }, batch.reject)
    .finally(() => {
      r.inFlight = false;
      send(r);
    });
}

export type Rows = readonly Record<string, unknown>[];

const partitionKey = (pk: string) => `partition#${pk}`;

/** Every item of one partition, strongly consistent, through sharedRead; frozen, because callers share it. */
export function sharedQuery(pk: string, age?: ReadAge): Promise<Rows> {
  if (age?.fresh?.has(pk)) age = undefined;
  return sharedRead(
    partitionKey(pk),
    async () => {
      const rows = await queryPartition(pk);
      for (const row of rows) deepFreeze(row);
      return Object.freeze(rows) as Rows;
    },
    age,
  );
}

// ---------------------------------------------------------------------------------------------------------
// Writes this process makes (store/write.ts sends every one): each updates the readings it touches, so a
// decision on a young reading never misses a write of its own process.

/** One item a write changed: its table and key, and the item itself for a Put. */
export type Written = { table: string; pk: string; sk: string; put?: Record<string, unknown> };

/** The item as DynamoDB stores it: the document client drops undefined values (removeUndefinedValues). */
function stored(v: unknown): unknown {
  if (Array.isArray(v)) return v.filter((x) => x !== undefined).map(stored);
  if (v === null || typeof v !== 'object' || Object.getPrototypeOf(v) !== Object.prototype) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = stored(x);
  return out;
}

/**
 * Updates the readings a write touched: a Put that committed replaces its row in its partition's reading; any
 * other write, or one whose outcome is unknown, drops the readings of its partition and of its item.
 */
export function sawWrite(w: Written, committed: boolean): void {
  const p = prefix(w.table);
  const part = reads.get(p + partitionKey(w.pk));
  if (part) {
    part.writes++;
    const rows = part.last?.value as Rows | undefined;
    if (rows && committed && w.put) {
      const row = deepFreeze(stored(w.put) as Record<string, unknown>);
      const next = rows.filter((x) => x.sk !== w.sk);
      // The rows stay in key order, as a Query returns them.
      const at = next.findIndex((x) => String(x.sk) > w.sk);
      next.splice(at < 0 ? next.length : at, 0, row);
      part.last = { value: Object.freeze(next), sentAt: part.last!.sentAt };
    } else part.last = undefined;
  }
  const item = reads.get(`${p}${w.pk}#${w.sk}`);
  if (item) forget(item);
}

function forget(r: Reads): void {
  r.writes++;
  r.last = undefined;
}
