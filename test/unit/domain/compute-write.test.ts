import { DomainError } from '../../../lambdas/domain/errors';
import { DeclaredComputeSpecSchema, decideComputeSpec, familyLimits } from '../../../lambdas/domain/hardware';
import { instanceFacts, snapshotPrice } from '../../../local/cloud-sim/aws-snapshot';

/** decideComputeSpec: the write rules on top of resolveComputeSpec (price overrides, subnets, families). */

const facts = (t: string) => ({
  facts: instanceFacts(t),
  price: snapshotPrice('us-east-1', t),
  nearNames: [],
  region: 'us-east-1',
  subnets: ['subnet-0a1b2c3d4e5f60001'],
});
const tenant = { by: 'alice', isPlatformAdmin: false };
const issuesOf = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    if (e instanceof DomainError && e.kind === 'invalid') return e.details.errors?.map((i) => i.path);
    throw e;
  }
  return [];
};

describe('decideComputeSpec', () => {
  it('refuses every lie of a p5.48xlarge at once', () => {
    const spec = DeclaredComputeSpecSchema.parse({
      node: { instanceType: 'p5.48xlarge', cpu: 4, memoryGb: 16 },
      nodeGroup: { maxNodes: 1, subnetIds: ['subnet-0123456789abcdef0'] },
      cost: { perHour: 0.01 },
    });
    expect(issuesOf(() => decideComputeSpec(spec, facts('p5.48xlarge'), tenant))?.sort()).toEqual([
      'spec.cost.perHour',
      'spec.node.cpu',
      'spec.node.memoryGb',
      'spec.nodeGroup.subnetIds',
    ]);
  });

  it('applies every family list up the tree', () => {
    const scopes = [
      { name: 'org:a', instanceFamilies: ['g6', 'm7i'] },
      { name: 'team:b', parent: 'org:a', instanceFamilies: ['g6', 'p5'] },
      { name: 'project:c', parent: 'team:b' },
    ];
    const limits = familyLimits('project:c', scopes);
    expect(limits.map((l) => l.scope)).toEqual(['team:b', 'org:a']);
    const spec = (t: string) => DeclaredComputeSpecSchema.parse({ node: { instanceType: t } });
    const f = (t: string) => ({ ...facts(t), families: limits });
    expect(decideComputeSpec(spec('g6.xlarge'), f('g6.xlarge'), tenant).costSource.kind).toBe('on-demand');
    expect(issuesOf(() => decideComputeSpec(spec('p5.4xlarge'), f('p5.4xlarge'), tenant))).toEqual([
      'spec.node.instanceType',
    ]);
    expect(familyLimits(undefined, scopes)).toEqual([]);
  });

  it('lets a platform admin set a price, recording the on-demand one beside it', () => {
    const spec = DeclaredComputeSpecSchema.parse({
      node: { instanceType: 'g6.2xlarge' },
      cost: { perHour: 0.5 },
    });
    const r = decideComputeSpec(spec, facts('g6.2xlarge'), { by: 'admin', isPlatformAdmin: true });
    expect(r.costSource).toEqual({ kind: 'set', by: 'admin', onDemandPerHour: 0.9776 });
  });
});
