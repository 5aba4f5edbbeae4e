import { deepFreeze } from '../domain/freeze';
import { dynamoEndpoint } from '../shared/clients';
import { config } from '../shared/config';
import { queryPartition } from './query';

/**
 * Reads that concurrent requests of one process share. Under load every request reads the scope tree, the
 * catalog and the admissions; one read per round trip instead of one per request is what lets 64 clients
 * through one process. A shared read is as fresh for each caller as its own: it is sent after every caller
 * asked, so it sees every write that ended before any of them asked. Nothing is kept once it has answered.
 */

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
// Keyed by endpoint and table as well, so tests with several tables in one process never share.
const reads = new Map<string, Reads>();

/** One read of `key`, shared by every caller that asked before it was sent. Callers share the value: freeze it. */
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
  if (!r.inFlight) setImmediate(() => send(k, r));
  return promise;
}

function send(k: string, r: Reads): void {
  const batch = r.next;
  if (!batch) {
    reads.delete(k);
    return;
  }
  r.next = undefined;
  r.inFlight = true;
  batch
    .read()
    .then(batch.resolve, batch.reject)
    .finally(() => {
      r.inFlight = false;
      send(k, r);
    });
}

export type Rows = readonly Record<string, unknown>[];

/** Every item of one partition, strongly consistent, through sharedRead; frozen, because callers share it. */
export function sharedQuery(pk: string): Promise<Rows> {
  return sharedRead(`partition#${pk}`, async () => {
    const rows = await queryPartition(pk);
    for (const row of rows) deepFreeze(row);
    return rows as Rows;
  });
}
