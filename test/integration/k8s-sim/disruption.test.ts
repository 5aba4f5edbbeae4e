import { TerminateInstanceInAutoScalingGroupCommand } from '@aws-sdk/client-auto-scaling';
import { DescribeNodegroupCommand } from '@aws-sdk/client-eks';
import { PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import {
  asgInstances,
  CLUSTER,
  cpuGroup,
  type K8sHarness,
  k8sHarness,
  MIN,
  modelDeployment,
  SEC,
  statusOf,
} from './helpers';

let h: K8sHarness;
afterEach(async () => {
  await h?.close();
});

const ready = (p: V1Pod) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
const live = (pods: V1Pod[]) => pods.filter((p) => !p.metadata?.deletionTimestamp);
const podsOf = async (model: string) =>
  (await h.core.listNamespacedPod({ namespace: 'default', labelSelector: `llmcap.dev/model=${model}` }))
    .items;

/** Two replicas of a CPU model on two nodes with a PDB that allows one disruption, all Ready. */
async function twoReplicasWithPdb(opts: Parameters<typeof k8sHarness>[0] = {}) {
  h = await k8sHarness({ ...opts, durations: { podStopMs: 0, ...opts.durations } });
  await h.nodegroup('cpu', cpuGroup('cpu-small', 2));
  await h.apps.createNamespacedDeployment({
    namespace: 'default',
    body: modelDeployment('emb', {
      compute: 'cpu-small',
      taintKey: 'llmcap.dev/compute',
      replicas: 2,
      cpu: '1',
      memory: '2Gi',
    }),
  });
  await h.policy.createNamespacedPodDisruptionBudget({
    namespace: 'default',
    body: {
      metadata: { name: 'emb' },
      spec: { maxUnavailable: 1, selector: { matchLabels: { 'llmcap.dev/model': 'emb' } } },
    },
  });
  h.advance(2 * MIN);
  const pods = await podsOf('emb');
  expect(pods.every(ready)).toBe(true);
  expect(new Set(pods.map((p) => p.spec?.nodeName)).size).toBe(2);
  return pods;
}

describe('eviction honours the PodDisruptionBudget', () => {
  it('evicts one pod, then refuses the next with 429 and the budget numbers until the replacement is Ready', async () => {
    const pods = await twoReplicasWithPdb();
    const pdb = await h.policy.readNamespacedPodDisruptionBudget({ name: 'emb', namespace: 'default' });
    expect(pdb.status).toMatchObject({
      currentHealthy: 2,
      desiredHealthy: 1,
      disruptionsAllowed: 1,
      expectedPods: 2,
    });
    const evict = (p: V1Pod) =>
      h.core.createNamespacedPodEviction({
        name: p.metadata!.name!,
        namespace: 'default',
        body: {
          apiVersion: 'policy/v1',
          kind: 'Eviction',
          metadata: { name: p.metadata!.name!, namespace: 'default' },
        },
      });
    await evict(pods[0]!);
    const refused = await statusOf(evict(pods[1]!));
    expect(refused.code).toBe(429);
    expect(refused.body).toMatchObject({
      reason: 'TooManyRequests',
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      details: {
        causes: [
          {
            reason: 'DisruptionBudget',
            message: 'The disruption budget emb needs 1 healthy pods and has 1 currently',
          },
        ],
      },
    });
    // The ReplicaSet replaced the evicted pod at once; once it is Ready the budget allows one more.
    h.advance(1 * SEC);
    expect(live(await podsOf('emb'))).toHaveLength(2);
    h.advance(2 * MIN);
    await evict(pods[1]!);
  });
});

describe('TerminateInstanceInAutoScalingGroup', () => {
  it('removes exactly that instance and its node, lowers desired in the ASG and the node group, and the pods move', async () => {
    const pods = await twoReplicasWithPdb();
    const victimNode = pods[0]!.spec!.nodeName!;
    const node = await h.core.readNode({ name: victimNode });
    const instanceId = node.spec!.providerID!.split('/').pop()!;
    const before = await asgInstances(h);
    const out = await h.asg.send(
      new TerminateInstanceInAutoScalingGroupCommand({
        InstanceId: instanceId,
        ShouldDecrementDesiredCapacity: true,
      }),
    );
    expect(out.Activity).toMatchObject({
      Description: `Terminating EC2 instance: ${instanceId}`,
      StatusCode: 'InProgress',
      AutoScalingGroupName: before[0]!.group,
    });
    expect(out.Activity?.Cause).toMatch(
      /in response to a user request, shrinking the capacity from 2 to 1\.$/,
    );
    const during = await asgInstances(h);
    expect(during.find((i) => i.InstanceId === instanceId)?.LifecycleState).toBe('Terminating');
    // EKS reports the ASG's new desired capacity as the node group's.
    const ng = await h.eks.send(new DescribeNodegroupCommand({ clusterName: CLUSTER, nodegroupName: 'cpu' }));
    expect(ng.nodegroup?.scalingConfig?.desiredSize).toBe(1);
    // EKS's lifecycle hook cordons and drains the node while the instance terminates.
    expect((await h.core.readNode({ name: victimNode })).spec?.unschedulable).toBe(true);
    h.advance(1 * MIN);
    const after = await asgInstances(h);
    expect(after.map((i) => i.InstanceId)).toEqual(
      before.map((i) => i.InstanceId).filter((id) => id !== instanceId),
    );
    expect((await h.core.listNode()).items.map((n) => n.metadata?.name)).not.toContain(victimNode);
    const moved = live(await podsOf('emb'));
    expect(moved).toHaveLength(2);
    expect(moved.every((p) => p.spec?.nodeName && p.spec.nodeName !== victimNode)).toBe(true);
  });

  it('launches a replacement without the decrement, and refuses unknown instances and the minimum as AWS does', async () => {
    h = await k8sHarness();
    await h.nodegroup('cpu', {
      ...cpuGroup('cpu-small', 1),
      scalingConfig: { minSize: 1, maxSize: 2, desiredSize: 1 },
    });
    const [only] = await asgInstances(h);
    await expect(
      h.asg.send(
        new TerminateInstanceInAutoScalingGroupCommand({
          InstanceId: only!.InstanceId,
          ShouldDecrementDesiredCapacity: true,
        }),
      ),
    ).rejects.toMatchObject({
      name: 'ValidationError',
      message:
        "Currently, desiredSize equals minSize (1). Terminating instance without replacement will violate group's min size constraint. Either set shouldDecrementDesiredCapacity flag to false or lower group's min size.",
    });
    await expect(
      h.asg.send(
        new TerminateInstanceInAutoScalingGroupCommand({
          InstanceId: 'i-0123456789abcdef0',
          ShouldDecrementDesiredCapacity: false,
        }),
      ),
    ).rejects.toMatchObject({
      name: 'ValidationError',
      message: 'Instance Id not found - No managed instance found for instance ID: i-0123456789abcdef0',
    });
    await h.asg.send(
      new TerminateInstanceInAutoScalingGroupCommand({
        InstanceId: only!.InstanceId,
        ShouldDecrementDesiredCapacity: false,
      }),
    );
    const now = await asgInstances(h);
    expect(now.map((i) => i.LifecycleState).sort()).toEqual(['Pending', 'Terminating']);
    h.advance(3 * MIN);
    const later = await asgInstances(h);
    expect(later).toHaveLength(1);
    expect(later[0]!.InstanceId).not.toBe(only!.InstanceId);
    expect((await h.core.listNode()).items).toHaveLength(1);
  });
});

describe('faults', () => {
  it('crashes the containers of a matching image into CrashLoopBackOff with the restart count and last message', async () => {
    h = await k8sHarness({
      faults: { podCrashes: [{ image: 'vllm/*', exitCode: 1, message: 'CUDA error: out of memory' }] },
    });
    await h.nodegroup('cpu', cpuGroup('cpu-small', 1));
    await h.apps.createNamespacedDeployment({
      namespace: 'default',
      body: modelDeployment('oom', { compute: 'cpu-small', taintKey: 'llmcap.dev/compute' }),
    });
    // Pull 20 s, run 5 s, crash, restart at once, run 5 s, crash: back-off 10 s.
    h.advance(31 * SEC);
    const [p] = await podsOf('oom');
    const cs = p!.status!.containerStatuses![0]!;
    expect(cs.restartCount).toBe(1);
    expect(cs.state?.waiting).toEqual({
      reason: 'CrashLoopBackOff',
      message: `back-off 10s restarting failed container=server pod=${p!.metadata!.name}_default(${p!.metadata!.uid})`,
    });
    expect(cs.lastState?.terminated).toMatchObject({
      exitCode: 1,
      reason: 'Error',
      message: 'CUDA error: out of memory',
    });
    expect(ready(p!)).toBe(false);
    h.advance(10 * MIN);
    const [q] = await podsOf('oom');
    expect(q!.status!.containerStatuses![0]!.restartCount).toBeGreaterThan(4);
    expect(q!.status!.containerStatuses![0]!.state?.waiting?.message).toMatch(/^back-off 5m0s /);
    const backoff = await h.core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: 'reason=BackOff',
    });
    expect(backoff.items[0]?.message).toBe(
      `Back-off restarting failed container server in pod ${q!.metadata!.name}_default(${q!.metadata!.uid})`,
    );
  });

  it('keeps the pods of a matching namespace unready with the probe failure as the event', async () => {
    h = await k8sHarness({ faults: { podsUnready: [{ namespace: 'default' }] } });
    await h.nodegroup('cpu', cpuGroup('cpu-small', 1));
    await h.apps.createNamespacedDeployment({
      namespace: 'default',
      body: modelDeployment('stuck', { compute: 'cpu-small', taintKey: 'llmcap.dev/compute', probes: false }),
    });
    // Without probes the kubelet takes a running container as ready, fault or not; with a readiness probe only:
    const d = modelDeployment('slow', { compute: 'cpu-small', taintKey: 'llmcap.dev/compute' });
    delete (d.spec.template.spec.containers[0] as Record<string, unknown>).startupProbe;
    await h.apps.createNamespacedDeployment({ namespace: 'default', body: d });
    h.advance(5 * MIN);
    expect((await podsOf('stuck')).every(ready)).toBe(true);
    const [p] = await podsOf('slow');
    expect(p!.status?.phase).toBe('Running');
    expect(ready(p!)).toBe(false);
    const ev = await h.core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: `involvedObject.name=${p!.metadata!.name},reason=Unhealthy`,
    });
    expect(ev.items[0]?.message).toBe('Readiness probe failed: HTTP probe failed with statuscode: 503');
  });

  it('restarts a container whose startup probe gives up before the server is up', async () => {
    h = await k8sHarness({ kubernetes: { appStart: [{ image: 'vllm/*', ms: 10 * MIN }] } });
    await h.nodegroup('cpu', cpuGroup('cpu-small', 1));
    // failureThreshold 30 × 10 s = 5 minutes: too short for a 10-minute start.
    await h.apps.createNamespacedDeployment({
      namespace: 'default',
      body: modelDeployment('big', { compute: 'cpu-small', taintKey: 'llmcap.dev/compute' }),
    });
    h.advance(20 * SEC + 5 * MIN);
    const [p] = await podsOf('big');
    expect(p!.status!.containerStatuses![0]!.restartCount).toBe(1);
    expect(p!.status!.containerStatuses![0]!.lastState?.terminated?.exitCode).toBe(137);
    const ev = await h.core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: `involvedObject.name=${p!.metadata!.name}`,
    });
    const msgs = ev.items.map((e) => e.message);
    expect(msgs).toContain('Container server failed startup probe, will be restarted');
    expect(msgs.find((m) => m?.startsWith('Startup probe failed'))).toMatch(
      /^Startup probe failed: Get "http:\/\/10\.0\.\d+\.\d+:8000\/health": dial tcp 10\.0\.\d+\.\d+:8000: connect: connection refused$/,
    );
  });

  it('leaves the nodes of a matching group NotReady, and pods cannot schedule on them', async () => {
    h = await k8sHarness({ faults: { nodesNotReady: [{ nodegroup: 'cpu' }] } });
    await h.nodegroup('cpu', cpuGroup('cpu-small', 1));
    h.advance(30 * MIN);
    const [n] = (await h.core.listNode()).items;
    expect(n?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
    await h.apps.createNamespacedDeployment({
      namespace: 'default',
      body: modelDeployment('m', { compute: 'cpu-small', taintKey: 'llmcap.dev/compute' }),
    });
    const [p] = await podsOf('m');
    expect(p!.status?.conditions?.[0]?.message).toBe(
      '0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.',
    );
  });
});

describe('which pods a ReplicaSet removes when replicas drop', () => {
  const scaleTo = (replicas: number) =>
    h.apps.patchNamespacedDeploymentScale(
      { name: 'emb', namespace: 'default', body: { spec: { replicas } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  const annotate = (p: V1Pod, cost: string) =>
    h.core.patchNamespacedPod(
      {
        name: p.metadata!.name!,
        namespace: 'default',
        body: { metadata: { annotations: { 'controller.kubernetes.io/pod-deletion-cost': cost } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

  it('takes the pod with the lowest pod-deletion-cost among Ready pods, even the older one', async () => {
    const pods = await twoReplicasWithPdb();
    const older = [...pods].sort((a, b) =>
      String(a.metadata!.creationTimestamp).localeCompare(String(b.metadata!.creationTimestamp)),
    );
    // Without a cost the newer of two equal pods goes; the cost turns that around.
    await annotate(older[0]!, '-100');
    await scaleTo(1);
    expect(live(await podsOf('emb')).map((p) => p.metadata!.name)).toEqual([older[1]!.metadata!.name]);
  });

  it('still takes a pod that is not Ready before a Ready one of lower cost', async () => {
    const pods = await twoReplicasWithPdb();
    await annotate(pods[0]!, '-100');
    await scaleTo(3);
    h.advance(1 * SEC); // the third pod is scheduled but not Ready yet
    const starting = live(await podsOf('emb')).find((p) => !ready(p))!;
    expect(starting).toBeDefined();
    await scaleTo(2);
    expect(
      live(await podsOf('emb'))
        .map((p) => p.metadata!.name)
        .sort(),
    ).toEqual(pods.map((p) => p.metadata!.name).sort());
  });
});
