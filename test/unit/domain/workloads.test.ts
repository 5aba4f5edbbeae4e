import { type ComputeSpecInput, ComputeSpecSchema, taint } from '../../../lambdas/domain/compute';
import type { Model } from '../../../lambdas/domain/model';
import type { ModelAdmission } from '../../../lambdas/domain/quota';
import {
  appliedAsWanted,
  cpuQuantity,
  deploymentFor,
  deploymentName,
  desiredWorkloads,
  expandArgs,
  LABEL_COMPUTE,
  LABEL_MODEL,
  LABEL_PROFILE,
  MAX_PODS_SHOWN,
  memoryQuantity,
  namespaceFor,
  placementsOf,
  podMatches,
  podView,
  serverArgs,
  workloadStatus,
} from '../../../lambdas/domain/workloads';
import { enginesConfig, parseEngines } from '../../../lambdas/shared/builtin-config';

const compute = (name: string, spec: ComputeSpecInput) => ({ name, spec: ComputeSpecSchema.parse(spec) });
const l4 = compute('gpu-l4-1x', {
  node: { instanceType: 'g6.2xlarge', cpu: 8, memoryGb: 32, gpu: { type: 'L4', count: 1, memoryGb: 24 } },
  cost: { perHour: 1 },
});
const h100 = compute('gpu-h100-8x', {
  node: {
    instanceType: 'p5.48xlarge',
    cpu: 192,
    memoryGb: 2048,
    gpu: { type: 'H100', count: 8, memoryGb: 80 },
  },
  cost: { perHour: 55 },
});
const inf2 = compute('inf2-1x', {
  node: {
    instanceType: 'inf2.xlarge',
    cpu: 4,
    memoryGb: 16,
    gpu: { type: 'Inferentia2', count: 1, memoryGb: 32, resource: 'aws.amazon.com/neuron' },
    amiType: 'AL2023_x86_64_NEURON',
  },
  cost: { perHour: 0.76 },
});
const cpuSmall = compute('cpu-small', {
  node: { instanceType: 'm7i.xlarge', cpu: 4, memoryGb: 16 },
  cost: { perHour: 0.2 },
});

function model(name: string, spec: Partial<Model['spec']> & Pick<Model['spec'], 'engine'>, owner?: string) {
  return {
    name,
    ...(owner ? { owner } : {}),
    spec: {
      source: 'hf://meta-llama/Llama-3.3-70B-Instruct',
      profiles: [{ name: 'h100x4', gpus: 4, gpuType: 'H100', cpuCores: 32, minMemoryGb: 256 }],
      scaling: { min: 1, max: 4 },
      ...spec,
    },
  } as Pick<Model, 'name' | 'owner' | 'spec'>;
}

const cfg = enginesConfig();
type Obj = Record<string, any>;
const container = (d: Obj) => d.spec.template.spec.containers[0];
/** The Deployment of a one-profile model on a compute. */
const deployOne = (m: ReturnType<typeof model>, c: typeof l4) =>
  deploymentFor('prod', { model: m, profile: m.spec.profiles[0]!, compute: c, replicas: 1 }, cfg) as Obj;

describe('the Deployment of a placement', () => {
  const llama = model('llama-3-3-70b', { engine: 'vllm' }, 'team:ml');
  const d = deploymentFor(
    'prod',
    { model: llama, profile: llama.spec.profiles[0]!, compute: h100, replicas: 2 },
    cfg,
  ) as Obj;

  it('runs the engine image with the profile as arguments: the source to load and TP = GPUs', () => {
    expect(container(d).image).toBe(cfg.engines.vllm.image);
    expect(container(d).args).toEqual([
      '--model',
      'meta-llama/Llama-3.3-70B-Instruct',
      '--tensor-parallel-size',
      '4',
      '--host',
      '0.0.0.0',
      '--port',
      '8000',
    ]);
  });

  it('asks for what admission admitted, pins the compute and tolerates its taint', () => {
    expect(d.spec.replicas).toBe(2);
    expect(container(d).resources).toEqual({
      requests: { cpu: '32', memory: '256Gi', 'nvidia.com/gpu': '4' },
      limits: { memory: '256Gi', 'nvidia.com/gpu': '4' },
    });
    expect(d.spec.template.spec.nodeSelector).toEqual({ 'llmcap.dev/compute': 'gpu-h100-8x' });
    expect(d.spec.template.spec.tolerations).toEqual([
      { key: 'nvidia.com/gpu', operator: 'Equal', value: 'true', effect: 'NoSchedule' },
    ]);
  });

  it("probes the engine's health endpoint, giving the weights time to load before liveness counts", () => {
    const c = container(d);
    for (const p of ['startupProbe', 'readinessProbe', 'livenessProbe'])
      expect(c[p].httpGet).toEqual({ path: '/health', port: 'http' });
    expect(c.startupProbe.periodSeconds * c.startupProbe.failureThreshold).toBe(
      cfg.engines.vllm.startupSeconds,
    );
  });

  it('lives in the namespace of its owner scope; shared models in their own', () => {
    expect(d.metadata.namespace).toBe('llmcap-prod-team-ml');
    expect(namespaceFor('prod', undefined)).toBe('llmcap-prod-shared');
    expect(namespaceFor('prod', '')).toBe('llmcap-prod-shared');
  });

  it('labels what llmcap manages, per stage, so another stage on the cluster is left alone', () => {
    expect(d.metadata.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'llmcap',
      'llmcap.dev/stage': 'prod',
    });
    expect(d.spec.template.metadata.labels).toMatchObject(d.spec.selector.matchLabels);
  });

  it('has an autoscaled SGLang or llama.cpp server serve its metrics, and no other', () => {
    const args = (engine: Model['spec']['engine'], source: string, autoscaled: boolean) =>
      container(
        deploymentFor(
          'prod',
          {
            model: model('m', {
              engine,
              source,
              ...(autoscaled ? { autoscaling: { metric: `${engine}:x`, targetPerReplica: 1 } as never } : {}),
            }),
            profile: { name: 'p', gpus: 1, cpuCores: 8 },
            compute: h100,
            replicas: 1,
          },
          cfg,
        ),
      ).args as string[];
    expect(args('sglang', 'hf://org/repo', true)).toContain('--enable-metrics');
    expect(args('sglang', 'hf://org/repo', false)).not.toContain('--enable-metrics');
    expect(args('llamacpp', 'hf://Qwen/Q-GGUF/q.gguf', true)).toContain('--metrics');
    expect(args('llamacpp', 'hf://Qwen/Q-GGUF/q.gguf', false)).not.toContain('--metrics');
    // vLLM serves /metrics as it is: its args stay as they were.
    expect(args('vllm', 'hf://org/repo', true)).toEqual(args('vllm', 'hf://org/repo', false));
    // A flag the engine's args already carry is not given twice.
    expect(serverArgs({ args: ['--metrics'], metricsArgs: ['--metrics'] }, true)).toEqual(['--metrics']);
  });

  it('passes each engine its own way of naming the model and the tensor parallel size', () => {
    const args = (engine: Model['spec']['engine'], source: string) =>
      container(
        deploymentFor(
          'prod',
          {
            model: model('m', { engine, source }),
            profile: { name: 'p', gpus: 2, cpuCores: 8 },
            compute: h100,
            replicas: 1,
          },
          cfg,
        ),
      ).args as string[];
    expect(args('sglang', 'hf://org/repo')).toEqual(
      expect.arrayContaining(['--model-path', 'org/repo', '--tp', '2']),
    );
    expect(args('tgi', 's3://weights/llama')).toEqual(
      expect.arrayContaining(['--model-id', 's3://weights/llama', '--num-shard', '2']),
    );
    expect(args('llamacpp', 'hf://Qwen/Qwen2.5-1.5B-GGUF/q4_k_m.gguf')).toEqual(
      expect.arrayContaining(['--hf-repo', 'Qwen/Qwen2.5-1.5B-GGUF', '--hf-file', 'q4_k_m.gguf']),
    );
    // No file in the source: the flag goes with its empty value.
    expect(args('llamacpp', 'hf://Qwen/Qwen2.5-1.5B-GGUF')).not.toContain('--hf-file');
  });

  it('requests no GPU on a CPU compute and tolerates that compute by name', () => {
    const tiny = model('tiny', {
      engine: 'llamacpp',
      profiles: [{ name: 'cpu', gpus: 0, cpuCores: 3.5, minMemoryGb: 6 }],
    });
    const dc = deployOne(tiny, cpuSmall);
    expect(container(dc).resources).toEqual({
      requests: { cpu: '3500m', memory: '6Gi' },
      limits: { memory: '6Gi' },
    });
    expect(dc.spec.template.spec.tolerations).toEqual([
      { key: 'llmcap.dev/compute', operator: 'Equal', value: 'cpu-small', effect: 'NoSchedule' },
    ]);
  });

  it('asks a Neuron compute for its own resource and tolerates its taint (was nvidia.com/gpu for every accelerator)', () => {
    expect(taint('inf2-1x', inf2.spec).key).toBe('aws.amazon.com/neuron');
    const m = model('neuron', {
      engine: 'vllm',
      profiles: [{ name: 'inf2', gpus: 1, cpuCores: 2, minMemoryGb: 8 }],
    });
    const dn = deployOne(m, inf2);
    expect(container(dn).resources.requests).toMatchObject({ 'aws.amazon.com/neuron': '1' });
    expect(container(dn).resources.requests).not.toHaveProperty('nvidia.com/gpu');
    expect(dn.spec.template.spec.tolerations[0]).toMatchObject({ key: 'aws.amazon.com/neuron' });
  });

  it('takes a per-model override of image and args from the config', () => {
    const over = parseEngines({
      engines: cfg.engines,
      models: {
        'llama-3-3-70b': {
          image: 'example.com/vllm:patched',
          args: ['--model', '{model}', '--enforce-eager'],
        },
      },
    });
    const dd = deploymentFor(
      'prod',
      { model: llama, profile: llama.spec.profiles[0]!, compute: h100, replicas: 1 },
      over,
    ) as Obj;
    expect(container(dd).image).toBe('example.com/vllm:patched');
    expect(container(dd).args).toEqual(['--model', 'meta-llama/Llama-3.3-70B-Instruct', '--enforce-eager']);
    expect(container(dd).ports[0].containerPort).toBe(8000);
  });

  it('refuses an engines file that misses an engine or misspells a field, naming it', () => {
    const { ollama: _o, ...rest } = cfg.engines;
    expect(() => parseEngines({ engines: rest })).toThrow(/config\/engines.yaml is invalid: engines.ollama/);
    expect(() => parseEngines({ engines: cfg.engines, models: { x: { imag: 'y' } } })).toThrow(/models.x/);
  });
});

describe('names', () => {
  it('keeps Deployment names short enough for pod names, apart when cut', () => {
    const a = deploymentName('a'.repeat(50), 'profile-one', 'gpu-l40s-4x');
    const b = deploymentName('a'.repeat(50), 'profile-two', 'gpu-l40s-4x');
    expect(a.length).toBeLessThanOrEqual(46);
    expect(a).not.toBe(b);
    expect(deploymentName('4b-model', 'l4', 'gpu-l4-1x')).toMatch(/^[a-z]/);
  });

  it('writes quantities as the API server reports them', () => {
    expect([cpuQuantity(4), cpuQuantity(3.5), cpuQuantity(0.25)]).toEqual(['4', '3500m', '250m']);
    expect([memoryQuantity(24), memoryQuantity(1.5)]).toEqual(['24Gi', '1536Mi']);
  });

  it('expands placeholders and drops a flag whose value is empty', () => {
    expect(expandArgs(['--a', '{x}', '--b', '{y}', 'serve'], { x: '1', y: '' })).toEqual([
      '--a',
      '1',
      'serve',
    ]);
  });
});

describe('the workloads of an admission', () => {
  const qwen = model('qwen3-8b', {
    engine: 'vllm',
    source: 'hf://Qwen/Qwen3-8B',
    profiles: [
      { name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 24 },
      { name: 'h100', gpus: 1, gpuType: 'H100', cpuCores: 4, minMemoryGb: 24 },
    ],
  });
  const unit = (
    id: string,
    replicas: number,
    placements: { compute: string; profile: string; replicas: number }[],
    takeBack = false,
  ) => ({
    id,
    kind: 'extra' as const,
    replicas,
    profile: placements[0]!.profile,
    resources: { gpus: 1, cores: 4, memoryGb: 24 },
    placements,
    admittedAt: '2026-01-01T00:00:00Z',
    borrowed: false,
    ...(takeBack ? { takeBack: { victims: [], since: '2026-01-01T00:00:00Z' } } : {}),
  });
  const admission: ModelAdmission = {
    model: 'qwen3-8b',
    units: [
      unit('qwen3-8b#min', 2, [{ compute: 'gpu-l4-1x', profile: 'l4', replicas: 2 }]),
      unit('qwen3-8b#3', 1, [{ compute: 'gpu-h100-8x', profile: 'h100', replicas: 1 }]),
      unit('qwen3-8b#4', 1, [{ compute: 'gpu-l4-1x', profile: 'l4', replicas: 1 }]),
      // Still waiting for its victims to stop: no pod yet, their room is not free.
      unit('qwen3-8b#5', 1, [{ compute: 'gpu-l4-1x', profile: 'l4', replicas: 1 }], true),
    ],
    pending: [],
  };

  it('has one Deployment per placement with the replicas admitted there, and one Service and PDB per model', () => {
    const pl = placementsOf([qwen], [admission], [l4, h100]);
    expect(pl.map((p) => [p.compute.name, p.profile.name, p.replicas])).toEqual([
      ['gpu-h100-8x', 'h100', 1],
      ['gpu-l4-1x', 'l4', 3],
    ]);
    const w = desiredWorkloads('prod', pl, cfg);
    expect(w.namespaces.map((n) => n.metadata.name)).toEqual(['llmcap-prod-shared']);
    expect(w.objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'Deployment/qwen3-8b-h100-gpu-h100-8x',
      'Deployment/qwen3-8b-l4-gpu-l4-1x',
      'PodDisruptionBudget/qwen3-8b',
      'Service/qwen3-8b',
    ]);
  });

  it('wants nothing for a model with nothing admitted', () => {
    expect(desiredWorkloads('prod', placementsOf([qwen], [], [l4]), cfg).objects).toEqual([]);
  });
});

describe('comparing with what the cluster reports', () => {
  it('ignores defaults the server added and notices any field of ours that differs', () => {
    const want = {
      spec: { replicas: 2, template: { spec: { containers: [{ name: 's', args: ['a', 'b'] }] } } },
    };
    const live = {
      spec: {
        replicas: 2,
        strategy: { type: 'RollingUpdate' },
        template: {
          spec: {
            dnsPolicy: 'ClusterFirst',
            containers: [{ name: 's', args: ['a', 'b'], imagePullPolicy: 'IfNotPresent' }],
          },
        },
      },
    };
    expect(appliedAsWanted(want, live)).toBe(true);
    expect(appliedAsWanted({ spec: { replicas: 3 } }, live)).toBe(false);
    expect(appliedAsWanted({ spec: { template: { spec: { containers: [{ args: ['a'] }] } } } }, live)).toBe(
      false,
    );
  });
});

describe('pods as llmcap shows them', () => {
  const pod = (name: string, over: { node?: string; ready?: boolean; created?: unknown } = {}) =>
    podView({
      metadata: {
        name,
        namespace: 'llmcap-prod-team-ml',
        labels: { [LABEL_MODEL]: 'chat', [LABEL_COMPUTE]: 'l4', [LABEL_PROFILE]: 'gpu' },
        creationTimestamp: over.created,
      },
      spec: over.node ? { nodeName: over.node } : {},
      status: {
        phase: over.ready ? 'Running' : 'Pending',
        conditions: over.ready
          ? [{ type: 'Ready', status: 'True' }]
          : [{ type: 'PodScheduled', status: 'False', message: '0/3 nodes are available' }],
      },
    });

  it('keeps when a pod was created, whether the client gave a string or a Date', () => {
    expect(pod('a', { created: '2026-01-05T10:15:02Z' }).createdAt).toBe('2026-01-05T10:15:02.000Z');
    expect(pod('b', { created: new Date('2026-01-05T10:15:02Z') }).createdAt).toBe(
      '2026-01-05T10:15:02.000Z',
    );
    expect(pod('c', { created: 'not a time' })).not.toHaveProperty('createdAt');
  });

  it('counts every pod of a model when it lists only the first MAX_PODS_SHOWN', () => {
    const many = Array.from({ length: MAX_PODS_SHOWN + 3 }, (_, i) =>
      pod(`p${i}`, { node: 'n', ready: true }),
    );
    const s = workloadStatus(many);
    expect({ total: s.total, shown: s.pods.length, running: s.running }).toEqual({
      total: MAX_PODS_SHOWN + 3,
      shown: MAX_PODS_SHOWN,
      running: MAX_PODS_SHOWN + 3,
    });
  });

  it('counts Ready pods per compute, all of them, for consolidation to move by', () => {
    const many = [
      ...Array.from({ length: MAX_PODS_SHOWN + 3 }, (_, i) => pod(`p${i}`, { node: 'n', ready: true })),
      { ...pod('elsewhere', { node: 'm', ready: true }), compute: 'l4-small' },
      pod('stuck'),
    ];
    expect(workloadStatus(many).readyOn).toEqual({ l4: MAX_PODS_SHOWN + 3, 'l4-small': 1 });
    expect(workloadStatus([pod('stuck')])).not.toHaveProperty('readyOn');
  });

  it('narrows pods by every filter given, all of which must match', () => {
    const up = pod('up', { node: 'ip-1', ready: true });
    const stuck = pod('stuck');
    expect(podMatches(up, {})).toBe(true);
    expect(podMatches(up, { model: 'chat', compute: 'l4', node: 'ip-1', ready: true })).toBe(true);
    expect(podMatches(up, { model: 'chat', compute: 'other' })).toBe(false);
    expect(podMatches(stuck, { ready: false })).toBe(true);
    expect(podMatches(stuck, { node: 'ip-1' })).toBe(false);
    expect(podMatches(stuck, { namespace: 'llmcap-prod-team-ml', profile: 'gpu' })).toBe(true);
  });
});
