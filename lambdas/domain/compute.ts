import * as z from 'zod';
import { retryMessage } from './create-retry';
import { asSent, labelValue } from './names';
import { COMPUTE_ID_PATTERN, incarnation, nodegroupNameOf } from './nodegroup';
import { type ComputeSupply, supplyStatus } from './supply';

export { nodegroupName } from './nodegroup';

/**
 * A compute is a node kind: one EKS managed node group of one instance type. The manifest's spec is the
 * source of truth; the status is what reconcile and the workflows observed; derived fields are computed here
 * and never stored, so that the formulas have one home.
 */

export const NAME_PATTERN = /^[a-z0-9]([a-z0-9-]{0,48}[a-z0-9])?$/;
export const SCOPE_PATTERN = /^(org|team|project):[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const ONE_SCOPE = SCOPE_PATTERN.source.slice(1, -1);
/**
 * A reference to a scope in a request: its name, or `<scope>/<scope>`, each within the one before, for a caller
 * who sees two scopes of a name (domain/names.ts resolveScopeRef).
 */
export const SCOPE_REF_PATTERN = new RegExp(`^${ONE_SCOPE}(/${ONE_SCOPE}){0,3}$`);

export const AMI_TYPES = [
  'AL2023_x86_64_STANDARD',
  'AL2023_x86_64_NVIDIA',
  'AL2023_x86_64_NEURON',
  'AL2023_ARM_64_STANDARD',
  'AL2023_ARM_64_NVIDIA',
  'BOTTLEROCKET_x86_64',
  'BOTTLEROCKET_ARM_64',
  'BOTTLEROCKET_x86_64_NVIDIA',
  'BOTTLEROCKET_ARM_64_NVIDIA',
] as const;
export const CAPACITY_TYPES = ['ON_DEMAND', 'SPOT', 'CAPACITY_BLOCK'] as const;
export const NODEGROUP_STATUSES = [
  'ABSENT',
  'CREATING',
  'ACTIVE',
  'UPDATING',
  'DELETING',
  'CREATE_FAILED',
  'DELETE_FAILED',
  'DEGRADED',
  // llmcap's own: a node group holds the compute's name but its tags say it is someone else's.
  'FOREIGN',
] as const;
export type NodegroupStatus = (typeof NODEGROUP_STATUSES)[number];

export const computeName = z
  .string()
  .regex(
    NAME_PATTERN,
    'use 1 to 50 lowercase letters, digits and hyphens, starting and ending with a letter or digit',
  );
export const scopeName = z
  .string()
  .regex(
    SCOPE_PATTERN,
    'a scope is org:<id>, team:<id> or project:<id>, with a lowercase id (letters, digits, -)',
  );

/** Where a request names a scope that exists: a name, or `team:ml/project:a` to say which of two. */
export const scopeRef = z
  .string()
  .max(300)
  .regex(
    SCOPE_REF_PATTERN,
    'a scope is org:<id>, team:<id> or project:<id>, with a lowercase id (letters, digits, -); team:<id>/project:<id> says which of two',
  );

export const GpuSchema = z.strictObject({
  type: z
    .string()
    .min(1)
    .max(32)
    .regex(/^[A-Za-z0-9-]+$/, 'a GPU type is a name such as L4, A10G, L40S or H100'),
  count: z.number().int().min(1).max(16),
  memoryGb: z.number().positive().max(1024),
  resource: z
    .string()
    .regex(/^[a-z0-9.-]+\/[a-z0-9.-]+$/, 'an extended resource name such as nvidia.com/gpu')
    .default('nvidia.com/gpu'),
});

export const NodeSchema = z.strictObject({
  // The size may have a hyphen too: m7i.metal-24xl, c7i.metal-48xl.
  instanceType: z
    .string()
    .max(64)
    .regex(/^[a-z][a-z0-9-]*\.[a-z0-9]+(-[a-z0-9]+)*$/, 'an EC2 instance type such as g6.2xlarge'),
  cpu: z.number().int().min(1).max(1024),
  memoryGb: z.number().positive().max(32768),
  gpu: GpuSchema.optional(),
  diskSizeGb: z.number().int().min(20).max(16384).default(100),
  capacityType: z.enum(CAPACITY_TYPES).default('ON_DEMAND'),
  amiType: z.enum(AMI_TYPES).optional(),
});

export const NodeGroupSchema = z.strictObject({
  maxNodes: z.number().int().min(1).max(100).default(4),
  subnetIds: z
    .array(z.string().regex(/^subnet-[0-9a-f]{8,17}$/, 'a subnet id such as subnet-0abc1234'))
    .min(1)
    .max(16)
    .optional(),
});

export const CostSchema = z.strictObject({
  perHour: z.number().min(0).max(10000),
  currency: z.literal('USD').default('USD'),
});

export const ComputeSpecSchema = z
  .strictObject({
    node: NodeSchema,
    nodeGroup: NodeGroupSchema.default({ maxNodes: 4 }),
    cost: CostSchema,
  })
  .transform((spec) => ({
    ...spec,
    node: {
      ...spec.node,
      // The AMI follows the hardware unless chosen: NVIDIA drivers are needed exactly when there is a GPU.
      amiType: spec.node.amiType ?? (spec.node.gpu ? 'AL2023_x86_64_NVIDIA' : 'AL2023_x86_64_STANDARD'),
    },
  }));

/** Fields the API returns in metadata; accepted back (and ignored) so that a read manifest can be re-applied. */
export const READ_ONLY_METADATA = {
  builtin: z.boolean().optional(),
  declared: z.boolean().optional(),
  createdAt: z.string().optional(),
  createdBy: z.string().optional(),
  updatedAt: z.string().optional(),
  updatedBy: z.string().optional(),
};

export const ComputeMetadataInput = z.strictObject({
  name: computeName,
  owner: scopeRef.optional(),
  version: z.number().int().min(1).optional(),
  ...READ_ONLY_METADATA,
  uid: z.string().regex(COMPUTE_ID_PATTERN, 'the id llmcap gave the compute (read only)').optional(),
});

/** The payload of POST /v1/computes and PUT /v1/computes/{name}. */
export const ComputeManifestInput = z.strictObject({
  apiVersion: z.literal('llmcap/v1'),
  kind: z.literal('Compute'),
  metadata: ComputeMetadataInput,
  spec: ComputeSpecSchema,
  // Clients often send back what they read; status is output only and ignored on input.
  status: z.unknown().optional(),
});

export type ComputeSpec = z.output<typeof ComputeSpecSchema>;
export type ComputeSpecInput = z.input<typeof ComputeSpecSchema>;
export type ComputeManifestIn = z.output<typeof ComputeManifestInput>;

export interface ObservedStatus {
  nodegroupStatus: NodegroupStatus;
  desiredNodes: number;
  readyNodes: number;
  statusMessage?: string;
  lastReconciledAt?: string;
  healthIssues?: { code: string; message: string }[];
}

/** What the reconciler last found a compute needs. */
export interface Sizing {
  neededNodes: number;
  lowerBoundNodes: number;
  costPerHour: number;
  computedAt: string;
  /** Scale-down cool-down: since when fewer nodes have been needed, and the most needed meanwhile. */
  lowerSince?: string;
  peak?: number;
  /** Node group creates that failed in a row, and when the next may start (domain/create-retry.ts). */
  createRetry?: CreateRetry;
  /** Why fewer nodes are asked for than needed: an AWS quota, its value and how to raise it (domain/aws-quotas.ts). */
  pendingReason?: string;
  /**
   * Of neededNodes, those asked for ahead of replicas that move here when a capacity grace elsewhere ends
   * (domain/supply.ts nodesAhead): no replica is placed on them yet.
   */
  aheadNodes?: number;
}

export interface CreateRetry {
  /** Failed creates in a row. */
  failures: number;
  /** When the first of them was seen (ISO 8601). */
  since: string;
  /** The last failure as EKS reported it: status and health issue. */
  lastFailure: string;
  /** No create starts before this (ISO 8601). */
  nextAttemptAt: string;
  /** True from the pass that counted a CREATE_FAILED group until that group is gone, so it counts once. */
  counted: boolean;
}

export interface Compute {
  name: string;
  owner?: string;
  builtin: boolean;
  spec: ComputeSpec;
  version: number;
  createdAt: string;
  createdBy: string;
  updatedAt: string;
  updatedBy: string;
  status: ObservedStatus;
  /** Set by the reconciler: what placement needs, and the best any packing could do. */
  sizing?: Sizing;
  /** The generation of node-group work; workflow execution names derive from it. */
  generation: number;
  /**
   * The incarnation id, fixed when the item is created (a rename or a delete and create makes a new one). It
   * tags the node group (llmcap:compute-id) and is part of every execution name. Absent on items stored
   * before ids existed: see incarnation() in nodegroup.ts.
   */
  uid?: string;
  /**
   * Where spec.cost comes from (domain/hardware.ts): the region's on-demand price, or set by a platform admin.
   * Absent on items stored before it was recorded.
   */
  costSource?: CostSourceRecord;
  /**
   * A built-in loaded from configuration: the declaration (config/computes.yaml's entry and the region) its spec
   * was resolved from, against EC2 and the Price List (compute-changes.ts declarationOf). Absent otherwise.
   */
  declaredAs?: string;
  /** What nodes of the compute's instance type report as allocatable, once one has been seen (nodeAllocatable). */
  allocatable?: ObservedAllocatable;
  /** Which nodes take pods and whether the group can launch more, as the last pass saw (domain/supply.ts). */
  supply?: ComputeSupply;
  workflow?: { executionName: string; kind: string; state: string; startedAt: string; finishedAt?: string };
}

/** Where a compute's cost comes from; the same shape as domain/hardware.ts CostSource (this module cannot import it). */
export type CostSourceRecord =
  | { kind: 'on-demand'; region: string; effectiveDate?: string }
  | { kind: 'set'; by: string; onDemandPerHour?: number };

/** The status's `cost`: the price a node costs and where it comes from (on-demand | set-by-admin). */
export function costStatus(c: Pick<Compute, 'spec' | 'costSource'>) {
  const s = c.costSource;
  if (!s) return { perHour: c.spec.cost.perHour, currency: c.spec.cost.currency };
  return s.kind === 'on-demand'
    ? {
        perHour: c.spec.cost.perHour,
        currency: c.spec.cost.currency,
        source: 'on-demand' as const,
        region: s.region,
        ...(s.effectiveDate ? { effectiveDate: s.effectiveDate } : {}),
      }
    : {
        perHour: c.spec.cost.perHour,
        currency: c.spec.cost.currency,
        source: 'set-by-admin' as const,
        setBy: s.by,
        ...(s.onDemandPerHour !== undefined ? { onDemandPerHour: s.onDemandPerHour } : {}),
      };
}

export interface Allocatable {
  millicores: number;
  memoryMiB: number;
  gpus: number;
}

/** Whether a compute's allocatable is EKS's formula (no node of its type seen yet) or what its nodes report. */
export type AllocatableSource = 'formula' | 'observed';

/**
 * What the nodes of one instance type report as allocatable (the least of each dimension over its Ready nodes),
 * as the reconcile pass last saw them; kept per instance type and copied onto each compute of that type.
 */
export interface ObservedAllocatable extends Allocatable {
  instanceType: string;
  /** When a node first reported these figures (ISO 8601). */
  observedAt: string;
}

/**
 * The pods EKS lets one managed node group's node hold: 110 below 30 vCPUs, 250 from. nodeadm gives a node
 * fewer when its network interfaces hold fewer addresses; planning with the cap reserves at most a few hundred
 * MiB too much (11 MiB a pod) until a node is seen and its own figure replaces this one.
 */
export const eksMaxPods = (vcpus: number) => (vcpus < 30 ? 110 : 250);

/**
 * kube-reserved CPU as the EKS AMIs set it (amazon-eks-ami nodeadm getCPUMillicoresToReserve, the same as the
 * AL2 bootstrap.sh): 6% of the first core, 1% of the second, 0.5% of the third and fourth, 0.25% of the rest,
 * each range in whole millicores (Go integer division).
 */
export function kubeReservedMillicores(vcpus: number): number {
  const total = vcpus * 1000;
  const ranges = [0, 1000, 2000, 4000, total];
  const per10k = [600, 100, 50, 25];
  let reserved = 0;
  per10k.forEach((pct, i) => {
    const start = ranges[i]!;
    if (total > start) reserved += Math.trunc(((Math.min(total, ranges[i + 1]!) - start) * pct) / 10000);
  });
  return reserved;
}

/** kube-reserved memory (11 MiB a pod + 255 MiB) plus the kubelet's hard eviction threshold (100 MiB). */
export const reservedMemoryMiB = (maxPods: number) => 11 * maxPods + 255 + 100;

/**
 * A node's allocatable by EKS's own formula (nodeadm: capacity − kube-reserved − evictionHard; no system-reserved),
 * with EC2's memory as the capacity: what llmcap plans with until a node of the type has been seen. GPUs are
 * not reserved from. An m7i.xlarge gives 3920m, a g6.2xlarge 7910m.
 */
export function allocatable(node: Pick<ComputeSpec['node'], 'cpu' | 'memoryGb' | 'gpu'>): Allocatable {
  return {
    millicores: node.cpu * 1000 - kubeReservedMillicores(node.cpu),
    memoryMiB: Math.floor(node.memoryGb * 1024) - reservedMemoryMiB(eksMaxPods(node.cpu)),
    gpus: node.gpu?.count ?? 0,
  };
}

/** The allocatable a compute plans with and where it comes from: its nodes' report once seen, else the formula. */
export function nodeAllocatable(c: {
  spec: { node: Pick<ComputeSpec['node'], 'cpu' | 'memoryGb' | 'gpu'> & { instanceType?: string } };
  allocatable?: ObservedAllocatable;
}): Allocatable & { source: AllocatableSource } {
  const seen = c.allocatable;
  // A compute whose instance type changed since (allowed while it has no node group) is back to the formula.
  if (seen && seen.instanceType === c.spec.node.instanceType)
    return { millicores: seen.millicores, memoryMiB: seen.memoryMiB, gpus: seen.gpus, source: 'observed' };
  return { ...allocatable(c.spec.node), source: 'formula' };
}

export interface Taint {
  key: string;
  value: string;
  effect: 'NO_SCHEDULE';
}

/**
 * Accelerator nodes repel everything that does not ask for their accelerator (keyed by its extended resource:
 * nvidia.com/gpu, aws.amazon.com/neuron), as the device plugins' own tolerations expect; CPU computes repel
 * everything not placed there.
 */
export function taint(name: string, spec: Pick<ComputeSpec, 'node'>): Taint {
  return spec.node.gpu
    ? { key: spec.node.gpu.resource ?? 'nvidia.com/gpu', value: 'true', effect: 'NO_SCHEDULE' }
    : { key: 'llmcap.dev/compute', value: labelValue(name), effect: 'NO_SCHEDULE' };
}

export function taintString(t: Taint): string {
  return `${t.key}=${t.value}:${t.effect}`;
}

/** The node labels of a compute's group; a twin key as its label value (domain/names.ts). */
export function labels(name: string): Record<string, string> {
  return { 'llmcap.dev/compute': labelValue(name) };
}

/** Statuses in which this compute owns no node group: ABSENT, or FOREIGN (the name is held by another's). */
export const NO_NODEGROUP: readonly NodegroupStatus[] = ['ABSENT', 'FOREIGN'];

/** What the NodegroupFailed alarm counts: states that need a person (FOREIGN too: no nodes until it is resolved). */
export const FAILED_NODEGROUP_STATUSES: readonly NodegroupStatus[] = [
  'CREATE_FAILED',
  'DELETE_FAILED',
  'DEGRADED',
  'FOREIGN',
];

/** True while EKS holds a node group of this compute's (anything but ABSENT and FOREIGN). */
export function nodegroupExists(status: ObservedStatus): boolean {
  return !NO_NODEGROUP.includes(status.nodegroupStatus);
}

/**
 * Fields EKS cannot change on a live node group. Returns the paths that differ, so the refusal can name them.
 */
export function frozenFieldChanges(before: ComputeSpec, after: ComputeSpec): string[] {
  const changed: string[] = [];
  for (const key of Object.keys({ ...before.node, ...after.node }) as (keyof ComputeSpec['node'])[]) {
    if (!sameValue(before.node[key], after.node[key])) changed.push(`spec.node.${key}`);
  }
  if (!sameValue(before.nodeGroup.subnetIds, after.nodeGroup.subnetIds)) {
    changed.push('spec.nodeGroup.subnetIds');
  }
  return changed;
}

/**
 * The leaf paths where two values differ (`spec.scaling.max`, `spec.profiles[0].gpus`), for a refusal that
 * names the field; arrays of different length differ as a whole.
 */
export function changedPaths(a: unknown, b: unknown, at = ''): string[] {
  if (sameValue(a, b)) return [];
  const isObj = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    return a.flatMap((x, i) => changedPaths(x, b[i], `${at}[${i}]`));
  }
  if (isObj(a) && isObj(b)) {
    const ra = a as Record<string, unknown>;
    const rb = b as Record<string, unknown>;
    const keys = [...new Set([...Object.keys(ra), ...Object.keys(rb)])].sort();
    return keys.flatMap((k) => changedPaths(ra[k], rb[k], at ? `${at}.${k}` : k));
  }
  return [at || '.'];
}

/**
 * Whether an observation says nothing new about a compute: equal but for the time it was made. A steady pass
 * then writes no status (issue 31 §5); `lastReconciledAt` says when a pass last found it changed.
 */
export function sameObservation(stored: ObservedStatus, observed: ObservedStatus): boolean {
  return sameValue({ ...stored, lastReconciledAt: undefined }, { ...observed, lastReconciledAt: undefined });
}

/** Deep equality that ignores key order: DynamoDB maps come back in any order. */
export function sameValue(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

/** One string per value, whatever its key order (what sameValue compares). */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'undefined';
}

export const ABSENT_STATUS: ObservedStatus = Object.freeze({
  nodegroupStatus: 'ABSENT',
  desiredNodes: 0,
  readyNodes: 0,
}) as ObservedStatus;

/** The derived view of a compute shown in its manifest's status. */
export function derived(
  stage: string,
  c: Pick<Compute, 'name' | 'spec' | 'createdAt' | 'uid' | 'allocatable'>,
) {
  const t = taint(c.name, c.spec);
  const { source, ...alloc } = nodeAllocatable(c);
  return {
    nodegroupName: nodegroupNameOf(stage, c),
    taint: taintString(t),
    labels: labels(c.name),
    allocatable: alloc,
    allocatableSource: source,
  };
}

export function toManifest(stage: string, c: Compute) {
  return {
    apiVersion: 'llmcap/v1' as const,
    kind: 'Compute' as const,
    metadata: {
      name: c.name,
      uid: incarnation(c).id,
      ...(c.owner ? { owner: c.owner } : {}),
      builtin: c.builtin,
      version: c.version,
      createdAt: c.createdAt,
      createdBy: c.createdBy,
      updatedAt: c.updatedAt,
      updatedBy: c.updatedBy,
    },
    // What its writer sent, echoed as sent (names.ts asSent): a compute's spec names no other resource.
    spec: asSent(c.spec),
    status: {
      ...c.status,
      neededNodes: c.sizing?.neededNodes ?? 0,
      lowerBoundNodes: c.sizing?.lowerBoundNodes ?? 0,
      // While creates keep failing, the failure and the next attempt stay in the status between cycles.
      ...(c.sizing?.createRetry && c.status.nodegroupStatus !== 'CREATE_FAILED'
        ? { statusMessage: retryMessage(c.sizing.createRetry) }
        : {}),
      ...(c.sizing?.pendingReason ? { pendingReason: c.sizing.pendingReason } : {}),
      ...(c.sizing?.aheadNodes ? { aheadNodes: c.sizing.aheadNodes } : {}),
      ...(c.sizing?.createRetry
        ? {
            createFailures: c.sizing.createRetry.failures,
            nextCreateAttemptAt: c.sizing.createRetry.nextAttemptAt,
          }
        : {}),
      ...derived(stage, c),
      ...supplyStatus(c.supply),
      cost: costStatus(c),
      ...(c.workflow ? { workflow: c.workflow } : {}),
    },
  };
}
