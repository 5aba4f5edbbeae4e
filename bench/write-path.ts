import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { TransactWriteCommand, type TransactWriteCommandInput, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { resetHardwareFacts } from '../lambdas/aws/hardware';
import { documentClient, dynamoClient, resetClients } from '../lambdas/shared/clients';
import { resetConfig } from '../lambdas/shared/config';
import { ensureTable } from '../lambdas/store/table';
import { startCloudSim } from '../local/cloud-sim';
import { startControlPlane } from '../local/control-plane';
import { type DynamoDbLocal, startDynamoDbLocal } from '../local/dynamodb-local';
import { iamAuthorizerOf, LOCAL_ADMIN } from '../local/identity';

/**
 * The write path against its ceiling on the same DynamoDB Local (issue 19): raw conditional writes (what one
 * commit costs the database and the SDK), then `PUT /v1/models/{name}/scaling` through the real handler, in
 * process (the middy handler, as the Lambda runtime calls it) and over the local control plane's HTTP server,
 * with the DynamoDB calls each write makes and the time they take. The machine is shared, so each figure is the
 * median of BENCH_RUNS runs (default 5). BENCH_DEBUG=1 prints the timeline of a few single writes.
 * BENCH_BASELINE=1 records the run as the figures before a change (bench/write-path-baseline.json), which later
 * runs print next to their own.
 */

type Tx = NonNullable<TransactWriteCommandInput['TransactItems']>;

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const CLIENTS = 64;
/** Writes per client in a 64-client run, and writes in a one-client run. */
const EACH = 15;
const SERIAL = 200;

// ---------------------------------------------------------------------------------------------------------
// What the document client sends: every call, its command, how long it took (SDK work included), and the
// transaction it committed last.

interface Call {
  command: string;
  ms: number;
  start: number;
  /** From the signed request to the parsed answer: the wire and DynamoDB Local. */
  wire?: number;
}
let calls: Call[] | undefined;
let lastTx: Tx | undefined;

function instrument(): void {
  const stack = documentClient().middlewareStack;
  let wire: number | undefined;
  stack.add(
    (next, context) => async (args) => {
      const start = performance.now();
      try {
        return await next(args);
      } finally {
        const pk = (args.input as { ExpressionAttributeValues?: Record<string, unknown> })
          .ExpressionAttributeValues?.[':pk'];
        const command = String(context.commandName ?? '?').replace(/Command$/, '');
        // A GetItem is named by its partition too, so the table says which item each write reads.
        const got = command === 'GetItem' ? (args.input as { Key?: { pk?: unknown } }).Key?.pk : undefined;
        calls?.push({
          command: pk ? `${command} ${pk}` : got ? `${command} ${got}` : command,
          ms: performance.now() - start,
          start,
          wire,
        });
        if (command === 'TransactWriteItems') lastTx = (args.input as { TransactItems: Tx }).TransactItems;
      }
    },
    { step: 'initialize', name: 'benchCalls', override: true },
  );
  stack.add(
    (next) => async (args) => {
      const t = performance.now();
      try {
        return await next(args);
      } finally {
        wire = performance.now() - t;
      }
    },
    { step: 'finalizeRequest', name: 'benchWire', priority: 'low', override: true },
  );
}

// ---------------------------------------------------------------------------------------------------------
// Driving writers

export interface Figures {
  n: number;
  p50: number;
  p99: number;
  mean: number;
  perSecond: number;
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
const round = (x: number, d = 2) => +x.toFixed(d);

/** `writers` loops, each doing `each` operations one after another: latency of each and overall throughput. */
async function drive(
  writers: number,
  each: number,
  op: (w: number, i: number) => Promise<void>,
): Promise<Figures> {
  const ms: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; i < each; i++) {
        const t = performance.now();
        await op(w, i);
        ms.push(performance.now() - t);
      }
    }),
  );
  const elapsed = performance.now() - t0;
  ms.sort((a, b) => a - b);
  return {
    n: ms.length,
    p50: round(pct(ms, 50)),
    p99: round(pct(ms, 99)),
    mean: round(ms.reduce((a, b) => a + b, 0) / ms.length),
    perSecond: Math.round((ms.length / elapsed) * 1000),
  };
}

interface Measured extends Figures {
  /** Throughput of each run, in the order run. */
  runs: number[];
  /** DynamoDB calls per write by command, and the milliseconds they took (summed over concurrent calls). */
  perWrite: Record<string, { calls: number; ms: number }>;
  /** Milliseconds per write with at least one DynamoDB call in flight (calls side by side counted once). */
  inDynamoDb: number;
}

function perWrite(recorded: Call[], writes: number): Measured['perWrite'] {
  const out: Measured['perWrite'] = {};
  for (const c of recorded) {
    const o = out[c.command] ?? { calls: 0, ms: 0 };
    out[c.command] = o;
    o.calls++;
    o.ms += c.ms;
  }
  for (const o of Object.values(out)) {
    o.calls = round(o.calls / writes);
    o.ms = round(o.ms / writes);
  }
  return out;
}

/** The time covered by at least one of the calls. */
function busy(recorded: Call[]): number {
  let total = 0;
  let until = -Infinity;
  for (const c of [...recorded].sort((a, b) => a.start - b.start)) {
    const end = c.start + c.ms;
    if (end <= until) continue;
    total += end - Math.max(c.start, until);
    until = end;
  }
  return total;
}

/** Runs a measurement RUNS times; each figure is the median of the runs (the machine is shared). */
async function measure(name: string, fn: () => Promise<Figures>): Promise<Measured> {
  calls = [];
  const all: Figures[] = [];
  for (let r = 0; r < RUNS; r++) all.push(await fn());
  const recorded = calls;
  calls = undefined;
  const med = (f: keyof Figures) => {
    const v = all.map((x) => x[f]).sort((a, b) => a - b);
    return v[Math.floor(v.length / 2)]!;
  };
  const n = all[0]!.n;
  const out: Measured = {
    n,
    p50: med('p50'),
    p99: med('p99'),
    mean: med('mean'),
    perSecond: med('perSecond'),
    runs: all.map((x) => x.perSecond),
    perWrite: perWrite(recorded, n * RUNS),
    inDynamoDb: round(busy(recorded) / (n * RUNS)),
  };
  console.log(
    `  ${name}: p50 ${out.p50} ms, p99 ${out.p99} ms, ${out.perSecond}/s (runs ${out.runs.join(', ')})`,
  );
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// The ceiling: raw conditional writes

const table = () => process.env.LLMCAP_TABLE!;

/** Conditional UpdateItem on one item per writer, or all of them on one item. */
function rawUpdates(writers: number, each: number, oneItem: boolean): Promise<Figures> {
  const tag = randomUUID().slice(0, 8);
  return drive(writers, each, async (w) => {
    await documentClient().send(
      new UpdateCommand({
        TableName: table(),
        Key: { pk: 'BENCH', sk: oneItem ? `one-${tag}` : `item-${tag}-${w}` },
        UpdateExpression: 'ADD #v :one SET updatedAt = :now',
        // Always true, so every write lands however many race on one item; still evaluated, as the ledger's is.
        ConditionExpression: 'attribute_not_exists(#v) OR #v >= :zero',
        ExpressionAttributeNames: { '#v': 'version' },
        ExpressionAttributeValues: { ':one': 1, ':zero': 0, ':now': new Date().toISOString() },
      }),
    );
  });
}

/**
 * The transaction one scale write commits (captured from a real one), replayed on copies of its items: the same
 * number of items, sizes and kinds of condition. Each writer has its own copies, so every condition holds.
 */
async function rawTransactions(tx: Tx, writers: number, each: number): Promise<Figures> {
  const tag = randomUUID().slice(0, 8);
  const rekey = (k: Record<string, unknown>, w: number) => ({
    pk: `BENCH#${k.pk}`,
    sk: `${k.sk}#${tag}#${w}`,
  });
  const items = (w: number): Tx =>
    tx.map((it) => {
      if (it.Update)
        return {
          Update: {
            TableName: table(),
            Key: rekey(it.Update.Key!, w),
            UpdateExpression: 'ADD #v :one SET updatedAt = :now, updatedBy = :by',
            ConditionExpression: 'attribute_not_exists(#v) OR #v >= :zero',
            ExpressionAttributeNames: { '#v': 'version' },
            ExpressionAttributeValues: {
              ':one': 1,
              ':zero': 0,
              ':now': new Date().toISOString(),
              ':by': 'bench',
            },
          },
        };
      if (it.Put)
        return {
          Put: {
            TableName: table(),
            Item: { ...it.Put.Item, ...rekey(it.Put.Item!, w) },
            ConditionExpression: 'attribute_not_exists(pk) OR #v >= :zero',
            ExpressionAttributeNames: { '#v': 'version' },
            ExpressionAttributeValues: { ':zero': 0 },
          },
        };
      if (it.Delete) return { Delete: { TableName: table(), Key: rekey(it.Delete.Key!, w) } };
      // A condition on an item that is not there, as the free commit's check of the lease usually is.
      return {
        ConditionCheck: {
          TableName: table(),
          Key: rekey(it.ConditionCheck!.Key!, w),
          ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :now',
          ExpressionAttributeValues: { ':now': Date.now() },
        },
      };
    });
  return drive(writers, each, async (w) => {
    await documentClient().send(new TransactWriteCommand({ TransactItems: items(w) }));
  });
}

// ---------------------------------------------------------------------------------------------------------
// The API

const MODEL_SPEC = {
  engine: 'vllm',
  profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 2, minMemoryGb: 8 }],
  scaling: { min: 0, max: 1 },
};
const manifest = (name: string) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name },
  spec: { ...MODEL_SPEC, source: `hf://org/${name}` },
});

type Send = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: unknown }>;

function event(method: string, path: string, body?: unknown) {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    isBase64Encoded: false,
    requestContext: {
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'bench' },
      requestId: randomUUID(),
      authorizer: { iam: iamAuthorizerOf(LOCAL_ADMIN) },
    },
  };
}

const lambdaContext = {
  awsRequestId: 'bench',
  functionName: 'api',
  getRemainingTimeInMillis: () => 29_000,
} as unknown as Context;

async function inProcess(): Promise<Send> {
  const { handler } = await import('../lambdas/api/handler');
  const { resetApp } = await import('../lambdas/api/app');
  resetApp();
  return async (method, path, body) => {
    const r = (await handler(event(method, path, body) as never, lambdaContext)) as {
      statusCode: number;
      body?: string;
    };
    return { status: r.statusCode, body: r.body ? JSON.parse(r.body) : undefined };
  };
}

const overHttp =
  (url: string): Send =>
  async (method, path, body) => {
    const r = await fetch(`${url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, body: text ? JSON.parse(text) : undefined };
  };

/** A scaling write that changes something each time (max alternates), so that each one commits. */
const scale = (send: Send, model: string, i: number) =>
  send('PUT', `/v1/models/${model}/scaling`, { min: 0, max: 1 + (i % 2) }).then((r) => {
    if (r.status !== 200) throw new Error(`scaling ${model} answered ${r.status}: ${JSON.stringify(r.body)}`);
  });

const MODELS = Array.from({ length: CLIENTS }, (_, i) => `bench-${i}`);

async function addModels(send: Send): Promise<void> {
  for (const name of MODELS) {
    const r = await send('POST', '/v1/models', manifest(name));
    if (r.status !== 201) throw new Error(`adding ${name} answered ${r.status}: ${JSON.stringify(r.body)}`);
  }
  for (let i = 0; i < 20; i++) await scale(send, MODELS[0]!, i); // warm-up
}

/** One write's calls in order: when each started, how long it took (its wire part in brackets). */
async function timeline(send: Send): Promise<string> {
  calls = [];
  const t0 = performance.now();
  await scale(send, MODELS[0]!, 0);
  const total = performance.now() - t0;
  const parts = calls.map(
    (c) => `${(c.start - t0).toFixed(1)}+${c.ms.toFixed(1)}(${c.wire?.toFixed(1)}) ${c.command}`,
  );
  calls = undefined;
  return `${total.toFixed(1)} ms: ${parts.join(', ')}`;
}

async function apiPhases(name: string, send: Send) {
  if (process.env.BENCH_DEBUG) for (let i = 0; i < 5; i++) console.log(`  ${await timeline(send)}`);
  const one = await measure(`${name}-1`, () => drive(1, SERIAL, (_, i) => scale(send, MODELS[0]!, i)));
  const many = await measure(`${name}-${CLIENTS}`, () =>
    drive(CLIENTS, EACH, (w, i) => scale(send, MODELS[w]!, i)),
  );
  // All 64 clients on one model: every write in a group merges into one item.
  const hot = await measure(`${name}-${CLIENTS}-one-model`, () =>
    drive(CLIENTS, EACH, (_, i) => scale(send, MODELS[0]!, i)),
  );
  return { one, many, hot };
}

// ---------------------------------------------------------------------------------------------------------
// The report

interface Results {
  loadAverage: { start: number; end: number };
  runs: number;
  raw: { update1: Measured; update64: Measured; update64one: Measured; tx1: Measured; tx64: Measured };
  txItems: string[];
  inProcess: Awaited<ReturnType<typeof apiPhases>>;
  http: Awaited<ReturnType<typeof apiPhases>>;
}

const BASELINE = join(__dirname, 'write-path-baseline.json');

function calls1(m: Measured): string {
  return Object.entries(m.perWrite)
    .map(([c, v]) => `${v.calls} ${c}`)
    .join(', ');
}

/** One client's write: its DynamoDB calls one after another, and the handler's own work around them. */
function whereTheTimeGoes(m: Measured): string {
  const n = Object.values(m.perWrite).reduce((a, v) => a + v.calls, 0);
  const tx = m.perWrite.TransactWriteItems?.ms ?? 0;
  return `Where one write's time goes (1 client in process, mean ${m.mean} ms): ${m.inDynamoDb} ms waiting on its ${round(n, 1)} DynamoDB calls (calls side by side counted once; the commit ${tx} ms of it, SDK work included), ${round(m.mean - m.inDynamoDb)} ms in the handler between them (routing, validation, the decision).`;
}

function markdown(r: Results, before?: Results): string {
  const ceiling = r.raw.update1;
  const row = (what: string, m: Measured, was?: Measured) =>
    `| ${what} | ${m.p50} / ${m.p99} ms | ${m.perSecond}/s | ${(m.perSecond / ceiling.perSecond).toFixed(2)}× |${
      before ? ` ${was ? `${was.p50} / ${was.p99} ms, ${was.perSecond}/s` : ''} |` : ''
    }`;
  const lines = [
    `Load average ${r.loadAverage.start} at the start, ${r.loadAverage.end} at the end (2 cores shared with other work); every figure is the median of ${r.runs} runs. The ceiling is one writer's conditional UpdateItem on one item.`,
    '',
    `| measure | p50 / p99 | throughput | of the ceiling |${before ? ' before (main) |' : ''}`,
    `|---|---|---|---|${before ? '---|' : ''}`,
    row('raw UpdateItem, 1 writer, one item (the ceiling)', r.raw.update1, before?.raw.update1),
    row(`raw UpdateItem, ${CLIENTS} writers on ${CLIENTS} items`, r.raw.update64, before?.raw.update64),
    row(`raw UpdateItem, ${CLIENTS} writers on one item`, r.raw.update64one, before?.raw.update64one),
    row(`raw TransactWriteItems of a scale write (${r.txItems.join(' + ')}), 1 writer`, r.raw.tx1),
    row(`raw TransactWriteItems of a scale write, ${CLIENTS} writers`, r.raw.tx64),
    row('PUT scaling in process, 1 client', r.inProcess.one, before?.inProcess.one),
    row(
      `PUT scaling in process, ${CLIENTS} clients on ${CLIENTS} models`,
      r.inProcess.many,
      before?.inProcess.many,
    ),
    row(`PUT scaling in process, ${CLIENTS} clients on one model`, r.inProcess.hot, before?.inProcess.hot),
    row('PUT scaling over HTTP, 1 client', r.http.one, before?.http.one),
    row(`PUT scaling over HTTP, ${CLIENTS} clients on ${CLIENTS} models`, r.http.many, before?.http.many),
    row(`PUT scaling over HTTP, ${CLIENTS} clients on one model`, r.http.hot, before?.http.hot),
    '',
    `One write in process: p50 ${r.inProcess.one.p50} ms = ${(r.inProcess.one.p50 / r.raw.update1.p50).toFixed(1)}× a raw UpdateItem, ${(r.inProcess.one.p50 / r.raw.tx1.p50).toFixed(1)}× the raw transaction it commits (target: 3× a raw commit). ${CLIENTS} clients: ${(r.inProcess.many.perSecond / ceiling.perSecond).toFixed(2)}× the ceiling in process, ${(r.http.many.perSecond / ceiling.perSecond).toFixed(2)}× over HTTP (target 0.8×).`,
    '',
    whereTheTimeGoes(r.inProcess.one),
    '',
    'DynamoDB calls per write (a Query or GetItem names its partition; LLMCAP_WORKLOADS=deploy, so each answer carries the pods the reconciler stored: GetItem WORKLOAD and WORKLOAD_OBSERVED):',
    '',
    `| run | calls per write |${before ? ' before (main) |' : ''}`,
    `|---|---|${before ? '---|' : ''}`,
    ...(['one', 'many', 'hot'] as const).map(
      (k) =>
        `| in process, ${k === 'one' ? '1 client' : k === 'many' ? `${CLIENTS} clients` : `${CLIENTS} clients, one model`} | ${calls1(r.inProcess[k])} |${before ? ` ${calls1(before.inProcess[k])} |` : ''}`,
    ),
  ];
  return lines.join('\n');
}

export async function benchWritePath(): Promise<{ rows: Results; markdown: string }> {
  const start = loadavg()[0]!;
  const ddb: DynamoDbLocal = await startDynamoDbLocal();
  // The API resolves the built-in computes against EC2 and the Price List on its first request: in process,
  // those are the simulator's, through the SDK's endpoint variables, as the local control plane sets them.
  const sim = await startCloudSim({ port: 0, seed: 1, kubernetes: false });
  try {
    Object.assign(process.env, {
      LLMCAP_DYNAMODB_ENDPOINT: ddb.endpoint,
      LLMCAP_TABLE: 'bench-write',
      LLMCAP_ADMINS: LOCAL_ADMIN,
      AWS_ENDPOINT_URL_EC2: sim.endpoint,
      AWS_ENDPOINT_URL_PRICING: sim.endpoint,
      AWS_ENDPOINT_URL_SERVICE_QUOTAS: sim.endpoint,
      // As the local control plane runs (and so the HTTP runs below): each answer carries the model's pods.
      LLMCAP_WORKLOADS: 'deploy',
    });
    resetConfig();
    resetClients();
    resetHardwareFacts();
    const c = dynamoClient();
    await ensureTable(c, 'bench-write');
    c.destroy();
    instrument();

    console.log('  raw writes');
    await rawUpdates(1, 100, true); // warm-up
    const update1 = await measure('raw-update-1', () => rawUpdates(1, 300, true));
    const update64 = await measure('raw-update-64', () => rawUpdates(CLIENTS, EACH, false));
    const update64one = await measure('raw-update-64-one-item', () => rawUpdates(CLIENTS, EACH, true));

    const send = await inProcess();
    await addModels(send);
    lastTx = undefined;
    await scale(send, MODELS[0]!, 1);
    const tx = lastTx as Tx | undefined;
    if (!tx) throw new Error('a scale write committed no transaction');
    const txItems = tx.map((it) => {
      const [op, body] = Object.entries(it)[0]! as [
        string,
        { Key?: { pk: string; sk: string }; Item?: { pk: string } },
      ];
      return `${op} ${body.Key?.pk ?? body.Item?.pk}${body.Key ? `/${body.Key.sk}` : ''}`;
    });
    const tx1 = await measure('raw-tx-1', () => rawTransactions(tx, 1, SERIAL));
    const tx64 = await measure('raw-tx-64', () => rawTransactions(tx, CLIENTS, EACH));

    console.log('  PUT /v1/models/{name}/scaling in process');
    const inProc = await apiPhases('api', send);

    console.log('  PUT /v1/models/{name}/scaling over HTTP (local control plane)');
    const cp = await startControlPlane({
      port: 0,
      simPort: 0,
      reconcileSeconds: 0,
      dynamodbEndpoint: ddb.endpoint,
      table: 'bench-write-http',
      admins: [LOCAL_ADMIN],
    });
    let http: Results['http'];
    try {
      instrument(); // the control plane built a new client
      const viaHttp = overHttp(cp.apiUrl);
      await addModels(viaHttp);
      http = await apiPhases('http', viaHttp);
    } finally {
      await cp.stop();
    }

    const rows: Results = {
      loadAverage: { start: round(start), end: round(loadavg()[0]!) },
      runs: RUNS,
      raw: { update1, update64, update64one, tx1, tx64 },
      txItems,
      inProcess: inProc,
      http,
    };
    // BENCH_BASELINE=1 records this run as the figures before the change, for later runs to compare with.
    if (process.env.BENCH_BASELINE) writeFileSync(BASELINE, `${JSON.stringify(rows, null, 2)}\n`);
    const before =
      !process.env.BENCH_BASELINE && existsSync(BASELINE)
        ? (JSON.parse(readFileSync(BASELINE, 'utf8')) as Results)
        : undefined;
    return { rows, markdown: markdown(rows, before) };
  } finally {
    await sim.stop();
    await ddb.stop();
  }
}
