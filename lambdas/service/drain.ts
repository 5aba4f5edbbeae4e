import type { ClusterClient } from '../aws/kubernetes';
import type { Compute } from '../domain/compute';
import { chooseNodesToRemove, type DrainNode, type DrainReport, instanceIdOf } from '../domain/drain';
import { nodegroupNameOf } from '../domain/nodegroup';
import type { PodView } from '../domain/workloads';

/**
 * Scale-down with drain (docs/workloads.md#scale-down): instead of lowering the node group's desired size and
 * letting EKS pick instances, llmcap picks the nodes (domain/drain.ts), cordons them, evicts llmcap's pods
 * through the Eviction API (so the PodDisruptionBudgets hold), and removes each node's instance once it is
 * empty with TerminateInstanceInAutoScalingGroup and ShouldDecrementDesiredCapacity, which lowers the group's
 * desired size by exactly that instance. The state is the cluster's (cordoned nodes), so a pass that stops
 * mid-drain loses nothing: the next resumes with the same nodes.
 */

export const NODEGROUP_LABEL = 'eks.amazonaws.com/nodegroup';

export async function drainForScaleDown(input: {
  compute: Pick<Compute, 'name' | 'createdAt' | 'uid' | 'status'>;
  /** Nodes to keep. */
  keep: number;
  /** llmcap's pods as the workloads step listed them at the start of this pass. */
  pods: readonly PodView[];
  client: ClusterClient;
  stage: string;
  /** Removes an empty node's instance, decrementing its group's desired size (aws/nodegroups.ts). */
  terminateInstance: (instanceId: string) => Promise<void>;
}): Promise<DrainReport> {
  const { client } = input;
  const group = nodegroupNameOf(input.stage, input.compute);
  const listed = await client.list('v1', 'Node', undefined, { labelSelector: `${NODEGROUP_LABEL}=${group}` });
  const onNode = new Map<string, PodView[]>();
  for (const p of input.pods) if (p.node) onNode.set(p.node, [...(onNode.get(p.node) ?? []), p]);
  const nodes: DrainNode[] = listed.map((n) => ({
    name: n.metadata.name,
    instanceId: instanceIdOf((n.spec as { providerID?: string } | undefined)?.providerID),
    unschedulable: Boolean((n.spec as { unschedulable?: boolean } | undefined)?.unschedulable),
    pods: onNode.get(n.metadata.name)?.length ?? 0,
  }));
  const remove = Math.min(input.compute.status.desiredNodes, nodes.length) - input.keep;
  const report: DrainReport = { compute: input.compute.name, nodes: [], refusedEvictions: 0 };
  for (const n of chooseNodesToRemove(nodes, remove)) {
    if (!n.unschedulable) await client.cordon(n.name);
    const pods = onNode.get(n.name) ?? [];
    if (pods.length === 0) {
      await input.terminateInstance(n.instanceId!);
      report.nodes.push({ node: n.name, instanceId: n.instanceId, pods: 0, step: 'terminated' });
      continue;
    }
    let refused = 0;
    for (const p of pods) if (!(await client.evict(p.namespace, p.name))) refused++;
    report.refusedEvictions += refused;
    report.nodes.push({
      node: n.name,
      instanceId: n.instanceId,
      pods: pods.length,
      step: refused ? 'waiting' : n.unschedulable ? 'evicting' : 'cordoned',
    });
  }
  return report;
}
