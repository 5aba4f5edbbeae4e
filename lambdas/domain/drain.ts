/**
 * Scale-down without killing work (issue 20 §3): EKS picks the instances itself when a node group's desired size
 * drops, running replicas included. llmcap picks them instead, from the pods: nodes it has already cordoned
 * first (a drain in progress, so a restart mid-drain resumes it), then empty nodes, then those with the fewest
 * of llmcap's replicas. Pure, so the order is a unit test.
 */

export interface DrainNode {
  name: string;
  /** From the node's providerID `aws:///<az>/<instance-id>`. */
  instanceId?: string;
  unschedulable: boolean;
  /** llmcap's pods bound to the node. */
  pods: number;
}

export function chooseNodesToRemove(nodes: readonly DrainNode[], count: number): DrainNode[] {
  if (count <= 0) return [];
  return [...nodes]
    .filter((n) => n.instanceId)
    .sort(
      (a, b) =>
        Number(b.unschedulable) - Number(a.unschedulable) || a.pods - b.pods || a.name.localeCompare(b.name),
    )
    .slice(0, count);
}

export function instanceIdOf(providerId: string | undefined): string | undefined {
  return /^aws:\/\/\/[^/]*\/(i-[0-9a-f]+)$/.exec(providerId ?? '')?.[1];
}

/** One scale-down with drain, as a pass reports it. */
export interface DrainReport {
  compute: string;
  /** Nodes chosen for removal, with what happened to each this pass. */
  nodes: {
    node: string;
    instanceId?: string;
    pods: number;
    step: 'cordoned' | 'evicting' | 'waiting' | 'terminated';
  }[];
  refusedEvictions: number;
}
