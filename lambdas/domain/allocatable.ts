import type { ObservedAllocatable } from './compute';

/**
 * What the nodes of each instance type report as allocatable, read from the cluster's Nodes by the reconcile
 * pass (docs/design.md, Reconcile). Planning uses it instead of EKS's formula once a node of the type has been
 * seen: the kernel keeps part of EC2's memory, an AMI may reserve differently, and the node's own figure is what
 * the scheduler places against. Pure: the Nodes come from lambdas/service/reconcile.ts.
 */

/** The fields of a Node this reads. */
export interface NodeView {
  metadata: { name: string; labels?: Record<string, string> };
  spec?: { unschedulable?: boolean };
  status?: {
    allocatable?: Record<string, string>;
    conditions?: { type: string; status: string }[];
  };
}

export const INSTANCE_TYPE_LABEL = 'node.kubernetes.io/instance-type';

/** A CPU quantity (`3920m`, `4`, `0.5`) in millicores; undefined when it is not one. */
export function millicoresOf(q: string | undefined): number | undefined {
  if (q === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)(m?)$/.exec(q.trim());
  if (!m) return undefined;
  return m[2] ? Math.floor(Number(m[1])) : Math.floor(Number(m[1]) * 1000);
}

const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };
const DECIMAL: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };

/** A memory quantity (`15203132Ki`, `14Gi`, `16000000000`, `16G`) in whole MiB, rounded down. */
export function mibOf(q: string | undefined): number | undefined {
  if (q === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T|)$/.exec(q.trim());
  if (!m) return undefined;
  const unit = BINARY[m[2]!] ?? DECIMAL[m[2]!]!;
  return Math.floor((Number(m[1]) * unit) / 2 ** 20);
}

const ready = (n: NodeView) =>
  n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * Per instance type, the least allocatable of each dimension over its Ready nodes, so that a replica planned to
 * fit fits on any of them. `gpuResource` names the extended resource each GPU type's nodes hand out
 * (nvidia.com/gpu, aws.amazon.com/neuron): a node of such a type that reports none yet (its device plugin not
 * running) says nothing of the type and is left out. Types without a Ready node are absent.
 */
export function observedAllocatables(
  nodes: readonly NodeView[],
  gpuResource: ReadonlyMap<string, string>,
  now: string,
): ObservedAllocatable[] {
  const byType = new Map<string, ObservedAllocatable>();
  for (const n of nodes) {
    const type = n.metadata.labels?.[INSTANCE_TYPE_LABEL];
    const a = n.status?.allocatable;
    if (!type || !a || !ready(n)) continue;
    const millicores = millicoresOf(a.cpu);
    const memoryMiB = mibOf(a.memory);
    const resource = gpuResource.get(type);
    const gpus = resource ? Number(a[resource] ?? 0) : 0;
    if (millicores === undefined || memoryMiB === undefined || !Number.isFinite(gpus)) continue;
    if (resource && gpus <= 0) continue;
    const had = byType.get(type);
    byType.set(
      type,
      had
        ? {
            ...had,
            millicores: Math.min(had.millicores, millicores),
            memoryMiB: Math.min(had.memoryMiB, memoryMiB),
            gpus: Math.min(had.gpus, gpus),
          }
        : { instanceType: type, millicores, memoryMiB, gpus, observedAt: now },
    );
  }
  return [...byType.values()].sort((x, y) => (x.instanceType < y.instanceType ? -1 : 1));
}

/** True when two reports give the same room (when each was seen does not matter). */
export function sameRoom(a: ObservedAllocatable | undefined, b: ObservedAllocatable | undefined): boolean {
  return (
    a !== undefined &&
    b !== undefined &&
    a.instanceType === b.instanceType &&
    a.millicores === b.millicores &&
    a.memoryMiB === b.memoryMiB &&
    a.gpus === b.gpus
  );
}
