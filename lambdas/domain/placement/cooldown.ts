import {
  type CreateRetry,
  NO_NODEGROUP,
  type NodegroupStatus,
  type ObservedStatus,
  type Sizing,
} from '../compute';

/**
 * Scale-down hysteresis (docs/design.md, Placement and sizing): more nodes are granted at once, fewer only after the need has been
 * lower for a whole cool-down, so a compute does not flap between sizes on every reconcile.
 */

export const DEFAULT_COOLDOWN_MS = 10 * 60 * 1000;

/** What reconcile keeps per compute between runs; JSON-friendly so it can live in the compute's item. */
export interface CooldownState {
  /** The nodes in force (what the node group is sized to). */
  neededNodes: number;
  /** When the computed need first dropped below neededNodes (ISO 8601); absent while it is not lower. */
  since?: string;
  /** The highest need computed since `since`: what a scale-down may go to, so no need seen in the window is cut. */
  peak?: number;
}

/**
 * The nodes to keep, given what placement computes now. Scale-up (or equal) is immediate and ends any
 * cool-down. A lower need starts the cool-down; once the need has stayed below the nodes in force for
 * `cooldownMs`, the compute scales to the highest need seen in that window (0 if it held no replica all
 * along), and a new window starts if the need is lower still. A clock that runs backwards never scales down.
 */
export function applyCooldown(
  prev: CooldownState,
  computedNeeded: number,
  now: Date | number,
  cooldownMs: number = DEFAULT_COOLDOWN_MS,
): CooldownState {
  const t = typeof now === 'number' ? now : now.getTime();
  if (computedNeeded >= prev.neededNodes) return { neededNodes: computedNeeded };
  if (prev.since === undefined) {
    return { neededNodes: prev.neededNodes, since: new Date(t).toISOString(), peak: computedNeeded };
  }
  const since = Date.parse(prev.since);
  const peak = Math.max(prev.peak ?? computedNeeded, computedNeeded);
  if (!(t - since >= cooldownMs)) return { neededNodes: prev.neededNodes, since: prev.since, peak };
  if (computedNeeded >= peak) return { neededNodes: peak };
  return { neededNodes: peak, since: new Date(t).toISOString(), peak: computedNeeded };
}

/** What nextSizing needs to know of the compute besides placement's plan. */
export interface SizingContext {
  /** The compute is being deleted: nothing is needed, whatever was held (the delete workflow goes to 0). */
  deleting?: boolean;
  /**
   * The nodes its node group has now (0 when there is none, or it failed or is being deleted). The cool-down
   * may keep these; it never asks for more than exist, so a lost group is not created again for a hold.
   */
  nodesInForce: number;
  /** The create-retry state this pass decided (create-retry.ts), kept with the sizing; absent clears it. */
  createRetry?: CreateRetry;
}

const NO_NODES: readonly NodegroupStatus[] = [...NO_NODEGROUP, 'CREATE_FAILED', 'DELETING', 'DELETE_FAILED'];

/** The nodes a compute's node group has now: what a scale-down hold may keep. A failed or departing group has none. */
export function nodesInForce(status: Pick<ObservedStatus, 'nodegroupStatus' | 'desiredNodes'>): number {
  return NO_NODES.includes(status.nodegroupStatus) ? 0 : status.desiredNodes;
}

/**
 * A compute's sizing in this pass: the nodes placement needs, held for the cool-down, beside the lower bound and
 * the cost. `changed` is false when nothing moved since the recorded one: at 200 computes a steady pass would
 * otherwise rewrite 200 items a minute.
 */
export function nextSizing(
  prev: Sizing | undefined,
  plan: { neededNodes: number; lowerBoundNodes: number; costPerHour: number } | undefined,
  started: Date,
  cooldownMs: number,
  ctx: SizingContext = { nodesInForce: Number.POSITIVE_INFINITY, createRetry: prev?.createRetry },
): { sizing: Sizing; changed: boolean } {
  const computed = ctx.deleting ? 0 : (plan?.neededNodes ?? 0);
  const held = applyCooldown(
    { neededNodes: prev?.neededNodes ?? 0, since: prev?.lowerSince, peak: prev?.peak },
    computed,
    started,
    cooldownMs,
  );
  const cd = ctx.deleting ? { neededNodes: 0 } : capHold(held, computed, ctx.nodesInForce);
  const sizing: Sizing = {
    neededNodes: cd.neededNodes,
    lowerBoundNodes: ctx.deleting ? 0 : (plan?.lowerBoundNodes ?? 0),
    costPerHour: ctx.deleting ? 0 : (plan?.costPerHour ?? 0),
    computedAt: started.toISOString(),
    ...(cd.since ? { lowerSince: cd.since } : {}),
    ...(cd.peak !== undefined ? { peak: cd.peak } : {}),
    ...(ctx.createRetry ? { createRetry: ctx.createRetry } : {}),
  };
  return { sizing, changed: !sameSizing(prev, sizing) };
}

/** A hold keeps at most the nodes that exist; with none left above the need, the cool-down is over. */
function capHold(cd: CooldownState, computed: number, nodesInForce: number): CooldownState {
  if (cd.neededNodes <= computed) return cd;
  const kept = Math.max(computed, Math.min(cd.neededNodes, nodesInForce));
  if (kept <= computed) return { neededNodes: computed };
  return { ...cd, neededNodes: kept, ...(cd.peak !== undefined ? { peak: Math.min(cd.peak, kept) } : {}) };
}

export function sameSizing(a: Sizing | undefined, b: Sizing): boolean {
  return (
    a !== undefined &&
    a.neededNodes === b.neededNodes &&
    a.lowerBoundNodes === b.lowerBoundNodes &&
    a.costPerHour === b.costPerHour &&
    a.lowerSince === b.lowerSince &&
    a.peak === b.peak &&
    JSON.stringify(a.createRetry ?? null) === JSON.stringify(b.createRetry ?? null)
  );
}
