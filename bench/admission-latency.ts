import { loadavg } from 'node:os';
import { startControlPlane } from '../local/control-plane';
import { LOCAL_ADMIN } from '../local/identity';
import { overHttp, type Send } from './write-path';

/**
 * Admission latency (issue 31): from a write's answer (`PUT /v1/models/{name}/scaling`, stored as intent with
 * reason Queued) to its decision visible in `GET /v1/models/{name}` (status.observedVersion reaching the version
 * written), over the local control plane's HTTP server, with the admitter driven by DynamoDB Local's stream as
 * `npm start` drives it and no reconcile pass running. Each client writes its own model and polls it every
 * POLL_MS, so a figure is at most POLL_MS late; the polls are load on the same process as the admitter.
 */

const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const EACH = 10;
const POLL_MS = 10;
const CLIENT_COUNTS = [1, 16, 64];

const manifest = (name: string) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name },
  spec: {
    source: `hf://org/${name}-GGUF`,
    engine: 'llamacpp',
    profiles: [{ name: 'cpu', gpus: 0, cpuCores: 0.5, minMemoryGb: 1, compute: 'cpu-small' }],
    scaling: { min: 0, max: 1 },
  },
});

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? 0;
};
const r1 = (x: number) => Math.round(x * 10) / 10;

/** One client's writes: each answered, then read until decided; the latencies in ms. */
async function client(send: Send, model: string, from: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < EACH; i++) {
    const w = await send('PUT', `/v1/models/${model}/scaling`, { min: 0, max: 1 + ((from + i) % 2) });
    if (w.status !== 200) throw new Error(`scaling ${model} answered ${w.status}: ${JSON.stringify(w.body)}`);
    const t0 = performance.now();
    const version = w.body.metadata.version as number;
    for (;;) {
      const g = await send('GET', `/v1/models/${model}`);
      if (g.body?.status?.observedVersion === version) break;
      if (performance.now() - t0 > 30_000)
        throw new Error(`${model} version ${version} undecided after 30 s`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    out.push(performance.now() - t0);
  }
  return out;
}

export interface AdmissionLatency {
  clients: number;
  writes: number;
  p50: number;
  p99: number;
  max: number;
  /** Each round's p99, lowest to highest. */
  p99Rounds: number[];
}

export async function benchAdmissionLatency(): Promise<{ rows: unknown; markdown: string }> {
  const load = loadavg()[0]!;
  const cp = await startControlPlane({
    port: 0,
    simPort: 0,
    reconcileSeconds: 0,
    table: 'bench-admission-latency',
    admins: [LOCAL_ADMIN],
  });
  try {
    const send = overHttp(cp.apiUrl);
    const models = Array.from({ length: Math.max(...CLIENT_COUNTS) }, (_, i) => `lat-${i}`);
    for (const m of models) {
      const r = await send('POST', '/v1/models', manifest(m));
      if (r.status !== 201) throw new Error(`adding ${m} answered ${r.status}: ${JSON.stringify(r.body)}`);
    }
    await cp.admitterSettled(60_000);
    const rows: AdmissionLatency[] = [];
    for (const n of CLIENT_COUNTS) {
      const all: number[] = [];
      const p99s: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const got = (await Promise.all(models.slice(0, n).map((m, i) => client(send, m, round + i)))).flat();
        all.push(...got);
        p99s.push(r1(pct(got, 99)));
      }
      rows.push({
        clients: n,
        writes: all.length,
        p50: r1(pct(all, 50)),
        p99: r1(pct(all, 99)),
        max: r1(Math.max(...all)),
        p99Rounds: p99s.sort((a, b) => a - b),
      });
    }
    const markdown = [
      `${ROUNDS} rounds of ${EACH} writes per client, each client its own model; load average ${load.toFixed(1)} at the start. Target: p99 ≤ 1 s at 64 clients.`,
      '',
      '| clients | writes | p50 ms | p99 ms | max ms | p99 per round |',
      '|---:|---:|---:|---:|---:|---|',
      ...rows.map(
        (r) => `| ${r.clients} | ${r.writes} | ${r.p50} | ${r.p99} | ${r.max} | ${r.p99Rounds.join(', ')} |`,
      ),
    ].join('\n');
    return { rows, markdown };
  } finally {
    await cp.stop();
  }
}
