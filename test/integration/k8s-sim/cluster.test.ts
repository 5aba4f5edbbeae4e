import { rootCertificates } from 'node:tls';
import {
  CreateNodegroupCommand,
  DescribeClusterCommand,
  UpdateNodegroupConfigCommand,
} from '@aws-sdk/client-eks';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import {
  CLUSTER,
  cpuGroup,
  gpuGroup,
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

const podsOf = async (ns: string, model: string) =>
  (await h.core.listNamespacedPod({ namespace: ns, labelSelector: `llmcap.dev/model=${model}` })).items;

const ready = (p: V1Pod) => p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

describe('nodes follow the node groups', () => {
  it('registers a node per instance with EKS labels, the group taint and allocatable, Ready after the join delay', async () => {
    h = await k8sHarness();
    await h.nodegroup('llmcap-local-gpu-l4-1x', { ...gpuGroup('gpu-l4-1x'), clusterName: CLUSTER });
    const nodes = (await h.core.listNode()).items;
    expect(nodes).toHaveLength(1);
    const n = nodes[0]!;
    expect(n.metadata?.labels).toMatchObject({
      'eks.amazonaws.com/nodegroup': 'llmcap-local-gpu-l4-1x',
      'node.kubernetes.io/instance-type': 'g6.2xlarge',
      'kubernetes.io/arch': 'amd64',
      'llmcap.dev/compute': 'gpu-l4-1x',
    });
    expect(n.metadata?.labels?.['topology.kubernetes.io/zone']).toMatch(/^us-east-1[ab]$/);
    expect(n.spec?.taints).toEqual([{ key: 'nvidia.com/gpu', value: 'true', effect: 'NoSchedule' }]);
    expect(n.spec?.providerID).toMatch(/^aws:\/\/\/us-east-1[ab]\/i-[0-9a-f]{17}$/);
    expect(n.status?.capacity).toMatchObject({ cpu: '8', 'nvidia.com/gpu': '1', pods: '58' });
    // EKS's kube-reserved for 8 vCPUs (90m) and for 58 pods (255Mi + 11Mi each) and the eviction threshold.
    expect(n.status?.allocatable?.cpu).toBe('7910m');
    expect(n.status?.allocatable?.['nvidia.com/gpu']).toBe('1');
    expect(n.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    const instanceId = n.spec?.providerID?.split('/').pop();
    const asg = h.sim.admin.state().nodegroups[0]!.autoScalingGroup;
    expect(asg.instances.map((i) => i.id)).toEqual([instanceId]);
  });

  it('is NotReady with the CNI message until the join delay passes, and carries the not-ready taints', async () => {
    h = await k8sHarness();
    await h.eks.send(
      new CreateNodegroupCommand({
        clusterName: CLUSTER,
        nodegroupName: 'cpu',
        nodeRole: 'arn:aws:iam::123456789012:role/n',
        subnets: ['subnet-0a1b2c3d4e5f60001'],
        scalingConfig: { minSize: 0, maxSize: 1, desiredSize: 1 },
        instanceTypes: ['m7i.xlarge'],
      }),
    );
    h.advance(90 * SEC);
    expect((await h.core.listNode()).items).toHaveLength(0);
    h.advance(20 * SEC);
    const [n] = (await h.core.listNode()).items;
    const cond = n?.status?.conditions?.find((c) => c.type === 'Ready');
    expect(cond).toMatchObject({ status: 'False', reason: 'KubeletNotReady' });
    expect(cond?.message).toContain('cni plugin not initialized');
    expect(n?.spec?.taints?.map((t) => `${t.key}:${t.effect}`)).toEqual([
      'node.kubernetes.io/not-ready:NoSchedule',
      'node.kubernetes.io/not-ready:NoExecute',
    ]);
    h.advance(30 * SEC);
    const [m] = (await h.core.listNode()).items;
    expect(m?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(m?.spec?.taints).toBeUndefined();
  });

  it('serves DescribeCluster with the endpoint and CA that client-node verifies the API server with', async () => {
    h = await k8sHarness();
    const { cluster } = await h.eks.send(new DescribeClusterCommand({ name: CLUSTER }));
    expect(cluster?.endpoint).toBe(h.sim.kubernetes?.endpoint);
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: cluster!.endpoint!, caData: cluster!.certificateAuthority!.data! }],
      users: [{ name: 'u', token: h.sim.kubernetes!.adminToken }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const ns = await kc.makeApiClient(CoreV1Api).listNamespace();
    expect(ns.items.map((n) => n.metadata?.name)).toEqual([
      'default',
      'kube-node-lease',
      'kube-public',
      'kube-system',
    ]);
    // Another CA: the TLS handshake fails, as it would against a cluster that is not the one described.
    const other = new KubeConfig();
    other.loadFromOptions({
      clusters: [
        {
          name: 'c',
          server: cluster!.endpoint!,
          caData: Buffer.from(rootCertificates[0] as string).toString('base64'),
        },
      ],
      users: [{ name: 'u', token: h.sim.kubernetes!.adminToken }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    await expect(other.makeApiClient(CoreV1Api).listNamespace()).rejects.toThrow(
      /certificate|self.signed|issuer/i,
    );
  });
});

describe('deployments become ready pods on the right nodes', () => {
  it('rolls a Deployment into a ReplicaSet and pods that are Ready only after the server has started', async () => {
    h = await k8sHarness({ kubernetes: { appStart: [{ image: 'vllm/*', ms: 2 * MIN }] } });
    await h.nodegroup('gpu', gpuGroup('gpu-l4-1x', 2));
    await h.apps.createNamespacedDeployment({
      namespace: 'default',
      body: modelDeployment('qwen', { compute: 'gpu-l4-1x', replicas: 2, gpus: 1, cpu: '4', memory: '16Gi' }),
    });
    const rs = (await h.apps.listNamespacedReplicaSet({ namespace: 'default' })).items;
    expect(rs).toHaveLength(1);
    expect(rs[0]!.metadata?.name).toMatch(/^qwen-[bcdfghjklmnpqrstvwxz2456789]+$/);
    expect(rs[0]!.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'Deployment',
      name: 'qwen',
      controller: true,
    });
    let pods = await podsOf('default', 'qwen');
    expect(pods).toHaveLength(2);
    expect(new Set(pods.map((p) => p.spec?.nodeName)).size).toBe(2);
    expect(pods.map((p) => p.status?.phase)).toEqual(['Pending', 'Pending']);
    expect(pods[0]!.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe('ContainerCreating');
    // Image pulled (20 s): running, not ready: the startup probe has not seen the server yet.
    h.advance(20 * SEC);
    pods = await podsOf('default', 'qwen');
    expect(pods.map((p) => p.status?.phase)).toEqual(['Running', 'Running']);
    expect(pods.some(ready)).toBe(false);
    expect(pods[0]!.status?.containerStatuses?.[0]).toMatchObject({
      ready: false,
      started: false,
      restartCount: 0,
    });
    // The server answers after 2 minutes; the startup probe (every 10 s) sees it, then readiness (every 5 s).
    h.advance(2 * MIN - 1 * SEC);
    expect((await podsOf('default', 'qwen')).some(ready)).toBe(false);
    h.advance(6 * SEC);
    pods = await podsOf('default', 'qwen');
    expect(pods.every(ready)).toBe(true);
    const d = await h.apps.readNamespacedDeployment({ name: 'qwen', namespace: 'default' });
    expect(d.status).toMatchObject({
      replicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
      updatedReplicas: 2,
    });
    expect(d.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');
    expect(d.status?.conditions?.find((c) => c.type === 'Progressing')?.reason).toBe(
      'NewReplicaSetAvailable',
    );
  });

  it('schedules by nodeSelector, tolerations and free resources, and says why a pod cannot schedule', async () => {
    h = await k8sHarness();
    await h.nodegroup('gpu', gpuGroup('gpu-l4-1x', 1));
    await h.nodegroup('cpu', cpuGroup('cpu-small', 2));
    // Two single-GPU replicas on one GPU node: one runs, one waits for a GPU.
    await h.apps.createNamespacedDeployment({
      namespace: 'default',
      body: modelDeployment('big', { compute: 'gpu-l4-1x', replicas: 2, gpus: 1, cpu: '2', memory: '8Gi' }),
    });
    const pods = await podsOf('default', 'big');
    const pending = pods.filter((p) => !p.spec?.nodeName);
    expect(pending).toHaveLength(1);
    const message =
      '0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint {llmcap.dev/compute: cpu-small}. ' +
      'preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.';
    expect(pending[0]!.status?.conditions?.find((c) => c.type === 'PodScheduled')).toMatchObject({
      status: 'False',
      reason: 'Unschedulable',
      message,
    });
    const events = await h.core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: `involvedObject.name=${pending[0]!.metadata?.name},reason=FailedScheduling`,
    });
    expect(events.items.map((e) => [e.type, e.message, e.source?.component])).toEqual([
      ['Warning', message, 'default-scheduler'],
    ]);
    // A pod that tolerates the CPU taint but selects no node.
    await h.apps.createNamespacedDeployment({
      namespace: 'default',
      body: modelDeployment('nowhere', { compute: 'gpu-h100-8x', taintKey: 'llmcap.dev/compute' }),
    });
    const [nowhere] = await podsOf('default', 'nowhere');
    expect(nowhere?.status?.conditions?.[0]?.message).toBe(
      "0/3 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: true}, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
    );
    // A second GPU node: the waiting replica lands there.
    await h.eks.send(
      new UpdateNodegroupConfigCommand({
        clusterName: CLUSTER,
        nodegroupName: 'gpu',
        scalingConfig: { desiredSize: 2 },
      }),
    );
    h.advance(3 * MIN);
    const after = await podsOf('default', 'big');
    expect(after.every((p) => p.spec?.nodeName)).toBe(true);
    expect(new Set(after.map((p) => p.spec?.nodeName)).size).toBe(2);
  });

  it('reports ProgressDeadlineExceeded when no pod becomes Ready within progressDeadlineSeconds, and progresses again once one can', async () => {
    h = await k8sHarness({ kubernetes: { appStart: [{ image: 'vllm/*', ms: 30 * SEC }] } });
    const body = modelDeployment('stuck', { compute: 'gpu-later' });
    await h.apps.createNamespacedDeployment({
      namespace: 'default',
      body: { ...body, spec: { ...body.spec, progressDeadlineSeconds: 120 } },
    });
    const progressing = async () =>
      (
        await h.apps.readNamespacedDeployment({ name: 'stuck', namespace: 'default' })
      ).status?.conditions?.find((c) => c.type === 'Progressing');
    // No node selects it: the pod waits, and the Deployment counts nothing Ready (0s are left out of its status).
    expect((await podsOf('default', 'stuck')).map((p) => p.spec?.nodeName)).toEqual([undefined]);
    h.advance(60 * SEC);
    expect(await progressing()).toMatchObject({ status: 'True' });
    h.advance(61 * SEC);
    const [rs] = (await h.apps.listNamespacedReplicaSet({ namespace: 'default' })).items;
    expect(await progressing()).toMatchObject({
      status: 'False',
      reason: 'ProgressDeadlineExceeded',
      message: `ReplicaSet "${rs!.metadata?.name}" has timed out progressing.`,
    });
    // A node that takes it: the pod starts, becomes Ready, and the rollout completes.
    await h.nodegroup('later', gpuGroup('gpu-later'));
    h.advance(2 * MIN);
    expect((await podsOf('default', 'stuck')).every(ready)).toBe(true);
    expect(await progressing()).toMatchObject({ status: 'True', reason: 'NewReplicaSetAvailable' });
  });

  it('deletes a Deployment with its ReplicaSets and pods (background propagation)', async () => {
    h = await k8sHarness({ durations: { podStopMs: 0 } });
    await h.nodegroup('cpu', cpuGroup('cpu-small', 1));
    await h.apps.createNamespacedDeployment({
      namespace: 'default',
      body: modelDeployment('small', { compute: 'cpu-small', taintKey: 'llmcap.dev/compute', replicas: 2 }),
    });
    expect(await podsOf('default', 'small')).toHaveLength(2);
    await h.apps.deleteNamespacedDeployment({ name: 'small', namespace: 'default' });
    expect((await h.apps.listNamespacedReplicaSet({ namespace: 'default' })).items).toHaveLength(0);
    const terminating = await podsOf('default', 'small');
    expect(terminating.every((p) => p.metadata?.deletionTimestamp)).toBe(true);
    h.advance(1 * SEC);
    expect(await podsOf('default', 'small')).toHaveLength(0);
  });

  it('answers NotFound, AlreadyExists and Invalid with the API server wording', async () => {
    h = await k8sHarness();
    const nf = await statusOf(h.apps.readNamespacedDeployment({ name: 'nope', namespace: 'default' }));
    expect(nf).toEqual({
      code: 404,
      body: expect.objectContaining({
        kind: 'Status',
        status: 'Failure',
        reason: 'NotFound',
        message: 'deployments.apps "nope" not found',
        details: { name: 'nope', group: 'apps', kind: 'deployments' },
      }),
    });
    const body = modelDeployment('x', { compute: 'c' });
    await h.apps.createNamespacedDeployment({ namespace: 'default', body });
    const dup = await statusOf(h.apps.createNamespacedDeployment({ namespace: 'default', body }));
    expect(dup.code).toBe(409);
    expect(dup.body.message).toBe('deployments.apps "x" already exists');
    const bad = structuredClone(body);
    bad.metadata.name = 'y';
    bad.spec.replicas = -1;
    bad.spec.template.metadata.labels = { 'llmcap.dev/model': 'other' };
    const inv = await statusOf(h.apps.createNamespacedDeployment({ namespace: 'default', body: bad }));
    expect(inv.code).toBe(422);
    expect(inv.body.reason).toBe('Invalid');
    expect(inv.body.message).toBe(
      'Deployment.apps "y" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec.template.metadata.labels: Invalid value: {"llmcap.dev/model":"other"}: `selector` does not match template `labels`]',
    );
    expect(inv.body.details.causes.map((c: { field: string }) => c.field)).toEqual([
      'spec.replicas',
      'spec.template.metadata.labels',
    ]);
    const mismatch = await statusOf(h.apps.createNamespacedDeployment({ namespace: 'absent', body }));
    expect(mismatch.body.message).toBe(
      'the namespace of the provided object does not match the namespace sent on the request',
    );
    const { namespace: _, ...meta } = body.metadata;
    const ns = await statusOf(
      h.apps.createNamespacedDeployment({ namespace: 'absent', body: { ...body, metadata: meta } }),
    );
    expect(ns).toMatchObject({ code: 404, body: { message: 'namespaces "absent" not found' } });
  });
});
