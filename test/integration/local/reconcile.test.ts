import { createReconciler } from '../../../lambdas/service/reconcile';
import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, reconcileUntil, testControlPlane } from '../../helpers/control-plane';
import { l4Model as modelOn, scale } from '../../helpers/l4-pool';
import { decided } from '../../helpers/passes';

/**
 * The whole loop on the local control plane: API → admission → reconcile → Step Functions → cloud simulator →
 * observed status and alarms. The simulator runs a thousand times faster than EKS.
 */

let cp: ControlPlane;
beforeAll(async () => {
  cp = await testControlPlane('e2e');
});
afterAll(() => cp.stop());

const call = (method: string, path: string, body?: unknown) => httpApi(cp)(method, path, body);

const converge = (done: () => Promise<boolean>) => reconcileUntil(cp, done);

/** Reconciles until a pass starts nothing and no workflow runs: a quiet point between scenarios. */
async function settle(): Promise<void> {
  for (let i = 0; i < 40; i++) {
    await cp.sfn.waitForIdle(10_000);
    const s = await cp.reconcile();
    await cp.sfn.waitForIdle(10_000);
    if (s.workflows.length === 0) return;
  }
  throw new Error('did not settle');
}

const compute = async (name: string) => (await call('GET', `/v1/computes/${name}`)).body;

const l4Model = (name: string, owner: string, replicas: number) =>
  modelOn('l4-e2e', name, owner, scale(replicas));

describe('reconcile end to end', () => {
  beforeAll(async () => {
    // Its own compute, so the declared catalog's models (placed on the built-ins) do not count here.
    expect((await call('POST', '/v1/computes/gpu-l4-1x/clone', { name: 'l4-e2e' })).status).toBe(201);
    for (const [name, parent] of [['org:acme'], ['team:ml', 'org:acme']] as const) {
      expect((await call('POST', '/v1/scopes', { name, ...(parent ? { parent } : {}) })).status).toBe(201);
    }
    expect(
      (await call('PUT', '/v1/quotas/team:ml', { guarantee: { gpus: 2 }, limit: { gpus: 3 } })).status,
    ).toBe(200);
  });

  it('creates the node group for a model needing two L4 nodes; it becomes ACTIVE with two ready nodes', async () => {
    const r = await call('POST', '/v1/models', l4Model('chat', 'team:ml', 2));
    expect(r.status).toBe(201);
    const admitted = await decided(() => call('GET', '/v1/models/chat'));
    expect(admitted.body.status.placements).toEqual([{ compute: 'l4-e2e', profile: 'l4', replicas: 2 }]);
    await converge(async () => {
      const c = await compute('l4-e2e');
      return c.status.nodegroupStatus === 'ACTIVE' && c.status.readyNodes === 2;
    });
    const c = await compute('l4-e2e');
    expect(c.status).toMatchObject({ desiredNodes: 2, readyNodes: 2, neededNodes: 2, lowerBoundNodes: 2 });
    const group = cp.sim.admin.state().nodegroups.find((g) => g.name === 'llmcap-local-l4-e2e');
    expect(group?.scalingConfig).toMatchObject({ desiredSize: 2, maxSize: 4 });
    expect((await call('GET', '/v1/models/chat')).body.status).toMatchObject({ admitted: 2, pending: 0 });
  });

  it('fires CapacityAtLimit for a scope at its limit in 3 of 5 passes, and clears it when usage drops', async () => {
    expect((await call('POST', '/v1/models', l4Model('extra', 'team:ml', 1))).status).toBe(201);
    const teamMl = () =>
      cp.transitions.filter((t) => t.kind === 'CapacityAtLimit' && t.subject === 'team:ml');
    await cp.reconcile();
    await cp.reconcile();
    expect(teamMl().filter((t) => t.alarm)).toEqual([]);
    await cp.reconcile();
    const alarm = teamMl().find((t) => t.alarm);
    expect(alarm?.alarmName).toBe('llmcap-local-CapacityAtLimit-team:ml');
    expect(alarm?.description).toMatch(/Last seen: at its limit: gpus 3 of 3$/);
    expect(alarm?.reason).toMatch(/^Threshold Crossed: 3 out of the last 5 datapoints/);
    expect((await call('DELETE', '/v1/models/extra')).status).toBe(204);
    for (let i = 0; i < 3; i++) await cp.reconcile();
    expect(teamMl().at(-1)).toMatchObject({ from: 'ALARM', to: 'OK', alarm: false });
  });

  it('never starts the same work twice when two reconciles run at once', async () => {
    await settle();
    expect((await call('PUT', '/v1/models/chat/scaling', { min: 3, max: 3 })).status).toBe(200);
    const before = new Set(cp.sfn.executions.keys());
    // Two passes really at once, as a scheduled Lambda and POST /v1/reconcile could run (not serialized here),
    // each invoking the control plane's admitter function as the reconcile function does.
    const both = await Promise.all([createReconciler().run(), createReconciler().run()]);
    await cp.sfn.waitForIdle(10_000);
    const started = [...cp.sfn.executions.values()].filter((e) => !before.has(e.executionArn));
    // One scale execution, named <compute>-scale-g<generation>-<incarnation id> (the id may contain "-g").
    expect(started).toHaveLength(1);
    expect(started[0]!.name).toMatch(/^l4-e2e-scale-g\d+-[0-9a-z]+$/);
    const outcomes = both.flatMap((b) =>
      b.workflows.filter((w) => w.compute === 'l4-e2e').map((w) => w.outcome),
    );
    expect(outcomes.filter((o) => o === 'started')).toHaveLength(1);
    await converge(async () => (await compute('l4-e2e')).status.readyNodes === 3);
  });

  it('marks a node group deleted out of band ABSENT, then re-creates it', async () => {
    await settle();
    await cp.sim.admin.deleteNodegroup('llmcap-local-l4-e2e');
    // The pass that notices records ABSENT with the reason, and starts the re-creation at once.
    const pass = (await cp.reconcile()).computes.find((c) => c.compute === 'l4-e2e')!;
    expect(pass).toMatchObject({ status: 'ABSENT', action: 'provision' });
    expect(pass.statusMessage).toMatch(/deleted outside llmcap/);
    await converge(async () => {
      const c = await compute('l4-e2e');
      return c.status.nodegroupStatus === 'ACTIVE' && c.status.readyNodes === 3;
    });
  });

  it('raises NodegroupFailed with a readable message when a create fails', async () => {
    await settle();
    await cp.sim.admin.patchFaults({
      launchFailures: [{ instanceType: 'g5.2xlarge', code: 'AsgInstanceLaunchFailures', afterMs: 0 }],
    } as any);
    const m = l4Model('a10', 'team:ml', 0);
    m.spec.profiles = [
      { name: 'a10g', gpus: 1, gpuType: 'A10G', cpuCores: 4, minMemoryGb: 16, compute: 'gpu-a10g-1x' },
    ];
    m.spec.scaling = { min: 0, max: 1, target: 1 } as any;
    await call('PUT', '/v1/quotas/team:ml', { guarantee: { gpus: 4 }, limit: { gpus: 4 } });
    expect((await call('POST', '/v1/models', m)).status).toBe(201);
    await converge(async () =>
      cp.transitions.some((t) => t.kind === 'NodegroupFailed' && t.subject === 'gpu-a10g-1x' && t.alarm),
    );
    const alarm = cp.transitions.find(
      (t) => t.kind === 'NodegroupFailed' && t.subject === 'gpu-a10g-1x' && t.alarm,
    )!;
    expect(alarm.description).toMatch(
      /Last seen: CREATE_FAILED: AsgInstanceLaunchFailures: .*InsufficientInstanceCapacity/,
    );
    // The failed provision execution also reaches CloudWatch as AWS/States ExecutionsFailed.
    await cp.advance(5 * 60_000);
    expect(
      cp.transitions.some((t) => t.alarmName === 'llmcap-local-WorkflowFailed-provision' && t.alarm),
    ).toBe(true);
  });
});
