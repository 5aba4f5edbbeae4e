import { DescribeNodegroupCommand } from '@aws-sdk/client-eks';
import { foreignMessage, newComputeId, nodegroupTags, ownerOf } from '../../../lambdas/domain/nodegroup';
import { executionNameOf } from '../../../lambdas/service/workflows';
import { resetClients } from '../../../lambdas/shared/clients';
import { resetConfig } from '../../../lambdas/shared/config';
import { startLocalStepFunctions, workflowEnv } from '../../../local/sfn';
import { startWorkflow } from '../../helpers/services';
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
  SCALE,
  type StoredCompute,
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

/** The tags this compute's own node group carries. */
const ours = (c: StoredCompute) => nodegroupTags(ownerOf('test', c));

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
      executionName: executionNameOf(r.compute, 'provision', 1),
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
      tags: { 'llmcap:stage': 'test', 'llmcap:compute': 'gpu-a', 'llmcap:compute-id': r.compute.uid },
    });
  });

  it('adopts a group that already holds the name when its tags say it is this compute', async () => {
    const c = await putCompute(h, 'cpu-mine', cpuSpec());
    // Left by an earlier create of this very compute whose outcome was never recorded.
    h.sim.admin.createNodegroup({ name: 'llmcap-test-cpu-mine', tags: ours(c), desiredSize: 1 });
    const r = await run(h, 'cpu-mine', 'provision', { desiredNodes: 3 });

    expect(r.execution.status).toBe('SUCCEEDED');
    const failed = r.execution.events.find((e) => e.type === 'StateFailed');
    expect(failed).toMatchObject({ Error: 'Eks.ResourceInUseException' });
    expect(String(failed?.Cause)).toContain('(Service: Eks, Status Code: 409');
    // What EKS has is recorded, not what was asked for: reconcile scales it next.
    expect(r.compute.status).toMatchObject({ nodegroupStatus: 'ACTIVE', desiredNodes: 1 });
  });

  it.each([
    ['no tags at all', {}],
    ['another stage', { 'llmcap:stage': 'prod', 'llmcap:compute': 'cpu-other' }],
    ['an earlier incarnation of the same compute', 'earlier' as const],
    [
      'an older llmcap, for a compute that has an id',
      { 'llmcap:stage': 'test', 'llmcap:compute': 'cpu-other' },
    ],
  ])('refuses a group that holds the name with %s: FOREIGN, and the group untouched', async (_what, t) => {
    const c = await putCompute(h, 'cpu-other', cpuSpec());
    const tags = t === 'earlier' ? { ...ours(c), 'llmcap:compute-id': newComputeId() } : t;
    h.sim.admin.createNodegroup({ name: 'llmcap-test-cpu-other', tags, desiredSize: 1 });
    const r = await run(h, 'cpu-other', 'provision', { desiredNodes: 3 });

    expect(r.execution.status).toBe('FAILED');
    expect(r.execution.error).toBe('Nodegroup.NotOurs');
    expect(r.compute.status).toMatchObject({
      nodegroupStatus: 'FOREIGN',
      desiredNodes: 0,
      // The same words reconcile's observation writes.
      statusMessage: foreignMessage('llmcap-test-cpu-other', tags, ownerOf('test', c)),
    });
    expect(r.compute.workflow?.state).toBe('FAILED');
    expect(simGroup(h, 'llmcap-test-cpu-other')).toMatchObject({
      status: 'ACTIVE',
      tags,
      scalingConfig: { desiredSize: 1 },
    });
    h.sim.admin.deleteNodegroup('llmcap-test-cpu-other');
  });

  it("adopts an older llmcap's group (no id tag) for a compute stored before ids existed", async () => {
    const c = await putCompute(h, 'cpu-legacy', cpuSpec(), { legacy: true });
    expect(c.uid).toBeUndefined();
    h.sim.admin.createNodegroup({
      name: 'llmcap-test-cpu-legacy',
      tags: { 'llmcap:stage': 'test', 'llmcap:compute': 'cpu-legacy' },
    });
    const r = await run(h, 'cpu-legacy', 'provision', { desiredNodes: 1 });

    expect(r.execution.status).toBe('SUCCEEDED');
    expect(r.compute.status.nodegroupStatus).toBe('ACTIVE');
    expect(r.execution.name).toBe(executionNameOf(c, 'provision', 1));
  });

  it('records a group of its own still being deleted as DELETING and ends, rather than polling for 45 minutes', async () => {
    const c = await putCompute(h, 'cpu-going', cpuSpec());
    h.sim.admin.createNodegroup({ name: 'llmcap-test-cpu-going', tags: ours(c), status: 'DELETING' });
    const r = await run(h, 'cpu-going', 'provision', { desiredNodes: 1 });

    expect(r.execution.status).toBe('SUCCEEDED');
    expect(statesEntered(r).filter((s) => s === 'DescribeNodegroup')).toHaveLength(1);
    expect(r.compute.status).toMatchObject({
      nodegroupStatus: 'DELETING',
      statusMessage:
        'Node group llmcap-test-cpu-going is still being deleted, so it cannot be created yet; the first reconcile after it is gone creates it again',
    });
  });

  it('records a group of its own that failed to delete as DELETE_FAILED with its health issue, at once', async () => {
    const c = await putCompute(h, 'cpu-stuck', cpuSpec());
    h.sim.admin.createNodegroup({ name: 'llmcap-test-cpu-stuck', tags: ours(c), status: 'DELETE_FAILED' });
    const r = await run(h, 'cpu-stuck', 'provision', { desiredNodes: 1 });

    expect(r.execution.status).toBe('FAILED');
    expect(r.execution.error).toBe('Nodegroup.DeleteFailed');
    expect(statesEntered(r).filter((s) => s === 'DescribeNodegroup')).toHaveLength(1);
    expect(r.compute.status).toMatchObject({
      nodegroupStatus: 'DELETE_FAILED',
      statusMessage:
        'Node group llmcap-test-cpu-stuck is DELETE_FAILED: Ec2SecurityGroupDeletionFailure: DependencyViolation - resource has a dependent object; it must be deleted before llmcap can create it again',
      healthIssues: [{ code: 'Ec2SecurityGroupDeletionFailure', message: expect.any(String) }],
    });
  });

  it('creates a group of its own when its name was used by an earlier incarnation, though EKS remembers that create', async () => {
    // The first incarnation creates the group, which is then deleted; the compute is deleted and created again
    // under the same name and spec, and starts at generation 1 again.
    await putCompute(h, 'cpu-again', cpuSpec());
    expect((await run(h, 'cpu-again', 'provision', { desiredNodes: 1 })).compute.status.nodegroupStatus).toBe(
      'ACTIVE',
    );
    h.sim.admin.deleteNodegroup('llmcap-test-cpu-again');
    await putCompute(h, 'cpu-again', cpuSpec());
    // A second Step Functions (another region's, or one that forgot the name): only the token can collide.
    const second = await startLocalStepFunctions({
      eksEndpoint: h.sim.endpoint,
      dynamodbEndpoint: process.env.LLMCAP_DYNAMODB_ENDPOINT,
      tableName: h.table,
      clusterName: h.sim.clusterName,
      namePrefix: 'llmcap-test',
      timing: { waitScale: SCALE },
    });
    Object.assign(process.env, workflowEnv(second));
    resetConfig();
    resetClients();
    try {
      const compute = await getCompute(h, 'cpu-again');
      const start = await startWorkflow({ compute, kind: 'provision', desiredNodes: 1 });
      expect(start.outcome).toBe('started');
      await second.waitForIdle();
      // EKS answers a repeated token with the first create's node group: a new token is a new create.
      expect((await getCompute(h, 'cpu-again')).status.nodegroupStatus).toBe('ACTIVE');
      expect(simGroup(h, 'llmcap-test-cpu-again')?.tags).toMatchObject({
        'llmcap:compute-id': compute.uid,
      });
    } finally {
      await second.stop();
      Object.assign(process.env, workflowEnv(h.sfn));
      resetConfig();
      resetClients();
    }
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

  it.each([
    ['code and message', ['code', 'message'] as const, 'Unknown', '(EKS gave no message)'],
    ['code', ['code'] as const, 'Unknown', 'EKS said no'],
    ['message', ['message'] as const, 'NodeCreationFailure', '(EKS gave no message)'],
  ])(
    'records CREATE_FAILED when EKS reports the health issue without its %s',
    async (_what, omit, code, message) => {
      const name = `gpu-bare-${omit.join('-')}`;
      await putCompute(h, name, gpuSpec('g5.12xlarge'));
      h.sim.admin.setFaults({
        launchFailures: [
          {
            nodegroup: `llmcap-test-${name}`,
            code: 'NodeCreationFailure',
            message: 'EKS said no',
            afterMs: 60_000,
            omit: [...omit],
          },
        ],
      });
      const r = await run(h, name, 'provision', { desiredNodes: 1 });

      // A path into the missing member would be States.Runtime: the execution would fail without recording.
      expect(r.execution.error).toBe('Nodegroup.CreateFailed');
      expect(r.compute.status).toMatchObject({
        nodegroupStatus: 'CREATE_FAILED',
        statusMessage: `Node group llmcap-test-${name} is CREATE_FAILED: ${code}: ${message}`,
        healthIssues: [{ code, message }],
      });
      expect(r.compute.workflow?.state).toBe('FAILED');
    },
  );

  it('enters three states per poll: Wait, DescribeNodegroup, CheckNodegroup', async () => {
    await putCompute(h, 'cpu-polls', cpuSpec());
    const r = await run(h, 'cpu-polls', 'provision', { desiredNodes: 1 });

    expect(r.execution.status).toBe('SUCCEEDED');
    const entered = statesEntered(r);
    const first = entered.indexOf('WaitForActive');
    const last = entered.lastIndexOf('CheckNodegroup');
    const loop = entered.slice(first, last + 1);
    expect(loop.length).toBeGreaterThanOrEqual(6);
    for (let i = 0; i < loop.length; i += 3)
      expect(loop.slice(i, i + 3)).toEqual(['WaitForActive', 'DescribeNodegroup', 'CheckNodegroup']);
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

  it('stops waiting at the end of its wait and says so, leaving the group CREATING', async () => {
    await putCompute(h, 'cpu-slow', cpuSpec());
    // A 10-second wait (two polls' worth, 5 s apart) against a 2-minute create.
    const r = await run(h, 'cpu-slow', 'provision', { desiredNodes: 1, pollSeconds: 5, maxPolls: 2 });

    expect(r.execution.status).toBe('FAILED');
    expect(r.execution.error).toBe('Nodegroup.PollTimeout');
    expect(statesEntered(r)).toContain('DescribeNodegroup');
    expect(r.compute.status.nodegroupStatus).toBe('CREATING');
    expect(r.compute.status.statusMessage).toBe(
      'Node group llmcap-test-cpu-slow was still CREATING after 10 s of polls 5 s apart; the workflow stopped waiting for it to become ACTIVE (reconcile keeps observing it)',
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
