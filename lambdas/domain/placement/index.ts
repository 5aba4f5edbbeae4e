/**
 * Placement and node sizing (docs/design.md, Placement and sizing): which compute each replica goes to, how many nodes each
 * compute needs, and the scale-down cool-down. Pure: no AWS, no I/O.
 */
export {
  applyCooldown,
  type CooldownState,
  DEFAULT_COOLDOWN_MS,
  nextSizing,
  nodesInForce,
  type SizingContext,
} from './cooldown';
export { PlacementHeadroom, type UnitRecord } from './headroom';
export {
  type Items,
  lowerBound,
  makeItems,
  type Packing,
  pack,
  type Strategy,
  strongLowerBound,
} from './pack';
export {
  type ComputePlan,
  capacityView,
  type PlacedUnit,
  type PlacementPlan,
  type PlannedNode,
  type PlanOptions,
  type PlanTotals,
  planPlacement,
  sizingOf,
} from './plan';
export {
  type Candidates,
  type ComputeInfo,
  type ComputeLike,
  computeInfos,
  describeReplicas,
  fitsNode,
  mayUse,
  namedComputes,
  perNode,
  type Reach,
  type ReplicaRequest,
  rankCandidates,
  replicaRequest,
} from './request';
