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
  // The SDK's retry backoff and rate limiter wait on the simulator's time scale (0.001, testControlPlane's):
  // the same throttles and 5xx are retried the same way, without a minute of wall-clock waits.
  cp = await testControlPlane('chaos', { admins: [P.platform], sdkRetryTimeScale: 0.001 });
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
}, 300_000);
