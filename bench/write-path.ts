import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Context } from 'aws-lambda';
import { documentClient, dynamoClient, resetClients } from '../lambdas/shared/clients';
import { resetConfig } from '../lambdas/shared/config';
import { ensureTable } from '../lambdas/store/table';
import { spawnControlPlane } from '../local/control-plane-process';
import { type DynamoDbLocal, startDynamoDbLocal } from '../local/dynamodb-local';
import { iamAuthorizerOf, LOCAL_ADMIN } from '../local/identity';
import { type CeilingRequest, drive, type Figures, round, type Tx } from './write-ceiling';

/**
 * The write path against its ceiling on the same DynamoDB Local (issues 19 and 31): raw conditional writes
 * (what one commit costs the database and the SDK), measured in a process of their own (bench/write-ceiling.ts),
 * then `PUT /v1/models/{name}/scaling` through the real handler, in process (the middy handler, as the Lambda
 * runtime calls it) and over the local control plane's HTTP server, with the DynamoDB calls each write makes and
 * the time they take. The control plane (its API server, the admitter the writes wake, the simulators) runs in
 * a process of its own (local/control-plane-process.ts), as a stage runs its API Lambda apart from its admitter:
 * the handler measured in process has nothing else in its event loop, and the calls the admitter makes are
 * counted there and reported beside the write's. The machine is shared, so the measurements alternate: BENCH_ROUNDS rounds (at least and by
 * default 5), each measuring the ceiling and then the API, and every figure is reported with its spread over the
 * rounds. BENCH_DEBUG=1 prints the timeline of a few single writes.
 */

const ROUNDS = Math.max(5, Number(process.env.BENCH_ROUNDS ?? 5));
const CLIENTS = 64;
/** Writes per client in a 64-client run, and writes in a one-client run. */
const EACH = 15;
const SERIAL = 200;
/**
 * Writes per client when all 64 write one model: every write races the others for one item (about 60 commits a
 * second between them on DynamoDB Local), so 15 each would make one round take minutes.
 */
const HOT_EACH = 3;

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
        // The write's own commit, the one that stores the model (the admitter runs in this process too, and
        // commits admissions behind its fence). One item goes as a plain conditional write (store/commit.ts).
        const isModel = (it: { Put?: { Item?: { pk?: unknown } } }) => it.Put?.Item?.pk === 'MODEL';
        if (command === 'TransactWriteItems') {
          const items = (args.input as { TransactItems: Tx }).TransactItems;
          if (items.some((it) => isModel(it as never))) lastTx = items;
        }
        if (command === 'PutItem' && isModel({ Put: args.input as never }))
          lastTx = [{ Put: args.input }] as Tx;
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
// Rounds: each measurement once per round, the ceiling's in its own process between the API's

interface Measured extends Figures {
  /** DynamoDB calls per write the control plane's process made meanwhile (the admitter; over HTTP, the API too). */
  beside?: Record<string, number>;
  /** Each round's figures, in the order run. */
  rounds: Figures[];
  /** The lowest and highest p50 and throughput of the rounds. */
  spread: { p50: [number, number]; perSecond: [number, number] };
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

const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
const range = (v: number[]): [number, number] => [Math.min(...v), Math.max(...v)];

/** One measurement's rounds: each figure is the median of the rounds, with their spread. */
class Series {
  readonly rounds: Figures[] = [];
  private readonly recorded: Call[] = [];
  private readonly besideCalls: Record<string, number> = {};
  /** `beside`: the DynamoDB calls the control plane's process made since it was last asked. */
  constructor(
    readonly name: string,
    private readonly beside?: () => Promise<Record<string, number>>,
  ) {}

  /** Runs one round of it, recording the DynamoDB calls this process (and the control plane's) makes meanwhile. */
  async round(fn: () => Promise<Figures>): Promise<Figures> {
    await this.beside?.();
    calls = [];
    try {
      this.rounds.push(await fn());
    } finally {
      this.recorded.push(...calls);
      calls = undefined;
    }
    if (this.beside)
      for (const [c, n] of Object.entries(await this.beside()))
        this.besideCalls[c] = (this.besideCalls[c] ?? 0) + n;
    return this.rounds.at(-1)!;
  }

  result(): Measured {
    const all = this.rounds;
    const med = (f: keyof Figures) => median(all.map((x) => x[f]));
    const writes = all.reduce((n, x) => n + x.n, 0);
    const out: Measured = {
      n: all[0]!.n,
      p50: med('p50'),
      p99: med('p99'),
      // Over every write of every round, as inDynamoDb is, so that the two can be set against each other.
      mean: round(all.reduce((t, x) => t + x.mean * x.n, 0) / writes),
      perSecond: med('perSecond'),
      rounds: all,
      spread: { p50: range(all.map((x) => x.p50)), perSecond: range(all.map((x) => x.perSecond)) },
      perWrite: perWrite(this.recorded, writes),
      inDynamoDb: round(busy(this.recorded) / writes),
      ...(this.beside
        ? {
            beside: Object.fromEntries(
              Object.entries(this.besideCalls).map(([c, n]) => [c, round(n / writes)] as const),
            ),
          }
        : {}),
    };
    console.log(
      `  ${this.name}: p50 ${out.p50} ms (${out.spread.p50.join('-')}), ${out.perSecond}/s (${out.spread.perSecond.join('-')})`,
    );
    return out;
  }
}

/** The ceiling's process (bench/write-ceiling.ts), asked for one measurement at a time. */
function ceilingProcess(env: Record<string, string>) {
  const tsx = join(__dirname, '..', 'node_modules', '.bin', 'tsx');
  const child = spawn(tsx, [join(__dirname, 'write-ceiling.ts')], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const answers = createInterface({ input: child.stdout! });
  const waiting: ((line: string) => void)[] = [];
  answers.on('line', (line) => waiting.shift()?.(line));
  return {
    ask(r: CeilingRequest): Promise<Figures> {
      return new Promise((resolve, reject) => {
        waiting.push((line) => {
          const a = JSON.parse(line) as { ok?: Figures; error?: string };
          if (a.ok) resolve(a.ok);
          else reject(new Error(`the ceiling's process failed: ${a.error}`));
        });
        child.stdin!.write(`${JSON.stringify(r)}\n`);
      });
    },
    stop() {
      child.stdin!.end();
      child.kill();
    },
  };
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

export type Send = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

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

/** A client of the local control plane's HTTP API (also the admission-latency bench's). */
export const overHttp =
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

/** The API measurements of one way of calling it; `round` runs one round of each. */
function apiSeries(
  name: string,
  beside: () => Promise<Record<string, number>>,
  /** Given, one client's writes are measured once more with the admitter's event source mapping disabled. */
  admitterMapping?: (enabled: boolean) => Promise<void>,
) {
  const one = new Series(`${name}-1`, beside);
  const alone = new Series(`${name}-1-admitter-disabled`, beside);
  const many = new Series(`${name}-${CLIENTS}`, beside);
  const hot = new Series(`${name}-${CLIENTS}-one-model`, beside);
  const hotRefused = { n: 0 };
  return {
    /** Writes of the one-model series answered 409 after losing every race for the API's budget. */
    hotRefused: () => hotRefused.n,
    async round(send: Send) {
      if (process.env.BENCH_DEBUG) for (let i = 0; i < 3; i++) console.log(`  ${await timeline(send)}`);
      await one.round(() => drive(1, SERIAL, (_, i) => scale(send, MODELS[0]!, i)));
      if (admitterMapping) {
        // The same writes with no admitter run beside them: what the write path costs without the admitter's
        // reads and commits on the same DynamoDB Local, which a stage's DynamoDB does not share with the API.
        await admitterMapping(false);
        try {
          await alone.round(() => drive(1, SERIAL, (_, i) => scale(send, MODELS[0]!, i)));
        } finally {
          await admitterMapping(true);
        }
      }
      await many.round(() => drive(CLIENTS, EACH, (w, i) => scale(send, MODELS[w]!, i)));
      // All 64 clients on one model: each write races the 63 others for one item, and one that keeps losing for
      // the API's budget is answered 409 ConcurrentUpdate (counted, not an error of the bench).
      await hot.round(() =>
        drive(CLIENTS, HOT_EACH, (_, i) =>
          scale(send, MODELS[0]!, i).catch((e: Error) => {
            if (!/answered 409/.test(e.message)) throw e;
            hotRefused.n++;
          }),
        ),
      );
    },
    result: () => ({
      one: one.result(),
      ...(admitterMapping ? { alone: alone.result() } : {}),
      many: many.result(),
      hot: hot.result(),
    }),
    /** The last round's figures of one client (with and without the admitter) and of 64 on 64 models. */
    last: () => ({ one: one.rounds.at(-1)!, alone: alone.rounds.at(-1), many: many.rounds.at(-1)! }),
  };
}

// ---------------------------------------------------------------------------------------------------------
// The report

interface Results {
  loadAverage: { start: number; end: number };
  rounds: number;
  ceiling: { update1: Measured; update64: Measured; tx1: Measured };
  txItems: string[];
  inProcess: ReturnType<ReturnType<typeof apiSeries>['result']>;
  http: ReturnType<ReturnType<typeof apiSeries>['result']>;
  /** Writes of the one-model series answered 409 ConcurrentUpdate. */
  hotRefused: { inProcess: number; http: number };
  /** Per round, against that round's ceiling: the two targets of issue 31. */
  ratios: {
    writeOverCommit: number[];
    /** The same, with the admitter's mapping disabled while the writes run. */
    writeAloneOverCommit: number[];
    clientsOverCeiling: number[];
    httpClientsOverCeiling: number[];
  };
}

function calls1(m: Measured): string {
  return Object.entries(m.perWrite)
    .map(([c, v]) => `${v.calls} ${c}`)
    .join(', ');
}

function besideCalls(m: Measured): string {
  return Object.entries(m.beside ?? {})
    .sort(([, a], [, b]) => b - a)
    .map(([c, n]) => `${n} ${c}`)
    .join(', ');
}

/** One client's write: its DynamoDB calls one after another, and the handler's own work around them. */
function whereTheTimeGoes(m: Measured): string {
  const n = Object.values(m.perWrite).reduce((a, v) => a + v.calls, 0);
  const tx = (m.perWrite.TransactWriteItems ?? m.perWrite.PutItem)?.ms ?? 0;
  return `Where one write's time goes (1 client in process, mean ${m.mean} ms): ${m.inDynamoDb} ms waiting on its ${round(n, 1)} DynamoDB calls (calls side by side counted once; the commit ${tx} ms of it, SDK work included), ${round(m.mean - m.inDynamoDb)} ms in the handler between them (routing, validation, the decision).`;
}

/** Why one write is still more than its raw commit, from the figures themselves. */
function whatRemains(r: Results): string {
  const one = r.inProcess.one;
  const commit = (one.perWrite.TransactWriteItems ?? one.perWrite.PutItem)?.ms ?? 0;
  const runs = one.beside?.['GetItem ADMITTER'] ?? 0;
  return `What remains between one write and its raw commit: the commit takes ${commit} ms on average in the API's process against a raw commit's ${r.ceiling.tx1.mean} ms (p50 ${r.ceiling.tx1.p50}) in the ceiling's, measured with nothing beside it; meanwhile the admitter the writes wake (${runs} runs per write, each loading the world) queries the same DynamoDB Local on the same 2 cores, which a deployed stage's DynamoDB does not share. The rest is the handler's own work: routing, validating the whole next catalog, the decision and the answer. The write measured sets min 0 and moves max, as an autoscaled model's bounds change: it asks nothing to start, so it skips admission's start check (domain/admission-world.ts checkCatalogChange), which a write raising a minimum runs on the whole world before it answers. What the figure cannot see: API Gateway and Lambda's own overhead, and a reading made stale by another API container (a write then decides again on fresh reads, as the 64-clients-on-one-model rows show under contention).`;
}

const spreadOf = (v: number[]) =>
  `${median(v).toFixed(2)} (rounds ${Math.min(...v).toFixed(2)} to ${Math.max(...v).toFixed(2)})`;

function markdown(r: Results): string {
  const ceiling = r.ceiling.update1;
  const row = (what: string, m: Measured) =>
    `| ${what} | ${m.p50} / ${m.p99} ms | ${m.spread.p50[0]} to ${m.spread.p50[1]} ms | ${m.perSecond}/s | ${m.spread.perSecond[0]} to ${m.spread.perSecond[1]}/s | ${(m.perSecond / ceiling.perSecond).toFixed(2)}× |`;
  const lines = [
    `Load average ${r.loadAverage.start} at the start, ${r.loadAverage.end} at the end (2 cores shared with other work). ${r.rounds} rounds; in each, the ceiling is measured first, in a process of its own (bench/write-ceiling.ts: the raw writes and nothing else), then the API in process, then over HTTP, so each round compares figures taken within seconds of each other. A figure is the median of the rounds, beside the lowest and highest round. The ceiling is one writer's conditional UpdateItem on one item.`,
    '',
    '| measure | p50 / p99 | p50 of the rounds | throughput | throughput of the rounds | of the ceiling |',
    '|---|---|---|---|---|---|',
    row('raw UpdateItem, 1 writer, one item (the ceiling)', r.ceiling.update1),
    row(`raw UpdateItem, ${CLIENTS} writers on ${CLIENTS} items`, r.ceiling.update64),
    row(`raw commit of a scale write's shape (${r.txItems.join(' + ')}), 1 writer`, r.ceiling.tx1),
    row('PUT scaling in process, 1 client', r.inProcess.one),
    ...(r.inProcess.alone
      ? [row("PUT scaling in process, 1 client, the admitter's mapping disabled", r.inProcess.alone)]
      : []),
    row(`PUT scaling in process, ${CLIENTS} clients on ${CLIENTS} models`, r.inProcess.many),
    row(`PUT scaling in process, ${CLIENTS} clients on one model`, r.inProcess.hot),
    row('PUT scaling over HTTP, 1 client', r.http.one),
    row(`PUT scaling over HTTP, ${CLIENTS} clients on ${CLIENTS} models`, r.http.many),
    row(`PUT scaling over HTTP, ${CLIENTS} clients on one model`, r.http.hot),
    '',
    `${CLIENTS} clients on one model: ${r.hotRefused.inProcess} (in process) and ${r.hotRefused.http} (over HTTP) of ${ROUNDS * CLIENTS * HOT_EACH} writes each were answered 409 ConcurrentUpdate after losing every race for 15 s; their time counts in the row above.`,
    '',
    `Against the same round's ceiling: one write in process is ${spreadOf(r.ratios.writeOverCommit)} × the raw transaction it commits (target ≤ 2×), ${spreadOf(r.ratios.writeAloneOverCommit)} × with the admitter's event source mapping disabled while it writes (the records wait in the stream, as a disabled mapping's do; the admitter's run every few writes reads and commits on the same DynamoDB Local and the same 2 cores as the write's commit, which a stage's DynamoDB does not share); ${CLIENTS} clients reach ${spreadOf(r.ratios.clientsOverCeiling)} × the serial ceiling in process and ${spreadOf(r.ratios.httpClientsOverCeiling)} × over HTTP (target ≥ 0.8×).`,
    '',
    whereTheTimeGoes(r.inProcess.one),
    '',
    whatRemains(r),
    '',
    "DynamoDB calls per write (a Query or GetItem names its partition; LLMCAP_WORKLOADS=deploy, so each answer carries the pods the reconciler stored). A write's first decision reads this process's young readings (LLMCAP_WRITE_SNAPSHOT_MS, default 1 s; docs/architecture.md): a reading older than that, or one a write of the other process changed, is read again (six Queries, SCOPE for the caller and SCOPE, MODEL, COMPUTE, QUOTA and ADMISSION for the decision, and the answer's pods in one BatchGetItem), and a write that loses a race decides again on fresh reads. Beside it, the control plane's own process: the admitter the writes wake (its fence GetItem ADMITTER, the partitions it loads, its commits) and the stream poller:",
    '',
    '| run | calls per write, the API | calls per write, beside it (the admitter) |',
    '|---|---|---|',
    ...(['one', 'many', 'hot'] as const).map(
      (k) =>
        `| in process, ${k === 'one' ? '1 client' : k === 'many' ? `${CLIENTS} clients` : `${CLIENTS} clients, one model`} | ${calls1(r.inProcess[k])} | ${besideCalls(r.inProcess[k])} |`,
    ),
  ];
  return lines.join('\n');
}

export async function benchWritePath(): Promise<{ rows: Results; markdown: string }> {
  const start = loadavg()[0]!;
  const ddb: DynamoDbLocal = await startDynamoDbLocal();
  // The ceiling's own table, on the same DynamoDB Local as the API's.
  const c = dynamoClient(ddb.endpoint);
  await ensureTable(c, 'bench-write-ceiling');
  c.destroy();
  const ceilingProc = ceilingProcess({
    LLMCAP_DYNAMODB_ENDPOINT: ddb.endpoint,
    LLMCAP_TABLE: 'bench-write-ceiling',
  });
  // The API over HTTP is the local control plane's, in its process; in this one, the same handler the local
  // Lambda would run, on the same table and simulators (the environment the control plane set).
  const cp = await spawnControlPlane({
    dynamodbEndpoint: ddb.endpoint,
    table: 'bench-write',
    admins: [LOCAL_ADMIN],
    reconcileSeconds: 0,
  });
  try {
    Object.assign(process.env, cp.env);
    resetConfig();
    resetClients();
    instrument();
    const viaHttp = overHttp(cp.apiUrl);
    await addModels(viaHttp);
    const send = await inProcess();
    for (let i = 0; i < 20; i++) await scale(send, MODELS[0]!, i); // warm-up
    lastTx = undefined;
    await scale(send, MODELS[0]!, 1);
    const tx = lastTx as Tx | undefined;
    if (!tx) throw new Error('a scale write committed nothing');
    const txItems = tx.map((it) => {
      const [op, body] = Object.entries(it)[0]! as [
        string,
        { Key?: { pk: string; sk: string }; Item?: { pk: string } },
      ];
      return `${op} ${body.Key?.pk ?? body.Item?.pk}${body.Key ? `/${body.Key.sk}` : ''}`;
    });

    await ceilingProc.ask({ op: 'update', writers: 1, each: 100, oneItem: true }); // warm-up
    const update1 = new Series('raw-update-1');
    const update64 = new Series(`raw-update-${CLIENTS}`);
    const tx1 = new Series('raw-tx-1');
    const inProc = apiSeries('api', cp.calls, cp.admitterMapping);
    const http = apiSeries('http', cp.calls);
    const ratios: Results['ratios'] = {
      writeOverCommit: [],
      writeAloneOverCommit: [],
      clientsOverCeiling: [],
      httpClientsOverCeiling: [],
    };
    for (let r = 0; r < ROUNDS; r++) {
      console.log(`  round ${r + 1} of ${ROUNDS}`);
      const u = await update1.round(() =>
        ceilingProc.ask({ op: 'update', writers: 1, each: 300, oneItem: true }),
      );
      await update64.round(() =>
        ceilingProc.ask({ op: 'update', writers: CLIENTS, each: EACH, oneItem: false }),
      );
      const t = await tx1.round(() => ceilingProc.ask({ op: 'tx', tx, writers: 1, each: SERIAL }));
      await inProc.round(send);
      await http.round(viaHttp);
      const p = inProc.last();
      const h = http.last();
      ratios.writeOverCommit.push(round(p.one.p50 / t.p50));
      if (p.alone) ratios.writeAloneOverCommit.push(round(p.alone.p50 / t.p50));
      ratios.clientsOverCeiling.push(round(p.many.perSecond / u.perSecond));
      ratios.httpClientsOverCeiling.push(round(h.many.perSecond / u.perSecond));
    }

    const rows: Results = {
      loadAverage: { start: round(start), end: round(loadavg()[0]!) },
      rounds: ROUNDS,
      ceiling: { update1: update1.result(), update64: update64.result(), tx1: tx1.result() },
      txItems,
      inProcess: inProc.result(),
      http: http.result(),
      hotRefused: { inProcess: inProc.hotRefused(), http: http.hotRefused() },
      ratios,
    };
    return { rows, markdown: markdown(rows) };
  } finally {
    ceilingProc.stop();
    await cp.stop();
    await ddb.stop();
  }
}
