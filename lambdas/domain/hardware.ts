import * as z from 'zod';
import {
  type AMI_TYPES,
  type CAPACITY_TYPES,
  ComputeManifestInput,
  type ComputeSpec,
  CostSchema,
  type CostSourceRecord,
  GpuSchema,
  NodeGroupSchema,
  NodeSchema,
} from './compute';
import { type FieldIssue, invalid } from './errors';
import { type RuleIssue, refineWith, repeats } from './rules';

/**
 * What AWS says an instance type is, and the rules that turn a compute's manifest into the spec llmcap stores.
 * The manifest may leave the hardware out; what it gives must agree with EC2 (DescribeInstanceTypes), the AMI
 * must drive the hardware, and the cost defaults to the region's on-demand price (the Price List API). Pure:
 * the facts come from lambdas/aws/hardware.ts in AWS and from the cloud simulator's snapshot locally.
 */

export type Architecture = 'x86_64' | 'arm64';
export type UsageClass = 'on-demand' | 'spot' | 'capacity-block';
export type AmiType = (typeof AMI_TYPES)[number];
export type CapacityType = (typeof CAPACITY_TYPES)[number];

/** The accelerators of one node. Memory is per device, in MiB as EC2 reports it. */
export type Accelerator =
  | { kind: 'none' }
  | { kind: 'nvidia'; name: string; count: number; memoryMiB: number }
  | { kind: 'neuron'; name: string; devices: number; coresPerDevice: number; memoryMiB: number }
  /** Accelerators llmcap cannot hand out: another maker's GPUs (no EKS AMI drives them), a share of a GPU. */
  | { kind: 'unsupported'; description: string };

export interface InstanceFacts {
  instanceType: string;
  vcpus: number;
  memoryMiB: number;
  architectures: Architecture[];
  accelerator: Accelerator;
  bareMetal: boolean;
  usageClasses: UsageClass[];
  /** For the pods a node can hold (VPC CNI: ENIs × (IPv4 per ENI − 1) + 2); absent when EC2 did not say. */
  network?: { maxInterfaces: number; ipv4PerInterface: number };
}

export interface OnDemandPrice {
  region: string;
  perHour: number;
  currency: 'USD';
  /** When AWS's price took effect, if the price list says. */
  effectiveDate?: string;
}

/** Where a compute's cost comes from, for its status ("on-demand price" or "set by <who>"). */
export type CostSource = CostSourceRecord;

const NVIDIA_RESOURCE = 'nvidia.com/gpu';
const NEURON_RESOURCE = 'aws.amazon.com/neuron';

// ---------------------------------------------------------------------------------------------- the manifest

/**
 * The node as a manifest may declare it: only the instance type is required; the hardware, when given, is
 * checked against EC2. The schema for compute writes once they resolve against the facts.
 */
export const DeclaredGpuSchema = GpuSchema.partial({ type: true, count: true, memoryGb: true }).extend({
  // No default here: the resource follows the accelerator (nvidia.com/gpu or aws.amazon.com/neuron).
  resource: GpuSchema.shape.resource.unwrap().optional(),
});
export const DeclaredNodeSchema = NodeSchema.partial({ cpu: true, memoryGb: true }).extend({
  gpu: DeclaredGpuSchema.optional(),
});
/** A subnet listed twice, at its second place, naming the first (paths relative to the spec). */
export function subnetListIssues(spec: unknown): RuleIssue[] {
  const ids = (spec as { nodeGroup?: { subnetIds?: unknown } })?.nodeGroup?.subnetIds;
  if (!Array.isArray(ids)) return [];
  return repeats(ids, (s) => (typeof s === 'string' ? s : undefined)).map(({ index, first, key }) => ({
    path: ['nodeGroup', 'subnetIds', index],
    message: `${key} repeats spec.nodeGroup.subnetIds[${first}]; list each subnet once`,
  }));
}

export const DeclaredComputeSpecSchema = z
  .strictObject({
    node: DeclaredNodeSchema,
    nodeGroup: NodeGroupSchema.default({ maxNodes: 4 }),
    cost: CostSchema.partial({ perHour: true }).optional(),
  })
  .superRefine(...refineWith(subnetListIssues));
export type DeclaredSpec = z.output<typeof DeclaredComputeSpecSchema>;
export type DeclaredNode = DeclaredSpec['node'];

// ------------------------------------------------------------------------------------------------ the facts

/**
 * How llmcap names a GPU type: EC2's name (L4, A10G, L40S, H100, T4g, Trainium, Inferentia2), without a maker's
 * prefix and with hyphens for spaces, so that it passes the gpu.type pattern. Profiles compare it without case.
 */
export function gpuTypeName(ec2Name: string): string {
  return ec2Name
    .trim()
    .replace(/^nvidia\s+/i, '')
    .replace(/\s+/g, '-');
}

/** The architecture a node runs: x86_64 when EC2 offers it (some types list i386 too), else arm64. */
export function architectureOf(f: Pick<InstanceFacts, 'architectures'>): Architecture {
  return f.architectures.includes('x86_64') || !f.architectures.includes('arm64') ? 'x86_64' : 'arm64';
}

const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places;

/** GiB as llmcap writes memory, from EC2's MiB. */
export const gib = (mib: number) => round(mib / 1024, 2);

/**
 * A GPU's memory in GiB, to one decimal. EC2 reports some GPUs' memory as the vendor's decimal gigabytes
 * converted to MiB (an L4's 24 GB is 22888 MiB, 22.4 GiB) and others in binary units (an H100's 80 GiB is
 * 81920 MiB), so a declared value is accepted when it matches either reading (gpuMemoryAgrees).
 */
export const gpuGib = (mib: number) => round(mib / 1024, 1);
const vendorGb = (mib: number) => (mib * 2 ** 20) / 1e9;

export function gpuMemoryAgrees(declaredGb: number, mib: number): boolean {
  return Math.abs(declaredGb - mib / 1024) < 0.5 || Math.abs(declaredGb - vendorGb(mib)) < 0.5;
}

/** "22888 MiB each (24 GB, 22.4 GiB)" or "81920 MiB each (80 GiB)": the numbers a person can check. */
function gpuMemoryWords(mib: number): string {
  const g = vendorGb(mib);
  const decimal = Math.abs(g - Math.round(g)) < 0.01 && mib % 1024 !== 0 ? `${Math.round(g)} GB, ` : '';
  return `${mib} MiB each (${decimal}${gpuGib(mib)} GiB)`;
}

/** The usage class EC2 lists for a capacity type. */
export const USAGE_CLASS: Record<CapacityType, UsageClass> = {
  ON_DEMAND: 'on-demand',
  SPOT: 'spot',
  CAPACITY_BLOCK: 'capacity-block',
};

// -------------------------------------------------------------------------------------- unknown instance types

/** Edit distance with adjacent transpositions (optimal string alignment): `g6.2xlrage` is one edit away. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** `g6e.2xlarge` → { family: 'g6e', size: '2xlarge' }. */
export function splitInstanceType(name: string): { family: string; size: string } {
  const dot = name.indexOf('.');
  return dot < 0 ? { family: name, size: '' } : { family: name.slice(0, dot), size: name.slice(dot + 1) };
}

/**
 * The EC2 instance-type filter values that find the names near a misspelt one: its family's sizes and its size
 * in every family (one DescribeInstanceTypes, values OR'd), so a typo in either half still finds the other.
 */
export function suggestionPatterns(name: string): string[] {
  const { family, size } = splitInstanceType(name);
  const safe = (s: string) => s.replace(/[*?\\]/g, '');
  const out = [`${safe(family)}.*`];
  if (size) out.push(`*.${safe(size)}`);
  return out;
}

/**
 * Up to `max` known names nearest to a misspelt one: fewest edits, then the same family, then the closest in
 * length, then by name.
 */
export function suggestInstanceTypes(name: string, known: readonly string[], max = 3): string[] {
  const { family } = splitInstanceType(name);
  const limit = Math.max(2, Math.floor(name.length / 4));
  return [...new Set(known)]
    .filter((k) => k !== name)
    .map((k) => ({
      k,
      d: editDistance(name, k),
      same: splitInstanceType(k).family === family,
      len: Math.abs(k.length - name.length),
    }))
    .filter((c) => c.d <= limit)
    .sort(
      (a, b) =>
        a.d - b.d || Number(b.same) - Number(a.same) || a.len - b.len || (a.k < b.k ? -1 : a.k > b.k ? 1 : 0),
    )
    .slice(0, max)
    .map((c) => c.k);
}

const orList = (xs: string[]) =>
  xs.length <= 1 ? xs.join('') : `${xs.slice(0, -1).join(', ')} or ${xs.at(-1)}`;

/** The issue for an instance type EC2 does not offer in the region, with the nearest names it does. */
export function unknownInstanceTypeIssue(name: string, region: string, known: readonly string[]): FieldIssue {
  const near = suggestInstanceTypes(name, known);
  const hint = near.length
    ? `did you mean ${orList(near)}?`
    : 'list the offered ones with aws ec2 describe-instance-types';
  return {
    path: 'spec.node.instanceType',
    message: `${name} is not an instance type EC2 offers in ${region}: ${hint}`,
  };
}

// ----------------------------------------------------------------------------------------------- the node

export type ResolvedNode = ComputeSpec['node'];

function acceleratorWords(a: Accelerator): string {
  switch (a.kind) {
    case 'none':
      return 'no GPU or Neuron device';
    case 'nvidia':
      return `${a.count} × ${a.name}`;
    case 'neuron':
      return `${a.devices} × ${a.name}`;
    case 'unsupported':
      return a.description;
  }
}

/**
 * The node's hardware from EC2's facts: what the manifest left out is filled in, what it gives must agree
 * (cpu, memoryGb, gpu type, count and memory), each disagreement an issue naming the true value. GPU type
 * and memory come from EC2; a Neuron type's devices are its `gpu` (resource aws.amazon.com/neuron), so that
 * quotas count them as they count GPUs.
 */
export function resolveNode(
  node: DeclaredNode,
  facts: InstanceFacts,
): { node: Omit<ResolvedNode, 'amiType'>; issues: FieldIssue[] } {
  const issues: FieldIssue[] = [];
  const t = facts.instanceType;
  const memoryGb = gib(facts.memoryMiB);
  if (node.cpu !== undefined && node.cpu !== facts.vcpus)
    issues.push({ path: 'spec.node.cpu', message: `${t} has ${facts.vcpus} vCPUs, not ${node.cpu}` });
  if (node.memoryGb !== undefined && Math.abs(node.memoryGb - facts.memoryMiB / 1024) >= 0.005)
    issues.push({
      path: 'spec.node.memoryGb',
      message: `${t} has ${memoryGb} GiB of memory (${facts.memoryMiB} MiB), not ${node.memoryGb}`,
    });

  const a = facts.accelerator;
  let gpu: ResolvedNode['gpu'];
  if (a.kind === 'none') {
    if (node.gpu)
      issues.push({
        path: 'spec.node.gpu',
        message: `${t} has no GPU or Neuron device: remove spec.node.gpu`,
      });
  } else if (a.kind === 'unsupported') {
    issues.push({
      path: 'spec.node.instanceType',
      message: `${t} has ${a.description}, which llmcap cannot hand out: choose an instance type with whole NVIDIA GPUs or Neuron devices`,
    });
  } else {
    const count = a.kind === 'nvidia' ? a.count : a.devices;
    const type = gpuTypeName(a.name);
    const g = node.gpu ?? {};
    if (g.type !== undefined && g.type.toUpperCase() !== type.toUpperCase())
      issues.push({ path: 'spec.node.gpu.type', message: `${t} has ${type} ${unit(a)}, not ${g.type}` });
    if (g.count !== undefined && g.count !== count)
      issues.push({
        path: 'spec.node.gpu.count',
        message: `${t} has ${count} ${type} ${unit(a)}, not ${g.count}`,
      });
    const memoryOk = g.memoryGb === undefined || gpuMemoryAgrees(g.memoryGb, a.memoryMiB);
    if (!memoryOk)
      issues.push({
        path: 'spec.node.gpu.memoryGb',
        message: `${t}'s ${type} ${unit(a)} have ${gpuMemoryWords(a.memoryMiB)}, not ${g.memoryGb}`,
      });
    gpu = {
      type,
      count,
      memoryGb: g.memoryGb !== undefined && memoryOk ? g.memoryGb : gpuGib(a.memoryMiB),
      resource: g.resource ?? (a.kind === 'nvidia' ? NVIDIA_RESOURCE : NEURON_RESOURCE),
    };
  }
  const capacityType = node.capacityType ?? 'ON_DEMAND';
  issues.push(...capacityTypeIssues(capacityType, facts));
  return {
    node: {
      instanceType: t,
      cpu: facts.vcpus,
      memoryGb,
      ...(gpu ? { gpu } : {}),
      diskSizeGb: node.diskSizeGb ?? 100,
      capacityType,
    },
    issues,
  };
}

const unit = (a: Accelerator) => (a.kind === 'neuron' ? 'Neuron devices' : 'GPUs');

/** A capacity type the instance type is not sold as (EC2's SupportedUsageClasses) is an issue. */
export function capacityTypeIssues(capacityType: CapacityType, facts: InstanceFacts): FieldIssue[] {
  if (facts.usageClasses.includes(USAGE_CLASS[capacityType])) return [];
  return [
    {
      path: 'spec.node.capacityType',
      message: `${facts.instanceType} is not sold as ${capacityType} (EC2 offers it as ${facts.usageClasses.join(', ') || 'nothing'})`,
    },
  ];
}

// ------------------------------------------------------------------------------------------------- the AMI

/**
 * The AMI types that drive an instance type's hardware, the default first: NVIDIA drivers for NVIDIA GPUs,
 * the Neuron driver for Inferentia and Trainium (AL2023 only), the standard AMI otherwise; each for the
 * node's architecture. Bottlerocket's variants are allowed where EKS has them.
 */
export function amiTypesFor(facts: Pick<InstanceFacts, 'architectures' | 'accelerator'>): AmiType[] {
  const arm = architectureOf(facts) === 'arm64';
  switch (facts.accelerator.kind) {
    case 'nvidia':
      return arm
        ? ['AL2023_ARM_64_NVIDIA', 'BOTTLEROCKET_ARM_64_NVIDIA']
        : ['AL2023_x86_64_NVIDIA', 'BOTTLEROCKET_x86_64_NVIDIA'];
    case 'neuron':
      return arm ? [] : ['AL2023_x86_64_NEURON'];
    case 'unsupported':
      return [];
    case 'none':
      return arm
        ? ['AL2023_ARM_64_STANDARD', 'BOTTLEROCKET_ARM_64']
        : ['AL2023_x86_64_STANDARD', 'BOTTLEROCKET_x86_64'];
  }
}

/** The declared AMI type if it fits the hardware (an issue naming the ones that do if not), else the default. */
export function resolveAmiType(
  declared: AmiType | undefined,
  facts: InstanceFacts,
): { amiType: AmiType | undefined; issues: FieldIssue[] } {
  const fits = amiTypesFor(facts);
  const hardware =
    facts.accelerator.kind === 'none'
      ? `no GPU on ${architectureOf(facts)}`
      : `${acceleratorWords(facts.accelerator)} on ${architectureOf(facts)}`;
  if (fits.length === 0) {
    // Unsupported accelerators are resolveNode's issue; anything else without an AMI type is this one's.
    if (facts.accelerator.kind === 'unsupported') return { amiType: undefined, issues: [] };
    const message = `${facts.instanceType} has ${hardware}, which no EKS AMI type drives: choose another instance type`;
    return { amiType: undefined, issues: [{ path: 'spec.node.amiType', message }] };
  }
  if (declared === undefined) return { amiType: fits[0], issues: [] };
  if (fits.includes(declared)) return { amiType: declared, issues: [] };
  return {
    amiType: declared,
    issues: [
      {
        path: 'spec.node.amiType',
        message: `${facts.instanceType} has ${hardware}: use ${orList(fits)}, not ${declared}`,
      },
    ],
  };
}

// ------------------------------------------------------------------------------------------------ the cost

/** Prices in the price list have up to 10 decimals; a manifest's 2.24208 is the list's 2.2420800000. */
const samePrice = (a: number, b: number) => Math.abs(a - b) < 5e-7;

/**
 * The cost: the region's on-demand price unless the manifest sets another, which is a price override that
 * only a platform admin may make (the caller checks who asks; `priceOverride` tells it to). A type with no
 * on-demand price in the region needs a set price.
 */
export function resolveCost(
  declared: { perHour?: number; currency?: 'USD' } | undefined,
  price: OnDemandPrice | undefined,
  ctx: { instanceType: string; region: string; by: string },
): {
  cost: ComputeSpec['cost'] | undefined;
  source: CostSource | undefined;
  priceOverride: boolean;
  issues: FieldIssue[];
} {
  const perHour = declared?.perHour;
  if (perHour === undefined) {
    if (price) {
      const source: CostSource = {
        kind: 'on-demand',
        region: price.region,
        ...(price.effectiveDate ? { effectiveDate: price.effectiveDate } : {}),
      };
      return {
        cost: { perHour: price.perHour, currency: price.currency },
        source,
        priceOverride: false,
        issues: [],
      };
    }
    return {
      cost: undefined,
      source: undefined,
      priceOverride: false,
      issues: [
        {
          path: 'spec.cost.perHour',
          message: `AWS's price list has no on-demand Linux price for ${ctx.instanceType} in ${ctx.region}: a platform admin must set spec.cost.perHour`,
        },
      ],
    };
  }
  if (price && samePrice(perHour, price.perHour))
    return {
      cost: { perHour: price.perHour, currency: price.currency },
      source: {
        kind: 'on-demand',
        region: price.region,
        ...(price.effectiveDate ? { effectiveDate: price.effectiveDate } : {}),
      },
      priceOverride: false,
      issues: [],
    };
  return {
    cost: { perHour, currency: declared?.currency ?? 'USD' },
    source: { kind: 'set', by: ctx.by, ...(price ? { onDemandPerHour: price.perHour } : {}) },
    priceOverride: true,
    issues: [],
  };
}

/** The words a compute's status shows for its cost. */
export function describeCostSource(s: CostSource): string {
  if (s.kind === 'on-demand') return `on-demand price in ${s.region}`;
  const od = s.onDemandPerHour === undefined ? '' : ` (on-demand is ${s.onDemandPerHour} USD/h)`;
  return `set by ${s.by}${od}`;
}

/** Why a price override was refused, for a caller that is not a platform admin. */
export function priceOverrideIssue(
  declared: number,
  price: OnDemandPrice | undefined,
  instanceType: string,
): FieldIssue {
  const od = price
    ? `the on-demand price of ${instanceType} in ${price.region} is ${price.perHour} USD/h`
    : `${instanceType} has no on-demand price here`;
  return {
    path: 'spec.cost.perHour',
    message: `only a platform admin may set a price (${declared} USD/h); ${od}: leave spec.cost out to use it`,
  };
}

// --------------------------------------------------------------------------------------------- all at once

export interface ResolveInput {
  spec: DeclaredSpec;
  /** undefined: EC2 does not offer the instance type in the region. */
  facts: InstanceFacts | undefined;
  /** Names near the declared one (see suggestionPatterns), for an unknown type's suggestions. */
  nearNames?: readonly string[];
  price: OnDemandPrice | undefined;
  region: string;
  /** Who writes the compute: recorded when the price is set rather than on-demand. */
  by: string;
}

export interface ResolveResult {
  /** Every field filled; undefined when the instance type is unknown or the cost cannot be had. */
  spec: ComputeSpec | undefined;
  costSource: CostSource | undefined;
  /** True when the manifest sets a price other than on-demand: allowed to platform admins only. */
  priceOverride: boolean;
  /** Every issue at once; a caller answers 400 with them all, or stores `spec` when there are none. */
  issues: FieldIssue[];
}

/** A compute's spec from its manifest and what AWS says: the node, the AMI type and the cost, every issue. */
export function resolveComputeSpec(input: ResolveInput): ResolveResult {
  const { spec, facts, region } = input;
  if (!facts)
    return {
      spec: undefined,
      costSource: undefined,
      priceOverride: false,
      issues: [unknownInstanceTypeIssue(spec.node.instanceType, region, input.nearNames ?? [])],
    };
  const node = resolveNode(spec.node, facts);
  const ami = resolveAmiType(spec.node.amiType, facts);
  const cost = resolveCost(spec.cost, input.price, {
    instanceType: facts.instanceType,
    region,
    by: input.by,
  });
  const issues = [...node.issues, ...ami.issues, ...cost.issues];
  const resolved: ComputeSpec | undefined =
    ami.amiType && cost.cost
      ? { node: { ...node.node, amiType: ami.amiType }, nodeGroup: spec.nodeGroup, cost: cost.cost }
      : undefined;
  return { spec: resolved, costSource: cost.source, priceOverride: cost.priceOverride, issues };
}

// ------------------------------------------------------------------------------------------ the built-ins

/** Where the built-in computes are declared; named in every refusal of them. */
export const BUILTINS_FILE = 'config/computes.yaml';

/** config/computes.yaml does not match what AWS says: the built-ins cannot be loaded until the file is fixed. */
export class BuiltinsInvalid extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BuiltinsInvalid';
  }
}

/**
 * The built-in computes as stored: each one of config/computes.yaml resolved against what AWS says of its
 * instance type, exactly as a compute write is (the file may leave the facts out; a price it sets is a platform
 * decision, recorded as set by the file; without one the region's on-demand price). Any disagreement refuses
 * them all, naming the file, each compute and the true values, so a wrong file fails where it is loaded
 * (the start, the API's first request, the reconcile pass) instead of filling quotas and cost reports with it.
 */
export function resolveBuiltins(
  declared: readonly { name: string; spec: DeclaredSpec }[],
  found: readonly Pick<ComputeWriteFacts, 'facts' | 'price' | 'nearNames'>[],
  region: string,
): { name: string; spec: ComputeSpec; costSource: CostSource }[] {
  const out: { name: string; spec: ComputeSpec; costSource: CostSource }[] = [];
  const problems: string[] = [];
  declared.forEach((b, i) => {
    const r = resolveComputeSpec({ spec: b.spec, ...found[i]!, region, by: BUILTINS_FILE });
    if (r.issues.length || !r.spec || !r.costSource)
      problems.push(`${b.name}: ${r.issues.map((x) => `${x.path}: ${x.message}`).join('; ')}`);
    else out.push({ name: b.name, spec: r.spec, costSource: r.costSource });
  });
  if (problems.length)
    throw new BuiltinsInvalid(
      `${BUILTINS_FILE} does not match what AWS says in ${region} (EC2 DescribeInstanceTypes, the Price List): ${problems.join(' | ')}. Fix the file: leave cpu, memoryGb, gpu and cost out to take AWS's values`,
    );
  return out;
}

// ------------------------------------------------------------------------------------------ a compute write

/** A compute's manifest as POST and PUT /v1/computes take it: the hardware may be left out (DeclaredSpec). */
export const DeclaredComputeManifestSchema = ComputeManifestInput.extend({ spec: DeclaredComputeSpecSchema });
export type DeclaredComputeManifest = z.output<typeof DeclaredComputeManifestSchema>;

export interface ComputeWriteFacts {
  /** What AWS says (the adapter's lookup): undefined facts when EC2 does not offer the type in the region. */
  facts: InstanceFacts | undefined;
  price: OnDemandPrice | undefined;
  nearNames: readonly string[];
  region: string;
  /** The subnets a node group may use: the stage's, else the cluster's (EKS DescribeCluster). */
  subnets: readonly string[];
  /** The lists of instance families the owner scope and the scopes above it allow; each must allow the type. */
  families?: readonly { scope: string; allowed: readonly string[] }[];
}

/**
 * The spec llmcap stores for a compute write, and where its cost comes from: the manifest resolved against what
 * AWS says, a price other than on-demand only from a platform admin, subnets only the stage's (or cluster's),
 * and only the families the owner scope may use. Every issue at once, as one 400; nothing is written then.
 */
export function decideComputeSpec(
  spec: DeclaredSpec,
  f: ComputeWriteFacts,
  who: { by: string; isPlatformAdmin: boolean },
): { spec: ComputeSpec; costSource: CostSource } {
  const r = resolveComputeSpec({ spec, ...f, by: who.by });
  const issues = [...r.issues];
  if (r.priceOverride && !who.isPlatformAdmin && spec.cost?.perHour !== undefined)
    issues.push(priceOverrideIssue(spec.cost.perHour, f.price, spec.node.instanceType));
  issues.push(...subnetIssues(spec.nodeGroup.subnetIds, f.subnets));
  for (const limit of f.families ?? []) issues.push(...familyIssues(spec.node.instanceType, limit));
  if (issues.length || !r.spec || !r.costSource)
    throw invalid(
      `the compute does not match what AWS says of ${spec.node.instanceType}, or breaks a rule: fix every field listed`,
      issues,
    );
  return { spec: r.spec, costSource: r.costSource };
}

/**
 * What EC2 says of the node alone, for a manifest refused on other fields (maxNodes out of range, say): those
 * issues and these are answered together, so that every fault comes back at once, as a model's do.
 */
export function nodeFactIssues(
  node: DeclaredNode,
  f: Pick<ComputeWriteFacts, 'facts' | 'nearNames' | 'region'>,
): FieldIssue[] {
  if (!f.facts) return [unknownInstanceTypeIssue(node.instanceType, f.region, f.nearNames)];
  return [...resolveNode(node, f.facts).issues, ...resolveAmiType(node.amiType, f.facts).issues];
}

/** Subnets outside the stage's (or the cluster's) would put nodes where the cluster cannot reach them. */
export function subnetIssues(
  declared: readonly string[] | undefined,
  allowed: readonly string[],
): FieldIssue[] {
  const stray = (declared ?? []).filter((s) => !allowed.includes(s));
  if (stray.length === 0) return [];
  const hint = allowed.length
    ? `use some of ${allowed.join(', ')}, or leave spec.nodeGroup.subnetIds out for all of them`
    : 'the stage lists no subnets (LLMCAP_SUBNETS) and the cluster none: leave spec.nodeGroup.subnetIds out';
  return [
    {
      path: 'spec.nodeGroup.subnetIds',
      message: `${stray.join(', ')} ${stray.length === 1 ? 'is not one' : 'are not'} of the cluster's subnets: ${hint}`,
    },
  ];
}

/** An instance family the owner scope may not use (spec.instanceFamilies, set by a platform admin). */
export function familyIssues(
  instanceType: string,
  families: { scope: string; allowed: readonly string[] },
): FieldIssue[] {
  const { family } = splitInstanceType(instanceType);
  if (families.allowed.includes(family)) return [];
  return [
    {
      path: 'spec.node.instanceType',
      message: `${families.scope} may use the instance families ${orList([...families.allowed]) || '(none)'}, not ${family}: choose one of those, or ask a platform admin`,
    },
  ];
}

/** A scope's instance families as a platform admin sets them: EC2's family names, e.g. g6, p5, p6-b200. */
export const InstanceFamiliesSchema = z
  .array(z.string().regex(/^[a-z][a-z0-9-]{0,31}$/, 'an EC2 instance family such as g6, p5 or m7i'))
  .max(64)
  .superRefine(...refineWith(familyListIssues))
  .transform((xs) => [...xs].sort());

/** A family listed twice, at its second place, naming the first (paths relative to the list). */
export function familyListIssues(families: unknown): RuleIssue[] {
  if (!Array.isArray(families)) return [];
  return repeats(families, (f) => (typeof f === 'string' ? f : undefined)).map(({ index, first, key }) => ({
    path: [index],
    message: `${key} repeats instanceFamilies[${first}]; list each family once`,
  }));
}

/** The family lists that bind a compute owned by `owner`: its scope's and every scope's above it. */
export function familyLimits(
  owner: string | undefined,
  scopes: readonly { name: string; parent?: string; instanceFamilies?: readonly string[] }[],
): { scope: string; allowed: readonly string[] }[] {
  const byName = new Map(scopes.map((s) => [s.name, s]));
  const out: { scope: string; allowed: readonly string[] }[] = [];
  const seen = new Set<string>();
  for (
    let s = owner ? byName.get(owner) : undefined;
    s && !seen.has(s.name);
    s = s.parent ? byName.get(s.parent) : undefined
  ) {
    seen.add(s.name);
    if (s.instanceFamilies) out.push({ scope: s.name, allowed: s.instanceFamilies });
  }
  return out;
}

/**
 * The computes a new family list for `scope` would strand: those owned by the scope or a scope beneath it
 * (`within`) whose instance type's family the list leaves out. Narrowing a limit is refused while any exists
 * (409 FamilyInUse): a running compute that breaks its scope's limit is a surprise no admin asked for, and
 * every later write of it would fail; the admin deletes or changes those computes first, or keeps the family.
 * A compute already being deleted strands nothing.
 */
export function strandedComputes(
  scope: string,
  allowed: readonly string[],
  computes: readonly {
    name: string;
    owner?: string;
    deletionRequested?: boolean;
    spec: { node: { instanceType: string } };
  }[],
  within: (owner: string) => boolean,
): FieldIssue[] {
  return computes
    .filter((c) => c.owner !== undefined && !c.deletionRequested && within(c.owner))
    .map((c) => ({ c, family: splitInstanceType(c.spec.node.instanceType).family }))
    .filter(({ family }) => !allowed.includes(family))
    .sort((a, b) => a.c.name.localeCompare(b.c.name))
    .map(({ c, family }) => ({
      path: `computes.${c.name}`,
      message: `compute ${c.name} (owned by ${c.owner}) uses ${c.spec.node.instanceType}, family ${family}, which ${scope} would no longer allow: delete it or change its instance type first, or keep ${family} in the list`,
    }));
}

/** The families of a list that EC2 does not offer in the region: each an issue, so that a typo limits nobody by surprise. */
export function unknownFamilyIssues(
  families: readonly string[],
  offered: ReadonlySet<string>,
  region: string,
): FieldIssue[] {
  return families
    .map((f, i) => ({ f, i }))
    .filter(({ f }) => !offered.has(f))
    .map(({ f, i }) => ({
      path: `instanceFamilies[${i}]`,
      message: `EC2 offers no ${f} instance types in ${region}: name families such as g6, g6e, p5 or m7i`,
    }));
}
