import './env';
import { controlPlane, log, num, record } from './common';
import { type ChaosReport, runChaos } from './lib/chaos';

/** The long chaos run: SOAK_CHAOS_PASSES (default 60) passes under faults, then converge. */
export async function soakChaos(): Promise<ChaosReport> {
  const cp = await controlPlane();
  try {
    const faultPasses = num('SOAK_CHAOS_PASSES', 60);
    log(`chaos: ${faultPasses} passes with 30% throttling, 10% 5xx, launch failures, vanishing node groups`);
    const r = await runChaos(cp, { faultPasses, convergePasses: 20, seed: num('SOAK_SEED', 1), log });
    log(
      `chaos: converged in ${r.convergePasses} pass(es) after the faults stopped; ${r.violations.length} violation(s); ` +
        `alarms fired ${r.alarmsFired.join(', ') || 'none'}; still on: ${r.alarmsStillOn.join(', ') || 'none'}`,
    );
    record('chaos', r);
    return r;
  } finally {
    await cp.stop();
  }
}

export const chaosOk = (r: ChaosReport) =>
  r.violations.length === 0 && r.alarmsStillOn.length === 0 && r.apiOpsFailed.length === 0;

if (require.main === module) soakChaos().then((r) => process.exit(chaosOk(r) ? 0 : 1));
