import { spawnSync } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { inlinedConfig } from '../lambdas/shared/builtin-config';
import { startControlPlane } from '../local/control-plane';
import { iamAuthorizerOf, LOCAL_ADMIN } from '../local/identity';

/**
 * The api Lambda as deployed: its minified bundle size, its cold start (a fresh Node process loads the bundle
 * and serves one request against DynamoDB Local), and the latency of the compute routes over local HTTP.
 */

const ROOT = join(__dirname, '..');
const OUT = join(ROOT, 'bench', '.tmp');

export async function bundleApi(): Promise<{ file: string; bytes: number }> {
  mkdirSync(OUT, { recursive: true });
  const file = join(OUT, 'api.js');
  // Same options as infra/constructs/llmcap-function.ts, so the figure is the deployed one.
  await build({
    entryPoints: [join(ROOT, 'lambdas', 'api', 'handler.ts')],
    bundle: true,
    minify: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    outfile: file,
    external: ['@aws-sdk/*', '@smithy/*', 'yaml'],
    define: Object.fromEntries(
      Object.entries(inlinedConfig()).map(([k, v]) => [`process.env.${k}`, JSON.stringify(v)]),
    ),
    logLevel: 'silent',
  });
  return { file, bytes: statSync(file).size };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function benchApi(): Promise<{ rows: Record<string, number>; markdown: string }> {
  const bundle = await bundleApi();
  const cp = await startControlPlane({ port: 0, simPort: 0, reconcileSeconds: 0, table: 'bench' });
  try {
    // Seed once so the cold start measures a request, not the first-ever load of the built-ins.
    await fetch(`${cp.apiUrl}/v1/computes`);
    const script = `
      const t0 = process.hrtime.bigint();
      const { handler } = require(${JSON.stringify(bundle.file)});
      const t1 = process.hrtime.bigint();
      handler({ version: '2.0', rawPath: '/v1/computes', headers: {}, isBase64Encoded: false,
        requestContext: { http: { method: 'GET' }, requestId: 'bench', authorizer: { iam: ${JSON.stringify(iamAuthorizerOf(LOCAL_ADMIN))} } } },
        { awsRequestId: 'bench', functionName: 'api', getRemainingTimeInMillis: () => 30000 })
        .then((r) => {
          const t2 = process.hrtime.bigint();
          if (r.statusCode !== 200) throw new Error('status ' + r.statusCode);
          console.log(JSON.stringify({ load: Number(t1 - t0) / 1e6, first: Number(t2 - t1) / 1e6 }));
        });`;
    const colds: { load: number; first: number }[] = [];
    for (let i = 0; i < 5; i++) {
      const out = spawnSync(process.execPath, ['-e', script], {
        env: {
          ...process.env,
          LLMCAP_DYNAMODB_ENDPOINT: cp.dynamodbEndpoint,
          LLMCAP_TABLE: cp.table,
          LLMCAP_ADMINS: LOCAL_ADMIN,
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
          POWERTOOLS_LOG_LEVEL: 'ERROR',
        },
        encoding: 'utf8',
      });
      if (out.status !== 0) throw new Error(`cold start run failed: ${out.stderr}`);
      colds.push(JSON.parse(out.stdout.trim().split('\n').pop()!));
      if (process.env.BENCH_DEBUG) console.log(colds[colds.length - 1]);
    }
    const cold = colds.map((c) => c.load + c.first).sort((a, b) => a - b);

    const time = async (n: number, fn: (i: number) => Promise<Response>) => {
      const ms: number[] = [];
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        const r = await fn(i);
        await r.arrayBuffer();
        if (r.status >= 400) throw new Error(`bench request failed with ${r.status}`);
        ms.push(performance.now() - t);
      }
      return ms.sort((a, b) => a - b);
    };
    const body = (i: number) =>
      JSON.stringify({
        apiVersion: 'llmcap/v1',
        kind: 'Compute',
        metadata: { name: `bench-${i}` },
        spec: { node: { instanceType: 'm7i.large', cpu: 2, memoryGb: 8 }, cost: { perHour: 0.1 } },
      });
    const json = { 'content-type': 'application/json' };
    const create = await time(200, (i) =>
      fetch(`${cp.apiUrl}/v1/computes`, { method: 'POST', headers: json, body: body(i) }),
    );
    const get = await time(1000, () => fetch(`${cp.apiUrl}/v1/computes/gpu-l4-1x`));
    const list = await time(300, () => fetch(`${cp.apiUrl}/v1/computes`));
    const put = await time(200, (i) =>
      fetch(`${cp.apiUrl}/v1/computes/bench-${i}`, { method: 'PUT', headers: json, body: body(i) }),
    );
    const rows = {
      bundleKb: Math.round(bundle.bytes / 102.4) / 10,
      coldStartMsMedian: Math.round(percentile(cold, 50)),
      coldStartMsMax: Math.round(cold[cold.length - 1]!),
      getP50: +percentile(get, 50).toFixed(2),
      getP99: +percentile(get, 99).toFixed(2),
      listP50: +percentile(list, 50).toFixed(2),
      listP99: +percentile(list, 99).toFixed(2),
      createP50: +percentile(create, 50).toFixed(2),
      createP99: +percentile(create, 99).toFixed(2),
      putP50: +percentile(put, 50).toFixed(2),
      putP99: +percentile(put, 99).toFixed(2),
    };
    const markdown = [
      '| measure | value | target |',
      '|---|---|---|',
      `| api bundle (minified, SDK external) | ${rows.bundleKb} KB | < 300 KB |`,
      `| cold start: load bundle + first GET /v1/computes (median of 5 / max) | ${rows.coldStartMsMedian} ms / ${rows.coldStartMsMax} ms | < 150 ms |`,
      `| GET /v1/computes/{name} p50 / p99 (1000 requests) | ${rows.getP50} / ${rows.getP99} ms | p99 < 20 ms |`,
      `| GET /v1/computes (${200 + 7} items) p50 / p99 | ${rows.listP50} / ${rows.listP99} ms | |`,
      `| POST /v1/computes p50 / p99 (200) | ${rows.createP50} / ${rows.createP99} ms | |`,
      `| PUT /v1/computes/{name} p50 / p99 (200) | ${rows.putP50} / ${rows.putP99} ms | |`,
    ].join('\n');
    return { rows, markdown };
  } finally {
    await cp.stop();
  }
}

if (require.main === module) {
  benchApi().then((r) => console.log(r.markdown));
}
