import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, passesUntil, reconcileUntil, testControlPlane } from '../../helpers/control-plane';
import { llmcap } from '../cli/run';

/**
 * Surge-back (issue 32 §3) on the local control plane: a model prefers L4 (its first profile, on l4-first) to
 * A10G. EC2 runs out of g6.2xlarge, so the replica it scales to lands on A10G; when g6.2xlarge can be launched
 * again, the replica moves back to l4-first surge-first: the model never has fewer Ready replicas than it had,
 * and the A10G node goes.
 */

let cp: ControlPlane;
let call: ReturnType<typeof httpApi>;

const status = async (name: string) => (await call('GET', `/v1/models/${name}`)).body.status;
const compute = async (name: string) => (await call('GET', `/v1/computes/${name}`)).body.status;
const readyOn = async (name: string) =>
  ((await status(name)).pods as { compute: string; ready: boolean }[])
    .filter((p) => p.ready)
    .map((p) => p.compute)
    .sort();

beforeAll(async () => {
  // Probes may fail while EC2 has no g6.2xlarge, each a move given up: a budget that outlasts them.
  cp = await testControlPlane('surge-back', { consolidation: { movesPerModelPerHour: 20 } });
  call = httpApi(cp);
});
afterAll(() => cp.stop());

it('moves a replica back to the compute its model prefers once it can launch, the new one Ready before the old goes', async () => {
  expect((await call('POST', '/v1/computes/gpu-l4-1x/clone', { name: 'l4-first' })).status).toBe(201);
  expect((await call('POST', '/v1/computes/gpu-a10g-1x/clone', { name: 'a10g-next' })).status).toBe(201);
  const profiles = [
    { name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'l4-first' },
    { name: 'a10g', gpus: 1, gpuType: 'A10G', cpuCores: 4, minMemoryGb: 16, compute: 'a10g-next' },
  ];
  const model = {
    apiVersion: 'llmcap/v1',
    kind: 'Model',
    metadata: { name: 'two-kinds' },
    spec: {
      source: 'hf://org/two-kinds-8b',
      engine: 'vllm',
      profiles,
      scaling: { min: 1, max: 2, target: 1 },
    },
  };
  expect((await call('POST', '/v1/models', model)).status).toBe(201);
  await reconcileUntil(cp, async () => (await status('two-kinds')).running === 1);

  // No g6.2xlarge to be had: the second replica falls back to A10G and runs there.
  cp.sim.admin.patchFaults({ unavailableInstanceTypes: ['g6.2xlarge'] });
  expect((await call('PUT', '/v1/models/two-kinds/scaling', { min: 1, max: 2, target: 2 })).status).toBe(200);
  await reconcileUntil(cp, async () => (await readyOn('two-kinds')).join() === 'a10g-next,l4-first');
  expect((await compute('l4-first')).shortOfCapacity).toMatchObject({
    message: expect.stringContaining('g6.2xlarge'),
  });

  // Capacity returns. From here on the model never has fewer than its two Ready replicas.
  cp.sim.admin.patchFaults({ unavailableInstanceTypes: [] });
  await passesUntil(
    cp,
    async () =>
      (await readyOn('two-kinds')).join() === 'l4-first,l4-first' &&
      (await compute('a10g-next')).desiredNodes === 0,
    async () => expect((await status('two-kinds')).running).toBeGreaterThanOrEqual(2),
  );
  const events = (await call('GET', '/v1/models/two-kinds/events')).body.items as { reason: string }[];
  expect(events.map((e) => e.reason)).toEqual(expect.arrayContaining(['MovingBack', 'MovedBack']));
  // The admission holds the replica under the profile the model prefers.
  const placements = (await status('two-kinds')).placements as {
    compute: string;
    profile: string;
    replicas: number;
  }[];
  expect(placements).toEqual([{ compute: 'l4-first', profile: 'l4', replicas: 2 }]);

  // The move back was the probe, and it launched: within two passes l4-first is no longer short of capacity, and
  // says so. Its group already has what it wants by then, so only a read of its scaling activities at the end of
  // a due probe sees the launch that succeeded (without it, the compute stayed short for good).
  await reconcileUntil(cp, async () => (await compute('l4-first')).shortOfCapacity === undefined, 2);
  const listed = await llmcap(['get', 'computes', 'l4-first'], { endpoint: cp.apiUrl });
  expect(listed.stdout).toMatch(/^l4-first\s.*\sok\s/m);
  expect(listed.stdout).not.toContain('short');
});
