import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, reconcileUntil, testControlPlane } from '../../helpers/control-plane';

/**
 * Spot (issue 32 §4) on the local control plane: the simulator sends EC2's "EC2 Spot Instance Interruption
 * Warning" to the reconciler as the stack's EventBridge rule does and reclaims the instance two minutes (scaled)
 * later. The warning is counted on the compute, and a replica on a Spot group that cannot replace its node is
 * placed elsewhere at once, by the pass the warning starts, before the instance goes.
 */

let cp: ControlPlane;
let call: ReturnType<typeof httpApi>;

beforeAll(async () => {
  // EC2's two minutes are 120 ms at the tests' time scale, less than a pass takes; 10 s here (10,000 s scaled),
  // so the warning's own pass sees the node still there, as it would in AWS.
  cp = await testControlPlane('spot', { simDurations: { spotReclaimMs: 10_000_000 } });
  call = httpApi(cp);
});
afterAll(async () => {
  await cp.stop();
});

/** gpu-l4-1x (g6.2xlarge) as a group of the given capacity type, price and size. */
async function pool(name: string, capacityType: 'SPOT' | 'ON_DEMAND', perHour: number, maxNodes: number) {
  const base = (await call('GET', '/v1/computes/gpu-l4-1x')).body.spec;
  const r = await call('POST', '/v1/computes', {
    apiVersion: 'llmcap/v1',
    kind: 'Compute',
    metadata: { name },
    spec: {
      node: { ...base.node, capacityType },
      nodeGroup: { maxNodes },
      cost: { perHour },
    },
  });
  expect(r).toMatchObject({ status: 201 });
}

const model = (name: string, cls: string) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name },
  spec: {
    source: `hf://org/${name}-8b`,
    engine: 'vllm',
    class: cls,
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16 }],
    scaling: { min: 1, max: 1 },
  },
});

const status = async (name: string) => (await call('GET', `/v1/models/${name}`)).body.status;
const computeStatus = async (name: string) => (await call('GET', `/v1/computes/${name}`)).body.status;

async function until<T>(
  what: string,
  read: () => Promise<T>,
  ok: (v: T) => boolean,
  ms = 20_000,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('Spot interruptions', () => {
  it('counts the warning on the compute and re-places the replica elsewhere at once when the Spot group cannot replace its node', async () => {
    // Spot is cheaper, so the standard model goes there; the critical one keeps its minimum On-Demand.
    await pool('l4-spot', 'SPOT', 0.3, 1);
    await pool('l4-od', 'ON_DEMAND', 0.5, 2);
    expect((await call('POST', '/v1/models', model('chat', 'standard'))).status).toBe(201);
    expect((await call('POST', '/v1/models', model('crit', 'critical'))).status).toBe(201);
    await reconcileUntil(
      cp,
      async () => (await status('chat')).running === 1 && (await status('crit')).running === 1,
    );
    expect((await status('chat')).placements).toEqual([{ compute: 'l4-spot', profile: 'l4', replicas: 1 }]);
    expect((await status('crit')).placements).toEqual([{ compute: 'l4-od', profile: 'l4', replicas: 1 }]);

    // EC2 reclaims the Spot node; the group is at its maxNodes, so it has no room for a replacement beside it.
    const group = cp.sim.admin.state().nodegroups.find((g) => g.name.includes('l4-spot'))!;
    const instance = group.autoScalingGroup.instances[0]!.id;
    // Over the simulator's admin API, as an operator's chaos tool would.
    const warned = await fetch(`${cp.sim.endpoint}/_sim/spot-interruptions`, {
      method: 'POST',
      body: JSON.stringify({ instanceId: instance }),
    });
    const event = (await warned.json()) as { time: string };
    expect(event).toMatchObject({
      version: '0',
      source: 'aws.ec2',
      'detail-type': 'EC2 Spot Instance Interruption Warning',
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      resources: [expect.stringMatching(new RegExp(`^arn:aws:ec2:us-east-1:\\d{12}:instance/${instance}$`))],
      detail: { 'instance-id': instance, 'instance-action': 'terminate' },
    });

    // The pass the warning started (no scheduled pass here) counts it on the compute.
    const c = await until(
      'the warning counted',
      () => computeStatus('l4-spot'),
      (s) => s.interruptions !== undefined,
    );
    expect(c.interruptions).toEqual({
      count: 1,
      last: { instance, node: expect.any(String), at: event.time },
    });

    // The group is at its maxNodes and the node is as good as gone: the warning's own pass placed the replica
    // On-Demand, before EC2 took the instance; then it runs there, and the critical replica never moved.
    await until(
      "chat re-placed by the warning's pass",
      () => status('chat'),
      (s) => s.placements?.[0]?.compute === 'l4-od',
      5_000,
    );
    await reconcileUntil(cp, async () => (await status('chat')).running === 1);
    // EC2 takes the instance when its time comes.
    await until(
      'the instance reclaimed',
      async () =>
        cp.sim.admin.state().nodegroups.find((g) => g.name === group.name)!.autoScalingGroup.instances,
      (is) => !is.some((i) => i.id === instance),
      30_000,
    );
    expect(await status('crit')).toMatchObject({
      running: 1,
      placements: [{ compute: 'l4-od', profile: 'l4', replicas: 1 }],
    });
    expect((await computeStatus('l4-spot')).interruptions.count).toBe(1);
  });
});
