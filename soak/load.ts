import './env';
import { resetClients } from '../lambdas/shared/clients';
import { resetConfig } from '../lambdas/shared/config';
import { spawnControlPlane } from '../local/control-plane-process';
import { log, num, record } from './common';
import { P } from './lib/fixture';
import { invokeHttp } from './lib/invoke';
import { type LoadReport, runLoad } from './lib/load';

/**
 * The long load run: SOAK_LOAD_CLIENTS (default 200) clients over HTTP for SOAK_LOAD_SECONDS (default 60). The
 * control plane runs in a process of its own, as a stage's API runs apart from its callers: the clients' own
 * work (building 200 clients' requests, parsing every answer) would otherwise be counted in the API's latency.
 */
export async function soakLoad(): Promise<LoadReport> {
  const cp = await spawnControlPlane({
    simTimeScale: 0.001,
    reconcileSeconds: 0,
    cooldownSeconds: 0,
    admins: [P.platform],
  });
  try {
    // The checks afterwards read the control plane's table.
    Object.assign(process.env, cp.env);
    resetConfig();
    resetClients();
    const clients = num('SOAK_LOAD_CLIENTS', 200);
    const seconds = num('SOAK_LOAD_SECONDS', 60);
    log(`load: ${clients} concurrent clients for ${seconds} s over HTTP`);
    const r = await runLoad({
      invoke: invokeHttp(cp.apiUrl),
      clients,
      seconds,
      settle: () => cp.settle(60_000),
    });
    log(
      `load: ${r.requests} requests (${r.throughputPerSecond}/s), p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms; ` +
        `${r.expected409} expected 409s, ${r.errorCount} errors, ${r.inconsistencies.length} inconsistencies`,
    );
    record('load', r);
    return r;
  } finally {
    await cp.stop();
  }
}

export const loadOk = (r: LoadReport) => r.errorCount === 0 && r.inconsistencies.length === 0;

if (require.main === module) soakLoad().then((r) => process.exit(loadOk(r) ? 0 : 1));
