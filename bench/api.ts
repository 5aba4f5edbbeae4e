import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startControlPlane } from '../local/control-plane';
import { iamAuthorizerOf, LOCAL_ADMIN } from '../local/identity';
import { bundleApi } from '../test/helpers/api-bundle';

/**
 * The api Lambda as deployed: its minified bundle size, its cold start (a fresh Node process loads the bundle
 * and serves one request against DynamoDB Local), and the latency of the compute routes over local HTTP.
 */

const execFileAsync = promisify(execFile);
const ROOT = join(__dirname, '..');
const OUT = join(ROOT, 'bench', '.tmp');

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export async function benchApi(): Promise<{ rows: Record<string, number>; markdown: string }> {
  mkdirSync(OUT, { recursive: true });
  // In the repository, so that the bundle finds the SDK in node_modules as the runtime's is found.
  const bundle = await bundleApi(join(OUT, 'api.js'));
  const cp = await startControlPlane({ port: 0, simPort: 0, reconcileSeconds: 0, table: 'bench' });
  // 200 computes are created below: more than the 30 managed node groups a cluster holds by AWS's default, which
  // llmcap refuses (409 AwsQuota). This section measures the API, so the simulated quota is raised first.
  cp.sim.admin.setQuotas({ 'L-6D54EA21': 1000 });
  try {
    // Seed once so the cold start measures a request, not the first-ever load of the built-ins.
    await fetch(`${cp.apiUrl}/v1/computes`);
    // The child counts its requests to the simulator (EC2 and the Price List) by the header that names them.
    const simHost = new URL(cp.sim.endpoint).host;
    const script = `
      const calls = { ec2: 0, pricing: 0 };
      require('node:diagnostics_channel').subscribe('http.client.request.start', ({ request }) => {
        if (request.getHeader('host') !== ${JSON.stringify(simHost)}) return;
        if (String(request.getHeader('x-amz-target') ?? '').startsWith('AWSPriceListService')) calls.pricing++;
        else calls.ec2++;
      });
      const event = { version: '2.0', rawPath: '/v1/computes', headers: {}, isBase64Encoded: false,
        requestContext: { http: { method: 'GET' }, requestId: 'bench', authorizer: { iam: ${JSON.stringify(iamAuthorizerOf(LOCAL_ADMIN))} } } };
      const context = { awsRequestId: 'bench', functionName: 'api', getRemainingTimeInMillis: () => 30000 };
      (async () => {
        // CPU time beside wall time: what the process itself spent, which waiting for a core does not inflate.
        const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
        const c0 = cpu();
        const t0 = process.hrtime.bigint();
        const { handler } = require(${JSON.stringify(bundle.file)});
        const t1 = process.hrtime.bigint();
        const c1 = cpu();
        const r = await handler(event, context);
        const t2 = process.hrtime.bigint();
        const c2 = cpu();
        if (r.statusCode !== 200) throw new Error('status ' + r.statusCode + ' ' + r.body);
        const first = { ...calls };
        await handler(event, context);
        const t3 = process.hrtime.bigint();
        const ms = (a, b) => Number(b - a) / 1e6;
        // The SDK client packages the process has loaded by now: the API needs DynamoDB's alone for this read.
        const sdk = [...new Set(Object.keys(require.cache).flatMap((k) => k.match(/@aws-sdk\\/client-[a-z0-9-]+/g) ?? []))].sort();
        console.log(JSON.stringify({ load: ms(t0, t1), first: ms(t1, t2), second: ms(t2, t3), loadCpu: c1 - c0, firstCpu: c2 - c1, calls: first, sdk }));
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const colds: {
      load: number;
      first: number;
      second: number;
      loadCpu: number;
      firstCpu: number;
      calls: { ec2: number; pricing: number };
      sdk: string[];
    }[] = [];
    const loadBefore = loadavg()[0]!;
    for (let i = 0; i < 5; i++) {
      // Asynchronously: the simulator answering the child's EC2 and Price List calls runs in this process, and
      // a spawnSync stopped it, so the child's first request waited out middy's timeout.
      const out = await execFileAsync(process.execPath, ['-e', script], {
        env: {
          ...process.env,
          LLMCAP_DYNAMODB_ENDPOINT: cp.dynamodbEndpoint,
          LLMCAP_TABLE: cp.table,
          LLMCAP_ADMINS: LOCAL_ADMIN,
          // What the local control plane sets for its own Lambdas (local/control-plane.ts): set here too, so
          // the child never depends on what the environment of the bench happened to hold.
          AWS_ENDPOINT_URL_EC2: cp.sim.endpoint,
          AWS_ENDPOINT_URL_PRICING: cp.sim.endpoint,
          AWS_ENDPOINT_URL_SERVICE_QUOTAS: cp.sim.endpoint,
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
          POWERTOOLS_LOG_LEVEL: 'ERROR',
        },
        encoding: 'utf8',
        timeout: 60_000,
      }).catch((e: Error & { stderr?: string }) => {
        throw new Error(`cold start run failed: ${e.stderr || e.message}`);
      });
      colds.push(JSON.parse(out.stdout.trim().split('\n').pop()!));
      if (process.env.BENCH_DEBUG) console.log(colds[colds.length - 1]);
    }
    const cold = colds.map((c) => c.load + c.first).sort((a, b) => a - b);
    const med = (f: (c: (typeof colds)[number]) => number) =>
      percentile(
        colds.map(f).sort((a, b) => a - b),
        50,
      );

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
    // The same creates with the admitter's event source mapping enabled and disabled, in alternating blocks of 10
    // (100 more, at 207 to 307 computes): after each write the admitter reads and commits on the same DynamoDB
    // Local and cores as the next create, which a stage's DynamoDB and admitter Lambda do not share.
    const mapped: number[] = [];
    const unmapped: number[] = [];
    for (let b = 0; b < 10; b++) {
      await cp.admitterMapping(b % 2 === 0);
      const ms = await time(10, (i) =>
        fetch(`${cp.apiUrl}/v1/computes`, { method: 'POST', headers: json, body: body(200 + b * 10 + i) }),
      );
      (b % 2 === 0 ? mapped : unmapped).push(...ms);
    }
    await cp.admitterMapping(true);
    mapped.sort((a, b) => a - b);
    unmapped.sort((a, b) => a - b);
    const loadAfter = loadavg()[0]!;
    const rows = {
      bundleKb: Math.round(bundle.bytes / 102.4) / 10,
      coldStartMsMedian: Math.round(percentile(cold, 50)),
      coldStartMsMax: Math.round(cold[cold.length - 1]!),
      coldLoadMs: Math.round(med((c) => c.load)),
      coldFirstRequestMs: Math.round(med((c) => c.first)),
      coldStartCpuMsMedian: Math.round(med((c) => c.loadCpu + c.firstCpu)),
      coldLoadCpuMs: Math.round(med((c) => c.loadCpu)),
      coldFirstRequestCpuMs: Math.round(med((c) => c.firstCpu)),
      warmSecondRequestMs: +med((c) => c.second).toFixed(1),
      coldEc2Calls: colds[0]!.calls.ec2,
      coldPricingCalls: colds[0]!.calls.pricing,
      loadAverageBefore: +loadBefore.toFixed(2),
      loadAverageAfter: +loadAfter.toFixed(2),
      getP50: +percentile(get, 50).toFixed(2),
      getP99: +percentile(get, 99).toFixed(2),
      listP50: +percentile(list, 50).toFixed(2),
      listP99: +percentile(list, 99).toFixed(2),
      createP50: +percentile(create, 50).toFixed(2),
      createP99: +percentile(create, 99).toFixed(2),
      createMappedP50: +percentile(mapped, 50).toFixed(2),
      createUnmappedP50: +percentile(unmapped, 50).toFixed(2),
      putP50: +percentile(put, 50).toFixed(2),
      putP99: +percentile(put, 99).toFixed(2),
    };
    const sdk = [...new Set(colds.map((c) => c.sdk.join(', ')))].join(' or ');
    const markdown = [
      `Load average (1 min) ${rows.loadAverageBefore} before the cold starts and ${rows.loadAverageAfter} after the creates with and without the admitter's mapping, on ${cpus().length} cores: above that, the times are other work's as much as the API's.`,
      '',
      '| measure | value | target |',
      '|---|---|---|',
      `| api bundle (minified, SDK external) | ${rows.bundleKb} KB | < 300 KB |`,
      `| cold start: load bundle + first GET /v1/computes (median of 5 / max) | ${rows.coldStartMsMedian} ms / ${rows.coldStartMsMax} ms | < 150 ms |`,
      `| of it: load the bundle / the first request (median) | ${rows.coldLoadMs} ms / ${rows.coldFirstRequestMs} ms | |`,
      `| the cold start's CPU time: in all / loading / the first request (median) | ${rows.coldStartCpuMsMedian} ms / ${rows.coldLoadCpuMs} ms / ${rows.coldFirstRequestCpuMs} ms | |`,
      `| the first request's calls to resolve the built-ins (simulator) | ${rows.coldEc2Calls} EC2 DescribeInstanceTypes, ${rows.coldPricingCalls} Price List GetProducts | |`,
      `| the SDK clients the cold start has loaded by then | ${sdk} | |`,
      `| the same process's second GET /v1/computes (median) | ${rows.warmSecondRequestMs} ms | |`,
      `| GET /v1/computes/{name} p50 / p99 (1000 requests) | ${rows.getP50} / ${rows.getP99} ms | p99 < 20 ms |`,
      `| GET /v1/computes (${200 + 7} items) p50 / p99 | ${rows.listP50} / ${rows.listP99} ms | |`,
      `| POST /v1/computes p50 / p99 (200) | ${rows.createP50} / ${rows.createP99} ms | |`,
      `| PUT /v1/computes/{name} p50 / p99 (200) | ${rows.putP50} / ${rows.putP99} ms | |`,
      `| POST /v1/computes p50, the admitter's mapping enabled / disabled (50 each, alternating blocks of 10, 207 to 307 computes) | ${rows.createMappedP50} / ${rows.createUnmappedP50} ms | |`,
    ].join('\n');
    return { rows, markdown };
  } finally {
    await cp.stop();
  }
}

if (require.main === module) {
  benchApi().then((r) => console.log(r.markdown));
}
