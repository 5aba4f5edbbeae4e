import type { Sizing } from '../compute';

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
): { sizing: Sizing; changed: boolean } {
  const cd = applyCooldown(
    { neededNodes: prev?.neededNodes ?? 0, since: prev?.lowerSince, peak: prev?.peak },
    plan?.neededNodes ?? 0,
    started,
    cooldownMs,
  );
  const sizing: Sizing = {
    neededNodes: cd.neededNodes,
    lowerBoundNodes: plan?.lowerBoundNodes ?? 0,
    costPerHour: plan?.costPerHour ?? 0,
    computedAt: started.toISOString(),
    ...(cd.since ? { lowerSince: cd.since } : {}),
    ...(cd.peak !== undefined ? { peak: cd.peak } : {}),
  };
  const same =
    prev !== undefined &&
    prev.neededNodes === sizing.neededNodes &&
    prev.lowerBoundNodes === sizing.lowerBoundNodes &&
    prev.costPerHour === sizing.costPerHour &&
    prev.lowerSince === sizing.lowerSince &&
    prev.peak === sizing.peak;
  return { sizing, changed: !same };
}
