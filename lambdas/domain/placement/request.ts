import { type Allocatable, type ComputeSpec, nodeAllocatable, type ObservedAllocatable } from '../compute';
import type { Profile } from '../model';
import { mapArray } from './arrays';

/**
 * What one replica asks of a node, and which computes can host it. Pure functions shared by the incremental
 * headroom (admission) and the batch plan (reconcile), so both choose computes by the same rule.
 */

/** The fields of a compute placement reads; a stored Compute and a `{name, spec}` built-in both satisfy it. */
export interface ComputeLike {
  name: string;
  /** The scope that owns the compute; absent for platform computes, which every model may use. */
  owner?: string;
  spec: {
    node: Pick<ComputeSpec['node'], 'cpu' | 'memoryGb' | 'gpu'> & {
      instanceType?: string;
      /** Absent: ON_DEMAND. SPOT nodes may be reclaimed with two minutes' warning (issue 32 §4). */
      capacityType?: ComputeSpec['node']['capacityType'];
    };
    nodeGroup: Pick<ComputeSpec['nodeGroup'], 'maxNodes'>;
    cost: Pick<ComputeSpec['cost'], 'perHour'>;
  };
  /** What nodes of its instance type reported, once one was seen; EKS's formula until then (compute.ts). */
  allocatable?: ObservedAllocatable;
  /**
   * Why maxNodes is lower than the spec's (domain/supply.ts admissibleComputes: nodes that take no pods, launches
   * that fail for lack of capacity), for the refusal's words.
   */
  fewerNodesBecause?: string;
}

/**
 * The scopes whose computes a model may use: its owner and every scope above it (docs/security.md, Tenant
 * isolation). Platform computes (no owner) are everyone's; a shared model (no owner) has an empty reach.
 */
export type Reach = readonly string[];

/** True when a model with this reach may use a compute with this owner. */
export function mayUse(computeOwner: string | undefined, reach: Reach | undefined): boolean {
  return !computeOwner || (reach?.includes(computeOwner) ?? false);
}

/** One replica's request, in the units of allocatable: whole GPUs, millicores, MiB. */
export interface ReplicaRequest {
  gpus: number;
  millicores: number;
  memoryMiB: number;
}

// cpuCores 1.1 × 1000 is 1100.0000000000002 in floating point; rounding first keeps it at 1100.
const ceilClean = (x: number) => Math.ceil(Math.round(x * 1e6) / 1e6);

export function replicaRequest(p: Pick<Profile, 'gpus' | 'cpuCores' | 'minMemoryGb'>): ReplicaRequest {
  return {
    gpus: p.gpus,
    millicores: ceilClean(p.cpuCores * 1000),
    memoryMiB: ceilClean((p.minMemoryGb ?? 0) * 1024),
  };
}

export function fitsNode(req: ReplicaRequest, alloc: Allocatable): boolean {
  return req.gpus <= alloc.gpus && req.millicores <= alloc.millicores && req.memoryMiB <= alloc.memoryMiB;
}

/** How many such replicas one empty node holds (Infinity for an all-zero request). */
export function perNode(req: ReplicaRequest, alloc: Allocatable): number {
  let n = Number.POSITIVE_INFINITY;
  if (req.gpus > 0) n = Math.min(n, Math.floor(alloc.gpus / req.gpus));
  if (req.millicores > 0) n = Math.min(n, Math.floor(alloc.millicores / req.millicores));
  if (req.memoryMiB > 0) n = Math.min(n, Math.floor(alloc.memoryMiB / req.memoryMiB));
  return n;
}

/** A compute with what placement derives from it once. */
export interface ComputeInfo {
  index: number;
  name: string;
  alloc: Allocatable;
  maxNodes: number;
  perHour: number;
  gpuType?: string;
  owner?: string;
  fewerNodesBecause?: string;
  /** Its nodes are Spot: a critical model's minimum never goes there (rankCandidates' onDemandOnly). */
  spot?: true;
}

/** The allocatable placement plans with, without where it comes from (the status shows that). */
function allocatableOf(c: ComputeLike): Allocatable {
  const { source: _source, ...alloc } = nodeAllocatable(c);
  return alloc;
}

export function computeInfos(computes: readonly ComputeLike[]): ComputeInfo[] {
  return mapArray(computes, (c, index) => ({
    index,
    name: c.name,
    alloc: allocatableOf(c),
    maxNodes: c.spec.nodeGroup.maxNodes,
    perHour: c.spec.cost.perHour,
    gpuType: c.spec.node.gpu?.type,
    ...(c.owner ? { owner: c.owner } : {}),
    ...(c.fewerNodesBecause ? { fewerNodesBecause: c.fewerNodesBecause } : {}),
    ...(c.spec.node.capacityType === 'SPOT' ? { spot: true as const } : {}),
  }));
}

export type Candidates =
  | { ok: true; request: ReplicaRequest; computes: ComputeInfo[] }
  | { ok: false; request: ReplicaRequest; reason: string };

/**
 * The computes a profile names (`compute`, or `computes` in order of preference), or undefined for any. A pin
 * wins: placement pins a copy of the profile to where a unit was placed.
 */
export function namedComputes(p: Pick<Profile, 'compute' | 'computes'>): string[] | undefined {
  return p.compute !== undefined ? [p.compute] : p.computes;
}

/** Why a critical model's minimum is not placed on Spot, and what to do. */
const SPOT_RULE =
  "a critical model keeps at least its minimum on On-Demand or reserved capacity (Spot nodes can be reclaimed with two minutes' warning); add an ON_DEMAND or CAPACITY_BLOCK compute that can hold it, or lower the model's class";

// GPU type names are compared without case: "l40s" and "L40S" are the same card to a person writing a profile.
const sameGpu = (a: string | undefined, b: string) => a !== undefined && a.toUpperCase() === b.toUpperCase();

function hardwareFits(c: ComputeInfo, p: Profile, req: ReplicaRequest): boolean {
  if (req.gpus > 0 && p.gpuType !== undefined && !sameGpu(c.gpuType, p.gpuType)) return false;
  return fitsNode(req, c.alloc);
}

/**
 * The computes a profile's replica may use, best first; only those `reach` allows (platform computes and
 * those of the model's owner or a scope above it). A pinned compute is the only candidate; computes a profile names (`computes`) are the candidates in that order. Otherwise
 * every compute whose GPU type matches and whose allocatable node holds one replica in every dimension,
 * ranked by cost per replica = perHour / (replicas of this profile one empty node holds), so an 8-GPU node
 * that holds eight 1-GPU replicas competes fairly with eight 1-GPU nodes. Ties go to the node that holds more
 * such replicas (its leftover is shared with other replicas instead of stranded: on the CPU fleet benchmark
 * this cut nodes by a quarter), then to the lower perHour, then to the name, so the order is total. A
 * CPU-only replica ranks every CPU compute before any GPU compute: GPU nodes are kept for GPU work.
 * With `onDemandOnly` (a critical model's minimum, issue 32 §4) Spot computes are left out, and a profile that
 * only Spot computes could hold is refused saying so.
 */
export function rankCandidates(
  all: readonly ComputeInfo[],
  p: Profile,
  reach?: Reach,
  onDemandOnly = false,
): Candidates {
  const request = replicaRequest(p);
  // Another tenant's compute is not there at all for this model: the same refusal as a name that does not exist.
  const infos = all.some((c) => c.owner) ? all.filter((c) => mayUse(c.owner, reach)) : all;
  const named = namedComputes(p);
  if (named) {
    // A pin (`compute`) or a list in order of preference (`computes`): those computes only, in that order.
    const verb = p.compute !== undefined ? 'pins' : 'names';
    const chosen: ComputeInfo[] = [];
    for (const name of named) {
      const c = infos.find((i) => i.name === name);
      if (!c)
        return {
          ok: false,
          request,
          reason: `profile ${p.name} ${verb} compute ${name}, which does not exist`,
        };
      if (!hardwareFits(c, p, request)) {
        return {
          ok: false,
          request,
          reason: `profile ${p.name} ${verb} compute ${c.name}, whose node (${describeAlloc(c)}) cannot hold ${describeReplicas(p, 1)}`,
        };
      }
      chosen.push(c);
    }
    const allowed = onDemandOnly ? chosen.filter((c) => !c.spot) : chosen;
    if (allowed.length === 0) {
      const which =
        chosen.length === 1
          ? `compute ${chosen[0]!.name}, which is Spot`
          : `computes ${named.join(', ')}, all Spot`;
      return { ok: false, request, reason: `profile ${p.name} ${verb} ${which}, and ${SPOT_RULE}` };
    }
    return { ok: true, request, computes: allowed };
  }
  const hardware = infos.filter((c) => hardwareFits(c, p, request));
  if (hardware.length === 0) {
    return { ok: false, request, reason: `no compute has a node that can hold ${describeReplicas(p, 1)}` };
  }
  const fitting = onDemandOnly ? hardware.filter((c) => !c.spot) : hardware;
  if (fitting.length === 0) {
    const names = hardware.map((c) => c.name).join(', ');
    return {
      ok: false,
      request,
      reason: `the computes that can hold ${describeReplicas(p, 1)} (${names}) are all Spot, and ${SPOT_RULE}`,
    };
  }
  const cpuOnly = request.gpus === 0;
  const key = mapArray(fitting, (c) => {
    const k = perNode(request, c.alloc);
    // Rounded to a billionth of a dollar so that 0.4032 / 2 and 0.2016 tie whatever the float noise.
    return { c, k, tier: cpuOnly && c.alloc.gpus > 0 ? 1 : 0, perReplica: Math.round((c.perHour / k) * 1e9) };
  });
  key.sort(
    (a, b) =>
      a.tier - b.tier ||
      a.perReplica - b.perReplica ||
      b.k - a.k ||
      (a.c.name < b.c.name ? -1 : a.c.name > b.c.name ? 1 : 0) ||
      a.c.index - b.c.index,
  );
  return { ok: true, request, computes: mapArray(key, (k) => k.c) };
}

const num = (x: number) => (Number.isInteger(x) ? String(x) : String(Math.round(x * 100) / 100));

/** "a 4-gpu L40S replica", "3 replicas of 4-gpu L40S", "3 CPU-only replicas of 2 cores and 4 GiB". */
export function describeReplicas(
  p: Pick<Profile, 'gpus' | 'gpuType' | 'cpuCores' | 'minMemoryGb'>,
  n: number,
) {
  const plural = n === 1 ? 'replica' : 'replicas';
  const count = n === 1 ? 'a' : String(n);
  if (p.gpus > 0) {
    const kind = `${p.gpus}-gpu${p.gpuType ? ` ${p.gpuType}` : ''}`;
    return n === 1 ? `a ${kind} replica` : `${n} replicas of ${kind}`;
  }
  const mem = p.minMemoryGb !== undefined ? ` and ${num(p.minMemoryGb)} GiB` : '';
  return `${count} CPU-only ${plural} of ${num(p.cpuCores)} cores${mem}`;
}

function describeAlloc(c: ComputeInfo): string {
  const gpu = c.alloc.gpus > 0 ? `${c.alloc.gpus} × ${c.gpuType ?? 'GPU'}, ` : '';
  return `${gpu}${num(c.alloc.millicores / 1000)} cores and ${num(c.alloc.memoryMiB / 1024)} GiB allocatable`;
}
