import {
  DescribeExecutionCommand,
  ListExecutionsCommand,
  SFNClient,
  StartExecutionCommand,
  StopExecutionCommand,
} from '@aws-sdk/client-sfn';
import { executionNameOf } from '../../../lambdas/service/workflows';
import { DrivenClock } from '../../../local/cloud-sim';
import { RETENTION_MS, startLocalStepFunctions } from '../../../local/sfn';
import { settleWorkflow, startWorkflow } from '../../helpers/services';
import { cpuSpec, getCompute, type Harness, harness, putCompute } from './harness';

/** lambdas/service/workflows.ts through the real @aws-sdk/client-sfn against the local Step Functions API. */

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

/** The execution names of compute cpu-once (fixed in the first test), by generation. */
let once: (generation: number) => string;

describe('starting a workflow for a compute', () => {
  it('claims the compute, starts one execution, and a repeat of the same start is a no-op', async () => {
    await putCompute(h, 'cpu-once', cpuSpec());
    const compute = await getCompute(h, 'cpu-once');
    once = (g) => executionNameOf(compute, 'provision', g);
    expect(once(1)).toBe(`cpu-once-provision-g1-${compute.uid}`);
    // An hour between polls keeps the execution running through the next two tests (7 s of test time).
    const req = { compute, kind: 'provision' as const, desiredNodes: 1, pollSeconds: 3600 };
    const first = await startWorkflow(req);
    const again = await startWorkflow(req);

    expect(first).toMatchObject({
      outcome: 'started',
      executionName: once(1),
      generation: 1,
    });
    expect(again).toEqual({ ...first, outcome: 'already-started' });
    expect(executionsNamed(once(1))).toHaveLength(1);
    // Step Functions' own rule for a running execution: the same name and input is the same execution.
    const running = h.sfn.execution(once(1))!;
    const same = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: h.sfn.stateMachineArns.provision,
        name: once(1),
        input: running.input,
      }),
    );
    expect(same.executionArn).toBe(running.executionArn);
    await expect(
      sfn.send(
        new StartExecutionCommand({
          stateMachineArn: h.sfn.stateMachineArns.provision,
          name: once(1),
          input: '{}',
        }),
      ),
    ).rejects.toMatchObject({ name: 'ExecutionAlreadyExists' });
    const c = await getCompute(h, 'cpu-once');
    expect(c.generation).toBe(1);
    expect(c.workflow).toMatchObject({
      executionName: once(1),
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
      owner: { stage: 'test', compute: 'cpu-once', computeId: compute.uid, legacy: false },
      clientRequestToken: `llmcap-${compute.uid}-provision-g1`,
      pollSeconds: 3600,
      waitSeconds: 3600 * 90,
    });
  });

  it('refuses other work on a compute whose workflow is still running, whatever generation the caller read', async () => {
    const before = await getCompute(h, 'cpu-once');
    for (const compute of [before, { ...before, generation: 0 }]) {
      const r = await startWorkflow({ compute, kind: 'scale', desiredNodes: 3 });
      expect(r).toMatchObject({
        outcome: 'refused',
        reason: 'WorkflowRunning',
        message: `compute cpu-once is busy: workflow ${once(1)} (provision) is still running`,
      });
    }
    expect(await getCompute(h, 'cpu-once')).toEqual(before);
  });

  it('marks a workflow FAILED when its execution ended without recording, so the compute is free again', async () => {
    const c = await getCompute(h, 'cpu-once');
    await sfn.send(new StopExecutionCommand({ executionArn: h.sfn.execution(once(1))!.executionArn }));
    expect(await settleWorkflow(c)).toBe('ABORTED');
    const after = await getCompute(h, 'cpu-once');
    expect(after.workflow?.state).toBe('FAILED');
    expect(after.status.statusMessage).toBe(`workflow ${once(1)} ended ABORTED without recording an outcome`);
    const next = await startWorkflow({ compute: after, kind: 'provision', desiredNodes: 1 });
    expect(next).toMatchObject({ outcome: 'started', executionName: once(2) });
    await h.sfn.waitForIdle();
    expect((await getCompute(h, 'cpu-once')).status.nodegroupStatus).toBe('ACTIVE');
  });

  it('refuses a caller whose view of the compute is stale, and a compute that does not exist', async () => {
    await putCompute(h, 'cpu-stale', cpuSpec(), { generation: 5 });
    const executionsBefore = h.sfn.executions.size;
    const stale = await startWorkflow({
      compute: { ...(await getCompute(h, 'cpu-stale')), generation: 4 },
      kind: 'provision',
      desiredNodes: 1,
    });
    expect(stale).toMatchObject({ outcome: 'refused', reason: 'StaleGeneration' });
    expect(h.sfn.executions.size).toBe(executionsBefore);

    const missing = await startWorkflow({
      compute: { name: 'cpu-nope', spec: cpuSpec(), generation: 0, createdAt: '2026-01-01T00:00:00.000Z' },
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

describe('execution names in the local Step Functions, on its clock', () => {
  it('keeps a closed execution and its name for 90 days after it closed, whatever the input, then forgets it', async () => {
    const clock = new DrivenClock();
    const local = await startLocalStepFunctions({
      tableName: h.table,
      clusterName: 'c',
      dynamodbEndpoint: process.env.LLMCAP_DYNAMODB_ENDPOINT,
      clock,
    });
    const client = new SFNClient({ endpoint: local.endpoint });
    try {
      const stateMachineArn = local.stateMachineArns.delete;
      const start = (input: string) =>
        client.send(new StartExecutionCommand({ stateMachineArn, name: 'kept', input }));
      const first = await start('{}');
      await local.waitForIdle();
      const closed = await client.send(new DescribeExecutionCommand({ executionArn: first.executionArn }));
      expect(closed.status).toBe('FAILED');
      // Closed: refused with the same input as with another.
      await expect(start('{}')).rejects.toMatchObject({ name: 'ExecutionAlreadyExists' });
      await expect(start('{"x":1}')).rejects.toMatchObject({ name: 'ExecutionAlreadyExists' });

      clock.advance(RETENTION_MS - 1);
      await expect(start('{}')).rejects.toMatchObject({ name: 'ExecutionAlreadyExists' });
      clock.advance(1);
      await expect(
        client.send(new DescribeExecutionCommand({ executionArn: first.executionArn })),
      ).rejects.toMatchObject({ name: 'ExecutionDoesNotExist' });
      const again = await start('{}');
      expect(again.executionArn).toBe(first.executionArn);
      expect(again.startDate).toEqual(new Date(clock.now()));
      await local.waitForIdle();
    } finally {
      client.destroy();
      await local.stop();
    }
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
    expect(all.executions?.map((e) => e.name)).toEqual([once(2), once(1)]);
    expect(all.executions?.[0]?.startDate).toBeInstanceOf(Date);
    const aborted = await sfn.send(
      new ListExecutionsCommand({ stateMachineArn: arn, statusFilter: 'ABORTED' }),
    );
    expect(aborted.executions?.map((e) => e.name)).toEqual([once(1)]);
    const page = await sfn.send(new ListExecutionsCommand({ stateMachineArn: arn, maxResults: 1 }));
    expect(page.executions).toHaveLength(1);
    const rest = await sfn.send(
      new ListExecutionsCommand({ stateMachineArn: arn, maxResults: 1, nextToken: page.nextToken }),
    );
    expect(rest.executions?.map((e) => e.name)).toEqual([once(1)]);
    expect(rest.nextToken).toBeUndefined();
  });
});

describe('a name Step Functions already keeps', () => {
  it('refuses a fresh claim whose execution name a closed execution holds, and frees the compute with the reason', async () => {
    const c = await putCompute(h, 'cpu-taken', cpuSpec());
    const name = executionNameOf(c, 'provision', 1);
    // An execution of that name ran and closed (it fails at once on this input).
    await sfn.send(
      new StartExecutionCommand({ stateMachineArn: h.sfn.stateMachineArns.provision, name, input: '{}' }),
    );
    await h.sfn.waitForIdle();
    const r = await startWorkflow({
      compute: await getCompute(h, 'cpu-taken'),
      kind: 'provision',
      desiredNodes: 1,
    });

    expect(r).toMatchObject({ outcome: 'refused', reason: 'NameTaken' });
    const after = await getCompute(h, 'cpu-taken');
    // Not left RUNNING on an execution that will never record for it: the next pass starts generation 2.
    expect(after.workflow).toMatchObject({ executionName: name, state: 'FAILED' });
    expect(after.status.statusMessage).toBe(
      `could not start workflow ${name}: execution ${name} already ran (FAILED) and Step Functions keeps its name for 90 days`,
    );
    const next = await startWorkflow({ compute: after, kind: 'provision', desiredNodes: 1 });
    expect(next).toMatchObject({ outcome: 'started', executionName: executionNameOf(c, 'provision', 2) });
    await h.sfn.waitForIdle();
  });
});
