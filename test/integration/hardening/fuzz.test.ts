import { buildRouter, handle } from '../../../lambdas/api/app';
import { startApiServer } from '../../../local/api-server';
import type { LocalLambda } from '../../../local/lambda';
import { P } from '../../../soak/lib/fixture';
import { runFuzz } from '../../../soak/lib/fuzz';
import { setupFuzzWorld } from '../../../soak/lib/fuzz-fixture';
import { invokeHttp, invokeInProcess, jsonClient } from '../../../soak/lib/invoke';
import { testApi } from '../../helpers/api';
import { dumpTable } from '../../helpers/dump';
import { reconcilerLambda } from '../../helpers/lambda';

/**
 * The short fuzz run (`npm test`): a few hundred generated requests in-process against DynamoDB Local,
 * across every route; the long one (npm run soak) sends 10,000+ over HTTP. See soak/lib/fuzz.ts.
 * A failure prints the seed: FUZZ_SEED=<seed> reproduces the same requests.
 */

const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 500);

let lambda: LocalLambda;
beforeAll(async () => {
  await testApi({ admins: [P.platform] });
  // POST /v1/reconcile invokes a reconciler; the in-process API has none, so a local Lambda stands in.
  lambda = await reconcilerLambda();
  await setupFuzzWorld(jsonClient(invokeInProcess, P.platform));
});
afterAll(() => lambda.stop());

it(`survives ${REQUESTS} generated requests: no 5xx, problem+json refusals that write nothing`, async () => {
  const routes = buildRouter().list();
  const report = await runFuzz({
    routes,
    invoke: invokeInProcess,
    dump: dumpTable,
    requests: REQUESTS,
    seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined,
    timeLimitMs: 40_000,
  });
  const summary = {
    seed: report.seed,
    requests: report.requests,
    byStatus: report.byStatus,
    failures: report.failures,
  };
  // Every route was tried, refusals and successes both happened.
  expect(Object.keys(report.byRoute).length).toBe(routes.length);
  expect(report.refusals).toBeGreaterThan(0);
  expect(report.requests - report.refusals).toBeGreaterThan(0);
  if (report.failureCount) {
    console.log(
      `fuzz seed ${report.seed}: ${report.failureCount} failure(s)\n` +
        report.failures
          .map((f) => `${f.method} ${f.path} as ${f.principal ?? '(none)'} → ${f.problem}`)
          .join('\n'),
    );
  }
  expect(summary.failures).toEqual([]);
});

// The local HTTP server is what a browser page can reach: there, cross-site writes must be refused as well.
it('survives generated requests over the local HTTP server, cross-site browser writes refused', async () => {
  const server = await startApiServer({ handler: handle, port: 0 });
  try {
    const report = await runFuzz({
      routes: buildRouter().list(),
      invoke: invokeHttp(server.url),
      dump: dumpTable,
      requests: Number(process.env.FUZZ_HTTP_REQUESTS ?? 150),
      seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined,
      timeLimitMs: 30_000,
      crossSite: true,
    });
    if (report.failureCount)
      console.log(`fuzz (HTTP) seed ${report.seed}: ${report.failureCount} failure(s)`);
    expect(report.byStatus[403]).toBeGreaterThan(0);
    expect(report.failures).toEqual([]);
  } finally {
    await server.close();
  }
});
