import type { Compute, NodegroupStatus } from './compute';

/**
 * What reconcile should do to one compute's node group, decided from what AWS reports and what placement
 * needs. Pure, so every branch is a unit test; the reconciler only carries it out.
 */
/** The three node group workflows (statemachines/<kind>-nodegroup.asl.json). */
export type WorkflowKind = 'provision' | 'scale' | 'delete';

export type Action =
  | { kind: 'none'; why: string }
  | { kind: 'provision'; desired: number; max: number }
  | { kind: 'scale'; desired: number; max: number }
  | { kind: 'delete'; why: string }
  | { kind: 'remove-item' };

export interface ActionInput {
  compute: Pick<Compute, 'name' | 'spec' | 'status' | 'workflow'> & { deletionRequested?: boolean };
  /** Nodes placement needs, after the scale-down cool-down. */
  needed: number;
  /** The node group's maxSize as AWS reports it, when known. */
  observedMax?: number;
}

const SETTLING: NodegroupStatus[] = ['CREATING', 'UPDATING', 'DELETING'];

export function decideAction({ compute, needed, observedMax }: ActionInput): Action {
  const s = compute.status.nodegroupStatus;
  const max = compute.spec.nodeGroup.maxNodes;
  const desired = Math.min(needed, max);
  if (compute.workflow?.state === 'RUNNING')
    return { kind: 'none', why: `workflow ${compute.workflow.executionName} is running` };
  if (compute.deletionRequested) {
    // A FOREIGN group is someone else's: deleting the compute removes the item and leaves that group alone.
    if (s === 'ABSENT' || s === 'FOREIGN') return { kind: 'remove-item' };
    if (s === 'DELETING') return { kind: 'none', why: 'node group is being deleted' };
    if (s === 'DELETE_FAILED') return { kind: 'none', why: 'node group deletion failed: see statusMessage' };
    return { kind: 'delete', why: 'the compute was deleted' };
  }
  if (SETTLING.includes(s)) return { kind: 'none', why: `node group is ${s}` };
  // CREATE_FAILED never recovers (only DeleteNodegroup is allowed): delete it, and the next pass re-creates it.
  if (s === 'CREATE_FAILED')
    return { kind: 'delete', why: 'node group creation failed; deleting it so it can be re-created' };
  if (s === 'DELETE_FAILED') return { kind: 'none', why: 'node group deletion failed: see statusMessage' };
  // Creating again would only meet the same group: wait until someone renames the compute or deletes that
  // group (reconcile observes it every pass and records ABSENT once the name is free).
  if (s === 'FOREIGN')
    return {
      kind: 'none',
      why:
        compute.status.statusMessage ??
        "the node group of this name is not llmcap's: rename the compute or delete that node group",
    };
  if (s === 'ABSENT') {
    return desired > 0 ? { kind: 'provision', desired, max } : { kind: 'none', why: 'nothing placed here' };
  }
  // ACTIVE or DEGRADED: EKS accepts updates in both; DEGRADED only clears with a successful scale-out, and EKS
  // does not retry a failed one by itself, so a degraded group short of nodes is asked again each pass.
  if (s === 'DEGRADED' && compute.status.readyNodes < desired) {
    return { kind: 'scale', desired, max };
  }
  if (compute.status.desiredNodes !== desired || (observedMax !== undefined && observedMax !== max)) {
    return { kind: 'scale', desired, max };
  }
  return { kind: 'none', why: 'node group matches what is needed' };
}
