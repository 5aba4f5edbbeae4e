import { executionNameOf } from '../../../lambdas/service/workflows';
import {
  cpuSpec,
  type Harness,
  harness,
  putCompute,
  run,
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

describe('delete-nodegroup, run locally against the cloud simulator and DynamoDB Local', () => {
  it('deletes the node group, records DELETING then ABSENT with no nodes', async () => {
    await putCompute(h, 'cpu-del', cpuSpec());
    await run(h, 'cpu-del', 'provision', { desiredNodes: 2 });
    const r = await run(h, 'cpu-del', 'delete');

    expect(r.execution.status).toBe('SUCCEEDED');
    expect(statuses(r)).toEqual(['ACTIVE', 'DELETING', 'ABSENT']);
    expect(r.compute.status).toMatchObject({
      nodegroupStatus: 'ABSENT',
      desiredNodes: 0,
      readyNodes: 0,
      healthIssues: [],
      statusMessage: 'Node group llmcap-test-cpu-del was deleted',
    });
    expect(r.compute.workflow).toMatchObject({
      executionName: executionNameOf(r.compute, 'delete', 2),
      state: 'SUCCEEDED',
    });
    expect(simGroup(h, 'llmcap-test-cpu-del')).toBeUndefined();
  });

  it('treats a node group that is already gone as deleted', async () => {
    await putCompute(h, 'cpu-gone', cpuSpec(), {
      status: { nodegroupStatus: 'ACTIVE', desiredNodes: 1, readyNodes: 1 },
    });
    const r = await run(h, 'cpu-gone', 'delete');

    expect(r.execution.status).toBe('SUCCEEDED');
    // DELETING lasts one round trip here, too short to be seen reliably by polling the item.
    expect(statesEntered(r)).toEqual([
      'MarkDeleting',
      'DeleteNodegroup',
      'AlreadyAbsent',
      'RecordAbsent',
      'Succeeded',
      'Done',
    ]);
    expect(r.compute.status).toMatchObject({
      nodegroupStatus: 'ABSENT',
      readyNodes: 0,
      statusMessage: 'Node group llmcap-test-cpu-gone did not exist; nothing to delete',
    });
  });

  it('records DELETE_FAILED with the health issue and fails the execution', async () => {
    await putCompute(h, 'cpu-stuck', cpuSpec());
    await run(h, 'cpu-stuck', 'provision', { desiredNodes: 1 });
    h.sim.admin.setFaults({ deleteFailures: [{ nodegroup: 'llmcap-test-cpu-stuck' }] });
    const r = await run(h, 'cpu-stuck', 'delete');

    expect(r.execution.status).toBe('FAILED');
    expect(r.execution.error).toBe('Nodegroup.DeleteFailed');
    expect(statuses(r)).toEqual(['ACTIVE', 'DELETING', 'DELETE_FAILED']);
    expect(r.compute.status.statusMessage).toBe(
      'Node group llmcap-test-cpu-stuck is DELETE_FAILED: Ec2SecurityGroupDeletionFailure: DependencyViolation - resource has a dependent object',
    );
    expect(r.compute.status.healthIssues).toEqual([
      {
        code: 'Ec2SecurityGroupDeletionFailure',
        message: 'DependencyViolation - resource has a dependent object',
      },
    ]);
    expect(simGroup(h, 'llmcap-test-cpu-stuck')?.status).toBe('DELETE_FAILED');
  });

  it('records DELETE_FAILED when EKS reports the health issue without code or message', async () => {
    await putCompute(h, 'cpu-bare', cpuSpec());
    await run(h, 'cpu-bare', 'provision', { desiredNodes: 1 });
    h.sim.admin.setFaults({
      deleteFailures: [{ nodegroup: 'llmcap-test-cpu-bare', omit: ['code', 'message'] }],
    });
    const r = await run(h, 'cpu-bare', 'delete');

    expect(r.execution.error).toBe('Nodegroup.DeleteFailed');
    expect(r.compute.status).toMatchObject({
      nodegroupStatus: 'DELETE_FAILED',
      statusMessage: 'Node group llmcap-test-cpu-bare is DELETE_FAILED: Unknown: (EKS gave no message)',
      healthIssues: [{ code: 'Unknown', message: '(EKS gave no message)' }],
    });
  });

  it('retries DescribeNodegroup through 5xx answers while the group is deleting', async () => {
    await putCompute(h, 'cpu-5xx', cpuSpec());
    await run(h, 'cpu-5xx', 'provision', { desiredNodes: 1 });
    h.sim.admin.setFaults({ serverErrorRate: 0.5, serverErrorType: 'ServiceUnavailableException' });
    const r = await run(h, 'cpu-5xx', 'delete');

    expect(r.execution.status).toBe('SUCCEEDED');
    expect(
      r.execution.events.some(
        (e) => e.type === 'StateFailed' && e.Error === 'Eks.ServiceUnavailableException',
      ),
    ).toBe(true);
    expect(r.compute.status.nodegroupStatus).toBe('ABSENT');
  });
});
