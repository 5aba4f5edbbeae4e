import './env';
import { controlPlane, log, num, record } from './common';
import { P } from './lib/fixture';
import { invokeHttp, jsonClient } from './lib/invoke';
import { runSupplyChaos, type SupplyChaosReport } from './lib/supply';

/** The long supply chaos run: SOAK_SUPPLY_ROUNDS (default 10) Spot reclaims, the last without Spot capacity. */
export async function soakSupply(): Promise<SupplyChaosReport> {
  // At 0.05 a pass (a few hundred wall milliseconds) is a few simulated seconds, about its share of a fault's
  // recovery in AWS; at 0.01 it was 30 to 250 s of every figure. Node boot (140 s) takes 7 wall seconds.
  const timeScale = num('SOAK_SUPPLY_TIME_SCALE', 0.05);
  const cp = await controlPlane(timeScale);
  try {
    const rounds = num('SOAK_SUPPLY_ROUNDS', 10);
    log(`supply: ${rounds} Spot reclaims, the last with no Spot capacity to replace the node`);
    const r = await runSupplyChaos(cp, jsonClient(invokeHttp(cp.apiUrl), P.platform), {
      rounds,
      zoneRounds: num('SOAK_SUPPLY_OTHER_ROUNDS', 2),
      iceRounds: num('SOAK_SUPPLY_OTHER_ROUNDS', 2),
      cordonRounds: num('SOAK_SUPPLY_OTHER_ROUNDS', 2),
      quotaRounds: num('SOAK_SUPPLY_OTHER_ROUNDS', 2),
      timeScale,
      log,
    });
    log(
      `supply: warning → minimum Ready again p50 ${r.p50Seconds} s, p99 ${r.p99Seconds} s (node boot ${r.nodeBootSeconds} s); ` +
        `availability ${JSON.stringify(r.availability)}; ${r.admittedNotRunningMinutes} replica-minutes admitted but not running`,
    );
    log(
      `supply per fault: ${JSON.stringify(r.faults)}; replicas admitted on a short compute past its grace: ${r.admittedPastGrace} samples, up to ${r.admittedOnShortMaxPasses} passes (${r.admittedPastGraceMaxSeconds} s); one zone short, compute kept: ${r.zoneStayed} of ${r.faults.zone.rounds}; ICE moved back ${r.movedBack}, quota named ${r.quotaNamed}`,
    );
    record('supply', r);
    return r;
  } finally {
    await cp.stop();
  }
}

export const supplyOk = (r: SupplyChaosReport) =>
  r.availability.critical === 1 &&
  r.recoverySeconds.length === r.rounds &&
  // Results recorded before the other faults were added have none of these.
  (r.quotaNamed ?? 0) === (r.faults?.quota.rounds ?? 0) &&
  (r.zoneStayed ?? 0) === (r.faults?.zone?.rounds ?? 0) &&
  !r.beyondQuotaPasses;

if (require.main === module) soakSupply().then((r) => process.exit(supplyOk(r) ? 0 : 1));
