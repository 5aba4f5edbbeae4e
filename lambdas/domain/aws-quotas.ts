import type { CapacityType } from './hardware';
import { splitInstanceType } from './hardware';

/**
 * The AWS quotas that decide whether a node group can be created and its nodes launched (issue 32 §5): managed
 * node groups per cluster, nodes per managed node group, and the account's running vCPUs per instance class.
 * The values come from Service Quotas (lambdas/aws/quotas.ts); what they allow is decided here. Pure.
 */

export interface AwsQuota {
  serviceCode: 'eks' | 'ec2';
  code: string;
  name: string;
}

export const NODEGROUPS_PER_CLUSTER: AwsQuota = {
  serviceCode: 'eks',
  code: 'L-6D54EA21',
  name: 'Managed node groups per cluster',
};
export const NODES_PER_NODEGROUP: AwsQuota = {
  serviceCode: 'eks',
  code: 'L-BD136A63',
  name: 'Nodes per managed node group',
};

const ec2 = (code: string, name: string): AwsQuota => ({ serviceCode: 'ec2', code, name });
const STANDARD = 'Standard (A, C, D, H, I, M, R, T, Z)';

/** Running On-Demand vCPUs per instance class, and the Spot requests' (codes as Service Quotas lists them). */
const ON_DEMAND: Record<string, AwsQuota> = {
  standard: ec2('L-1216C47A', `Running On-Demand ${STANDARD} instances`),
  g: ec2('L-DB2E81BA', 'Running On-Demand G and VT instances'),
  p: ec2('L-417A185B', 'Running On-Demand P instances'),
  inf: ec2('L-1945791B', 'Running On-Demand Inf instances'),
  trn: ec2('L-2C3B7624', 'Running On-Demand Trn instances'),
  f: ec2('L-74FC7D96', 'Running On-Demand F instances'),
  x: ec2('L-7295265B', 'Running On-Demand X instances'),
  dl: ec2('L-6E869C2A', 'Running On-Demand DL instances'),
};
const SPOT: Record<string, AwsQuota> = {
  standard: ec2('L-34B43A08', `All ${STANDARD} Spot Instance Requests`),
  g: ec2('L-3819A6DF', 'All G and VT Spot Instance Requests'),
  p: ec2('L-7212CCBC', 'All P Spot Instance Requests'),
};

/** Every quota llmcap reads: what its Lambdas may ask Service Quotas for (infra/stacks/llmcap-stack.ts). */
export const ALL_AWS_QUOTAS: readonly AwsQuota[] = [
  NODEGROUPS_PER_CLUSTER,
  NODES_PER_NODEGROUP,
  ...Object.values(ON_DEMAND),
  ...Object.values(SPOT),
];

/** The class of an instance family for EC2's vCPU quotas: `g6e` → g, `p5en` → p, `m7i` → standard. */
export function instanceClass(instanceType: string): string | undefined {
  const { family } = splitInstanceType(instanceType);
  for (const prefix of ['inf', 'trn', 'dl', 'vt'])
    if (family.startsWith(prefix)) return prefix === 'vt' ? 'g' : prefix;
  const first = family[0];
  if (first === 'g' || first === 'p' || first === 'f' || first === 'x') return first;
  if (first && 'acdhimrtz'.includes(first)) return 'standard';
  // u-* (High Memory) and anything newer: no quota known here, so none is checked.
  return undefined;
}

/**
 * The vCPU quota a node of this type and capacity type counts against; undefined when none applies here:
 * capacity blocks are bought, not quota-bound, and a class without a known code is not checked.
 */
export function vcpuQuotaOf(instanceType: string, capacityType: CapacityType): AwsQuota | undefined {
  const cls = instanceClass(instanceType);
  if (!cls || capacityType === 'CAPACITY_BLOCK') return undefined;
  return (capacityType === 'SPOT' ? SPOT : ON_DEMAND)[cls];
}

/** Where a person raises a quota: the console page, and the CLI call that asks for it. */
export function howToRaise(q: AwsQuota, wanted: number): string {
  return `raise it in the Service Quotas console (${q.serviceCode}, ${q.code}) or with aws service-quotas request-service-quota-increase --service-code ${q.serviceCode} --quota-code ${q.code} --desired-value ${wanted}`;
}

/**
 * Why a new compute cannot be created: the cluster already holds as many managed node groups as its quota allows
 * (each compute is one). undefined when there is room.
 */
export function nodegroupQuotaRefusal(inUse: number, quota: number | undefined): string | undefined {
  if (quota === undefined || inUse < quota) return undefined;
  // Other tenants' computes count too, so the count itself is not told: only that the quota is reached.
  return `each compute is one managed node group, and the cluster has reached the EKS quota "${NODEGROUPS_PER_CLUSTER.name}" (${NODEGROUPS_PER_CLUSTER.code}) of ${quota}: delete a compute, or ${howToRaise(NODEGROUPS_PER_CLUSTER, quota + 10)}`;
}

/** Why a compute's maxNodes cannot be had: more than the EKS quota of nodes per managed node group. */
export function nodesQuotaRefusal(maxNodes: number, quota: number | undefined): string | undefined {
  if (quota === undefined || maxNodes <= quota) return undefined;
  return `spec.nodeGroup.maxNodes is ${maxNodes} and the EKS quota "${NODES_PER_NODEGROUP.name}" (${NODES_PER_NODEGROUP.code}) is ${quota}: lower maxNodes, or ${howToRaise(NODES_PER_NODEGROUP, maxNodes)}`;
}

/** A compute as the quota check reads it. */
export interface QuotaCompute {
  name: string;
  instanceType: string;
  capacityType: CapacityType;
  vcpus: number;
  /** Nodes its group has now (desired size; 0 without a group). */
  currentNodes: number;
  /** Nodes placement needs. */
  neededNodes: number;
  /** True when it has a node group (or one is being created). */
  hasGroup: boolean;
}

export interface QuotaCap {
  /** The most nodes the compute may ask for now (at least its current nodes: nothing is taken away). */
  allowedNodes: number;
  /** Why fewer than needed: the quota, its value and how to raise it. */
  reason: string;
}

/**
 * The nodes each compute may ask AWS for without exceeding a quota: node groups a new compute would create beyond
 * the cluster's quota, and vCPUs beyond the account's quota of their class (counting every group's current nodes
 * first, so a running node is never refused). Growth is granted in name order, whole nodes only. Computes absent
 * from the answer are not limited. A quota whose value is unknown (Service Quotas did not answer) limits nothing.
 */
export function capByQuotas(
  computes: readonly QuotaCompute[],
  value: (q: AwsQuota) => number | undefined,
): Map<string, QuotaCap> {
  const out = new Map<string, QuotaCap>();
  const groupQuota = value(NODEGROUPS_PER_CLUSTER);
  let groups = computes.filter((c) => c.hasGroup).length;
  const used = new Map<string, number>();
  const quotaOf = (c: QuotaCompute) => vcpuQuotaOf(c.instanceType, c.capacityType);
  for (const c of computes) {
    const q = quotaOf(c);
    if (q) used.set(q.code, (used.get(q.code) ?? 0) + c.currentNodes * c.vcpus);
  }
  const growing = computes
    .filter((c) => c.neededNodes > c.currentNodes)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const c of growing) {
    if (!c.hasGroup && groupQuota !== undefined) {
      if (groups >= groupQuota) {
        out.set(c.name, {
          allowedNodes: 0,
          reason: `${c.neededNodes} nodes wait for a node group: the cluster has reached the EKS quota "${NODEGROUPS_PER_CLUSTER.name}" (${NODEGROUPS_PER_CLUSTER.code}) of ${groupQuota}; delete a compute, or ${howToRaise(NODEGROUPS_PER_CLUSTER, groupQuota + 10)}`,
        });
        continue;
      }
    }
    const q = quotaOf(c);
    const limit = q ? value(q) : undefined;
    let allowed = c.neededNodes;
    if (q && limit !== undefined && c.vcpus > 0) {
      const free = Math.max(0, limit - (used.get(q.code) ?? 0));
      allowed = Math.min(c.neededNodes, c.currentNodes + Math.floor(free / c.vcpus));
      used.set(q.code, (used.get(q.code) ?? 0) + (allowed - c.currentNodes) * c.vcpus);
      if (allowed < c.neededNodes) {
        const short = c.neededNodes - allowed;
        out.set(c.name, {
          allowedNodes: allowed,
          reason: `${short} of ${c.neededNodes} nodes needed (${short * c.vcpus} vCPUs of ${c.instanceType}) are beyond the account's quota "${q.name}" (${q.code}) of ${limit} vCPUs; ${howToRaise(q, (used.get(q.code) ?? 0) + short * c.vcpus)}`,
        });
      }
    }
    if (!c.hasGroup && allowed > 0) groups++;
  }
  return out;
}
