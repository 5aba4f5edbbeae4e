import { UpdateNodegroupConfigCommand } from '@aws-sdk/client-eks';
import { executionNameOf } from '../../../lambdas/service/workflows';
import {
  cpuSpec,
  type Harness,
  harness,
  putCompute,
  retries,
  run,
  SCALE,
  simGroup,
  statuses,
} from './harness';

let h: Harness;
beforeAll(async () => {
  // Updates last 150 s here (300 ms of test time); retries get three times the scaled backoff, so that eight
  // of them (about 550 s of full-jitter backoff on average, 1.6 s of test time) outlast a blocking update.
  h = await harness({ durations: { updateMs: 150_000 }, retryScale: 3 * SCALE });
});
afterAll(async () => {
  await h.close();
});
afterEach(() => h.sim.admin.setFaults({}));

async function activeCompute(name: string, desiredNodes: number): Promise<void> {
  await putCompute(h, name, cpuSpec(6));
  const r = await run(h, name, 'provision', { desiredNodes });
  expect(r.compute.status.nodegroupStatus).toBe('ACTIVE');
}

describe('scale-nodegroup, run locally against the cloud simulator and DynamoDB Local', () => {
  it('sets the new size, records UPDATING then ACTIVE, and EKS holds the new size', async () => {
    await activeCompute('cpu-up', 1);
    const r = await run(h, 'cpu-up', 'scale', { desiredNodes: 3 });

    expect(r.execution.status).toBe('SUCCEEDED');
    expect(statuses(r)).toEqual(['ACTIVE', 'UPDATING', 'ACTIVE']);
    expect(r.seen[1]!.statusMessage).toBe('Scaling node group llmcap-test-cpu-up to 3 node(s), at most 6');
    expect(r.compute.status).toMatchObject({
      desiredNodes: 3,
      statusMessage: 'Node group llmcap-test-cpu-up is ACTIVE with 3 desired node(s)',
    });
    expect(r.compute.workflow).toMatchObject({
      executionName: executionNameOf(r.compute, 'scale', 2),
      kind: 'scale',
      state: 'SUCCEEDED',
    });
    expect(simGroup(h, 'llmcap-test-cpu-up')?.scalingConfig).toEqual({
      minSize: 0,
      maxSize: 6,
      desiredSize: 3,
    });
  });

  it('waits out an update already in progress (ResourceInUseException) and then applies its own', async () => {
    await activeCompute('cpu-busy', 1);
    // Someone else's update starts just before the workflow's own call, whatever the machine's speed.
    let blocked = false;
    h.sfn.hooks.beforeTask = async (state) => {
      if (state !== 'UpdateNodegroupConfig' || blocked) return;
      blocked = true;
      await h.eks.send(
        new UpdateNodegroupConfigCommand({
          clusterName: h.sim.clusterName,
          nodegroupName: 'llmcap-test-cpu-busy',
          scalingConfig: { desiredSize: 2 },
        }),
      );
      expect(simGroup(h, 'llmcap-test-cpu-busy')?.status).toBe('UPDATING');
    };
    const r = await run(h, 'cpu-busy', 'scale', { desiredNodes: 4 });
    h.sfn.hooks.beforeTask = undefined;

    expect(r.execution.status).toBe('SUCCEEDED');
    expect(retries(r, 'UpdateNodegroupConfig')).toBeGreaterThanOrEqual(1);
    expect(r.execution.events.find((e) => e.type === 'StateFailed')).toMatchObject({
      Error: 'Eks.ResourceInUseException',
      Cause: expect.stringContaining('Nodegroup cannot be updated as it is currently not in Active State'),
    });
    expect(r.compute.status).toMatchObject({ nodegroupStatus: 'ACTIVE', desiredNodes: 4 });
    expect(simGroup(h, 'llmcap-test-cpu-busy')?.scalingConfig.desiredSize).toBe(4);
  });

  it('polls its whole budget however slowly the machine runs the steps between the polls', async () => {
    await activeCompute('cpu-slow-host', 1);
    // A loaded machine: the steps before the first poll take 1.5 s of real time, far more than the 40 scaled
    // 15 s polls (1.2 s) but nothing beside the 600 s they stand for. The wait budget is counted in polls.
    let stalled = false;
    h.sfn.hooks.beforeTask = async (state) => {
      if (state !== 'UpdateNodegroupConfig' || stalled) return;
      stalled = true;
      await new Promise((r) => setTimeout(r, 1_500));
    };
    const r = await run(h, 'cpu-slow-host', 'scale', { desiredNodes: 2 });
    h.sfn.hooks.beforeTask = undefined;

    expect(r.execution.status).toBe('SUCCEEDED');
    expect(r.compute.status).toMatchObject({
      nodegroupStatus: 'ACTIVE',
      desiredNodes: 2,
      statusMessage: 'Node group llmcap-test-cpu-slow-host is ACTIVE with 2 desired node(s)',
    });
  });

  it('records DEGRADED with the health issue when the new nodes cannot launch', async () => {
    await activeCompute('cpu-degraded', 1);
    h.sim.admin.setFaults({ launchFailures: [{ nodegroup: 'llmcap-test-cpu-degraded', afterMs: 10_000 }] });
    const r = await run(h, 'cpu-degraded', 'scale', { desiredNodes: 3 });

    // The new size was applied; that EKS cannot reach it is a health state for the NodegroupFailed alarm.
    expect(r.execution.status).toBe('SUCCEEDED');
    expect(statuses(r)).toEqual(['ACTIVE', 'UPDATING', 'DEGRADED']);
    expect(r.compute.status.statusMessage).toMatch(
      /^Node group llmcap-test-cpu-degraded is DEGRADED: AsgInstanceLaunchFailures: .*InsufficientInstanceCapacity/,
    );
    expect(r.compute.status.healthIssues).toEqual([
      { code: 'AsgInstanceLaunchFailures', message: expect.stringContaining('m7i.xlarge') },
    ]);
    expect(r.compute.status.desiredNodes).toBe(3);
  });

  it('records DEGRADED when EKS reports the health issue without code or message', async () => {
    await activeCompute('cpu-bare', 1);
    h.sim.admin.setFaults({
      launchFailures: [{ nodegroup: 'llmcap-test-cpu-bare', afterMs: 10_000, omit: ['code', 'message'] }],
    });
    const r = await run(h, 'cpu-bare', 'scale', { desiredNodes: 3 });

    expect(r.execution.status).toBe('SUCCEEDED');
    expect(r.compute.status).toMatchObject({
      nodegroupStatus: 'DEGRADED',
      statusMessage: 'Node group llmcap-test-cpu-bare is DEGRADED: Unknown: (EKS gave no message)',
      healthIssues: [{ code: 'Unknown', message: '(EKS gave no message)' }],
    });
  });

  it('records that there is nothing to scale when the node group does not exist', async () => {
    await putCompute(h, 'cpu-missing', cpuSpec());
    const r = await run(h, 'cpu-missing', 'scale', { desiredNodes: 2 });

    expect(r.execution.status).toBe('FAILED');
    expect(r.execution.error).toBe('Nodegroup.NotFound');
    expect(r.compute.status.nodegroupStatus).toBe('ABSENT');
    expect(r.compute.status.statusMessage).toMatch(
      /^Node group llmcap-test-cpu-missing does not exist, so it cannot be scaled: No node group found for name: llmcap-test-cpu-missing\./,
    );
    expect(r.compute.workflow?.state).toBe('FAILED');
  });
});
