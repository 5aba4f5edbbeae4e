import { DRAIN_FIELD_MANAGER } from './drain';

/**
 * Capacity that exists (issue 32 §1, §3): which of a compute's nodes take pods, and whether its node group can
 * launch more. The reconcile pass observes both (Nodes from the cluster, scaling activities from Auto Scaling),
 * records them on the compute as `supply`, grows the group to replace nodes that take no pods, and admission
 * counts on a compute only the nodes it can really have (`admissibleComputes`). Pure.
 */

/** A node of the group that takes no pods, and why in words (`cordoned`, `NotReady since …`). */
export interface IdleNode {
  node: string;
  why: string;
}

/** What a pass observed of a compute's supply, stored on the compute (absent: all nodes take pods, launches work). */
export interface ComputeSupply {
  /** Nodes that take no pods: cordoned or drained by someone else than llmcap, or NotReady for long. */
  idleNodes?: IdleNode[];
  /** Nodes the group is grown by to replace them (within maxNodes), so that the needed nodes take pods. */
  replacementNodes?: number;
}

/** The fields of a Node this reads. */
export interface SupplyNode {
  metadata: {
    name: string;
    labels?: Record<string, string>;
    creationTimestamp?: unknown;
    deletionTimestamp?: unknown;
    managedFields?: { manager?: string; fieldsV1?: unknown }[];
  };
  spec?: { unschedulable?: boolean };
  status?: { conditions?: { type: string; status: string; lastTransitionTime?: unknown }[] };
}

function isoOf(t: unknown): string | undefined {
  const d = t instanceof Date ? t : typeof t === 'string' ? new Date(t) : undefined;
  return d && !Number.isNaN(d.getTime()) ? d.toISOString() : undefined;
}

/** True when llmcap's own drain set spec.unschedulable (its merge patches carry DRAIN_FIELD_MANAGER). */
function cordonedByLlmcap(n: SupplyNode): boolean {
  return (n.metadata.managedFields ?? []).some((f) => {
    if (f.manager !== DRAIN_FIELD_MANAGER) return false;
    const spec = (f.fieldsV1 as Record<string, Record<string, unknown>> | undefined)?.['f:spec'];
    return spec !== undefined && 'f:unschedulable' in spec;
  });
}

/**
 * Why a node takes no pods, or undefined when it does: cordoned (`kubectl cordon`, `kubectl drain`) by anyone
 * but llmcap's own scale-down drain, whose nodes are on their way out already; NotReady for longer than
 * `graceMs` since its Ready condition last changed (a booting node is NotReady for a minute or two). A node
 * being deleted is leaving, not idle.
 */
export function idleReason(n: SupplyNode, now: string, graceMs: number): string | undefined {
  if (n.metadata.deletionTimestamp) return undefined;
  if (n.spec?.unschedulable && !cordonedByLlmcap(n)) return 'cordoned';
  const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status === 'True') return undefined;
  const since = isoOf(ready?.lastTransitionTime) ?? isoOf(n.metadata.creationTimestamp);
  if (!since || Date.parse(now) - Date.parse(since) < graceMs) return undefined;
  return `NotReady since ${since}`;
}

/** Per compute (by its node label): its nodes, and those that take no pods. */
export function nodesByCompute(
  nodes: readonly SupplyNode[],
  computeLabel: string,
  now: string,
  graceMs: number,
): Map<string, { nodes: number; idle: IdleNode[] }> {
  const out = new Map<string, { nodes: number; idle: IdleNode[] }>();
  for (const n of nodes) {
    const compute = n.metadata.labels?.[computeLabel];
    if (!compute) continue;
    const entry = out.get(compute) ?? { nodes: 0, idle: [] };
    out.set(compute, entry);
    if (n.metadata.deletionTimestamp) continue;
    entry.nodes++;
    const why = idleReason(n, now, graceMs);
    if (why) entry.idle.push({ node: n.metadata.name, why });
  }
  for (const e of out.values()) e.idle.sort((a, b) => a.node.localeCompare(b.node));
  return out;
}

/**
 * How many nodes to add so that the needed ones take pods: one per idle node, except idle nodes beyond the
 * group's desired size, which are already on their way out (EKS or llmcap removing them), so replacing them
 * would only undo the scale-down.
 */
export function replacementNodes(idle: number, nodes: number, desiredNodes: number): number {
  return Math.max(0, idle - Math.max(0, nodes - desiredNodes));
}

/** The nodes to ask the group for: those needed plus the replacements, within maxNodes. */
export function withReplacements(needed: number, replacements: number, maxNodes: number): number {
  if (needed <= 0) return needed;
  return Math.max(needed, Math.min(maxNodes, needed + replacements));
}

/** A compute as admission's headroom reads it: maxNodes is how many node slots placement may fill. */
interface SuppliedCompute {
  spec: { nodeGroup: { maxNodes: number } };
  supply?: ComputeSupply;
}

/**
 * The seam into admission (World.computes → PlacementHeadroom): each compute with maxNodes lowered to the nodes
 * it can really have. An idle node still counts against the group's maxNodes but takes no pods, so it is one
 * slot fewer. Computes with nothing to say are returned as they are.
 */
export function admissibleComputes<C extends SuppliedCompute>(computes: readonly C[]): C[] {
  return computes.map((c) => {
    const slots = admissibleNodes(c);
    if (slots === c.spec.nodeGroup.maxNodes) return c;
    return { ...c, spec: { ...c.spec, nodeGroup: { ...c.spec.nodeGroup, maxNodes: slots } } };
  });
}

/** The node slots admission may fill on a compute (at least 0). */
export function admissibleNodes(c: SuppliedCompute): number {
  const idle = c.supply?.idleNodes?.length ?? 0;
  return Math.max(0, c.spec.nodeGroup.maxNodes - idle);
}

/** What a compute's status says of its supply (toManifest): only what there is to say. */
export function supplyStatus(s: ComputeSupply | undefined) {
  return {
    ...(s?.idleNodes?.length ? { idleNodes: s.idleNodes } : {}),
    ...(s?.replacementNodes ? { replacementNodes: s.replacementNodes } : {}),
  };
}

/** True when two observations say the same (so a steady pass writes nothing). */
export function sameSupply(a: ComputeSupply | undefined, b: ComputeSupply | undefined): boolean {
  return JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});
}
