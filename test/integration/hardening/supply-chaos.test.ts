import type { ControlPlane } from '../../../local/control-plane';
import { runSupplyChaos } from '../../../soak/lib/supply';
import { httpApi, testControlPlane } from '../../helpers/control-plane';

/**
 * The short supply chaos run (issue 32, Figures; the long one is `npm run soak`, SOAK_ONLY=supply): Spot nodes
 * reclaimed with and without Spot capacity to replace them, EC2 short in one zone, ICE on the preferred type of two models at once, a
 * cordoned and drained node, a vCPU quota that binds. The hard properties only (timings are the soak's): the
 * critical models never lose their minimum, a binding vCPU quota is named on the compute and no group asks past it,
 * no pass run past a short compute's grace leaves more replicas counted on it than it runs nodes, and every fault is
 * recovered from.
 */

let cp: ControlPlane;
beforeAll(async () => {
  cp = await testControlPlane('supply-chaos');
});
afterAll(async () => {
  await cp.stop();
});

it('keeps critical models at their minimum through reclaims, ICE, cordons and a binding quota, and recovers the others', async () => {
  const r = await runSupplyChaos(cp, httpApi(cp), {
    rounds: 2,
    timeScale: 0.001,
    log: (l) => process.stderr.write(`${l}\n`),
  });
  expect(r.availability.critical).toBe(1);
  expect(r.recoverySeconds).toHaveLength(2);
  expect(r.interruptionsCounted).toBe(2);
  expect(r.roundsWithoutSpotCapacity).toBe(1);
  // EC2 short in one of the preferred group's zones: Auto Scaling launched in the other, and llmcap kept the
  // compute (no shortage, no replica elsewhere) while it named the zone.
  expect(r.faults.zone.rounds).toBe(1);
  expect(r.zoneStayed).toBe(1);
  expect(r.faults.ice.rounds).toBe(1);
  expect(r.faults.cordon.rounds).toBe(1);
  expect(r.faults.quota.rounds).toBe(1);
  // The binding quota shows on the compute, and no group is asked for a node AWS would refuse.
  expect(r.quotaNamed).toBe(1);
  expect(r.beyondQuotaPasses).toBe(0);
  // Past the grace admission counts only the nodes a short compute runs (those were counted until its probe).
  expect(r.admittedPastGrace).toBe(0);
  // Five kinds of round, each bounded in passes: some 30 to 60 s alone, more beside the suite's other workers.
}, 240_000);
