import {
  mibOf,
  millicoresOf,
  type NodeView,
  observedAllocatables,
} from '../../../lambdas/domain/allocatable';

const node = (type: string, allocatable: Record<string, string>, ready = 'True'): NodeView => ({
  metadata: { name: `n-${Math.random()}`, labels: { 'node.kubernetes.io/instance-type': type } },
  status: { allocatable, conditions: [{ type: 'Ready', status: ready }] },
});

describe("what a type's nodes report as allocatable", () => {
  it('reads Kubernetes quantities as the kubelet writes them', () => {
    expect(millicoresOf('3920m')).toBe(3920);
    expect(millicoresOf('4')).toBe(4000);
    expect(millicoresOf('1.5')).toBe(1500);
    expect(millicoresOf('lots')).toBeUndefined();
    expect(mibOf('15173181Ki')).toBe(14817);
    expect(mibOf('14Gi')).toBe(14336);
    expect(mibOf('16000000000')).toBe(15258);
    expect(mibOf('16G')).toBe(15258);
  });

  it('keeps the least of each dimension over Ready nodes, leaving out GPU nodes whose device plugin has not registered', () => {
    const gpu = new Map([['g6.2xlarge', 'nvidia.com/gpu']]);
    const out = observedAllocatables(
      [
        node('m7i.xlarge', { cpu: '3920m', memory: '15173181Ki' }),
        node('m7i.xlarge', { cpu: '3900m', memory: '15273181Ki' }),
        node('m7i.xlarge', { cpu: '100m', memory: '1Ki' }, 'False'),
        node('g6.2xlarge', { cpu: '7910m', memory: '30000000Ki' }),
        node('g6.2xlarge', { cpu: '7910m', memory: '30500000Ki', 'nvidia.com/gpu': '1' }),
      ],
      gpu,
      't0',
    );
    expect(out).toEqual([
      { instanceType: 'g6.2xlarge', millicores: 7910, memoryMiB: 29785, gpus: 1, observedAt: 't0' },
      { instanceType: 'm7i.xlarge', millicores: 3900, memoryMiB: 14817, gpus: 0, observedAt: 't0' },
    ]);
  });
});
