import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, reconcileUntil, testControlPlane } from '../../helpers/control-plane';

/**
 * A launch EC2 refuses (issue 32 §3, §4) on the local control plane: Auto Scaling records it within seconds and
 * sends "EC2 Instance Launch Unsuccessful", which the stack's rule delivers to the reconciler, as the simulator
 * does here. The pass it starts reads the failure: after a Spot reclaim whose replacement EC2 cannot launch, the
 * replica goes On-Demand at once, not at the next scheduled pass (up to a minute later in AWS). No scheduled pass
 * runs between the warning and the assertion.
 */

let cp: ControlPlane;
let call: ReturnType<typeof httpApi>;

beforeAll(async () => {
  cp = await testControlPlane('launch-failures', {
    // The warned node stays until the test is done (EC2's two minutes would be 120 ms at the tests' time scale).
    simDurations: { spotReclaimMs: 10_000_000 },
    // A replacement asked within 5 s of the warning (which EC2 dates to the second) replaces a reclaimed node, so
    // its failure has no grace; any other failure's grace outlasts the test: only the reclaim rule moves chat.
    supplyGraceSeconds: 5,
    capacityGraceSeconds: 600,
  });
  call = httpApi(cp);
});
afterAll(async () => {
  await cp.stop();
});

async function pool(name: string, capacityType: 'SPOT' | 'ON_DEMAND', perHour: number) {
  const base = (await call('GET', '/v1/computes/gpu-l4-1x')).body.spec;
  const r = await call('POST', '/v1/computes', {
    apiVersion: 'llmcap/v1',
    kind: 'Compute',
    metadata: { name },
    spec: { node: { ...base.node, capacityType }, nodeGroup: { maxNodes: 2 }, cost: { perHour } },
  });
  expect(r).toMatchObject({ status: 201 });
}

const status = async (name: string) => (await call('GET', `/v1/models/${name}`)).body.status;
const computeStatus = async (name: string) => (await call('GET', `/v1/computes/${name}`)).body.status;

it('reads a failed launch in the pass its event starts: the reclaimed replica goes On-Demand without a scheduled pass', async () => {
  await pool('lf-spot', 'SPOT', 0.3);
  await pool('lf-od', 'ON_DEMAND', 0.5);
  const created = await call('POST', '/v1/models', {
    apiVersion: 'llmcap/v1',
    kind: 'Model',
    metadata: { name: 'chat' },
    spec: {
      source: 'hf://org/chat-8b',
      engine: 'vllm',
      profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16 }],
      scaling: { min: 1, max: 1 },
    },
  });
  expect(created.status).toBe(201);
  await reconcileUntil(cp, async () => (await status('chat')).running === 1);
  expect((await status('chat')).placements).toEqual([{ compute: 'lf-spot', profile: 'l4', replicas: 1 }]);

  // EC2 has no Spot capacity left, and warns the node chat runs on. The group has room for a replacement, so the
  // warning's pass asks for one and keeps chat there; the launch fails.
  const group = cp.sim.admin.state().nodegroups.find((g) => g.name.includes('lf-spot'))!;
  cp.sim.admin.patchFaults({
    launchFailures: [
      { nodegroup: group.name, message: 'There is no Spot capacity available that matches your request.' },
    ],
  });
  const events: string[] = [];
  const off = cp.sim.onEvent((e) => events.push(e['detail-type']));
  cp.sim.admin.interruptSpot(group.autoScalingGroup.instances[0]!.id);

  const end = Date.now() + 20_000;
  for (;;) {
    // The simulator runs what is due when asked (docs/cloud-sim.md): as time passing in AWS.
    cp.sim.admin.state();
    const short = (await computeStatus('lf-spot')).shortOfCapacity;
    const placed = (await status('chat')).placements?.[0]?.compute;
    if (short && placed === 'lf-od') {
      expect(short.message).toBe('There is no Spot capacity available that matches your request.');
      break;
    }
    if (Date.now() > end)
      throw new Error(`no pass read the failed launch: ${JSON.stringify({ short, placed, events })}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  off();
  expect(events).toContain('EC2 Instance Launch Unsuccessful');
  // Then it runs there.
  await reconcileUntil(cp, async () => (await status('chat')).running === 1);
  expect((await status('chat')).placements).toEqual([{ compute: 'lf-od', profile: 'l4', replicas: 1 }]);
});
