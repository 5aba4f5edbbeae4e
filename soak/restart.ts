import './env';
import { log, num, record } from './common';
import { type RestartReport, runRestarts } from './lib/restart';

/** The long restart run: SOAK_RESTARTS (default 5) kills mid-workflow with --persist. */
export async function soakRestart(): Promise<RestartReport> {
  const restarts = num('SOAK_RESTARTS', 5);
  log(`restart: ${restarts} kills of the control plane mid-workflow, DynamoDB Local on a file`);
  const r = await runRestarts({ restarts, computes: 3, convergePasses: 25, log });
  log(
    `restart: ${r.restarts} restarts, ${r.modelsBefore} models kept; lost ${r.modelsLost.length} models, ` +
      `${r.quotasLost.length} quotas, ${r.scopesLost.length} scopes; ${r.admissionsChanged.length} admissions changed; ` +
      `${r.duplicateExecutions.length} duplicate executions; ${r.violations.length} violation(s)`,
  );
  record('restart', r);
  return r;
}

export const restartOk = (r: RestartReport) =>
  !r.modelsLost.length &&
  !r.quotasLost.length &&
  !r.scopesLost.length &&
  !r.admissionsChanged.length &&
  !r.duplicateExecutions.length &&
  !r.violations.length &&
  Object.values(r.restartedWork).every((n) => n === 1);

if (require.main === module) soakRestart().then((r) => process.exit(restartOk(r) ? 0 : 1));
