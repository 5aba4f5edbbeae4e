import { buildRouter } from '../../../lambdas/api/app';
import type { LocalLambda } from '../../../local/lambda';
import { P } from '../../../soak/lib/fixture';
import { runFuzz } from '../../../soak/lib/fuzz';
import { setupFuzzWorld } from '../../../soak/lib/fuzz-fixture';
import { invokeInProcess, jsonClient } from '../../../soak/lib/invoke';
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
