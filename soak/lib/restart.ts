import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listComputes } from '../../lambdas/store/computes';
import { type ControlPlane, type ControlPlaneOptions, startControlPlane } from '../../local/control-plane';
import { expectOk, l4Compute, l4Model, P, setupTenancy } from './fixture';
import { invokeHttp, type JsonClient, jsonClient, listAll } from './invoke';
import { converge, type Violation } from './world';

/**
 * Restarts: the local control plane with --persist (DynamoDB Local on a file) is stopped while a workflow is
 * running and started again on the same data. Nothing stored may be lost (models, scopes, quotas, admissions),
 * and the work must resume without duplicates.
 *
 * "Without duplicates", precisely: the cloud simulator lives in memory, so the restarted control plane finds no
 * node group and rightly treats it as deleted out of band; the work is then restarted, not resumed. What must
 * hold: the execution that died with the old process is settled (marked FAILED) and never run again; exactly one
 * new execution per compute is started for it, under the next generation (names never repeat); the simulator
 * ends with exactly one node group per compute; admissions are not taken twice (the same replicas admitted).
 */

export interface RestartReport {
  restarts: number;
  /** Workflows running when a process was killed, over all restarts. */
  interruptedWorkflows: number;
  modelsBefore: number;
  modelsLost: string[];
  quotasLost: string[];
  scopesLost: string[];
  admissionsChanged: string[];
  /** Executions that ran under a name already used (in this process or before the restart). */
  duplicateExecutions: string[];
  /** Per compute, the most provision executions one restarted process started (1: the work was redone once). */
  restartedWork: Record<string, number>;
  convergePasses: number[];
  violations: Violation[];
  durationMs: number;
}

interface Snapshot {
  models: Map<string, { version: number; admitted: number }>;
  quotas: Map<string, string>;
  scopes: Map<string, string>;
}

async function snapshot(admin: JsonClient): Promise<Snapshot> {
  const models = (await listAll(admin, '/v1/models')) as any[];
  const quotas = (await listAll(admin, '/v1/quotas')) as any[];
  const scopes = (await listAll(admin, '/v1/scopes')) as any[];
  return {
    models: new Map(
      models.map((m) => [
        m.metadata.name,
        { version: m.metadata.version, admitted: m.status?.admitted ?? 0 },
      ]),
    ),
    quotas: new Map(quotas.map((q) => [q.metadata.name, JSON.stringify(q.spec)])),
    scopes: new Map(scopes.map((s) => [s.metadata.name, JSON.stringify(s.spec)])),
  };
}

export interface RestartOptions {
  restarts: number;
  /** Models (each on its own L4 compute) whose node groups are being created at each kill. */
  computes: number;
  convergePasses: number;
  log?: (line: string) => void;
}

export async function runRestarts(o: RestartOptions): Promise<RestartReport> {
  const t0 = Date.now();
  const log = o.log ?? (() => undefined);
  const dataDir = mkdtempSync(join(tmpdir(), 'llmcap-restart-'));
  const opts: ControlPlaneOptions = {
    persist: true,
    dataDir,
    port: 0,
    simPort: 0,
    // Slow enough that a create is still running when the process is killed (create ≈ 1.2 s).
    simTimeScale: 0.01,
    reconcileSeconds: 0,
    cooldownSeconds: 0,
    admins: [P.platform],
    table: 'llmcap-local',
  };
  const report: RestartReport = {
    restarts: 0,
    interruptedWorkflows: 0,
    modelsBefore: 0,
    modelsLost: [],
    quotasLost: [],
    scopesLost: [],
    admissionsChanged: [],
    duplicateExecutions: [],
    restartedWork: {},
    convergePasses: [],
    violations: [],
    durationMs: 0,
  };
  const names = new Set<string>();
  // Executions already counted, per process (each process has its own local Step Functions).
  let counted = new Set<string>();
  const collect = (into?: Record<string, number>) => {
    for (const e of cp.sfn.executions.values()) {
      if (counted.has(e.executionArn)) continue;
      counted.add(e.executionArn);
      if (names.has(e.name)) report.duplicateExecutions.push(e.name);
      names.add(e.name);
      if (into && e.name.includes('-provision-')) {
        // The input names the compute; the execution name may shorten it (and ends in the compute's id).
        const c = (JSON.parse(e.input) as { computeName: string }).computeName;
        into[c] = (into[c] ?? 0) + 1;
      }
    }
  };
  let cp: ControlPlane = await startControlPlane(opts);
  try {
    let admin = jsonClient(invokeHttp(cp.apiUrl), P.platform);
    await setupTenancy(admin);
    for (let i = 0; i < o.computes; i++) {
      expectOk(
        `rs-l4-${i}`,
        await admin('POST', '/v1/computes', l4Compute(`rs-l4-${i}`, 'project:a', 4)),
        201,
      );
    }
    for (let round = 0; round < o.restarts; round++) {
      // New work for every compute at each kill: a create in the first round, then a scale to 2 or 1 nodes
      // (the simulator forgets its node groups with the process, so the new one redoes it as a create).
      for (let i = 0; i < o.computes; i++) {
        const name = `rs-m-${i}`;
        if (round === 0)
          expectOk(name, await admin('POST', '/v1/models', l4Model(name, 'project:a', 1, `rs-l4-${i}`)), 201);
        else
          expectOk(
            name,
            await admin('PUT', `/v1/models/${name}/scaling`, { min: 1 + (round % 2), max: 2 }),
            200,
          );
      }
      await cp.reconcile();
      const running = (await listComputes())
        .filter((c) => c.workflow?.state === 'RUNNING')
        .map((c) => c.name);
      report.interruptedWorkflows += running.length;
      log(
        `restart ${round + 1}: killing the control plane with ${running.length} workflow(s) running (${running.join(', ')})`,
      );
      collect();
      const before = await snapshot(admin);
      report.modelsBefore = before.models.size;
      await cp.stop();
      cp = await startControlPlane(opts);
      counted = new Set();
      report.restarts++;
      admin = jsonClient(invokeHttp(cp.apiUrl), P.platform);
      const after = await snapshot(admin);
      for (const [n, m] of before.models) {
        const a = after.models.get(n);
        if (!a || a.version !== m.version) report.modelsLost.push(n);
        else if (a.admitted !== m.admitted)
          report.admissionsChanged.push(`${n}: ${m.admitted} → ${a.admitted}`);
      }
      for (const [n, q] of before.quotas) if (after.quotas.get(n) !== q) report.quotasLost.push(n);
      for (const [n, s] of before.scopes) if (after.scopes.get(n) !== s) report.scopesLost.push(n);
      const done = await converge(cp, admin, o.convergePasses);
      report.convergePasses.push(done.passes);
      report.violations.push(...done.violations);
      const redone: Record<string, number> = {};
      collect(redone);
      // The most creates any compute needed after one restart (1 when the work was redone once).
      for (const [c, k] of Object.entries(redone))
        report.restartedWork[c] = Math.max(report.restartedWork[c] ?? 0, k);
      // Admission is decided once: the same replicas stay admitted after the work is redone.
      const settled = await snapshot(admin);
      for (const [n, m] of after.models)
        if (settled.models.get(n)?.admitted !== m.admitted)
          report.admissionsChanged.push(
            `${n} after converging: ${m.admitted} → ${settled.models.get(n)?.admitted}`,
          );
    }
  } finally {
    await cp.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  report.durationMs = Date.now() - t0;
  return report;
}
