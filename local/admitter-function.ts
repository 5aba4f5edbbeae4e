import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { handler } from '../lambdas/admitter/handler';
import { ADMITTER_TIMEOUT_SECONDS } from '../lambdas/domain/reconcile-pass';
import { ADMISSION_INPUTS } from '../lambdas/store/table';
import type { LocalFunction } from './lambda';
import { type StreamEvent, type StreamSource, startStreamSource } from './stream-source';

/**
 * "The admitter function" of the local control plane, as the local Lambda runs it: the real handler with the
 * stack's settings (reserved concurrency 1, so it is the only writer of admissions; no asynchronous retries,
 * since the stream's mapping retries a failed batch itself and a pass reports a failed run).
 */
export function admitterFunction(): LocalFunction {
  return {
    handler: (event, context) => handler(event, context),
    reservedConcurrency: 1,
    timeoutSeconds: ADMITTER_TIMEOUT_SECONDS,
    memoryMb: 1024,
    async: { maximumRetryAttempts: 0 },
  };
}

/**
 * The admitter's event source mapping on the table's stream (DynamoDB Local's own), with the stack's filter: a
 * write to a partition admission reads (ADMISSION_INPUTS). `invoke` runs one batch synchronously, as Lambda's
 * poller does; it rejects while the function is busy (429), and the batch is sent again.
 */
export async function startAdmitterSource(o: {
  endpoint: string;
  table: string;
  invoke: (event: StreamEvent) => Promise<void>;
  pollMs?: number;
}): Promise<StreamSource> {
  const ddb = new DynamoDBClient({ endpoint: o.endpoint });
  const d = await ddb.send(new DescribeTableCommand({ TableName: o.table }));
  ddb.destroy();
  const streamArn = d.Table?.LatestStreamArn;
  if (!streamArn)
    throw new Error(
      `table ${o.table} has no stream: it was made before the admitter needed one; delete it (or run npm start with a new LLMCAP_TABLE) so it is made again`,
    );
  const inputs = new Set<string>(ADMISSION_INPUTS);
  return startStreamSource({
    endpoint: o.endpoint,
    streamArn,
    invoke: o.invoke,
    batchSize: 100,
    startingPosition: 'TRIM_HORIZON',
    pollMs: o.pollMs ?? 50,
    filter: (r) => inputs.has(String(r.dynamodb?.Keys?.pk?.S ?? '')),
  });
}
