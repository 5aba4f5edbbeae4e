import {
  capByQuotas,
  instanceClass,
  NODEGROUPS_PER_CLUSTER,
  type QuotaCompute,
  vcpuQuotaOf,
} from '../../../lambdas/domain/aws-quotas';

const compute = (name: string, over: Partial<QuotaCompute>): QuotaCompute => ({
  name,
  instanceType: 'g6.2xlarge',
  capacityType: 'ON_DEMAND',
  vcpus: 8,
  currentNodes: 0,
  neededNodes: 0,
  hasGroup: false,
  ...over,
});

describe('AWS quotas of the account and the cluster', () => {
  it('finds the vCPU quota of an instance class, On-Demand or Spot', () => {
    expect(
      ['g6e', 'p5en', 'm7i', 'inf2', 'trn1', 'vt1', 'c7g', 'x2idn'].map((f) => instanceClass(`${f}.xlarge`)),
    ).toEqual(['g', 'p', 'standard', 'inf', 'trn', 'g', 'standard', 'x']);
    expect(vcpuQuotaOf('p5.48xlarge', 'ON_DEMAND')?.code).toBe('L-417A185B');
    expect(vcpuQuotaOf('g6.2xlarge', 'ON_DEMAND')?.code).toBe('L-DB2E81BA');
    expect(vcpuQuotaOf('m7i.xlarge', 'ON_DEMAND')?.code).toBe('L-1216C47A');
    expect(vcpuQuotaOf('g6.2xlarge', 'SPOT')?.code).toBe('L-3819A6DF');
    expect(vcpuQuotaOf('g6.2xlarge', 'CAPACITY_BLOCK')).toBeUndefined();
  });

  it('asks for no node group beyond the cluster quota, and names the quota and how to raise it', () => {
    const caps = capByQuotas(
      [
        compute('a', { hasGroup: true, currentNodes: 1, neededNodes: 1 }),
        compute('b', { neededNodes: 1 }),
        compute('c', { neededNodes: 2 }),
      ],
      (q) => (q.code === NODEGROUPS_PER_CLUSTER.code ? 2 : undefined),
    );
    expect(caps.has('b')).toBe(false);
    expect(caps.get('c')?.allowedNodes).toBe(0);
    expect(caps.get('c')?.reason).toMatch(/Managed node groups per cluster" \(L-6D54EA21\) of 2/);
    expect(caps.get('c')?.reason).toMatch(
      /request-service-quota-increase --service-code eks --quota-code L-6D54EA21/,
    );
  });

  it('grants nodes within the vCPU quota of their class after the running ones, whole nodes only', () => {
    const caps = capByQuotas(
      [
        compute('a', { hasGroup: true, currentNodes: 2, neededNodes: 2 }),
        compute('b', { hasGroup: true, currentNodes: 1, neededNodes: 4 }),
        compute('cpu', { instanceType: 'm7i.xlarge', vcpus: 4, neededNodes: 3 }),
      ],
      (q) => (q.code === 'L-DB2E81BA' ? 36 : undefined),
    );
    // 24 vCPUs run; 12 are free: one more 8-vCPU node for b, not three.
    expect(caps.get('b')).toEqual({
      allowedNodes: 2,
      reason: expect.stringMatching(
        /^2 of 4 nodes needed \(16 vCPUs of g6.2xlarge\) are beyond the account's quota "Running On-Demand G and VT instances" \(L-DB2E81BA\) of 36 vCPUs/,
      ),
    });
    expect(caps.has('a')).toBe(false);
    // An unanswered quota limits nothing.
    expect(caps.has('cpu')).toBe(false);
  });
});
