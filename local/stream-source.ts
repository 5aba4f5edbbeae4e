import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  type GetRecordsCommandOutput,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';

/**
 * A Lambda event source mapping on a DynamoDB stream, for the local control plane (issue 31): it reads the
 * stream of a table in DynamoDB Local (DescribeStream, GetShardIterator, GetRecords: the same API as in AWS) and
 * hands the records to a function in batches, in order, one batch at a time per shard, in the event shape Lambda
 * sends. As in AWS, a batch whose invocation fails is sent again, so a record is never skipped while retries
 * remain; past them the batch is reported and the shard moves on (AWS's MaximumRetryAttempts). `invoke` is how
 * the function is run: locally, through the local Lambda (local/lambda.ts) with its reserved concurrency and no
 * asynchronous retries of its own (Lambda's poller invokes synchronously and retries the batch itself).
 */

export interface StreamEvent {
  Records: (StreamRecord & { eventSourceARN: string })[];
}

export interface StreamSourceOptions {
  endpoint: string;
  streamArn: string;
  /** Runs the function on one batch; rejects when the invocation failed. */
  invoke: (event: StreamEvent) => Promise<void>;
  /** Records per batch at most; Lambda's default for DynamoDB is 100. */
  batchSize?: number;
  /** Where a shard that exists when the source starts is read from; shards found later are read whole. */
  startingPosition?: 'LATEST' | 'TRIM_HORIZON';
  /** Between reads of a shard that had nothing new (AWS polls each shard about four times a second). */
  pollMs?: number;
  /** Attempts of a failing batch after the first; -1, AWS's default, retries until the records expire. */
  maximumRetryAttempts?: number;
  /** A batch given up after its retries. */
  onDiscard?: (event: StreamEvent, error: unknown) => void;
  /**
   * Which records the function gets, as an event source mapping's filter criteria: the others are dropped
   * (consumed, never delivered). The admitter's mapping passes the partitions admission reads.
   */
  filter?: (r: StreamRecord) => boolean;
  /** A read that failed in a way the source cannot mend (it stops on a deleted table instead). */
  onError?: (e: Error) => void;
}

export interface StreamSource {
  /** Resolves once every record written before the call has been handed to the function and it returned. */
  drained(timeoutMs?: number): Promise<void>;
  /**
   * Disables or enables the mapping, as UpdateEventSourceMapping's Enabled does: while disabled nothing is read,
   * and the records stay in the stream for when it is enabled again (drained() waits for that).
   */
  setEnabled(enabled: boolean): void;
  stop(): Promise<void>;
}

interface Shard {
  id: string;
  /** Absent once the shard is closed and read to its end (its children carry on). */
  iterator?: string;
  /** The last record handed on: where a trimmed or expired iterator is taken up again. */
  lastSequence?: string;
}

/** How often the shard list is read again for new shards (DynamoDB rolls shards over every few hours). */
const DISCOVER_MS = 1000;

export async function startStreamSource(o: StreamSourceOptions): Promise<StreamSource> {
  const client = new DynamoDBStreamsClient({ endpoint: o.endpoint });
  const batchSize = o.batchSize ?? 100;
  const pollMs = o.pollMs ?? 250;
  const retries = o.maximumRetryAttempts ?? -1;
  const shards = new Map<string, Shard>();
  let stopped = false;
  let enabled = true;
  // Loops over the shards, counted as they start: drained() waits for one that started after it was called and
  // found nothing new, so it read everything written before the call.
  let loops = 0;
  const waiters: { from: number; resolve: () => void }[] = [];

  let discoveredAt = 0;
  async function discover(position: 'LATEST' | 'TRIM_HORIZON'): Promise<void> {
    discoveredAt = Date.now();
    let start: string | undefined;
    do {
      const d = await client.send(
        new DescribeStreamCommand({ StreamArn: o.streamArn, ExclusiveStartShardId: start }),
      );
      for (const s of d.StreamDescription?.Shards ?? []) {
        if (!s.ShardId || shards.has(s.ShardId)) continue;
        const it = await client.send(
          new GetShardIteratorCommand({
            StreamArn: o.streamArn,
            ShardId: s.ShardId,
            ShardIteratorType: position,
          }),
        );
        shards.set(s.ShardId, { id: s.ShardId, iterator: it.ShardIterator });
      }
      start = d.StreamDescription?.LastEvaluatedShardId;
    } while (start);
  }

  async function deliver(records: StreamRecord[]): Promise<void> {
    for (let i = 0; i < records.length; i += batchSize) {
      const event: StreamEvent = {
        Records: records.slice(i, i + batchSize).map((r) => ({ ...r, eventSourceARN: o.streamArn })),
      };
      for (let attempt = 0; ; attempt++) {
        try {
          await o.invoke(event);
          break;
        } catch (e) {
          if (stopped) return;
          if (retries >= 0 && attempt >= retries) {
            o.onDiscard?.(event, e);
            break;
          }
          await sleep(Math.min(1000, 50 * 2 ** attempt));
        }
      }
    }
  }

  /**
   * An iterator that can no longer be read (records trimmed past it, or older than 15 minutes) is taken up
   * again after the last record handed on, or from the oldest record kept: a record may come twice, never be
   * skipped while it is kept, and the loop never spins on the same failed read.
   */
  async function renew(s: Shard): Promise<void> {
    const it = await client.send(
      new GetShardIteratorCommand({
        StreamArn: o.streamArn,
        ShardId: s.id,
        ...(s.lastSequence
          ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: s.lastSequence }
          : { ShardIteratorType: 'TRIM_HORIZON' }),
      }),
    );
    s.iterator = it.ShardIterator;
  }

  /** One read of every open shard; true when any had records. */
  async function pollOnce(): Promise<boolean> {
    const closed = [...shards.values()].some((s) => !s.iterator);
    if (closed || Date.now() - discoveredAt > DISCOVER_MS) await discover('TRIM_HORIZON');
    let any = false;
    for (const s of shards.values()) {
      if (!s.iterator) continue;
      let out: GetRecordsCommandOutput;
      try {
        out = await client.send(new GetRecordsCommand({ ShardIterator: s.iterator, Limit: 1000 }));
      } catch (e) {
        const name = (e as Error).name;
        if (name === 'TrimmedDataAccessException' || name === 'ExpiredIteratorException') {
          s.lastSequence = name === 'TrimmedDataAccessException' ? undefined : s.lastSequence;
          await renew(s);
          continue;
        }
        throw e;
      }
      const records = out.Records ?? [];
      if (records.length) {
        s.lastSequence = records.at(-1)?.dynamodb?.SequenceNumber ?? s.lastSequence;
        const wanted = o.filter ? records.filter(o.filter) : records;
        if (wanted.length) {
          any = true;
          await deliver(wanted);
        }
      }
      // Undefined once a closed shard is read out: its children, found by the next discover, carry on.
      s.iterator = out.NextShardIterator;
    }
    return any;
  }

  await discover(o.startingPosition ?? 'LATEST');
  const loop = (async () => {
    while (!stopped) {
      if (!enabled) {
        await sleep(pollMs);
        continue;
      }
      const n = ++loops;
      let any = true;
      try {
        any = await pollOnce();
      } catch (e) {
        if (stopped) break;
        // The table (and so its stream) was deleted: nothing will ever come again.
        if ((e as Error).name === 'ResourceNotFoundException') {
          stopped = true;
          for (const w of waiters.splice(0)) w.resolve();
          break;
        }
        // DynamoDB Local answers again after a moment; the iterators it gave stay valid meanwhile.
        (o.onError ?? ((x: Error) => console.error(`stream source ${o.streamArn}: ${x.message}`)))(
          e as Error,
        );
        await sleep(pollMs * 4);
        any = false;
      }
      if (!any) {
        for (const w of waiters.filter((x) => x.from <= n)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
        await sleep(pollMs);
      }
    }
  })();

  return {
    drained(timeoutMs = 10_000) {
      return new Promise<void>((resolve, reject) => {
        const t = setTimeout(
          () => reject(new Error(`stream ${o.streamArn} not drained after ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.push({
          from: loops + 1,
          resolve: () => {
            clearTimeout(t);
            resolve();
          },
        });
      });
    },
    setEnabled(on) {
      enabled = on;
    },
    async stop() {
      stopped = true;
      await loop;
      client.destroy();
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
