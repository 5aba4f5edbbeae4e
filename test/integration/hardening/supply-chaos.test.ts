import type { ControlPlane } from '../../../local/control-plane';
import { runSupplyChaos } from '../../../soak/lib/supply';
import { httpApi, testControlPlane } from '../../helpers/control-plane';

/**
 * The short supply chaos run (issue 32, Figures; the long one is `npm run soak`, SOAK_ONLY=supply): Spot nodes
 * reclaimed with and without Spot capacity to replace them. The critical model, kept On-Demand, never loses its
 * minimum; every warning is counted; every model has its minimum Ready again after each reclaim.
 */

let cp: ControlPlane;
beforeAll(async () => {
  cp = await testControlPlane('supply-chaos');
});
afterAll(async () => {
  await cp.stop();
});

it('keeps critical models at their minimum through Spot reclaims, and recovers the others', async () => {
  const r = await runSupplyChaos(cp, httpApi(cp), { rounds: 2, timeScale: 0.001 });
  expect(r.availability.critical).toBe(1);
  expect(r.recoverySeconds).toHaveLength(2);
  expect(r.interruptionsCounted).toBe(2);
  expect(r.roundsWithoutSpotCapacity).toBe(1);
});
