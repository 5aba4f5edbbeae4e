import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, reconcileUntil, testControlPlane } from '../../helpers/control-plane';

/**
 * Sizing that tells the truth (issue 18 §5) on the local control plane: NEEDED while a compute is deleted, a
 * scale-down hold that never creates nodes, and a create that keeps failing without the alarm flapping.
 */

const model = (name: string, compute: string, replicas: number, gpuType = 'L4') => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name, owner: 'team:ml' },
  spec: {
    source: `hf://org/${name}`,
    engine: 'vllm',
    profiles: [{ name: 'p', gpus: 1, gpuType, cpuCores: 4, minMemoryGb: 16, compute }],
    scaling: { min: replicas, max: replicas },
  },
});

async function withTeam(cp: ControlPlane) {
  const call = httpApi(cp);
  expect((await call('POST', '/v1/scopes', { name: 'org:acme' })).status).toBe(201);
  expect((await call('POST', '/v1/scopes', { name: 'team:ml', parent: 'org:acme' })).status).toBe(201);
  const q = { guarantee: { gpus: 8 }, limit: { gpus: 8 } };
  expect((await call('PUT', '/v1/quotas/org:acme', q)).status).toBe(200);
  return call;
}

describe('with a 10-minute scale-down cool-down', () => {
  let cp: ControlPlane;
  let call: ReturnType<typeof httpApi>;
  beforeAll(async () => {
    cp = await testControlPlane('sizing', { cooldownSeconds: 600 });
    call = await withTeam(cp);
  });
  afterAll(() => cp.stop());

  const compute = async (name: string) => (await call('GET', `/v1/computes/${name}`)).body;

  /** A clone of gpu-l4-1x with a model of two replicas on it, its node group ACTIVE with two ready nodes. */
  async function twoNodes(name: string) {
    expect((await call('POST', '/v1/computes/gpu-l4-1x/clone', { name })).status).toBe(201);
    expect((await call('POST', '/v1/models', model(`m-${name}`, name, 2))).status).toBe(201);
    await reconcileUntil(cp, async () => {
      const c = await compute(name);
      return c.status.nodegroupStatus === 'ACTIVE' && c.status.readyNodes === 2;
    });
  }

  it('reads NEEDED 0 while a compute is deleted, though its last model left within the cool-down', async () => {
    await twoNodes('l4-del');
    expect((await call('DELETE', '/v1/models/m-l4-del')).status).toBe(204);
    // Within the cool-down the nodes are kept: the group is there and the need may come back.
    const held = (await cp.reconcile()).computes.find((c) => c.compute === 'l4-del')!;
    expect(held).toMatchObject({ neededNodes: 2, action: 'none' });
    expect((await call('DELETE', '/v1/computes/l4-del')).status).toBe(202);
    const pass = (await cp.reconcile()).computes.find((c) => c.compute === 'l4-del')!;
    expect(pass).toMatchObject({ action: 'delete', neededNodes: 0, costPerHour: 0 });
    const c = await compute('l4-del');
    expect(c.status).toMatchObject({ neededNodes: 0, lowerBoundNodes: 0 });
    await cp.sfn.waitForIdle(10_000);
    await reconcileUntil(cp, async () => (await call('GET', '/v1/computes/l4-del')).status === 404);
  });

  it('never creates a lost node group again for a hold: the models scaled to 0 mean no nodes', async () => {
    await twoNodes('l4-lost');
    await cp.sim.admin.deleteNodegroup('llmcap-local-l4-lost');
    expect((await call('DELETE', '/v1/models/m-l4-lost')).status).toBe(204);
    for (let i = 0; i < 3; i++) {
      const pass = await cp.reconcile();
      await cp.sfn.waitForIdle(10_000);
      expect(pass.workflows.filter((w) => w.compute === 'l4-lost')).toEqual([]);
      expect(pass.computes.find((c) => c.compute === 'l4-lost')).toMatchObject({
        status: 'ABSENT',
        neededNodes: 0,
        action: 'none',
      });
    }
    expect(cp.sim.admin.state().nodegroups.find((g) => g.name === 'llmcap-local-l4-lost')).toBeUndefined();
    expect((await compute('l4-lost')).status).toMatchObject({ nodegroupStatus: 'ABSENT', neededNodes: 0 });
  });
});

describe('a node group create that keeps failing', () => {
  let cp: ControlPlane;
  let call: ReturnType<typeof httpApi>;
  beforeAll(async () => {
    // Passes here take longer than in AWS relative to the wait (the admitter runs in each): 2 s keeps a wait visible.
    cp = await testControlPlane('retry', { createRetrySeconds: 2 });
    call = await withTeam(cp);
  });
  afterAll(() => cp.stop());

  it('pages once, backs off between creates and keeps the failure in the status until the models go to 0', async () => {
    // EKS fails a create whose instances cannot launch after it has run for a while (about 35 minutes in AWS;
    // 17 simulated minutes here, 1 s at time scale 0.001): the create is seen CREATING for a few passes first.
    // A vCPU limit, which only a person can lift: for lack of EC2 capacity llmcap places the replicas elsewhere
    // instead of retrying (supply.test.ts, issue 32 §3).
    await cp.sim.admin.patchFaults({
      launchFailures: [
        {
          instanceType: 'g5.2xlarge',
          code: 'AsgInstanceLaunchFailures',
          afterMs: 1_000_000,
          message:
            'Could not launch On-Demand Instances. VcpuLimitExceeded - You have requested more vCPU capacity than your current vCPU limit of 0 allows for the instance bucket that the specified instance type belongs to. Launching EC2 instance failed.',
        },
      ],
    } as any);
    expect((await call('POST', '/v1/models', model('a10', 'gpu-a10g-1x', 1, 'A10G'))).status).toBe(201);
    const alarm = 'llmcap-local-NodegroupFailed-gpu-a10g-1x';
    const mine = () => cp.transitions.filter((t) => t.alarmName === alarm);
    let failedCycles = 0;
    let last = '';
    const waits: string[] = [];
    const absentMessages: string[] = [];
    for (let i = 0; i < 200 && failedCycles < 3; i++) {
      const c = (await cp.reconcile()).computes.find((x) => x.compute === 'gpu-a10g-1x')!;
      if (c.status === 'CREATE_FAILED' && last !== 'CREATE_FAILED') failedCycles++;
      // While EKS is still creating, CloudWatch's clock moves as EKS's would: the create runs for minutes.
      if (c.status === 'CREATING') await cp.advance(10 * 60_000);
      if (c.status === 'ABSENT' && failedCycles > 0) {
        absentMessages.push(`${c.failed ? 'failed' : 'not failed'}: ${c.statusMessage ?? ''}`);
        if (c.action === 'none') waits.push(c.actionNote ?? '');
      }
      last = c.status;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(failedCycles).toBe(3);
    // One page for the whole fault, and no OK in between while the failed group was deleted and re-created.
    expect(mine().filter((t) => t.to === 'ALARM')).toHaveLength(1);
    expect(mine().filter((t) => t.from === 'ALARM')).toEqual([]);
    // Between cycles the status keeps what failed, and the next create waited for its time.
    expect(absentMessages.length).toBeGreaterThan(0);
    for (const m of absentMessages)
      expect(m).toMatch(
        /^failed: CREATE_FAILED: (Node group \S+ is CREATE_FAILED: )?AsgInstanceLaunchFailures: .*next create attempt at /,
      );
    expect(waits.length).toBeGreaterThan(0);
    const c = (await call('GET', '/v1/computes/gpu-a10g-1x')).body;
    expect(c.status.createFailures).toBeGreaterThanOrEqual(2);
    expect(Date.parse(c.status.nextCreateAttemptAt)).not.toBeNaN();

    // The runbook's way out: scale the models to 0. The failure ends and the alarm may clear.
    expect((await call('PUT', '/v1/models/a10/scaling', { min: 0, max: 1, target: 0 })).status).toBe(200);
    await reconcileUntil(
      cp,
      async () => (await call('GET', '/v1/computes/gpu-a10g-1x')).body.status.nodegroupStatus === 'ABSENT',
    );
    const after = (await cp.reconcile()).computes.find((x) => x.compute === 'gpu-a10g-1x')!;
    expect(after).toMatchObject({ status: 'ABSENT', failed: false, neededNodes: 0, action: 'none' });
    expect((await call('GET', '/v1/computes/gpu-a10g-1x')).body.status.createFailures).toBeUndefined();
  }, 240_000);
});
