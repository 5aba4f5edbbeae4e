import type { ControlPlane } from '../../../local/control-plane';
import { runChaos } from '../../../soak/lib/chaos';
import { P } from '../../../soak/lib/fixture';
import { testControlPlane } from '../../helpers/control-plane';

/**
 * The short chaos run (npm test); npm run soak runs more passes. See soak/lib/chaos.ts. The run ends its faults
 * with ch-l4 DEGRADED (a scale-out that could not launch): per docs/reference/eks-nodegroup.md only a successful
 * scale-out clears DEGRADED, so reconcile has to ask for one again once capacity is back.
 */

let cp: ControlPlane;
beforeAll(async () => {
  cp = await testControlPlane('chaos', { admins: [P.platform] });
});
afterAll(() => cp.stop());

it('recovers from throttling, 5xx, CREATE_FAILED, DEGRADED and out-of-band deletes once they stop', async () => {
  const r = await runChaos(cp, {
    faultPasses: 6,
    convergePasses: 10,
    seed: 11,
    log: (l) => process.stdout.write(`${l}\n`),
  });
  console.log(JSON.stringify({ ...r, violations: r.violations }, null, 1));
  expect(r.apiOpsFailed).toEqual([]);
  // The faults stopped with ch-l4 DEGRADED (a scale-out whose instances could not launch).
  expect(r.endedDegraded).toBe(true);
  expect(r.violations).toEqual([]);
  expect(r.convergePasses).toBeLessThan(10);
  // The faults were real: a create failed, and its alarm fired...
  expect(r.alarmsFired).toContain('llmcap-local-NodegroupFailed-ch-a10');
  // ... and every alarm that fired has cleared.
  expect(r.alarmsStillOn).toEqual([]);
  // About a minute of real SDK backoff (throttles and 5xx) on a quiet machine; a loaded one must not fail it.
}, 300_000);
