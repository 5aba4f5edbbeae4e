import { type ActionInput, decideAction } from '../../../lambdas/domain/actions';
import type { NodegroupStatus } from '../../../lambdas/domain/compute';
import { builtin } from '../../helpers/computes';

function input(
  status: NodegroupStatus,
  needed: number,
  over: Partial<ActionInput['compute']> = {},
  desired = 0,
) {
  const { spec } = builtin('gpu-l4-1x');
  return {
    compute: {
      name: 'gpu-l4-1x',
      spec,
      status: { nodegroupStatus: status, desiredNodes: desired, readyNodes: desired },
      ...over,
    },
    needed,
  } as ActionInput;
}

describe('decideAction', () => {
  it('creates a node group when replicas are placed on a compute without one, capped at maxNodes', () => {
    expect(decideAction(input('ABSENT', 2))).toEqual({ kind: 'provision', desired: 2, max: 4 });
    expect(decideAction(input('ABSENT', 9))).toEqual({ kind: 'provision', desired: 4, max: 4 });
    expect(decideAction(input('ABSENT', 0)).kind).toBe('none');
  });

  it('scales an ACTIVE or DEGRADED group to what is needed, including to zero, and leaves a matching one alone', () => {
    expect(decideAction(input('ACTIVE', 3, {}, 1))).toEqual({ kind: 'scale', desired: 3, max: 4 });
    expect(decideAction(input('DEGRADED', 0, {}, 2))).toEqual({ kind: 'scale', desired: 0, max: 4 });
    expect(decideAction(input('ACTIVE', 2, {}, 2)).kind).toBe('none');
    expect(decideAction({ ...input('ACTIVE', 2, {}, 2), observedMax: 3 })).toEqual({
      kind: 'scale',
      desired: 2,
      max: 4,
    });
  });

  it('asks a DEGRADED group short of ready nodes to scale out again, since EKS does not retry by itself', () => {
    const degraded = input('DEGRADED', 4, {}, 4);
    degraded.compute.status.readyNodes = 2;
    expect(decideAction(degraded)).toEqual({ kind: 'scale', desired: 4, max: 4 });
    const healthy = input('DEGRADED', 2, {}, 2);
    expect(decideAction(healthy).kind).toBe('none');
  });

  it('waits while EKS is busy or a workflow runs', () => {
    for (const s of ['CREATING', 'UPDATING', 'DELETING'] as const)
      expect(decideAction(input(s, 3)).kind).toBe('none');
    const running = input('ACTIVE', 3, {
      workflow: { executionName: 'x', kind: 'scale', state: 'RUNNING', startedAt: '2026-01-01T00:00:00Z' },
    });
    expect(decideAction(running)).toEqual({ kind: 'none', why: 'workflow x is running' });
  });

  it('deletes a failed create so the next pass can re-create it', () => {
    expect(decideAction(input('CREATE_FAILED', 1)).kind).toBe('delete');
  });

  it('deletes the node group of a deleted compute, then the compute itself', () => {
    expect(decideAction(input('ACTIVE', 0, { deletionRequested: true }, 2)).kind).toBe('delete');
    expect(decideAction(input('ABSENT', 0, { deletionRequested: true })).kind).toBe('remove-item');
    expect(decideAction(input('DELETE_FAILED', 0, { deletionRequested: true })).kind).toBe('none');
  });

  it("leaves a compute whose node group name is held by someone else's group alone, saying why", () => {
    const foreign = input('FOREIGN', 2, {
      status: {
        nodegroupStatus: 'FOREIGN',
        desiredNodes: 0,
        readyNodes: 0,
        statusMessage: "node group llmcap-dev-gpu-l4-1x exists and is not llmcap's (tags {})",
      },
    });
    expect(decideAction(foreign)).toEqual({
      kind: 'none',
      why: "node group llmcap-dev-gpu-l4-1x exists and is not llmcap's (tags {})",
    });
    // Never provisions (it would meet the same group) nor scales or deletes it, whatever is needed.
    for (const needed of [0, 1, 4]) expect(decideAction(input('FOREIGN', needed)).kind).toBe('none');
  });

  it("removes a deleted compute whose name is held by someone else's group, leaving that group alone", () => {
    expect(decideAction(input('FOREIGN', 0, { deletionRequested: true }))).toEqual({ kind: 'remove-item' });
  });
});
