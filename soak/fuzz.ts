import './env';
import { buildRouter } from '../lambdas/api/app';
import { dumpTable } from '../test/helpers/dump';
import { controlPlane, log, num, record } from './common';
import { P } from './lib/fixture';
import { type FuzzReport, runFuzz } from './lib/fuzz';
import { setupFuzzWorld } from './lib/fuzz-fixture';
import { invokeHttp, jsonClient } from './lib/invoke';

/** The long fuzz run: SOAK_FUZZ_REQUESTS (default 10,000) over HTTP against a local control plane. */
export async function soakFuzz(): Promise<FuzzReport> {
  const cp = await controlPlane();
  try {
    const invoke = invokeHttp(cp.apiUrl);
    await setupFuzzWorld(jsonClient(invoke, P.platform));
    const requests = num('SOAK_FUZZ_REQUESTS', 10_000);
    log(
      `fuzz: ${requests} requests over HTTP at ${cp.apiUrl} (time cap ${num('SOAK_FUZZ_MINUTES', 15)} min)`,
    );
    const report = await runFuzz({
      routes: buildRouter().list(),
      invoke,
      // What earlier writes asked of the admitter lands first, so it is not taken for the request's doing.
      dump: async () => {
        await cp.admitterSettled();
        return dumpTable();
      },
      requests,
      seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined,
      timeLimitMs: num('SOAK_FUZZ_MINUTES', 15) * 60_000,
      crossSite: true,
      // The pass runs after POST answers (202): wait for it, then for the workflows it started.
      afterReconcile: async () => {
        await cp.lambda.waitForIdle(60_000);
        await cp.sfn.waitForIdle(60_000);
      },
      log: (l) => (process.env.SOAK_VERBOSE ? log(l) : undefined),
    });
    log(
      `fuzz: ${report.requests} requests in ${(report.durationMs / 1000).toFixed(0)} s (seed ${report.seed}), ` +
        `${report.refusals} refused and compared, ${report.failureCount} failure(s)`,
    );
    for (const [cause, n] of Object.entries(report.failureCauses)) log(`  ${n} × ${cause}`);
    record('fuzz', report);
    return report;
  } finally {
    await cp.stop();
  }
}

if (require.main === module) soakFuzz().then((r) => process.exit(r.failureCount ? 1 : 0));
