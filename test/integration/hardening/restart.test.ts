import { runRestarts } from '../../../soak/lib/restart';

/** The short restart run (npm test): one kill mid-workflow with --persist. See soak/lib/restart.ts. */

it('loses no model, quota, scope or admission across a kill mid-workflow, and redoes the work once', async () => {
  const r = await runRestarts({ restarts: 1, computes: 2, convergePasses: 20 });
  console.log(JSON.stringify(r, null, 1));
  expect(r.modelsLost).toEqual([]);
  expect(r.quotasLost).toEqual([]);
  expect(r.scopesLost).toEqual([]);
  expect(r.admissionsChanged).toEqual([]);
  expect(r.duplicateExecutions).toEqual([]);
  expect(r.violations).toEqual([]);
  // Each compute's interrupted create (ours, and the built-ins the declared catalog uses) is restarted exactly
  // once by the new process.
  expect(r.restartedWork).toMatchObject({ 'rs-l4-0': 1, 'rs-l4-1': 1 });
  for (const n of Object.values(r.restartedWork)) expect(n).toBe(1);
}, 120_000);
