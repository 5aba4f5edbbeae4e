import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AutoScalingClient, DescribeAutoScalingGroupsCommand } from '@aws-sdk/client-auto-scaling';
import { CreateNodegroupCommand, type CreateNodegroupCommandInput, EKSClient } from '@aws-sdk/client-eks';
import { AppsV1Api, CoreV1Api, KubeConfig, KubernetesObjectApi, PolicyV1Api } from '@kubernetes/client-node';
import { type CloudSim, type CloudSimOptions, DrivenClock, startCloudSim } from '../../../local/cloud-sim';

export const SEC = 1000;
export const MIN = 60 * SEC;
export const CLUSTER = 'llmcap-local';

export interface K8sHarness {
  sim: CloudSim;
  clock: DrivenClock;
  eks: EKSClient;
  asg: AutoScalingClient;
  kc: KubeConfig;
  core: CoreV1Api;
  apps: AppsV1Api;
  policy: PolicyV1Api;
  objects: KubernetesObjectApi;
  kubeconfigPath: string;
  /** Creates a node group and moves the clock until its nodes are Ready. */
  nodegroup(name: string, extra?: Partial<CreateNodegroupCommandInput>): Promise<void>;
  advance(ms: number): void;
  /** kubectl against the simulated cluster, with its own discovery cache. */
  kubectl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  close(): Promise<void>;
}

/** Long enough for an instance to launch, its node to register and become Ready (durations' defaults). */
export const NODE_JOIN = 90 * SEC + 20 * SEC + 30 * SEC + 30 * SEC;

/** A cloud simulator on a driven clock with its Kubernetes API, and real clients (SDK, client-node, kubectl). */
export async function k8sHarness(opts: CloudSimOptions = {}): Promise<K8sHarness> {
  const clock = new DrivenClock();
  const sim = await startCloudSim({ port: 0, clock, seed: 11, ...opts });
  const k8s = sim.kubernetes;
  if (!k8s) throw new Error('the simulator started without its Kubernetes API');
  const dir = mkdtempSync(join(tmpdir(), 'k8s-sim-'));
  const kubeconfigPath = join(dir, 'kubeconfig');
  k8s.writeKubeconfig(kubeconfigPath);
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const cfg = {
    endpoint: sim.endpoint,
    region: 'us-east-1',
    maxAttempts: 1,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  };
  const eks = new EKSClient(cfg);
  const asg = new AutoScalingClient(cfg);
  return {
    sim,
    clock,
    eks,
    asg,
    kc,
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    policy: kc.makeApiClient(PolicyV1Api),
    objects: KubernetesObjectApi.makeApiClient(kc),
    kubeconfigPath,
    async nodegroup(name, extra = {}) {
      await eks.send(
        new CreateNodegroupCommand({
          clusterName: CLUSTER,
          nodegroupName: name,
          nodeRole: 'arn:aws:iam::123456789012:role/llmcap-node',
          subnets: ['subnet-0a1b2c3d4e5f60001', 'subnet-0a1b2c3d4e5f60002'],
          scalingConfig: { minSize: 0, maxSize: 4, desiredSize: 1 },
          instanceTypes: ['m7i.xlarge'],
          ...extra,
        }),
      );
      clock.advance(NODE_JOIN);
    },
    advance: (ms) => {
      clock.advance(ms);
    },
    kubectl: (...args) =>
      new Promise((resolve) => {
        execFile(
          'kubectl',
          ['--kubeconfig', kubeconfigPath, '--cache-dir', join(dir, 'cache'), ...args],
          { timeout: 30_000 },
          (err, stdout, stderr) => {
            const code = err
              ? typeof (err as { code?: unknown }).code === 'number'
                ? (err as { code: number }).code
                : 1
              : 0;
            resolve({ code, stdout, stderr });
          },
        );
      }),
    async close() {
      eks.destroy();
      asg.destroy();
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A GPU node group as llmcap makes one: its compute label and the nvidia.com/gpu taint. */
export function gpuGroup(compute: string, desired = 1): Partial<CreateNodegroupCommandInput> {
  return {
    instanceTypes: ['g6.2xlarge'],
    amiType: 'AL2023_x86_64_NVIDIA',
    scalingConfig: { minSize: 0, maxSize: 4, desiredSize: desired },
    labels: { 'llmcap.dev/compute': compute },
    taints: [{ key: 'nvidia.com/gpu', value: 'true', effect: 'NO_SCHEDULE' }],
  };
}

export function cpuGroup(compute: string, desired = 1): Partial<CreateNodegroupCommandInput> {
  return {
    instanceTypes: ['m7i.xlarge'],
    scalingConfig: { minSize: 0, maxSize: 4, desiredSize: desired },
    labels: { 'llmcap.dev/compute': compute },
    taints: [{ key: 'llmcap.dev/compute', value: compute, effect: 'NO_SCHEDULE' }],
  };
}

/** A model server Deployment as issue 20 describes it: compute selector, toleration, resources, probes. */
export function modelDeployment(
  name: string,
  opts: {
    namespace?: string;
    replicas?: number;
    compute: string;
    taintKey?: string;
    gpus?: number;
    cpu?: string;
    memory?: string;
    image?: string;
    probes?: boolean;
  },
) {
  const resources = {
    requests: {
      cpu: opts.cpu ?? '1',
      memory: opts.memory ?? '2Gi',
      ...(opts.gpus ? { 'nvidia.com/gpu': String(opts.gpus) } : {}),
    },
    ...(opts.gpus ? { limits: { 'nvidia.com/gpu': String(opts.gpus) } } : {}),
  };
  const probe = { httpGet: { path: '/health', port: 'http' } };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: opts.namespace ?? 'default', labels: { 'llmcap.dev/model': name } },
    spec: {
      replicas: opts.replicas ?? 1,
      selector: { matchLabels: { 'llmcap.dev/model': name } },
      template: {
        metadata: { labels: { 'llmcap.dev/model': name } },
        spec: {
          nodeSelector: { 'llmcap.dev/compute': opts.compute },
          tolerations: [{ key: opts.taintKey ?? 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
          containers: [
            {
              name: 'server',
              image: opts.image ?? 'vllm/vllm-openai:v0.8.5',
              ports: [{ name: 'http', containerPort: 8000 }],
              resources,
              ...(opts.probes === false
                ? {}
                : {
                    startupProbe: { ...probe, periodSeconds: 10, failureThreshold: 30 },
                    readinessProbe: { ...probe, periodSeconds: 5 },
                  }),
            },
          ],
        },
      },
    },
  };
}

export async function asgInstances(h: K8sHarness) {
  const out = await h.asg.send(new DescribeAutoScalingGroupsCommand({}));
  return (out.AutoScalingGroups ?? []).flatMap((g) =>
    (g.Instances ?? []).map((i) => ({ group: g.AutoScalingGroupName, ...i })),
  );
}

/** The Status an API call failed with (client-node's ApiException carries the body as a string). */
export async function statusOf(p: Promise<unknown>): Promise<{ code: number; body: Record<string, any> }> {
  try {
    await p;
  } catch (e) {
    const err = e as { code?: number; body?: unknown };
    const body = typeof err.body === 'string' ? JSON.parse(err.body) : err.body;
    return { code: err.code ?? 0, body: body as Record<string, any> };
  }
  throw new Error('expected the call to fail');
}
