import { ComputeSpecSchema, NodeSchema } from '../../../lambdas/domain/compute';
import {
  amiTypesFor,
  DeclaredComputeSpecSchema,
  type DeclaredSpec,
  describeCostSource,
  editDistance,
  type InstanceFacts,
  priceOverrideIssue,
  resolveAmiType,
  resolveComputeSpec,
  resolveCost,
  suggestInstanceTypes,
  suggestionPatterns,
  unknownInstanceTypeIssue,
} from '../../../lambdas/domain/hardware';
import { instanceFacts, loadSnapshot, snapshotPrice } from '../../../local/cloud-sim/aws-snapshot';

const REGION = 'us-east-1';
const ADMIN = 'arn:aws:iam::123456789012:role/PlatformAdmin';
const facts = (name: string): InstanceFacts => {
  const f = instanceFacts(name);
  if (!f) throw new Error(`${name} is not in the snapshot`);
  return f;
};
const declared = (spec: unknown): DeclaredSpec => DeclaredComputeSpecSchema.parse(spec);
const KNOWN = loadSnapshot().instanceTypes.map((t) => t.InstanceType as string);

/** What a compute write would do with a manifest's spec, against the snapshot's facts and prices. */
function resolve(spec: unknown) {
  const s = declared(spec);
  const name = s.node.instanceType;
  const f = instanceFacts(name);
  return resolveComputeSpec({
    spec: s,
    facts: f,
    nearNames: f ? [] : KNOWN,
    price: snapshotPrice(REGION, name),
    region: REGION,
    by: ADMIN,
  });
}

describe('resolving a compute from EC2 facts', () => {
  it('refuses a p5.48xlarge declared as 4 vCPUs and 16 GiB, fills in its 8 H100s, and flags its 0.01 price', () => {
    const r = resolve({
      node: { instanceType: 'p5.48xlarge', cpu: 4, memoryGb: 16 },
      cost: { perHour: 0.01 },
    });
    expect(r.issues).toEqual([
      { path: 'spec.node.cpu', message: 'p5.48xlarge has 192 vCPUs, not 4' },
      { path: 'spec.node.memoryGb', message: 'p5.48xlarge has 2048 GiB of memory (2097152 MiB), not 16' },
    ]);
    // What no GPU quota counted today: the GPUs are there whether the manifest says so or not.
    expect(r.spec?.node.gpu).toEqual({ type: 'H100', count: 8, memoryGb: 80, resource: 'nvidia.com/gpu' });
    expect(r.priceOverride).toBe(true);
    expect(r.costSource).toEqual({ kind: 'set', by: ADMIN, onDemandPerHour: 55.04 });
  });

  it('reports every disagreement at once, each with a stable path and the true value', () => {
    const r = resolve({
      node: {
        instanceType: 'g6.2xlarge',
        cpu: 16,
        memoryGb: 64,
        gpu: { type: 'A100', count: 2, memoryGb: 40 },
        amiType: 'AL2023_x86_64_STANDARD',
        capacityType: 'CAPACITY_BLOCK',
      },
    });
    expect(r.issues.map((i) => i.path)).toEqual([
      'spec.node.cpu',
      'spec.node.memoryGb',
      'spec.node.gpu.type',
      'spec.node.gpu.count',
      'spec.node.gpu.memoryGb',
      'spec.node.capacityType',
      'spec.node.amiType',
    ]);
    expect(r.issues.map((i) => i.message)).toEqual([
      'g6.2xlarge has 8 vCPUs, not 16',
      'g6.2xlarge has 32 GiB of memory (32768 MiB), not 64',
      'g6.2xlarge has L4 GPUs, not A100',
      'g6.2xlarge has 1 L4 GPUs, not 2',
      "g6.2xlarge's L4 GPUs have 22888 MiB each (24 GB, 22.4 GiB), not 40",
      'g6.2xlarge is not sold as CAPACITY_BLOCK (EC2 offers it as on-demand, spot)',
      'g6.2xlarge has 1 × L4 on x86_64: use AL2023_x86_64_NVIDIA or BOTTLEROCKET_x86_64_NVIDIA, not AL2023_x86_64_STANDARD',
    ]);
  });

  it('fills every field a manifest leaves out from the instance type and the on-demand price', () => {
    const r = resolve({ node: { instanceType: 'g6e.12xlarge' } });
    expect(r.issues).toEqual([]);
    expect(r.priceOverride).toBe(false);
    expect(r.spec).toEqual({
      node: {
        instanceType: 'g6e.12xlarge',
        cpu: 48,
        memoryGb: 384,
        gpu: { type: 'L40S', count: 4, memoryGb: 44.7, resource: 'nvidia.com/gpu' },
        diskSizeGb: 100,
        capacityType: 'ON_DEMAND',
        amiType: 'AL2023_x86_64_NVIDIA',
      },
      nodeGroup: { maxNodes: 4 },
      cost: { perHour: 10.49264, currency: 'USD' },
    });
    expect(r.costSource).toMatchObject({ kind: 'on-demand', region: REGION });
    expect(describeCostSource(r.costSource!)).toBe('on-demand price in us-east-1');
  });

  it("takes GPU types in any case and GPU memory in the vendor's GB or in GiB, storing EC2's names", () => {
    for (const memoryGb of [24, 22]) {
      const r = resolve({ node: { instanceType: 'g6.2xlarge', gpu: { type: 'l4', count: 1, memoryGb } } });
      expect(r.issues).toEqual([]);
      expect(r.spec?.node.gpu).toEqual({ type: 'L4', count: 1, memoryGb, resource: 'nvidia.com/gpu' });
    }
    expect(resolve({ node: { instanceType: 'p5en.48xlarge', gpu: { memoryGb: 141 } } }).issues).toEqual([]);
    expect(resolve({ node: { instanceType: 'g5g.xlarge' } }).spec?.node.gpu?.type).toBe('T4g');
  });

  it('refuses a GPU on an instance type that has none', () => {
    expect(resolve({ node: { instanceType: 'm7i.xlarge', gpu: { type: 'L4' } } }).issues).toEqual([
      { path: 'spec.node.gpu', message: 'm7i.xlarge has no GPU or Neuron device: remove spec.node.gpu' },
    ]);
  });

  it("counts a Neuron type's devices as its accelerators, with the Neuron AMI and resource", () => {
    const r = resolve({ node: { instanceType: 'trn1.32xlarge' } });
    expect(r.issues).toEqual([]);
    expect(r.spec?.node).toMatchObject({
      cpu: 128,
      memoryGb: 512,
      gpu: { type: 'Trainium', count: 16, memoryGb: 32, resource: 'aws.amazon.com/neuron' },
      amiType: 'AL2023_x86_64_NEURON',
    });
  });

  it('refuses an NVIDIA AMI on a Neuron type', () => {
    const r = resolve({ node: { instanceType: 'inf2.xlarge', amiType: 'AL2023_x86_64_NVIDIA' } });
    expect(r.issues).toEqual([
      {
        path: 'spec.node.amiType',
        message:
          'inf2.xlarge has 1 × Inferentia2 on x86_64: use AL2023_x86_64_NEURON, not AL2023_x86_64_NVIDIA',
      },
    ]);
  });

  it('refuses an x86 AMI on an arm64 type, and picks the arm64 one by default', () => {
    expect(
      resolve({ node: { instanceType: 'm7g.xlarge', amiType: 'AL2023_x86_64_STANDARD' } }).issues,
    ).toEqual([
      {
        path: 'spec.node.amiType',
        message:
          'm7g.xlarge has no GPU on arm64: use AL2023_ARM_64_STANDARD or BOTTLEROCKET_ARM_64, not AL2023_x86_64_STANDARD',
      },
    ]);
    expect(resolve({ node: { instanceType: 'm7g.xlarge' } }).spec?.node.amiType).toBe(
      'AL2023_ARM_64_STANDARD',
    );
    expect(resolve({ node: { instanceType: 'g5g.xlarge' } }).spec?.node.amiType).toBe('AL2023_ARM_64_NVIDIA');
  });

  it('refuses drivers the hardware does not need or lacks: NVIDIA on a CPU type, standard on a GPU type', () => {
    expect(resolveAmiType('AL2023_x86_64_NVIDIA', facts('m7i.xlarge')).issues[0]?.message).toBe(
      'm7i.xlarge has no GPU on x86_64: use AL2023_x86_64_STANDARD or BOTTLEROCKET_x86_64, not AL2023_x86_64_NVIDIA',
    );
    expect(resolveAmiType('BOTTLEROCKET_x86_64_NVIDIA', facts('p5.48xlarge')).issues).toEqual([]);
    const neuronOnArm: InstanceFacts = { ...facts('inf2.xlarge'), architectures: ['arm64'] };
    expect(resolveAmiType(undefined, neuronOnArm)).toEqual({
      amiType: undefined,
      issues: [
        {
          path: 'spec.node.amiType',
          message:
            'inf2.xlarge has 1 × Inferentia2 on arm64, which no EKS AMI type drives: choose another instance type',
        },
      ],
    });
    expect(amiTypesFor(facts('p5.48xlarge'))[0]).toBe('AL2023_x86_64_NVIDIA');
  });

  it('refuses accelerators llmcap cannot hand out', () => {
    const amd: InstanceFacts = {
      ...facts('g5.xlarge'),
      instanceType: 'g4ad.xlarge',
      accelerator: { kind: 'unsupported', description: 'AMD Radeon Pro V520 GPUs' },
    };
    const r = resolveComputeSpec({
      spec: declared({ node: { instanceType: 'g4ad.xlarge' } }),
      facts: amd,
      price: { region: REGION, perHour: 0.37853, currency: 'USD' },
      region: REGION,
      by: ADMIN,
    });
    expect(r.issues).toEqual([
      {
        path: 'spec.node.instanceType',
        message:
          'g4ad.xlarge has AMD Radeon Pro V520 GPUs, which llmcap cannot hand out: choose an instance type with whole NVIDIA GPUs or Neuron devices',
      },
    ]);
    expect(r.spec).toBeUndefined();
  });

  it('resolves every instance type of the snapshot from its name alone into a spec the compute schema accepts', () => {
    for (const name of KNOWN) {
      const r = resolve({ node: { instanceType: name } });
      expect({ name, issues: r.issues }).toEqual({ name, issues: [] });
      expect(ComputeSpecSchema.parse(r.spec)).toEqual(r.spec);
    }
  });
});

describe('instance type names', () => {
  it('take a hyphenated size, as bare metal types have', () => {
    for (const instanceType of ['m7i.metal-24xl', 'c7i.metal-48xl', 'p6-b200.48xlarge', 'g6.2xlarge'])
      expect(NodeSchema.safeParse({ instanceType, cpu: 96, memoryGb: 384 }).success).toBe(true);
    for (const instanceType of ['m7i.metal-', 'm7i..large', 'M7i.large', 'm7i'])
      expect(NodeSchema.safeParse({ instanceType, cpu: 96, memoryGb: 384 }).success).toBe(false);
  });
});

describe('unknown instance types', () => {
  it('suggests the nearest offered names', () => {
    expect(suggestInstanceTypes('g6.2xlage', KNOWN)).toEqual(['g6.2xlarge', 'g6.xlarge', 'g6.4xlarge']);
    expect(suggestInstanceTypes('g6.2xlrage', KNOWN)[0]).toBe('g6.2xlarge');
    expect(suggestInstanceTypes('gg6.2xlarge', KNOWN)[0]).toBe('g6.2xlarge');
    expect(suggestInstanceTypes('p5.49xlarge', KNOWN)[0]).toBe('p5.48xlarge');
    expect(suggestInstanceTypes('zz9.nothing', KNOWN)).toEqual([]);
  });

  it('is one issue on spec.node.instanceType that names them', () => {
    const r = resolve({ node: { instanceType: 'g6.2xlage', cpu: 8 }, cost: { perHour: 1 } });
    expect(r.spec).toBeUndefined();
    expect(r.issues).toEqual([
      {
        path: 'spec.node.instanceType',
        message:
          'g6.2xlage is not an instance type EC2 offers in us-east-1: did you mean g6.2xlarge, g6.xlarge or g6.4xlarge?',
      },
    ]);
    expect(unknownInstanceTypeIssue('zz9.nothing', REGION, KNOWN).message).toBe(
      'zz9.nothing is not an instance type EC2 offers in us-east-1: list the offered ones with aws ec2 describe-instance-types',
    );
  });

  it('asks EC2 for its family and its size, so that a typo in either half is found', () => {
    expect(suggestionPatterns('g6.2xlage')).toEqual(['g6.*', '*.2xlage']);
    expect(suggestionPatterns('gg6.2xlarge')).toEqual(['gg6.*', '*.2xlarge']);
    expect(suggestionPatterns('g*6')).toEqual(['g6.*']);
  });

  it('counts an adjacent swap as one edit', () => {
    expect(editDistance('g6.2xlrage', 'g6.2xlarge')).toBe(1);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('m7i.large', 'm7i.large')).toBe(0);
  });
});

describe('the cost', () => {
  const price = {
    region: REGION,
    perHour: 2.24208,
    currency: 'USD' as const,
    effectiveDate: '2026-07-20T13:44:30Z',
  };
  const ctx = { instanceType: 'g6e.2xlarge', region: REGION, by: ADMIN };

  it('defaults to the on-demand price, and a declared equal one is not an override', () => {
    expect(resolveCost(undefined, price, ctx)).toMatchObject({
      cost: { perHour: 2.24208, currency: 'USD' },
      source: { kind: 'on-demand', region: REGION, effectiveDate: '2026-07-20T13:44:30Z' },
      priceOverride: false,
    });
    expect(resolveCost({ perHour: 2.2420800000001 }, price, ctx).priceOverride).toBe(false);
  });

  it('is an override recorded with who set it when it differs', () => {
    const r = resolveCost({ perHour: 1.5 }, price, ctx);
    expect(r).toMatchObject({ cost: { perHour: 1.5, currency: 'USD' }, priceOverride: true, issues: [] });
    expect(describeCostSource(r.source!)).toBe(`set by ${ADMIN} (on-demand is 2.24208 USD/h)`);
    expect(priceOverrideIssue(1.5, price, 'g6e.2xlarge')).toEqual({
      path: 'spec.cost.perHour',
      message:
        'only a platform admin may set a price (1.5 USD/h); the on-demand price of g6e.2xlarge in us-east-1 is 2.24208 USD/h: leave spec.cost out to use it',
    });
  });

  it('must be set by an admin where AWS lists no on-demand price', () => {
    expect(resolveCost(undefined, undefined, ctx).issues).toEqual([
      {
        path: 'spec.cost.perHour',
        message:
          "AWS's price list has no on-demand Linux price for g6e.2xlarge in us-east-1: a platform admin must set spec.cost.perHour",
      },
    ]);
    expect(resolveCost({ perHour: 3 }, undefined, ctx)).toMatchObject({
      priceOverride: true,
      source: { kind: 'set', by: ADMIN },
    });
  });
});

describe('the declared spec schema', () => {
  it('needs only the instance type, and stays strict', () => {
    expect(declared({ node: { instanceType: 'g6.2xlarge' } })).toEqual({
      node: { instanceType: 'g6.2xlarge', diskSizeGb: 100, capacityType: 'ON_DEMAND' },
      nodeGroup: { maxNodes: 4 },
    });
    expect(
      DeclaredComputeSpecSchema.safeParse({ node: { instanceType: 'g6.2xlarge', vcpus: 8 } }).success,
    ).toBe(false);
    // No default resource: it follows the accelerator.
    expect(declared({ node: { instanceType: 'inf2.xlarge', gpu: {} } }).node.gpu).toEqual({});
  });
});
