import {
  allocatable,
  ComputeManifestInput,
  ComputeSpecSchema,
  frozenFieldChanges,
  kubeReservedMillicores,
  nodeAllocatable,
  nodegroupName,
  taint,
  taintString,
} from '../../../lambdas/domain/compute';

const l4 = {
  node: { instanceType: 'g6.2xlarge', cpu: 8, memoryGb: 32, gpu: { type: 'L4', count: 1, memoryGb: 24 } },
  cost: { perHour: 0.9776 },
};

describe('compute allocatable', () => {
  // amazon-eks-ami nodeadm: kube-reserved CPU 6% / 1% / 0.5% / 0.25% by core, memory 11 MiB a pod + 255 MiB,
  // evictionHard 100 MiB; the numbers a node of the type reports (docs/design.md).
  it('plans an m7i.xlarge at 3920m and a g6.2xlarge at 7910m, as their nodes report', () => {
    expect(allocatable({ cpu: 4, memoryGb: 16 })).toEqual({
      millicores: 3920,
      memoryMiB: 16384 - 11 * 110 - 255 - 100,
      gpus: 0,
    });
    expect(allocatable(ComputeSpecSchema.parse(l4).node)).toEqual({
      millicores: 7910,
      memoryMiB: 32768 - 1565,
      gpus: 1,
    });
  });

  it('reserves CPU by range in whole millicores and memory for 250 pods from 30 vCPUs', () => {
    expect(kubeReservedMillicores(1)).toBe(60);
    expect(kubeReservedMillicores(2)).toBe(70);
    expect(kubeReservedMillicores(48)).toBe(190);
    expect(kubeReservedMillicores(192)).toBe(550);
    expect(
      allocatable({
        cpu: 192,
        memoryGb: 2048,
        gpu: { type: 'H100', count: 8, memoryGb: 80, resource: 'x/y' },
      }),
    ).toEqual({ millicores: 192000 - 550, memoryMiB: 2097152 - (11 * 250 + 255 + 100), gpus: 8 });
  });

  it('plans with what nodes of the type reported once one was seen, and says which it is', () => {
    const spec = ComputeSpecSchema.parse(l4);
    const seen = {
      instanceType: 'g6.2xlarge',
      millicores: 7910,
      memoryMiB: 29871,
      gpus: 1,
      nodes: 2,
      observedAt: 't',
    };
    expect(nodeAllocatable({ spec })).toEqual({
      millicores: 7910,
      memoryMiB: 31203,
      gpus: 1,
      source: 'formula',
    });
    expect(nodeAllocatable({ spec, allocatable: seen })).toEqual({
      millicores: 7910,
      memoryMiB: 29871,
      gpus: 1,
      source: 'observed',
    });
    // Another type's report (the compute's type changed while it had no node group) is not this compute's.
    expect(nodeAllocatable({ spec, allocatable: { ...seen, instanceType: 'g6.4xlarge' } }).source).toBe(
      'formula',
    );
  });
});

describe('compute defaults', () => {
  it('fills disk, capacity type, AMI, GPU resource and maxNodes', () => {
    const spec = ComputeSpecSchema.parse(l4);
    expect(spec.node).toMatchObject({
      diskSizeGb: 100,
      capacityType: 'ON_DEMAND',
      amiType: 'AL2023_x86_64_NVIDIA',
      gpu: { resource: 'nvidia.com/gpu' },
    });
    expect(spec.nodeGroup.maxNodes).toBe(4);
    expect(spec.cost.currency).toBe('USD');
  });

  it('picks the standard AMI for a CPU node and keeps a chosen one', () => {
    expect(
      ComputeSpecSchema.parse({
        node: { instanceType: 'm7i.xlarge', cpu: 4, memoryGb: 16 },
        cost: { perHour: 0.2 },
      }).node.amiType,
    ).toBe('AL2023_x86_64_STANDARD');
    const chosen = ComputeSpecSchema.parse({
      ...l4,
      node: { ...l4.node, amiType: 'BOTTLEROCKET_x86_64_NVIDIA' },
    });
    expect(chosen.node.amiType).toBe('BOTTLEROCKET_x86_64_NVIDIA');
  });
});

describe('compute manifest validation', () => {
  const manifest = (spec: unknown, metadata: unknown = { name: 'gpu-l4' }) => ({
    apiVersion: 'llmcap/v1',
    kind: 'Compute',
    metadata,
    spec,
  });

  it('rejects unknown fields, wrong types and out-of-range values, naming each path', () => {
    const r = ComputeManifestInput.safeParse(
      manifest({
        ...l4,
        node: { ...l4.node, cpu: '8', gpu: { type: 'L4', count: 17, memoryGb: 24 }, extra: 1 },
        nodeGroup: { maxNodes: 101 },
      }),
    );
    expect(r.success).toBe(false);
    const paths = r.error!.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(
      expect.arrayContaining([
        'spec.node.cpu',
        'spec.node.gpu.count',
        'spec.nodeGroup.maxNodes',
        'spec.node',
      ]),
    );
  });

  it('accepts gpu.count 1..16 and maxNodes 1..100 at their bounds', () => {
    const ok = manifest({
      ...l4,
      node: { ...l4.node, gpu: { type: 'L4', count: 16, memoryGb: 24 } },
      nodeGroup: { maxNodes: 100 },
    });
    expect(ComputeManifestInput.safeParse(ok).success).toBe(true);
    const zero = manifest({ ...l4, nodeGroup: { maxNodes: 0 } });
    expect(ComputeManifestInput.safeParse(zero).success).toBe(false);
  });

  it('refuses names that cannot become a node group name and owners that are not scopes', () => {
    expect(ComputeManifestInput.safeParse(manifest(l4, { name: 'GPU_L4' })).success).toBe(false);
    expect(ComputeManifestInput.safeParse(manifest(l4, { name: 'gpu-l4', owner: 'ml' })).success).toBe(false);
    expect(ComputeManifestInput.safeParse(manifest(l4, { name: 'gpu-l4', owner: 'team:ml' })).success).toBe(
      true,
    );
  });
});

describe('derived names and taints', () => {
  it('derives llmcap-<stage>-<name>, lowercased, at most 63 characters', () => {
    expect(nodegroupName('dev', 'gpu-l4-1x')).toBe('llmcap-dev-gpu-l4-1x');
    expect(nodegroupName('Prod', 'a_b')).toBe('llmcap-prod-a-b');
    const long = nodegroupName('dev', 'x'.repeat(80));
    expect(long.length).toBeLessThanOrEqual(63);
    expect(long.startsWith('llmcap-dev-xxx')).toBe(true);
  });

  it('taints GPU nodes with nvidia.com/gpu and CPU nodes with their compute name', () => {
    expect(taintString(taint('gpu-l4', ComputeSpecSchema.parse(l4)))).toBe('nvidia.com/gpu=true:NO_SCHEDULE');
    const cpu = ComputeSpecSchema.parse({
      node: { instanceType: 'm7i.xlarge', cpu: 4, memoryGb: 16 },
      cost: { perHour: 0.2 },
    });
    expect(taintString(taint('cpu-small', cpu))).toBe('llmcap.dev/compute=cpu-small:NO_SCHEDULE');
  });
});

describe('frozen fields', () => {
  it('lists node.* and subnetIds changes but allows maxNodes and cost', () => {
    const a = ComputeSpecSchema.parse(l4);
    const b = ComputeSpecSchema.parse({ ...l4, nodeGroup: { maxNodes: 8 }, cost: { perHour: 1 } });
    expect(frozenFieldChanges(a, b)).toEqual([]);
    const c = ComputeSpecSchema.parse({
      ...l4,
      node: { ...l4.node, instanceType: 'g6.4xlarge' },
      nodeGroup: { subnetIds: ['subnet-0123abcd'] },
    });
    expect(frozenFieldChanges(a, c)).toEqual(['spec.node.instanceType', 'spec.nodeGroup.subnetIds']);
  });
});
