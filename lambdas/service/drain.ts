import type { ClusterClient } from '../aws/kubernetes';
import type { Compute } from '../domain/compute';
import {
  chooseNodesToRemove,
  DELETION_COST_ANNOTATION,
  type DrainDeployment,
  type DrainNode,
  type DrainReport,
  GOING_COST,
  instanceIdOf,
  planDrain,
  SURGE_ANNOTATION,
  surgeValue,
} from '../domain/drain';
import { nodegroupNameOf } from '../domain/nodegroup';
import type { PodView } from '../domain/workloads';

/**
 * Scale-down with drain (docs/workloads.md#scale-down): instead of lowering the node group's desired size and
 * letting EKS pick instances, llmcap picks the nodes (domain/drain.ts) and cordons them. A Ready replica there
 * is replaced before it goes (surge before evict, domain/drain.ts planDrain): its Deployment gets extra
 * replicas, which the scheduler places on nodes that stay; once those are Ready the old pods get the lowest
 * pod-deletion-cost and the replicas drop back, so the ReplicaSet removes exactly them. Pods that serve nothing
 * are evicted through the Eviction API. A node with none of llmcap's pods left is removed with
 * TerminateInstanceInAutoScalingGroup and ShouldDecrementDesiredCapacity, which lowers the group's desired size
 * by exactly that instance. All the state is the cluster's (cordoned nodes, the surge annotation on the
 * Deployment), so a control plane that stops mid-drain resumes with the same nodes and the same surge.
 */

export const NODEGROUP_LABEL = 'eks.amazonaws.com/nodegroup';

/** A compute that shrinks: to `keep` nodes; `cordon` when the drain runs now (not only during a cool-down). */
export interface Shrink {
  compute: Pick<Compute, 'name' | 'createdAt' | 'uid' | 'status'>;
  keep: number;
  cordon: boolean;
}

/**
 * The nodes each shrinking compute loses, chosen from the pods; those of computes draining now are cordoned
 * (once: a cordoned node is chosen first by every later pass).
 */
export async function chooseGoing(input: {
  shrinks: readonly Shrink[];
  pods: readonly PodView[];
  client: ClusterClient;
  stage: string;
}): Promise<Map<string, DrainNode[]>> {
  const onNode = new Map<string, number>();
  for (const p of input.pods) if (p.node) onNode.set(p.node, (onNode.get(p.node) ?? 0) + 1);
  const out = new Map<string, DrainNode[]>();
  for (const s of input.shrinks) {
    const group = nodegroupNameOf(input.stage, s.compute);
    const listed = await input.client.list('v1', 'Node', undefined, {
      labelSelector: `${NODEGROUP_LABEL}=${group}`,
    });
    const nodes: DrainNode[] = listed.map((n) => ({
      name: n.metadata.name,
      instanceId: instanceIdOf((n.spec as { providerID?: string } | undefined)?.providerID),
      unschedulable: Boolean((n.spec as { unschedulable?: boolean } | undefined)?.unschedulable),
      pods: onNode.get(n.metadata.name) ?? 0,
    }));
    const chosen = chooseNodesToRemove(nodes, Math.min(s.compute.status.desiredNodes, nodes.length) - s.keep);
    if (s.cordon) for (const n of chosen) if (!n.unschedulable) await input.client.cordon(n.name);
    out.set(s.compute.name, chosen);
  }
  return out;
}

export async function drainForScaleDown(input: {
  compute: Pick<Compute, 'name'>;
  /** The nodes chooseGoing chose (and cordoned) this pass. */
  chosen: readonly DrainNode[];
  /** llmcap's pods as the workloads step listed them at the start of this pass. */
  pods: readonly PodView[];
  /** The compute's Deployments, with what is admitted and any surge in flight. */
  deployments: readonly DrainDeployment[];
  client: ClusterClient;
  /** Removes an empty node's instance, decrementing its group's desired size (aws/nodegroups.ts). */
  terminateInstance: (instanceId: string) => Promise<void>;
}): Promise<DrainReport> {
  const { client } = input;
  const pods = input.pods.filter((p) => p.compute === input.compute.name);
  const plan = planDrain({
    going: input.chosen.map((n) => n.name),
    pods,
    deployments: input.deployments.filter((d) => d.compute === input.compute.name),
  });
  const report: DrainReport = { compute: input.compute.name, nodes: [], refusedEvictions: 0 };
  const deployment = (d: DrainDeployment, fields: Record<string, unknown>) =>
    client.patch('apps/v1', 'Deployment', d.namespace, d.name, fields);
  for (const { deployment: d, surge } of plan.surge)
    await deployment(d, {
      metadata: { annotations: { [SURGE_ANNOTATION]: surgeValue(surge) } },
      spec: { replicas: d.admitted + surge.surge },
    });
  for (const { deployment: d, pods: old } of plan.release) {
    // The cost first: when the replicas drop, the ReplicaSet removes these and keeps their Ready replacements.
    for (const p of old)
      await client.patch('v1', 'Pod', p.namespace, p.name, {
        metadata: { annotations: { [DELETION_COST_ANNOTATION]: GOING_COST } },
      });
    await deployment(d, {
      metadata: { annotations: { [SURGE_ANNOTATION]: null } },
      spec: { replicas: d.admitted },
    });
  }
  const refusedOn = new Map<string, number>();
  for (const p of plan.evict)
    if (!(await client.evict(p.namespace, p.name))) {
      report.refusedEvictions++;
      refusedOn.set(p.node!, (refusedOn.get(p.node!) ?? 0) + 1);
    }
  const terminate = new Set(plan.terminate);
  const waitingOn = new Map<string, string>();
  for (const w of plan.waiting)
    for (const p of pods)
      if (p.node && p.namespace === w.deployment.namespace && p.model === w.deployment.model)
        if (!waitingOn.has(p.node)) waitingOn.set(p.node, w.why);
  const surging = new Set(
    [...plan.surge.map((s) => s.deployment), ...plan.waiting.map((w) => w.deployment)].map(
      (d) => `${d.namespace}/${d.model}/${d.profile}`,
    ),
  );
  for (const n of input.chosen) {
    const here = pods.filter((p) => p.node === n.name);
    if (terminate.has(n.name)) {
      await input.terminateInstance(n.instanceId!);
      report.nodes.push({ node: n.name, instanceId: n.instanceId, pods: 0, step: 'terminated' });
      continue;
    }
    const why = waitingOn.get(n.name);
    const step = refusedOn.has(n.name)
      ? 'waiting'
      : here.some((p) => surging.has(`${p.namespace}/${p.model}/${p.profile}`))
        ? 'surging'
        : n.unschedulable
          ? 'evicting'
          : 'cordoned';
    report.nodes.push({
      node: n.name,
      instanceId: n.instanceId,
      pods: here.length,
      step,
      ...(why ? { waiting: why } : {}),
    });
  }
  return report;
}
