import './env';
import { log, num, record } from './common';
import { type KillReport, runKills } from './lib/kills';
import { type RestartReport, runRestarts } from './lib/restart';

export interface RestartSuiteReport extends RestartReport {
  /** SOAK_KILLS kills of the whole `npm start -- --persist` process group mid-burst of writes. */
  kill?: KillReport;
}

/**
 * The long restart run: SOAK_RESTARTS (default 5) stops mid-workflow with --persist, then SOAK_KILLS (default 20)
 * kill -9s of the whole process group mid-burst of writes, every acknowledged write checked after each.
 */
export async function soakRestart(): Promise<RestartSuiteReport> {
  const restarts = num('SOAK_RESTARTS', 5);
  log(`restart: ${restarts} kills of the control plane mid-workflow, DynamoDB Local on a file`);
  const r = await runRestarts({ restarts, computes: 3, convergePasses: 25, log });
  log(
    `restart: ${r.restarts} restarts, ${r.modelsBefore} models kept; lost ${r.modelsLost.length} models, ` +
      `${r.quotasLost.length} quotas, ${r.scopesLost.length} scopes; ${r.admissionsChanged.length} admissions changed; ` +
      `${r.duplicateExecutions.length} duplicate executions; ${r.violations.length} violation(s)`,
  );
  const kills = num('SOAK_KILLS', 20);
  log(`restart: ${kills} kill -9s of the npm start -- --persist process group mid-burst of writes`);
  const kill = await runKills({ kills, log });
  log(
    `restart: ${kill.kills} kills, acknowledged ${kill.acknowledged}, lost ${kill.lost.length} (${kill.inFlight} writes in flight at the kills)`,
  );
  const out = { ...r, kill };
  record('restart', out);
  return out;
}

export const restartOk = (r: RestartSuiteReport) =>
  !r.modelsLost.length &&
  !r.quotasLost.length &&
  !r.scopesLost.length &&
  !r.admissionsChanged.length &&
  !r.duplicateExecutions.length &&
  !r.violations.length &&
  Object.values(r.restartedWork).every((n) => n === 1) &&
  !r.kill?.lost.length;

if (require.main === module) soakRestart().then((r) => process.exit(restartOk(r) ? 0 : 1));
