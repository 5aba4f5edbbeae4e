import './env';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { chaosOk, soakChaos } from './chaos';
import { log, num, RESULTS } from './common';
import { soakFuzz } from './fuzz';
import type { ChaosReport } from './lib/chaos';
import type { FuzzReport } from './lib/fuzz';
import type { LoadReport } from './lib/load';
import type { SupplyChaosReport } from './lib/supply';
import { loadOk, soakLoad } from './load';
import { type RestartSuiteReport, restartOk, soakRestart } from './restart';
import { soakSupply, supplyOk } from './supply';

/**
 * npm run soak: the long hardening suites one after the other, each bounded in time and requests, their figures
 * in soak/results.json and, for BENCHMARKS.md, in soak/RESULTS.md. SOAK_ONLY=fuzz,load runs some of them.
 */

const only = new Set((process.env.SOAK_ONLY ?? 'fuzz,chaos,restart,load,supply').split(','));

async function main(): Promise<number> {
  const t0 = Date.now();
  const out: {
    fuzz?: FuzzReport;
    chaos?: ChaosReport;
    restart?: RestartSuiteReport;
    load?: LoadReport;
    supply?: SupplyChaosReport;
  } = {};
  // Suites not run this time keep their last figures from soak/results.json.
  const last = existsSync(RESULTS) ? (JSON.parse(readFileSync(RESULTS, 'utf8')) as typeof out) : {};
  out.fuzz = only.has('fuzz') ? await soakFuzz() : last.fuzz;
  out.chaos = only.has('chaos') ? await soakChaos() : last.chaos;
  out.restart = only.has('restart') ? await soakRestart() : last.restart;
  out.load = only.has('load') ? await soakLoad() : last.load;
  out.supply = only.has('supply') ? await soakSupply() : last.supply;
  const md = markdown(out, Date.now() - t0);
  writeFileSync(join(__dirname, 'RESULTS.md'), md);
  console.log(`\n${md}`);
  const ok =
    (!out.fuzz || out.fuzz.failureCount === 0) &&
    (!out.chaos || chaosOk(out.chaos)) &&
    (!out.restart || restartOk(out.restart)) &&
    (!out.load || loadOk(out.load)) &&
    (!out.supply || supplyOk(out.supply));
  log(ok ? 'every suite held' : 'some suite found a problem: see above and soak/results.json');
  return ok ? 0 : 1;
}

function markdown(
  r: {
    fuzz?: FuzzReport;
    chaos?: ChaosReport;
    restart?: RestartSuiteReport;
    load?: LoadReport;
    supply?: SupplyChaosReport;
  },
  ms: number,
): string {
  const l: string[] = [];
  l.push('## Hardening (npm run soak)');
  l.push('');
  l.push(
    `Measured on ${new Date().toISOString().slice(0, 10)}, ${cpus().length} vCPU / ${Math.round(totalmem() / 2 ** 30)} GiB, ` +
      `local control plane (DynamoDB Local, cloud simulator at time scale 0.001, local Step Functions); ` +
      `this run ${(ms / 60_000).toFixed(1)} min (${process.env.SOAK_ONLY ? `SOAK_ONLY=${process.env.SOAK_ONLY}; the other suites as an earlier run recorded them, each with its date in soak/results.json` : 'every suite'}). Figures in soak/results.json.`,
  );
  l.push('');
  l.push('| Suite | What was thrown at it | Held |');
  l.push('|---|---|---|');
  if (r.fuzz) {
    const f = r.fuzz;
    const s5 = Object.entries(f.byStatus)
      .filter(([k]) => Number(k) >= 500)
      .reduce((n, [, v]) => n + v, 0);
    l.push(
      `| Fuzz | ${f.requests.toLocaleString('en')} generated requests over HTTP on ${Object.keys(f.byRoute).length} routes ` +
        `(seed ${f.seed}), ${f.refusals.toLocaleString('en')} refused | ${f.failureCount === 0 ? 'yes' : 'no'}: ${s5} 5xx, ` +
        `${f.failureCount} failure(s); every refusal problem+json and the table unchanged after ` +
        `${f.refusalsCompared.toLocaleString('en')} refusals and ${f.readsCompared.toLocaleString('en')} reads |`,
    );
  }
  if (r.chaos) {
    const c = r.chaos;
    l.push(
      `| Chaos | ${c.faultPasses} reconcile passes at ${c.throttleRate * 100}% throttling + ${c.serverErrorRate * 100}% 5xx, ` +
        `launch failures (CREATE_FAILED ${c.statusesSeen.CREATE_FAILED ?? 0} and DEGRADED ${c.statusesSeen.DEGRADED ?? 0} observations), ` +
        `${c.outOfBandDeletes} out-of-band deletes + vanishing groups, ${c.apiOps} model changes; ${c.workflowsStarted} workflows ` +
        `(${c.workflowsFailed} failed and redone, ${c.workflowRetries} task retries) | ${chaosOk(c) ? 'yes' : 'no'}: converged ` +
        `${c.convergePasses} pass(es) after the faults stopped, ${c.violations.length} violations; alarms fired ` +
        `${c.alarmsFired.join(', ') || 'none'}, all cleared: ${c.alarmsStillOn.length === 0 ? 'yes' : c.alarmsStillOn.join(', ')} |`,
    );
  }
  if (r.restart) {
    const s = r.restart;
    l.push(
      `| Restarts | ${s.restarts} kills of the control plane with --persist (${s.interruptedWorkflows} workflows running at the kills), ${s.modelsBefore} models | ${restartOk(s) ? 'yes' : 'no'}: ` +
        `lost ${s.modelsLost.length} models, ${s.quotasLost.length} quotas, ${s.scopesLost.length} scopes; ` +
        `${s.admissionsChanged.length} admissions changed; ${s.duplicateExecutions.length} duplicate executions; ` +
        `each interrupted create redone once (converged in ${s.convergePasses.join('/')} passes) |`,
    );
    if (s.kill) {
      const k = s.kill;
      l.push(
        `| Kills | ${k.kills} kill -9s of the whole \`npm start -- --persist\` process group mid-burst of model creates, ` +
          `scalings, deletes and quota changes (${k.inFlight} writes in flight at the kills) | ${k.lost.length ? 'no' : 'yes'}: ` +
          `acknowledged ${k.acknowledged}, lost ${k.lost.length}${k.lost.length ? ` (${k.lost.slice(0, 5).join('; ')})` : ''} |`,
      );
    }
  }
  if (r.supply) {
    const d = r.supply;
    l.push(
      `| Supply | ${d.rounds} Spot reclaims of the nodes models run on (time scale ${d.timeScale}), the last ${d.roundsWithoutSpotCapacity} with no Spot capacity left | ` +
        `${supplyOk(d) ? 'yes' : 'no'}: warning → every minimum Ready again p50 ${d.p50Seconds} s, p99 ${d.p99Seconds} s simulated ` +
        `(node boot ${d.nodeBootSeconds} s); availability ${Object.entries(d.availability)
          .map(([k, v]) => `${k} ${(v * 100).toFixed(1)}%`)
          .join(', ')}; ` +
        `${d.admittedNotRunningMinutes} replica-minutes admitted but not running; ${d.interruptionsCounted} warnings counted` +
        (d.faults
          ? `${d.faults.zone ? `; one zone short ${d.faults.zone.rounds} (compute kept, replicas Ready in its other zone ${d.zoneStayed}, p50 ${d.faults.zone.p50Seconds} s after the ask)` : ''}` +
            `; ICE ${d.faults.ice.rounds}, cordons ${d.faults.cordon.rounds}, binding quotas ${d.faults.quota.rounds}: ` +
            `replicas admitted on a short compute past its grace: ${d.admittedPastGrace} samples, up to ${d.admittedOnShortMaxPasses} passes |`
          : ' |'),
    );
  }
  if (r.load) {
    const d = r.load;
    l.push(
      `| Load | ${d.clients} concurrent clients for ${d.seconds} s over HTTP to a control plane in a process of its own, reads and writes: ${d.requests.toLocaleString('en')} ` +
        `requests (${d.throughputPerSecond}/s) | ${loadOk(d) ? 'yes' : 'no'}: p50 ${d.latencyMs.p50} ms, p99 ${d.latencyMs.p99} ms; ` +
        `${d.expected409} expected 409s, ${d.errorCount} errors, ${d.inconsistencies.length} inconsistencies afterwards |`,
    );
    l.push('');
    l.push('Load latency per operation (ms):');
    l.push('');
    l.push('| Operation | Requests | p50 | p99 |');
    l.push('|---|---:|---:|---:|');
    for (const [op, v] of Object.entries(d.byOp).sort()) l.push(`| ${op} | ${v.n} | ${v.p50} | ${v.p99} |`);
    if (d.cpu) {
      const c = d.cpu;
      l.push('');
      l.push(
        `CPU per request: ${c.controlPlaneMs} ms in the control plane's process, ${c.dynamodbMs ?? 'unknown'} ms in DynamoDB Local, ` +
          `${c.clientsMs} ms in the clients' process. With all ${c.cores} cores busy that is at most ${c.maxPerSecond} requests a second, ` +
          `so ${d.clients} clients that never pause wait ${c.leastMeanLatencyMs} ms on average at the least (Little's law), whatever the order of the work. ` +
          'In a stage each request has a Lambda of its own and DynamoDB is not on the same cores. ' +
          "scale-shared is every writer's scaling of one model: one process takes a model's writes one after another " +
          '(store/commit.ts oneAtATime), each commit a round trip behind the rest of the load, so that line moves about ' +
          `${Math.round((d.byOp['scale-shared']?.n ?? 0) / d.seconds)} writes a second and holds most of the clients; in a stage each write has a container of its own and they race on the item's condition instead.`,
      );
    }
  }
  if (r.fuzz?.failureCount) {
    l.push('');
    l.push('Fuzz failures by cause:');
    l.push('');
    for (const [cause, n] of Object.entries(r.fuzz.failureCauses)) l.push(`- ${n} × ${cause}`);
  }
  l.push('');
  l.push(
    `Short versions of each suite run in npm test (test/integration/hardening/, test/infra/security.test.ts). ` +
      `Scale with SOAK_FUZZ_REQUESTS, SOAK_CHAOS_PASSES, SOAK_RESTARTS, SOAK_KILLS, SOAK_LOAD_CLIENTS, SOAK_LOAD_SECONDS, SOAK_SUPPLY_ROUNDS` +
      (num('SOAK_LOAD_CLIENTS', 200) !== 200
        ? ` (this run: ${num('SOAK_LOAD_CLIENTS', 200)} load clients)`
        : '') +
      '.',
  );
  l.push('');
  return l.join('\n');
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(2);
  },
);
