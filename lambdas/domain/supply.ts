import { DRAIN_FIELD_MANAGER } from './drain';

/**
 * Capacity that exists (issue 32 §1, §3): which of a compute's nodes take pods, and whether its node group can
 * launch more. The reconcile pass observes both (Nodes from the cluster, scaling activities from Auto Scaling),
 * records them on the compute as `supply`, grows the group to replace nodes that take no pods, asks again for
 * nodes EC2 had no capacity for only at backed-off probes, and admission counts on a compute only the nodes it
 * can really have (`admissibleComputes`). Pure.
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
  /** Launches fail for lack of EC2 capacity (issue 32 §3); absent once a launch succeeds again. */
  shortOfCapacity?: CapacityShortage;
  /** Spot interruption warnings seen for the group's instances (issue 32 §4); kept across passes. */
  interruptions?: SpotInterruptions;
  /** The Availability Zones the group launches in: as its Auto Scaling group lists them, else its subnets'. */
  zones?: string[];
  /** Before the group exists: the zone of each of its subnets (DescribeSubnets), kept so none is read twice. */
  subnetZones?: Record<string, string>;
  /**
   * Zones where a launch of the group failed for lack of capacity and none has succeeded since: where the group
   * spans several, Auto Scaling launches in the others, so the compute is short (shortOfCapacity) only when every
   * one of its zones is, by its own launches or those of a compute with its instance type and market.
   */
  shortZones?: ZoneShortage[];
  /** The newest scaling activity folded into shortZones, so an activity read again is not counted twice. */
  launchesReadTo?: string;
}

/** A zone EC2 had no capacity in for the group's instance type and market. */
export interface ZoneShortage {
  zone: string;
  /** The first failure in the zone since the last launch that succeeded there. */
  since: string;
  lastFailureAt: string;
  /** EC2's message, which names the zone and where capacity may be had instead. */
  message: string;
  /** Counted short until then (twice the capacity grace after its newest failure); then tried like any zone. */
  until: string;
}

/** What EC2's "EC2 Spot Instance Interruption Warning" events said of a compute's instances. */
export interface SpotInterruptions {
  /** Warnings seen since the compute was created. */
  count: number;
  /** The newest: its instance, the node it was, and the event's time. */
  last: { instance: string; node?: string; at: string };
}

/**
 * The EventBridge pattern of the rule that sends EC2's two-minute Spot warnings to the reconciler (infra, and
 * the local control plane's delivery); the event as EC2 sends it:
 * `{source: 'aws.ec2', 'detail-type': 'EC2 Spot Instance Interruption Warning', detail: {'instance-id', 'instance-action'}}`.
 */
export const SPOT_WARNING_PATTERN = {
  source: ['aws.ec2'],
  'detail-type': ['EC2 Spot Instance Interruption Warning'],
} as const;

/** The warning's instance and time, when the event is one (anything else: undefined). */
export function spotWarning(event: unknown): { instance: string; at: string } | undefined {
  const e = event as {
    source?: unknown;
    'detail-type'?: unknown;
    time?: unknown;
    detail?: Record<string, unknown>;
  };
  if (e?.source !== SPOT_WARNING_PATTERN.source[0]) return undefined;
  if (e['detail-type'] !== SPOT_WARNING_PATTERN['detail-type'][0]) return undefined;
  const instance = e.detail?.['instance-id'];
  if (typeof instance !== 'string' || !/^i-[0-9a-f]+$/.test(instance)) return undefined;
  return { instance, at: typeof e.time === 'string' ? e.time : new Date(0).toISOString() };
}

/**
 * True when the launch a pass read was asked for within `withinMs` of a Spot warning of the compute (the
 * replacement of a reclaimed instance): judged at the launch's start, not at the pass that read it, since EC2
 * may report the failure minutes after the ask (and the grace after the warning be over by then). Without a
 * launch (a health issue), at `now`.
 */
export function replacesReclaimed(
  s: ComputeSupply | undefined,
  launch: LaunchActivity | undefined,
  now: string,
  withinMs: number,
): boolean {
  const warned = s?.interruptions?.last.at;
  const asked = launch?.startedAt ?? now;
  return warned !== undefined && Math.abs(Date.parse(asked) - Date.parse(warned)) <= withinMs;
}

/** The annotation the reconciler puts on a node whose instance EC2 warned it will reclaim: its warning time. */
export const SPOT_WARNING_ANNOTATION = 'llmcap.dev/spot-interruption';

/** The node (of those listed) an EC2 instance is, by its providerID `aws:///<zone>/<instance>`. */
export function nodeOfInstance<N extends SupplyNode>(nodes: readonly N[], instance: string): N | undefined {
  return nodes.find((n) => n.spec?.providerID?.endsWith(`/${instance}`));
}

/** The interruptions after one more warning; the same warning again (EventBridge delivers at least once) counts once. */
export function nextInterruptions(
  prev: SpotInterruptions | undefined,
  seen: { instance: string; node?: string; at: string },
): SpotInterruptions {
  if (prev && prev.last.instance === seen.instance) return prev;
  return { count: (prev?.count ?? 0) + 1, last: seen };
}

/** The newest launch of the group's Auto Scaling group, from DescribeScalingActivities. */
export interface LaunchActivity {
  status: 'Successful' | 'Failed' | 'InProgress' | 'Other';
  /** When it ended (or started, while in progress). */
  at: string;
  /** When it started: when the launch was asked for (a failure may be reported minutes later). */
  startedAt?: string;
  /** EC2's words for a failed launch (its StatusMessage). */
  message?: string;
  /** The zone it launched in, or tried to (the activity's Details; else the zone EC2's message names). */
  zone?: string;
  /** Not this group's launch: the newest failure of zones other computes found short (launchForShortage). */
  fromZones?: true;
}

/** A compute whose node group cannot launch nodes for lack of capacity. */
export interface CapacityShortage {
  /** When a launch first failed for lack of capacity. */
  since: string;
  /** EC2's message, as the failed launch (or the node group's health issue) gives it. */
  message: string;
  /** The newest failed launch seen. */
  lastFailureAt: string;
  /** Launches asked for again since (probes); the wait before the next doubles with each. */
  probes: number;
  /** No launch is asked for before then: EC2 has no capacity, and asking each pass only fails each pass. */
  nextProbeAt: string;
  /**
   * From then until nextProbeAt admission counts on no node the group does not already have, so replicas placed
   * here move to the next compute their model allows (admissibleComputes): the grace after the first failure,
   * or after the probe that failed. From nextProbeAt it counts on the compute again, so the next replica placed
   * here is the probe.
   */
  countedUntil: string;
  /** Taken from other computes' failures in every zone of this group; ends with them (nextComputeShortage). */
  fromZones?: true;
}

/** EC2's errors for capacity it does not have, On-Demand or Spot (not quotas, not configuration). */
const CAPACITY_ERRORS =
  /InsufficientInstanceCapacity|InsufficientCapacity|UnfulfillableCapacity|capacity-not-available|no Spot capacity available|InsufficientHostCapacity/i;

export function isCapacityFailure(message: string | undefined): boolean {
  return message !== undefined && CAPACITY_ERRORS.test(message);
}

/**
 * The first probe waits twice the grace: the grace, in which admission still counts on the compute, then as long
 * again in which it counts only the nodes the group runs, so the replicas counted on the rest are placed elsewhere
 * (were the probe due when the grace ends, admission would never stop counting on the compute). Each failed
 * probe doubles the wait, at most this.
 */
const MAX_PROBE_WAIT_MS = 60 * 60_000;

const plus = (at: string, ms: number) => new Date(Date.parse(at) + ms).toISOString();

/**
 * The shortage after what a pass saw: a launch that failed for lack of capacity starts one (or counts a probe,
 * when newer than the last failure and not before the probe was due); a launch that succeeded after the last
 * failure ends it; a health issue saying so, without an activity to date it, keeps or starts it as of now;
 * nothing new keeps what was. With
 * `reclaimed` (EC2 took a Spot instance of the group within the grace, issue 32 §4) there is no grace: EC2 is
 * short of that capacity already, and the replicas the reclaimed node ran must go elsewhere at once.
 */
export function nextShortage(
  prev: CapacityShortage | undefined,
  seen: { launch?: LaunchActivity; healthIssues?: readonly { code: string; message: string }[] },
  now: string,
  graceMs: number,
  reclaimed = false,
): CapacityShortage | undefined {
  const launch = seen.launch;
  if (launch?.status === 'Successful' && (!prev || launch.at > prev.lastFailureAt)) return undefined;
  const failed =
    launch?.status === 'Failed' && isCapacityFailure(launch.message)
      ? { at: launch.at, message: launch.message! }
      : undefined;
  const issue = seen.healthIssues?.find((i) => isCapacityFailure(i.message));
  const failure = failed ?? (issue ? { at: prev?.lastFailureAt ?? now, message: issue.message } : undefined);
  if (!failure) return prev;
  if (prev && failure.at <= prev.lastFailureAt) return prev;
  // A failure before the probe is due is Auto Scaling retrying the launch EC2 refused (the group keeps its desired
  // size while llmcap holds launches), not a probe: counted, each retry a pass read doubled the wait, up to an hour.
  const probe = !prev || failure.at >= prev.nextProbeAt;
  const probes = prev ? prev.probes + (probe ? 1 : 0) : 0;
  const since = prev?.since ?? failure.at;
  // A failure within a probe (after nextProbeAt) gives the probe's replicas the grace too.
  const graceFrom = prev && prev.nextProbeAt <= failure.at ? prev.nextProbeAt : since;
  return {
    since,
    message: failure.message,
    lastFailureAt: failure.at,
    // Taken from others only while this group never failed itself: its own failure is its own to probe.
    ...(failed && launch?.fromZones && (!prev || prev.fromZones) ? { fromZones: true as const } : {}),
    probes,
    nextProbeAt:
      prev && !probe
        ? prev.nextProbeAt
        : plus(failure.at, Math.min(MAX_PROBE_WAIT_MS, graceMs * 2 ** (probes + 1))),
    countedUntil: reclaimed
      ? graceFrom
      : prev && graceFrom === since
        ? prev.countedUntil
        : plus(graceFrom, graceMs),
  };
}

/**
 * Whether a pass reads the group's latest launches (DescribeScalingActivities, one call more): while it has fewer
 * instances than it wants (a launch may be failing); for a compute short of capacity, when its ready instances
 * changed since the last pass (`was`); and for a group of several zones, when instances came up since the last
 * pass (Auto Scaling may have launched them in one zone after EC2 refused another). A launch that succeeded is
 * the only way a shortage ends, and once its instance is up the group has what it wants: without this read it
 * would stay short. That launch may be llmcap's probe or Auto Scaling's own retry, which comes whenever EC2 has
 * the capacity again, also before the probe. A steady group, short or not, costs no call.
 */
export function readsLaunches(
  group: { live: number; ready: number; desired: number; zones?: number },
  was: { readyNodes: number },
  short: CapacityShortage | undefined,
): boolean {
  if (group.live < group.desired) return true;
  if ((group.zones ?? 0) > 1 && group.ready > was.readyNodes) return true;
  return short !== undefined && group.ready !== was.readyNodes;
}

/**
 * The zones short of capacity after the launches a pass read (newest first): a capacity failure in a zone marks
 * it (or moves its newest failure), a launch that succeeded in a zone after its failures clears it, and a zone
 * not failing again within twice the grace is tried again. Activities at or before `readTo` were folded already.
 */
export function nextShortZones(
  prev: readonly ZoneShortage[] | undefined,
  launches: readonly LaunchActivity[],
  readTo: string | undefined,
  now: string,
  graceMs: number,
): { shortZones: ZoneShortage[]; readTo: string | undefined } {
  const zones = new Map((prev ?? []).map((z) => [z.zone, z]));
  let newest = readTo;
  for (const l of [...launches].reverse()) {
    if (!l.zone || (readTo !== undefined && l.at <= readTo)) continue;
    if (newest === undefined || l.at > newest) newest = l.at;
    const was = zones.get(l.zone);
    if (l.status === 'Successful') {
      if (was && l.at > was.lastFailureAt) zones.delete(l.zone);
    } else if (l.status === 'Failed' && isCapacityFailure(l.message)) {
      if (was && l.at <= was.lastFailureAt) continue;
      zones.set(l.zone, {
        zone: l.zone,
        since: was?.since ?? l.at,
        lastFailureAt: l.at,
        message: l.message!,
        until: plus(l.at, 2 * graceMs),
      });
    }
  }
  const shortZones = [...zones.values()]
    .filter((z) => z.until > now)
    .sort((a, b) => a.zone.localeCompare(b.zone));
  return { shortZones, readTo: newest };
}

/** What zone shortages are shared by: EC2's capacity is per instance type, market and zone, not per node group. */
export function capacityKey(node: { instanceType: string; capacityType?: string }, zone: string): string {
  return `${node.instanceType}|${node.capacityType ?? 'ON_DEMAND'}|${zone}`;
}

/** Every compute's short zones by capacityKey, the newest failure winning: what each compute can learn from all. */
export function sharedShortZones(
  computes: readonly {
    spec: { node: { instanceType: string; capacityType?: string } };
    shortZones?: readonly ZoneShortage[];
  }[],
): Map<string, ZoneShortage> {
  const out = new Map<string, ZoneShortage>();
  for (const c of computes) {
    for (const z of c.shortZones ?? []) {
      const key = capacityKey(c.spec.node, z.zone);
      const was = out.get(key);
      if (!was || z.lastFailureAt > was.lastFailureAt)
        out.set(key, { ...z, since: was && was.since < z.since ? was.since : z.since });
    }
  }
  return out;
}

/** True when every zone of the group is short of its instance type and market (by any compute's launches). */
function allZonesShort(
  node: { instanceType: string; capacityType?: string },
  zones: readonly string[],
  shared: ReadonlyMap<string, ZoneShortage>,
  now: string,
): boolean {
  return zones.every((z) => {
    const s = shared.get(capacityKey(node, z));
    return s !== undefined && s.until > now;
  });
}

/**
 * The launch the compute-wide shortage (nextShortage) is judged on, for a group whose zones are known. Where it
 * spans several zones a capacity failure in one is not the compute's: Auto Scaling launches in another. Once
 * every zone is short (by this group's launches or another compute's of the same instance type and market), the
 * compute is, as of the newest of those failures, though this group may never have asked: the replicas it would
 * take go elsewhere instead of waiting for a launch EC2 is known to refuse.
 */
export function launchForShortage(
  launch: LaunchActivity | undefined,
  node: { instanceType: string; capacityType?: string },
  zones: readonly string[] | undefined,
  shared: ReadonlyMap<string, ZoneShortage>,
  now: string,
): LaunchActivity | undefined {
  if (!zones || zones.length === 0) return launch;
  const all = allZonesShort(node, zones, shared, now);
  const capacityFailure = launch?.status === 'Failed' && isCapacityFailure(launch.message);
  // A failure in no zone of the group's list (none named, or a zone ID such as use1-az1 where the list has names)
  // stays the compute's, as it always was.
  const elsewhere = capacityFailure && launch!.zone !== undefined && zones.includes(launch!.zone);
  if (!all) return elsewhere && zones.length > 1 ? { ...launch!, status: 'Other' } : launch;
  if (capacityFailure) return launch;
  const newest = zones
    .map((z) => shared.get(capacityKey(node, z))!)
    .reduce((a, b) => (b.lastFailureAt > a.lastFailureAt ? b : a));
  // A success newer than every zone's failure means capacity came back: that ends a shortage as before.
  if (launch?.status === 'Successful' && launch.at > newest.lastFailureAt) return launch;
  return {
    status: 'Failed',
    at: newest.lastFailureAt,
    message: newest.message,
    zone: newest.zone,
    fromZones: true,
  };
}

/**
 * A compute's shortage after a pass, its zones considered (launchForShortage): as nextShortage, except that a
 * shortage taken only from other computes' failures ends once not every zone of this group is short any more,
 * rather than waiting for a probe of a group that never failed (its wait may have grown to an hour).
 */
export function nextComputeShortage(
  prev: CapacityShortage | undefined,
  seen: { launch?: LaunchActivity; healthIssues?: readonly { code: string; message: string }[] },
  group: {
    node: { instanceType: string; capacityType?: string };
    zones?: readonly string[];
    shared: ReadonlyMap<string, ZoneShortage>;
  },
  now: string,
  graceMs: number,
  reclaimed = false,
): CapacityShortage | undefined {
  const { node, zones, shared } = group;
  const known = zones !== undefined && zones.length > 0;
  const from = prev?.fromZones && known && !allZonesShort(node, zones, shared, now) ? undefined : prev;
  const launch = launchForShortage(seen.launch, node, zones, shared, now);
  return nextShortage(from, { ...seen, launch }, now, graceMs, reclaimed);
}

/** True while the pass must not ask the group for nodes it lacks: short of capacity, before the next probe. */
export function holdsLaunches(s: CapacityShortage | undefined, now: string): boolean {
  return s !== undefined && now < s.nextProbeAt;
}

/**
 * True while admission counts on no node the group lacks: past the grace after a failure, until the next probe.
 */
export function cannotLaunch(s: CapacityShortage | undefined, now: string | undefined): boolean {
  return s !== undefined && now !== undefined && now >= s.countedUntil && now < s.nextProbeAt;
}

/**
 * True while a shortage's grace runs: admission still counts on the compute, and will stop at `countedUntil`
 * (not a shortage whose grace EC2's reclaim of a Spot instance cut to nothing).
 */
export function inGrace(s: CapacityShortage | undefined, now: string): boolean {
  return s !== undefined && now < s.countedUntil && s.countedUntil < s.nextProbeAt;
}

/**
 * The computes as they will be once every grace running at `now` is over: each such shortage counted from `now`
 * (admissibleComputes then gives the compute only the nodes it runs). What admission decides on them is where
 * the replicas of a short compute go when its grace ends (nodesAhead).
 */
export function pastGraces<C extends { supply?: ComputeSupply }>(
  computes: readonly C[],
  now: string,
): C[] | undefined {
  if (!computes.some((c) => inGrace(c.supply?.shortOfCapacity, now))) return undefined;
  return computes.map((c) => {
    const s = c.supply?.shortOfCapacity;
    if (!s || !inGrace(s, now)) return c;
    return { ...c, supply: { ...c.supply, shortOfCapacity: { ...s, countedUntil: now } } };
  });
}

/**
 * Nodes to ask for ahead of a grace's end (issue 32 §3): the computes whose placement after the graces (`after`)
 * needs more nodes than the placement now (`planned`), with that placement's entry. Started during the grace, the
 * node boots while the grace runs, so the replicas that move when it ends wait for a pod's start, not a grace and
 * a boot. The short computes themselves get none (they cannot launch). Sized as any need is, so should the
 * shortage end within the grace the nodes stay for the cool-down (a node still booting is never what a
 * scale-down takes), at the cost of a node for that long.
 */
export function nodesAhead<P extends { compute: string; neededNodes: number }>(
  planned: readonly { compute: string; neededNodes: number }[],
  after: readonly P[],
  short: ReadonlySet<string>,
): Map<string, P> {
  const now = new Map(planned.map((p) => [p.compute, p.neededNodes]));
  const out = new Map<string, P>();
  for (const p of after) {
    if (!short.has(p.compute) && p.neededNodes > (now.get(p.compute) ?? 0)) out.set(p.compute, p);
  }
  return out;
}

/** The fields of a Node this reads. */
export interface SupplyNode {
  metadata: {
    name: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    creationTimestamp?: unknown;
    deletionTimestamp?: unknown;
    managedFields?: { manager?: string; fieldsV1?: unknown }[];
  };
  spec?: { unschedulable?: boolean; providerID?: string };
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
 * `graceMs` since its Ready condition last changed (a booting node is NotReady for a minute or two); warned by
 * EC2 that its Spot instance is reclaimed in two minutes (at once: it is as good as gone). A node being deleted is
 * leaving, not idle.
 */
export function idleReason(n: SupplyNode, now: string, graceMs: number): string | undefined {
  if (n.metadata.deletionTimestamp) return undefined;
  const warned = n.metadata.annotations?.[SPOT_WARNING_ANNOTATION];
  if (warned) return `Spot interruption warning at ${warned}`;
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
  status?: { readyNodes: number };
  supply?: ComputeSupply;
}

/**
 * The seam into admission (World.computes → PlacementHeadroom): each compute with maxNodes lowered to the nodes
 * it can really have. An idle node still counts against the group's maxNodes but takes no pods, so it is one
 * slot fewer; a compute that cannot launch (short of capacity past its grace, at `now`) has only the nodes it
 * runs. Computes with nothing to say are returned as they are; without `now` no shortage is applied.
 */
export function admissibleComputes<C extends SuppliedCompute>(
  computes: readonly C[],
  now?: string,
): (C & { fewerNodesBecause?: string })[] {
  return computes.map((c) => {
    const slots = admissibleNodes(c, now);
    if (slots === c.spec.nodeGroup.maxNodes) return c;
    const idle = c.supply?.idleNodes?.length ?? 0;
    const because = [
      ...(cannotLaunch(c.supply?.shortOfCapacity, now)
        ? [`EC2 has no capacity for more of its nodes until ${c.supply!.shortOfCapacity!.nextProbeAt}`]
        : []),
      ...(idle ? [`${idle} of its nodes take no pods`] : []),
    ].join('; ');
    return {
      ...c,
      spec: { ...c.spec, nodeGroup: { ...c.spec.nodeGroup, maxNodes: slots } },
      fewerNodesBecause: because,
    };
  });
}

/**
 * Per model and compute, the Ready replicas on nodes that take no pods (the compute's `supply.idleNodes`): going
 * with their node, so they keep no slot ahead of replicas that stay (World.going, restoreHeadroom). From the pods
 * the reconciler last listed (its WORKLOAD items); a model's list is capped (MAX_PODS_SHOWN), so one with more
 * pods may count fewer, and those then keep their slot as before.
 */
export function replicasGoing(
  workloads: readonly {
    model: string;
    pods?: readonly { compute: string; node?: string; ready: boolean }[];
  }[],
  computes: readonly { name: string; supply?: ComputeSupply }[],
): Record<string, Record<string, number>> {
  const idle = new Map(
    computes.map((c) => [c.name, new Set((c.supply?.idleNodes ?? []).map((n) => n.node))]),
  );
  const out: Record<string, Record<string, number>> = {};
  for (const w of workloads) {
    for (const p of w.pods ?? []) {
      if (!p.ready || !p.node || !idle.get(p.compute)?.has(p.node)) continue;
      const per = out[w.model] ?? {};
      out[w.model] = per;
      per[p.compute] = (per[p.compute] ?? 0) + 1;
    }
  }
  return out;
}

/** The node slots admission may fill on a compute (at least 0). */
export function admissibleNodes(c: SuppliedCompute, now?: string): number {
  const idle = c.supply?.idleNodes?.length ?? 0;
  const nodes = cannotLaunch(c.supply?.shortOfCapacity, now)
    ? Math.min(c.spec.nodeGroup.maxNodes, c.status?.readyNodes ?? 0)
    : c.spec.nodeGroup.maxNodes;
  return Math.max(0, nodes - idle);
}

/** What a compute's status says of its supply (toManifest): only what there is to say. */
export function supplyStatus(s: ComputeSupply | undefined) {
  return {
    ...(s?.idleNodes?.length ? { idleNodes: s.idleNodes } : {}),
    ...(s?.replacementNodes ? { replacementNodes: s.replacementNodes } : {}),
    ...(s?.shortOfCapacity ? { shortOfCapacity: s.shortOfCapacity } : {}),
    ...(s?.interruptions ? { interruptions: s.interruptions } : {}),
    ...(s?.zones ? { zones: s.zones } : {}),
    ...(s?.shortZones?.length ? { shortZones: s.shortZones } : {}),
  };
}

/** True when two observations say the same (so a steady pass writes nothing). */
export function sameSupply(a: ComputeSupply | undefined, b: ComputeSupply | undefined): boolean {
  return JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});
}
