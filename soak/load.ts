import './env';
import { availableParallelism } from 'node:os';
import { resetClients } from '../lambdas/shared/clients';
import { resetConfig } from '../lambdas/shared/config';
import { type CpuUsed, spawnControlPlane } from '../local/control-plane-process';
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
    const [cpu0, mine0] = [await cp.cpu(), process.cpuUsage()];
    const r: LoadReport = await runLoad({
      invoke: invokeHttp(cp.apiUrl),
      clients,
      seconds,
      settle: () => cp.settle(60_000),
    });
    r.cpu = cpuPerRequest(cpu0, await cp.cpu(), process.cpuUsage(mine0), r);
    log(
      `load: ${r.requests} requests (${r.throughputPerSecond}/s), p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms; ` +
        `${r.expected409} expected 409s, ${r.errorCount} errors, ${r.inconsistencies.length} inconsistencies`,
    );
    const c = r.cpu;
    log(
      `load: CPU per request ${c.controlPlaneMs} ms the control plane, ${c.dynamodbMs ?? '?'} ms DynamoDB Local, ` +
        `${c.clientsMs} ms the clients: at most ${c.maxPerSecond}/s on ${c.cores} cores, so a mean latency of at least ${c.leastMeanLatencyMs} ms for ${r.clients} clients`,
    );
    record('load', r);
    return r;
  } finally {
    await cp.stop();
  }
}

/**
 * Where the CPU went per request, and what that allows on this machine: with every core busy it serves at most
 * cores × 1000 / (CPU ms per request) requests a second, so closed-loop clients that never pause wait on average
 * at least clients ÷ that rate (Little's law), however the control plane orders its work.
 */
function cpuPerRequest(before: CpuUsed, after: CpuUsed, clientsUsed: NodeJS.CpuUsage, r: LoadReport) {
  const per = (ms: number) => Math.round((ms / r.requests) * 100) / 100;
  const controlPlaneMs = per(after.controlPlaneMs - before.controlPlaneMs);
  const dynamodbMs =
    after.dynamodbMs !== undefined && before.dynamodbMs !== undefined
      ? per(after.dynamodbMs - before.dynamodbMs)
      : undefined;
  const clientsMs = per((clientsUsed.user + clientsUsed.system) / 1000);
  const total = controlPlaneMs + (dynamodbMs ?? 0) + clientsMs;
  const cores = availableParallelism();
  const maxPerSecond = Math.round((cores * 1000) / total);
  return {
    controlPlaneMs,
    ...(dynamodbMs !== undefined ? { dynamodbMs } : {}),
    clientsMs,
    cores,
    maxPerSecond,
    leastMeanLatencyMs: Math.round((r.clients / maxPerSecond) * 1000),
  };
}

export const loadOk = (r: LoadReport) => r.errorCount === 0 && r.inconsistencies.length === 0;

if (require.main === module) soakLoad().then((r) => process.exit(loadOk(r) ? 0 : 1));
