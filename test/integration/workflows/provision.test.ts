import { CreateNodegroupCommand, DescribeNodegroupCommand } from '@aws-sdk/client-eks';
import {
  bumpGeneration,
  cpuSpec,
  getCompute,
  gpuSpec,
  type Harness,
  harness,
  putCompute,
  retries,
  run,
  SUBNETS,
  simGroup,
  statesEntered,
  statuses,
} from './harness';

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(async () => {
  await h.close();
});
afterEach(() => h.sim.admin.setFaults({}));

describe('provision-nodegroup, run locally against the cloud simulator and DynamoDB Local', () => {
  it('creates the node group as the compute describes it and records CREATING, then ACTIVE', async () => {
    await putCompute(h, 'gpu-a', gpuSpec());
    const r = await run(h, 'gpu-a', 'provision', { desiredNodes: 2 });

    expect(r.execution.status).toBe('SUCCEEDED');
    expect(statuses(r)).toEqual(['ABSENT', 'CREATING', 'ACTIVE']);
    expect(r.seen[1]!.statusMessage).toBe(
      'Creating node group llmcap-test-gpu-a: 2 node(s) of g6.2xlarge, at most 4',
    );
    expect(r.compute.status).toMatchObject({
      nodegroupStatus: 'ACTIVE',
      desiredNodes: 2,
      statusMessage: 'Node group llmcap-test-gpu-a is ACTIVE with 2 desired node(s)',
      healthIssues: [],
    });
    expect(r.compute.workflow).toMatchObject({
      executionName: 'gpu-a-provision-g1',
      kind: 'provision',
      state: 'SUCCEEDED',
      finishedAt: expect.any(String),
    });
    expect(r.compute.generation).toBe(1);
    expect(r.compute.version).toBe(1);

    const ng = await h.eks.send(
      new DescribeNodegroupCommand({ clusterName: h.sim.clusterName, nodegroupName: 'llmcap-test-gpu-a' }),
    );
    expect(ng.nodegroup).toMatchObject({
      status: 'ACTIVE',
      instanceTypes: ['g6.2xlarge'],
      amiType: 'AL2023_x86_64_NVIDIA',
      capacityType: 'ON_DEMAND',
      diskSize: 100,
      subnets: SUBNETS,
      nodeRole: expect.stringMatching(/^arn:aws:iam::000000000000:role\//),
      scalingConfig: { minSize: 0, maxSize: 4, desiredSize: 2 },
      labels: { 'llmcap.dev/compute': 'gpu-a' },
      taints: [{ key: 'nvidia.com/gpu', value: 'true', effect: 'NO_SCHEDULE' }],
      tags: { 'llmcap:stage': 'test', 'llmcap:compute': 'gpu-a' },
    });
  });

  it('watches a node group that already exists instead of failing (ResourceInUseException on create)', async () => {
    await putCompute(h, 'cpu-exists', cpuSpec());
    await h.eks.send(
      new CreateNodegroupCommand({
        clusterName: h.sim.clusterName,
        nodegroupName: 'llmcap-test-cpu-exists',
        nodeRole: 'arn:aws:iam::000000000000:role/other',
        subnets: SUBNETS,
        scalingConfig: { minSize: 0, maxSize: 2, desiredSize: 1 },
      }),
    );
    const r = await run(h, 'cpu-exists', 'provision', { desiredNodes: 3 });

    expect(r.execution.status).toBe('SUCCEEDED');
    const failed = r.execution.events.find((e) => e.type === 'StateFailed');
    expect(failed).toMatchObject({ Error: 'Eks.ResourceInUseException' });
    expect(String(failed?.Cause)).toContain('(Service: Eks, Status Code: 409');
    expect(statesEntered(r)).toContain('WaitForActive');
    // What EKS has is recorded, not what was asked for: reconcile scales it next.
    expect(r.compute.status).toMatchObject({ nodegroupStatus: 'ACTIVE', desiredNodes: 1 });
  });

  it('rides out a throttling storm (half of all EKS requests refused) with retries and backoff', async () => {
    await putCompute(h, 'cpu-storm', cpuSpec());
    h.sim.admin.setFaults({ throttleRate: 0.5 });
    const r = await run(h, 'cpu-storm', 'provision', { desiredNodes: 1 });

    expect(r.execution.status).toBe('SUCCEEDED');
    expect(retries(r, 'CreateNodegroup') + retries(r, 'DescribeNodegroup')).toBeGreaterThanOrEqual(2);
    expect(
      r.execution.events.some((e) => e.type === 'StateFailed' && e.Error === 'Eks.ThrottlingException'),
    ).toBe(true);
    expect(r.compute.status.nodegroupStatus).toBe('ACTIVE');
    expect(simGroup(h, 'llmcap-test-cpu-storm')?.status).toBe('ACTIVE');
  });

  it('records CREATE_FAILED with the health issue in words and as a list, and fails the execution', async () => {
    await putCompute(h, 'gpu-nocap', gpuSpec('g5.12xlarge'));
    h.sim.admin.setFaults({ launchFailures: [{ instanceType: 'g5.12xlarge', afterMs: 60_000 }] });
    const r = await run(h, 'gpu-nocap', 'provision', { desiredNodes: 1 });

    expect(r.execution.status).toBe('FAILED');
    expect(r.execution.error).toBe('Nodegroup.CreateFailed');
    expect(statuses(r)).toEqual(['ABSENT', 'CREATING', 'CREATE_FAILED']);
    const s = r.compute.status;
    expect(s.statusMessage).toMatch(
      /^Node group llmcap-test-gpu-nocap is CREATE_FAILED: AsgInstanceLaunchFailures: .*InsufficientInstanceCapacity.*g5\.12xlarge/,
    );
    expect(s.healthIssues).toEqual([
      { code: 'AsgInstanceLaunchFailures', message: expect.stringContaining('g5.12xlarge') },
    ]);
    expect(r.execution.cause).toBe(s.statusMessage);
    expect(r.compute.workflow?.state).toBe('FAILED');
  });

  it('stops waiting after maxPolls and says so, leaving the group CREATING', async () => {
    await putCompute(h, 'cpu-slow', cpuSpec());
    // Two polls 5 s apart against a 2-minute create.
    const r = await run(h, 'cpu-slow', 'provision', { desiredNodes: 1, pollSeconds: 5, maxPolls: 2 });

    expect(r.execution.status).toBe('FAILED');
    expect(r.execution.error).toBe('Nodegroup.PollTimeout');
    expect(statesEntered(r).filter((s) => s === 'DescribeNodegroup')).toHaveLength(2);
    expect(r.compute.status.nodegroupStatus).toBe('CREATING');
    expect(r.compute.status.statusMessage).toBe(
      'Node group llmcap-test-cpu-slow was still CREATING after 2 polls 5 s apart; the workflow stopped waiting for it to become ACTIVE (reconcile keeps observing it)',
    );
    expect(r.compute.workflow?.state).toBe('FAILED');
  });

  it('records why EKS refused the create and that no node group exists', async () => {
    await putCompute(h, 'cpu-toobig', { ...cpuSpec(), nodeGroup: { maxNodes: 500, subnetIds: SUBNETS } });
    const r = await run(h, 'cpu-toobig', 'provision', { desiredNodes: 1 });

    expect(r.execution.status).toBe('FAILED');
    expect(r.execution.error).toBe('Eks.InvalidParameterException');
    expect(r.compute.status.nodegroupStatus).toBe('ABSENT');
    expect(r.compute.status.statusMessage).toMatch(
      /^EKS refused to create node group llmcap-test-cpu-toobig: Eks.InvalidParameterException: maxSize can't be greater than 450/,
    );
  });

  it('ends quietly as superseded, writing nothing, when newer work took the compute', async () => {
    await putCompute(h, 'cpu-stale', cpuSpec());
    const r = await run(h, 'cpu-stale', 'provision', {
      desiredNodes: 1,
      // Newer work claims the compute while this execution polls.
      during: async () => {
        while ((await getCompute(h, 'cpu-stale')).status.nodegroupStatus !== 'CREATING') {
          await new Promise((res) => setTimeout(res, 5));
        }
        await bumpGeneration(h, 'cpu-stale');
      },
    });

    expect(r.execution.status).toBe('SUCCEEDED');
    expect(JSON.parse(r.execution.output!)).toEqual({
      outcome: 'SUPERSEDED',
      message: 'Generation 1 of compute cpu-stale was superseded by newer work; nothing recorded',
    });
    const c = await getCompute(h, 'cpu-stale');
    expect(c.status.nodegroupStatus).toBe('CREATING');
    expect(c.workflow?.state).toBe('RUNNING');
  });
});
