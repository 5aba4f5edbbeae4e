import {
  DescribeExecutionCommand,
  ListExecutionsCommand,
  SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import { settleWorkflow, startWorkflow } from '../../../lambdas/reconcile/workflows';
import { cpuSpec, getCompute, type Harness, harness, putCompute } from './harness';

/** lambdas/reconcile/workflows.ts through the real @aws-sdk/client-sfn against the local Step Functions API. */

let h: Harness;
let sfn: SFNClient;
beforeAll(async () => {
  h = await harness();
  sfn = new SFNClient({ endpoint: h.sfn.endpoint });
});
afterAll(async () => {
  sfn.destroy();
  await h.close();
});

const executionsNamed = (name: string) => [...h.sfn.executions.values()].filter((e) => e.name === name);

describe('starting a workflow for a compute', () => {
  it('claims the compute, starts one execution, and a repeat of the same start is a no-op', async () => {
    await putCompute(h, 'cpu-once', cpuSpec());
    const compute = await getCompute(h, 'cpu-once');
    // An hour between polls keeps the execution running through the next two tests (7 s of test time).
    const req = { compute, kind: 'provision' as const, desiredNodes: 1, pollSeconds: 3600 };
    const first = await startWorkflow(req);
    const again = await startWorkflow(req);

    expect(first).toMatchObject({
      outcome: 'started',
      executionName: 'cpu-once-provision-g1',
      generation: 1,
    });
    expect(again).toEqual({ ...first, outcome: 'already-started' });
    expect(executionsNamed('cpu-once-provision-g1')).toHaveLength(1);
    const c = await getCompute(h, 'cpu-once');
    expect(c.generation).toBe(1);
    expect(c.workflow).toMatchObject({
      executionName: 'cpu-once-provision-g1',
      kind: 'provision',
      state: 'RUNNING',
    });
    expect(c.version).toBe(1);

    const d = await sfn.send(
      new DescribeExecutionCommand({ executionArn: first.outcome === 'started' ? first.executionArn : '' }),
    );
    expect(d.status).toBe('RUNNING');
    expect(JSON.parse(d.input!)).toMatchObject({
      key: { pk: { S: 'COMPUTE' }, sk: { S: 'cpu-once' } },
      computeName: 'cpu-once',
      nodegroupName: 'llmcap-test-cpu-once',
      generation: 1,
      nodegroup: {
        instanceTypes: ['m7i.xlarge'],
        labels: { 'llmcap.dev/compute': 'cpu-once' },
        taints: [{ Key: 'llmcap.dev/compute', Value: 'cpu-once', Effect: 'NO_SCHEDULE' }],
        scalingConfig: { MinSize: 0, MaxSize: 4, DesiredSize: 1 },
      },
      pollSeconds: 3600,
      maxPolls: 90,
    });
  });

  it('refuses other work on a compute whose workflow is still running, whatever generation the caller read', async () => {
    const before = await getCompute(h, 'cpu-once');
    for (const compute of [before, { ...before, generation: 0 }]) {
      const r = await startWorkflow({ compute, kind: 'scale', desiredNodes: 3 });
      expect(r).toMatchObject({
        outcome: 'refused',
        reason: 'WorkflowRunning',
        message: 'compute cpu-once is busy: workflow cpu-once-provision-g1 (provision) is still running',
      });
    }
    expect(await getCompute(h, 'cpu-once')).toEqual(before);
  });

  it('marks a workflow FAILED when its execution ended without recording, so the compute is free again', async () => {
    const c = await getCompute(h, 'cpu-once');
    await sfn.send(
      new StopExecutionCommand({ executionArn: h.sfn.execution('cpu-once-provision-g1')!.executionArn }),
    );
    expect(await settleWorkflow(c)).toBe('ABORTED');
    const after = await getCompute(h, 'cpu-once');
    expect(after.workflow?.state).toBe('FAILED');
    expect(after.status.statusMessage).toBe(
      'workflow cpu-once-provision-g1 ended ABORTED without recording an outcome',
    );
    const next = await startWorkflow({ compute: after, kind: 'provision', desiredNodes: 1 });
    expect(next).toMatchObject({ outcome: 'started', executionName: 'cpu-once-provision-g2' });
    await h.sfn.waitForIdle();
    expect((await getCompute(h, 'cpu-once')).status.nodegroupStatus).toBe('ACTIVE');
  });

  it('refuses a caller whose view of the compute is stale, and a compute that does not exist', async () => {
    await putCompute(h, 'cpu-stale', cpuSpec(), { generation: 5 });
    const stale = await startWorkflow({
      compute: { ...(await getCompute(h, 'cpu-stale')), generation: 4 },
      kind: 'provision',
      desiredNodes: 1,
    });
    expect(stale).toMatchObject({ outcome: 'refused', reason: 'StaleGeneration' });
    expect(executionsNamed('cpu-stale-provision-g5')).toHaveLength(0);

    const missing = await startWorkflow({
      compute: { name: 'cpu-nope', spec: cpuSpec(), generation: 0 },
      kind: 'provision',
      desiredNodes: 1,
    });
    expect(missing).toMatchObject({ outcome: 'refused', reason: 'NotFound' });
  });

  it('refuses to provision a compute with no subnets, without claiming it', async () => {
    await putCompute(h, 'cpu-nonet', { ...cpuSpec(), nodeGroup: { maxNodes: 4 } });
    const r = await startWorkflow({
      compute: await getCompute(h, 'cpu-nonet'),
      kind: 'provision',
      desiredNodes: 1,
    });
    expect(r).toMatchObject({ outcome: 'refused', reason: 'NoSubnets' });
    expect((await getCompute(h, 'cpu-nonet')).generation).toBe(0);
  });
});

describe('the local Step Functions API, as the SDK sees it', () => {
  it('answers a start of the same name with different input with ExecutionAlreadyExists', async () => {
    const arn = h.sfn.stateMachineArns.delete;
    const input = JSON.stringify({ pollSeconds: 1 });
    await sfn.send(new StartExecutionCommand({ stateMachineArn: arn, name: 'api-dup', input }));
    await expect(
      sfn.send(new StartExecutionCommand({ stateMachineArn: arn, name: 'api-dup', input: '{"other":1}' })),
    ).rejects.toMatchObject({ name: 'ExecutionAlreadyExists' });
    await expect(
      sfn.send(new StartExecutionCommand({ stateMachineArn: `${arn}-nope`, name: 'x', input })),
    ).rejects.toMatchObject({ name: 'StateMachineDoesNotExist' });
    await expect(
      sfn.send(new StartExecutionCommand({ stateMachineArn: arn, name: 'bad name', input })),
    ).rejects.toMatchObject({ name: 'InvalidName' });
    await h.sfn.waitForIdle();
  });

  it('lists executions newest first, filtered by status, in pages', async () => {
    const arn = h.sfn.stateMachineArns.provision;
    const all = await sfn.send(new ListExecutionsCommand({ stateMachineArn: arn }));
    expect(all.executions?.map((e) => e.name)).toEqual(['cpu-once-provision-g2', 'cpu-once-provision-g1']);
    expect(all.executions?.[0]?.startDate).toBeInstanceOf(Date);
    const aborted = await sfn.send(
      new ListExecutionsCommand({ stateMachineArn: arn, statusFilter: 'ABORTED' }),
    );
    expect(aborted.executions?.map((e) => e.name)).toEqual(['cpu-once-provision-g1']);
    const page = await sfn.send(new ListExecutionsCommand({ stateMachineArn: arn, maxResults: 1 }));
    expect(page.executions).toHaveLength(1);
    const rest = await sfn.send(
      new ListExecutionsCommand({ stateMachineArn: arn, maxResults: 1, nextToken: page.nextToken }),
    );
    expect(rest.executions?.map((e) => e.name)).toEqual(['cpu-once-provision-g1']);
    expect(rest.nextToken).toBeUndefined();
  });
});
