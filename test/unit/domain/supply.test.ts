import {
  decideWorld,
  restoreHeadroom,
  standingReplicas,
  type World,
} from '../../../lambdas/domain/admission-world';
import { PlacementHeadroom } from '../../../lambdas/domain/placement';
import { ScopeTree } from '../../../lambdas/domain/quota';
import {
  admissibleComputes,
  admissibleNodes,
  type CapacityShortage,
  cannotLaunch,
  holdsLaunches,
  idleReason,
  inGrace,
  type LaunchActivity,
  launchForShortage,
  nextComputeShortage,
  nextShortage,
  nextShortZones,
  nodesAhead,
  nodesByCompute,
  pastGraces,
  readsLaunches,
  replacementNodes,
  replicasGoing,
  type SupplyNode,
  sharedShortZones,
  withReplacements,
} from '../../../lambdas/domain/supply';
import { builtin } from '../../helpers/computes';

const NOW = '2026-12-06T03:00:00.000Z';
const MIN = 60_000;
const GRACE = 5 * MIN;
const ago = (ms: number) => new Date(Date.parse(NOW) - ms).toISOString();

const node = (
  name: string,
  over: Partial<SupplyNode> & { ready?: boolean; since?: string } = {},
): SupplyNode => ({
  metadata: {
    name,
    labels: { 'llmcap.dev/compute': 'pool' },
    creationTimestamp: ago(60 * MIN),
    ...over.metadata,
  },
  ...(over.spec ? { spec: over.spec } : {}),
  status: {
    conditions: [
      {
        type: 'Ready',
        status: over.ready === false ? 'False' : 'True',
        lastTransitionTime: over.since ?? ago(50 * MIN),
      },
    ],
  },
});

const unit = (id: string) => ({
  id,
  kind: 'extra',
  replicas: 1,
  profile: 'l4',
  resources: { gpus: 1, cores: 4, memoryGb: 16 },
  placements: [{ compute: 'pool', profile: 'l4', replicas: 1 }],
  admittedAt: NOW,
  borrowed: false,
});

describe('nodes that take no pods (issue 32 §1)', () => {
  it('counts a node cordoned by a person, not one cordoned by llmcap’s own scale-down drain', () => {
    expect(idleReason(node('a', { spec: { unschedulable: true } }), NOW, GRACE)).toBe('cordoned');
    const ours = node('b', {
      spec: { unschedulable: true },
      metadata: {
        name: 'b',
        managedFields: [{ manager: 'llmcap-drain', fieldsV1: { 'f:spec': { 'f:unschedulable': {} } } }],
      },
    });
    expect(idleReason(ours, NOW, GRACE)).toBeUndefined();
    // kubectl's cordon owns the field under its own manager.
    const kubectl = node('c', {
      spec: { unschedulable: true },
      metadata: {
        name: 'c',
        managedFields: [{ manager: 'kubectl-cordon', fieldsV1: { 'f:spec': { 'f:unschedulable': {} } } }],
      },
    });
    expect(idleReason(kubectl, NOW, GRACE)).toBe('cordoned');
  });

  it('counts a NotReady node only after the grace (a booting node is NotReady for a minute or two)', () => {
    expect(idleReason(node('boot', { ready: false, since: ago(2 * MIN) }), NOW, GRACE)).toBeUndefined();
    expect(idleReason(node('dead', { ready: false, since: ago(6 * MIN) }), NOW, GRACE)).toBe(
      `NotReady since ${ago(6 * MIN)}`,
    );
    expect(idleReason(node('ok'), NOW, GRACE)).toBeUndefined();
    const leaving = node('gone', { spec: { unschedulable: true } });
    leaving.metadata.deletionTimestamp = ago(MIN);
    expect(idleReason(leaving, NOW, GRACE)).toBeUndefined();
  });

  it('groups nodes by compute label, idle ones named', () => {
    const other = node('x');
    other.metadata.labels = { 'llmcap.dev/compute': 'other' };
    const seen = nodesByCompute(
      [node('b', { spec: { unschedulable: true } }), node('a'), other],
      'llmcap.dev/compute',
      NOW,
      GRACE,
    );
    expect(seen.get('pool')).toEqual({ nodes: 2, idle: [{ node: 'b', why: 'cordoned' }] });
    expect(seen.get('other')).toEqual({ nodes: 1, idle: [] });
  });

  it('replaces idle nodes within maxNodes, but not those already beyond the desired size (leaving)', () => {
    expect(replacementNodes(1, 2, 2)).toBe(1);
    // A scale-down from 3 to 2 whose removed node is cordoned: nothing to replace.
    expect(replacementNodes(1, 3, 2)).toBe(0);
    expect(withReplacements(2, 1, 4)).toBe(3);
    expect(withReplacements(4, 1, 4)).toBe(4);
    // Nothing needed: an idle node of an empty pool is not replaced.
    expect(withReplacements(0, 1, 4)).toBe(0);
  });

  it('gives admission one node slot fewer per idle node, so a unit that no longer fits is placed again', () => {
    const pool = { ...builtin('gpu-l4-1x'), name: 'pool' };
    pool.spec = { ...pool.spec, nodeGroup: { ...pool.spec.nodeGroup, maxNodes: 2 } };
    const idle = { ...pool, supply: { idleNodes: [{ node: 'n1', why: 'cordoned' }] } };
    expect(admissibleComputes([idle])[0]!.spec.nodeGroup.maxNodes).toBe(1);
    expect(admissibleComputes([pool])[0]).toBe(pool);
    const model = {
      name: 'chat',
      spec: {
        profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'pool' }],
      },
    } as never;
    const admission = {
      model: 'chat',
      units: [unit('chat#min'), unit('chat#2')],
    } as never;
    const tree = new ScopeTree([]);
    expect(restoreHeadroom([pool] as never, [admission], [model], tree).admissions[0]!.units).toHaveLength(2);
    // The refusal of a replica that no longer fits says why the compute has fewer nodes than its maxNodes.
    const headroom = PlacementHeadroom.create(admissibleComputes([idle]) as never);
    const profile = { name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'pool' };
    expect(headroom.place({ id: 'a', model: 'chat', profiles: [profile] as never, replicas: 1 }).ok).toBe(
      true,
    );
    const refused = headroom.place({ id: 'b', model: 'chat', profiles: [profile] as never, replicas: 1 });
    expect(refused).toMatchObject({
      ok: false,
      message: expect.stringContaining(
        'pool is at the 1 nodes it can have now (1 of its nodes take no pods)',
      ),
    });
    expect(restoreHeadroom([idle] as never, [admission], [model], tree).admissions[0]!.units).toHaveLength(1);
  });
});

describe('GPUs that cannot be had (issue 32 §3)', () => {
  const ICE =
    'Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have sufficient g6.2xlarge capacity in the Availability Zone you requested (us-east-1a).';
  const at = (m: number) => new Date(Date.parse(NOW) + m * MIN).toISOString();
  /** The shortage one launch failing for lack of capacity at minute 0 starts. */
  const firstShortage = () =>
    nextShortage(undefined, { launch: { status: 'Failed', at: at(0), message: ICE } }, at(0), GRACE)!;

  it('starts a shortage at a launch that failed for lack of capacity, not at any failure', () => {
    const s = nextShortage(
      undefined,
      { launch: { status: 'Failed', at: at(0), message: ICE } },
      at(0),
      GRACE,
    );
    expect(s).toEqual({
      since: at(0),
      message: ICE,
      lastFailureAt: at(0),
      probes: 0,
      // The grace (to countedUntil), then as long again counting only the running nodes, then the probe.
      nextProbeAt: at(10),
      countedUntil: at(5),
    });
    const quota =
      'Could not launch On-Demand Instances. VcpuLimitExceeded - You have requested more vCPU capacity';
    expect(
      nextShortage(undefined, { launch: { status: 'Failed', at: at(0), message: quota } }, at(0), GRACE),
    ).toBe(undefined);
    // The node group's health issue says it too, before (or without) an activity to date it.
    expect(
      nextShortage(
        undefined,
        { healthIssues: [{ code: 'AsgInstanceLaunchFailures', message: ICE }] },
        at(1),
        GRACE,
      )?.since,
    ).toBe(at(1));
  });

  it('backs off each failed probe, and ends at a launch that succeeded after the last failure', () => {
    let s = nextShortage(undefined, { launch: { status: 'Failed', at: at(0), message: ICE } }, at(0), GRACE);
    // The same failure seen again changes nothing; the next one (a probe) doubles the wait.
    expect(nextShortage(s, { launch: { status: 'Failed', at: at(0), message: ICE } }, at(2), GRACE)).toBe(s);
    s = nextShortage(s, { launch: { status: 'Failed', at: at(11), message: ICE } }, at(11), GRACE);
    expect(s).toMatchObject({ since: at(0), probes: 1, nextProbeAt: at(31), countedUntil: at(15) });
    s = nextShortage(s, { launch: { status: 'Failed', at: at(32), message: ICE } }, at(32), GRACE);
    expect(s).toMatchObject({ probes: 2, nextProbeAt: at(72), countedUntil: at(36) });
    // An older success says nothing; a newer one ends it.
    expect(nextShortage(s, { launch: { status: 'Successful', at: at(3) } }, at(33), GRACE)).toBe(s);
    expect(nextShortage(s, { launch: { status: 'Successful', at: at(33) } }, at(33), GRACE)).toBeUndefined();
    // Nothing seen (the group has all it wants, so no activity was read): it stands.
    expect(nextShortage(s, {}, at(35), GRACE)).toBe(s);
  });

  it("backs off per probe, not per retry of Auto Scaling's that a pass reads", () => {
    // Auto Scaling retries the refused launch on its own (the group keeps its desired size). Passes close together
    // read each retry; a later pass reads only the newest. Either way the probe is due when it was: the retries
    // were not probes.
    const first = firstShortage();
    let each = first;
    for (const m of [1, 3, 6, 9]) {
      each = nextShortage(each, { launch: { status: 'Failed', at: at(m), message: ICE } }, at(m), GRACE)!;
    }
    const newest = nextShortage(
      first,
      { launch: { status: 'Failed', at: at(9), message: ICE } },
      at(9),
      GRACE,
    );
    expect(each).toEqual(newest);
    expect(each).toMatchObject({ probes: 0, nextProbeAt: at(10), countedUntil: at(5), lastFailureAt: at(9) });
    // The failure at or after the probe was due is the probe's: that one doubles the wait.
    const probed = nextShortage(
      each,
      { launch: { status: 'Failed', at: at(10), message: ICE } },
      at(10),
      GRACE,
    );
    expect(probed).toMatchObject({ probes: 1, nextProbeAt: at(30), countedUntil: at(15) });
  });

  it('reads the launches of a short compute once its group changed, so a launch that succeeded ends it', () => {
    const s = firstShortage();
    const steady = { live: 1, ready: 1, desired: 1 };
    // A group with fewer instances than it wants is read, short or not: a launch may be failing.
    expect(readsLaunches({ live: 1, ready: 1, desired: 2 }, { readyNodes: 1 }, undefined)).toBe(true);
    // A steady group costs no call, short or not: nothing launched, so nothing can have ended.
    expect(readsLaunches(steady, { readyNodes: 1 }, undefined)).toBe(false);
    expect(readsLaunches(steady, { readyNodes: 1 }, s)).toBe(false);
    // The probe (from nextProbeAt) asked for a node and it came up: the group has what it wants again, and its
    // ready nodes changed since the last pass. Read, the launch ends the shortage.
    const probed = { live: 2, ready: 2, desired: 2 };
    expect(readsLaunches(probed, { readyNodes: 1 }, s)).toBe(true);
    const seen = {
      launch: { status: 'Successful' as const, at: at(11) },
      // EKS may still report the failed launch as the group's health issue: the newer launch outweighs it.
      healthIssues: [{ code: 'AsgInstanceLaunchFailures', message: ICE }],
    };
    expect(nextShortage(s, seen, at(11), GRACE)).toBeUndefined();
    // Before the probe llmcap asks for nothing, but Auto Scaling retries on its own and launches once EC2 has the
    // capacity: a short group whose ready nodes changed is read then too, or it would stay short until the probe.
    expect(readsLaunches(probed, { readyNodes: 1 }, s)).toBe(true);
  });

  it('no longer admits a replica on nodes a short compute lacks once the first failure’s grace is over', () => {
    // The pool runs one node of the two its replicas are counted on; the launch of the second failed at +0.
    const pool = { ...builtin('gpu-l4-1x'), name: 'pool' };
    const short = nextShortage(
      undefined,
      { launch: { status: 'Failed', at: at(0), message: ICE } },
      at(0),
      GRACE,
    );
    const c = {
      ...pool,
      spec: { ...pool.spec, nodeGroup: { ...pool.spec.nodeGroup, maxNodes: 2 } },
      status: { readyNodes: 1 },
      supply: { shortOfCapacity: short },
    };
    const model = {
      name: 'chat',
      spec: {
        profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'pool' }],
      },
    } as never;
    const admission = { model: 'chat', units: [unit('chat#min'), unit('chat#2')] } as never;
    const kept = (now: string) =>
      restoreHeadroom([c] as never, [admission], [model], new ScopeTree([]), now).admissions[0]!.units.map(
        (u) => u.id,
      );
    // Within the grace both stay; past it the one on the node EC2 cannot launch is dropped (the admitter places
    // it again, on the model's next profile or pending with the reason) until the probe is due.
    expect(kept(at(4))).toEqual(['chat#min', 'chat#2']);
    expect(kept(at(5))).toEqual(['chat#min']);
    expect(kept(at(9))).toEqual(['chat#min']);
    expect(kept(at(10))).toEqual(['chat#min', 'chat#2']);
  });

  it('holds launches until the probe, and gives admission only the running nodes past the grace', () => {
    const s = firstShortage();
    expect(holdsLaunches(s, at(9))).toBe(true);
    expect(holdsLaunches(s, at(10))).toBe(false);
    const c = {
      spec: { nodeGroup: { maxNodes: 4 } },
      status: { readyNodes: 1 },
      supply: { shortOfCapacity: s },
    };
    // Within the grace the compute counts as before; past it only its running node, until the probe is due.
    expect(cannotLaunch(s, at(4))).toBe(false);
    expect(admissibleNodes(c, at(4))).toBe(4);
    // The first failure's own shortage, as the pass stores it: from the grace's end to its probe (BENCHMARKS'
    // "held past the grace" was this window being empty, the probe due the moment the grace ended).
    expect(cannotLaunch(s, at(5))).toBe(true);
    expect(admissibleNodes(c, at(5))).toBe(1);
    expect(admissibleNodes(c, at(9))).toBe(1);
    expect(admissibleComputes([c], at(6))[0]!.spec.nodeGroup.maxNodes).toBe(1);
    // Without `now` (a caller that does not know the time) nothing changes; at the probe it counts again.
    expect(admissibleNodes(c)).toBe(4);
    expect(admissibleNodes(c, at(10))).toBe(4);
  });
});

describe('zones short of capacity (issue 32 §3)', () => {
  const at = (m: number) => new Date(Date.parse(NOW) + m * MIN).toISOString();
  const ice = (zone: string) =>
    `Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have sufficient g6.2xlarge capacity in the Availability Zone you requested (${zone}).`;
  const failed = (zone: string, m: number): LaunchActivity => ({
    status: 'Failed',
    at: at(m),
    message: ice(zone),
    zone,
  });
  const launched = (zone: string, m: number): LaunchActivity => ({ status: 'Successful', at: at(m), zone });
  const l4 = { instanceType: 'g6.2xlarge' };
  /** What the pass decides for a compute of `zones`, from its launches (newest first) and the zones all saw. */
  const decide = (zones: string[], launches: LaunchActivity[], others: string[] = [], now = at(1)) => {
    const own = nextShortZones(undefined, launches, undefined, now, GRACE).shortZones;
    const theirs = others.map((z) => ({
      zone: z,
      since: at(0),
      lastFailureAt: at(0),
      message: ice(z),
      until: at(10),
    }));
    const shared = sharedShortZones([
      { spec: { node: l4 }, shortZones: own },
      { spec: { node: l4 }, shortZones: theirs },
    ]);
    return nextComputeShortage(undefined, { launch: launches[0] }, { node: l4, zones, shared }, now, GRACE);
  };

  it('is not short when EC2 refused one of its zones and Auto Scaling launched in another', () => {
    const launches = [launched('us-east-1b', 0), failed('us-east-1a', 0)];
    expect(nextShortZones(undefined, launches, undefined, at(1), GRACE)).toEqual({
      shortZones: [
        { zone: 'us-east-1a', since: at(0), lastFailureAt: at(0), message: ice('us-east-1a'), until: at(10) },
      ],
      readTo: at(0),
    });
    expect(decide(['us-east-1a', 'us-east-1b'], launches)).toBeUndefined();
    // Read before the other zone's launch was: the refusal alone is still not the compute's.
    expect(decide(['us-east-1a', 'us-east-1b'], [failed('us-east-1a', 0)])).toBeUndefined();
    // The pass reads a group of several zones whose instances came up, as it would miss the refusal otherwise;
    // a steady group, or one of one zone, costs no call.
    const up = { live: 2, ready: 2, desired: 2 };
    expect(readsLaunches({ ...up, zones: 2 }, { readyNodes: 1 }, undefined)).toBe(true);
    expect(readsLaunches({ ...up, zones: 2 }, { readyNodes: 2 }, undefined)).toBe(false);
    expect(readsLaunches({ ...up, zones: 1 }, { readyNodes: 1 }, undefined)).toBe(false);
    // A group in that zone only is short, as a group of one zone always was.
    expect(decide(['us-east-1a'], [failed('us-east-1a', 0)])).toMatchObject({ since: at(0) });
  });

  it('is short once every zone is, by its own launches or another compute’s of its instance type', () => {
    const both = [failed('us-east-1b', 0), failed('us-east-1a', 0)];
    expect(decide(['us-east-1a', 'us-east-1b'], both)).toMatchObject({
      since: at(0),
      message: ice('us-east-1b'),
    });
    // A compute that never asked: its zones are known short for g6.2xlarge On-Demand, so admission stops counting
    // on nodes it lacks after the grace, as if its own launch had failed.
    expect(decide(['us-east-1a'], [], ['us-east-1a'])).toMatchObject({ since: at(0), countedUntil: at(5) });
    expect(decide(['us-east-1a', 'us-east-1b'], [], ['us-east-1a'])).toBeUndefined();
    // Another market or instance type is other capacity.
    const spot = sharedShortZones([
      {
        spec: { node: { ...l4, capacityType: 'SPOT' } },
        shortZones: [
          { zone: 'us-east-1a', since: at(0), lastFailureAt: at(0), message: ice('a'), until: at(10) },
        ],
      },
    ]);
    expect(launchForShortage(undefined, l4, ['us-east-1a'], spot, at(1))).toBeUndefined();
  });

  it('ends a shortage taken from others once their zones are not all short, not at a probe it never made', () => {
    const zone = { zone: 'us-east-1a', since: at(0), lastFailureAt: at(0), message: ice('us-east-1a') };
    const shortA = sharedShortZones([{ spec: { node: l4 }, shortZones: [{ ...zone, until: at(10) }] }]);
    const group = { node: l4, zones: ['us-east-1a'] };
    const taken = nextComputeShortage(undefined, {}, { ...group, shared: shortA }, at(1), GRACE);
    expect(taken).toMatchObject({ since: at(0), fromZones: true });
    // Another compute's later failure there backs its probe off, as a failure of its own would.
    const later = sharedShortZones([
      { spec: { node: l4 }, shortZones: [{ ...zone, lastFailureAt: at(11), until: at(21) }] },
    ]);
    const again = nextComputeShortage(taken, {}, { ...group, shared: later }, at(12), GRACE);
    expect(again).toMatchObject({ probes: 1, fromZones: true });
    // A launch there succeeded (the zone is no longer listed): it ends with it, though its probe is far off.
    expect(nextComputeShortage(again, {}, { ...group, shared: new Map() }, at(13), GRACE)).toBeUndefined();
    // Its own failure is its own: it stays until its probe, whatever the others' zones say.
    const own = nextComputeShortage(
      undefined,
      { launch: failed('us-east-1a', 0) },
      { ...group, shared: shortA },
      at(1),
      GRACE,
    );
    expect(own?.fromZones).toBeUndefined();
    expect(nextComputeShortage(own, {}, { ...group, shared: new Map() }, at(2), GRACE)).toBe(own);
  });

  it('clears a zone at a later launch there, tries it again after twice the grace, and folds an activity once', () => {
    let z = nextShortZones(undefined, [failed('us-east-1a', 0)], undefined, at(0), GRACE);
    // An older success there says nothing; a later one clears it.
    expect(
      nextShortZones(z.shortZones, [launched('us-east-1a', 2)], z.readTo, at(2), GRACE).shortZones,
    ).toEqual([]);
    // Not failing again within twice the grace, the zone is tried like any other.
    expect(nextShortZones(z.shortZones, [], z.readTo, at(11), GRACE).shortZones).toEqual([]);
    // The same page read again after the zone was dropped does not mark it again.
    z = nextShortZones([], [failed('us-east-1a', 0)], z.readTo, at(11), GRACE);
    expect(z.shortZones).toEqual([]);
  });

  it('keeps a failure in no zone of the group’s (none named, or a zone ID) the compute’s, as before', () => {
    const spot: LaunchActivity = {
      status: 'Failed',
      at: at(0),
      message: 'Could not launch Spot Instances. UnfulfillableCapacity - There is no capacity available',
    };
    expect(launchForShortage(spot, l4, ['us-east-1a', 'us-east-1b'], new Map(), at(0))).toBe(spot);
    const byId = { ...failed('use1-az1', 0) };
    expect(launchForShortage(byId, l4, ['us-east-1a', 'us-east-1b'], new Map(), at(0))).toBe(byId);
  });
});

describe('re-placement never takes a Ready minimum’s slot for a surplus replica (issue 32 §3)', () => {
  const ICE =
    'Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have sufficient g6.xlarge capacity in the Availability Zone you requested (us-east-1a).';
  const at = (m: number) => new Date(Date.parse(NOW) + m * MIN).toISOString();
  const l4 = builtin('gpu-l4-1x');
  // The preferred pool runs one node of its two: the launch of the second failed at +0 and EC2 has no more.
  const preferred = {
    name: 'pool',
    spec: { ...l4.spec, nodeGroup: { ...l4.spec.nodeGroup, maxNodes: 2 } },
    status: { readyNodes: 1 },
    supply: {
      shortOfCapacity: nextShortage(
        undefined,
        { launch: { status: 'Failed', at: at(0), message: ICE } },
        at(0),
        GRACE,
      ),
    },
  };
  const fallback = {
    name: 'fallback',
    spec: { ...l4.spec, nodeGroup: { ...l4.spec.nodeGroup, maxNodes: 4 } },
  };
  const profiles = [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16 }];
  const models = [
    { name: 'crit', spec: { profiles, class: 'critical' } },
    { name: 'std', spec: { profiles, class: 'standard' } },
  ] as never;
  const on = (id: string, kind: 'min' | 'extra', compute: string) => ({
    ...unit(id),
    kind,
    placements: [{ compute, profile: 'l4', replicas: 1 }],
  });
  // The critical model's minimum runs on the fallback and its surplus replica was placed on the pool's second
  // node, which never came; the standard model's minimum is Ready on the pool's one node.
  const admissions = [
    { model: 'crit', units: [on('crit#min', 'min', 'fallback'), on('crit#2', 'extra', 'pool')] },
    { model: 'std', units: [on('std#min', 'min', 'pool')] },
  ] as never;

  it('keeps the minimum on the node it runs on and moves the surplus replica, whatever the order of the models', () => {
    for (const order of [admissions, [...(admissions as unknown[])].reverse() as never]) {
      const kept = restoreHeadroom([preferred, fallback] as never, order, models, new ScopeTree([]), at(5));
      const ids = kept.admissions.flatMap((a) => a.units.map((u) => u.id)).sort();
      // Before the fix the surplus (first in order) took the pool's one slot, and std#min was placed again on
      // the fallback: its Ready replica stopped to make room for one that was not running yet.
      expect(ids).toEqual(['crit#min', 'std#min']);
      expect(kept.headroom.placementOf('std#min')?.placements).toEqual([
        { compute: 'pool', profile: 'l4', replicas: 1 },
      ]);
    }
    // Within the grace nothing moves.
    const within = restoreHeadroom(
      [preferred, fallback] as never,
      admissions,
      models,
      new ScopeTree([]),
      at(4),
    );
    expect(within.admissions.flatMap((a) => a.units.map((u) => u.id)).sort()).toEqual([
      'crit#2',
      'crit#min',
      'std#min',
    ]);
  });
});

describe('nodes asked for ahead of a grace’s end (issue 32 §3)', () => {
  const ICE =
    'Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have sufficient g6.xlarge capacity in the Availability Zone you requested (us-east-1a).';
  const at = (m: number) => new Date(Date.parse(NOW) + m * MIN).toISOString();
  const failedAt = (m: number, reclaimed = false) =>
    nextShortage(
      undefined,
      { launch: { status: 'Failed', at: at(m), message: ICE } },
      at(m),
      GRACE,
      reclaimed,
    )!;
  const l4 = builtin('gpu-l4-1x');
  const pool = (name: string, maxNodes: number, readyNodes: number, short?: CapacityShortage) => ({
    name,
    spec: { ...l4.spec, nodeGroup: { ...l4.spec.nodeGroup, maxNodes } },
    status: { readyNodes },
    ...(short ? { supply: { shortOfCapacity: short } } : {}),
  });

  it('runs a grace from the failure to countedUntil, and none where EC2 reclaimed a Spot instance', () => {
    const s = failedAt(0);
    expect([at(0), at(4), at(5), at(9)].map((t) => inGrace(s, t))).toEqual([true, true, false, false]);
    expect(inGrace(failedAt(0, true), at(0))).toBe(false);
    expect(inGrace(undefined, at(0))).toBe(false);
  });

  it('counts the graces running as over, and leaves every other compute as it is', () => {
    const preferred = pool('pool', 2, 1, failedAt(0));
    const fallback = pool('fallback', 4, 0);
    const later = pool('later', 2, 1, failedAt(-7)); // its grace is over already
    expect(pastGraces([fallback, later], at(1))).toBe(undefined);
    const past = pastGraces([preferred, fallback, later], at(1))!;
    expect(past[1]).toBe(fallback);
    expect(past[2]).toBe(later);
    // Within the grace admission still gives the pool its two slots; counted past it, only the node it runs.
    const slots = (cs: readonly (typeof preferred)[]) =>
      admissibleComputes(cs as never, at(1)).map((c) => c.spec.nodeGroup.maxNodes);
    expect(slots([preferred, fallback, later])).toEqual([2, 4, 1]);
    expect(slots(past)).toEqual([1, 4, 1]);
    // The stored shortage is not changed.
    expect(preferred.supply!.shortOfCapacity.countedUntil).toBe(at(5));
  });

  it('asks only for the nodes the placement after the graces needs beyond today’s, and none on a short compute', () => {
    const planned = [
      { compute: 'pool', neededNodes: 2 },
      { compute: 'fallback', neededNodes: 1 },
      { compute: 'steady', neededNodes: 3 },
    ];
    const after = [
      { compute: 'pool', neededNodes: 1 },
      { compute: 'fallback', neededNodes: 2 },
      { compute: 'steady', neededNodes: 3 },
      { compute: 'fresh', neededNodes: 1 },
      { compute: 'other-short', neededNodes: 2 },
    ];
    const ahead = nodesAhead(planned, after, new Set(['pool', 'other-short']));
    expect(Object.fromEntries([...ahead].map(([c, p]) => [c, p.neededNodes]))).toEqual({
      fallback: 2,
      fresh: 1,
    });
    // The later placement's own entry, which sizing takes as it is.
    expect(ahead.get('fallback')).toBe(after[1]);
  });

  it('moves, in the decision after the grace, the replica the pool cannot launch to the next compute', () => {
    const computes = [pool('pool', 2, 1, failedAt(0)), pool('fallback', 4, 0)];
    const profiles = [
      { name: 'first', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'pool' },
      { name: 'next', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'fallback' },
    ];
    const model = (name: string) => ({
      name,
      owner: 'org:a',
      createdAt: at(-60),
      spec: { profiles, scaling: { min: 1, max: 1 } },
    });
    // Two one-replica models on the pool, which runs one node: the second's node is the one EC2 refused.
    const on = (m: string) => ({
      model: m,
      units: [
        {
          ...unit(`${m}#min`),
          kind: 'min',
          profile: 'first',
          placements: [{ compute: 'pool', profile: 'first', replicas: 1 }],
        },
      ],
      pending: [],
    });
    const world = {
      computes,
      models: [model('a'), model('b')],
      scopes: [{ name: 'org:a' }],
      quotas: [],
      admissions: [on('a'), on('b')],
    } as never as World;
    const placed = (w: World) =>
      decideWorld(w, at(1))
        .admissions.flatMap((a) => a.units.flatMap((u) => u.placements.map((p) => p.compute)))
        .sort();
    expect(placed(world)).toEqual(['pool', 'pool']);
    expect(placed({ ...world, computes: pastGraces(world.computes, at(1))! })).toEqual(['fallback', 'pool']);
  });
});

describe('re-placement never stops a Ready replica for one whose node is going (issue 32 §3, §4)', () => {
  const at = (m: number) => new Date(Date.parse(NOW) + m * MIN).toISOString();
  const l4 = builtin('gpu-l4-1x');
  // A Spot pool of two nodes: EC2 warned n-a (a reclaim in two minutes), and its replacement's launch failed for
  // want of Spot capacity, with no grace (a reclaim): admission counts the one node left that takes pods.
  const spot = {
    name: 'spot',
    spec: {
      ...l4.spec,
      node: { ...l4.spec.node, capacityType: 'SPOT' },
      nodeGroup: { ...l4.spec.nodeGroup, maxNodes: 4 },
    },
    status: { readyNodes: 2 },
    supply: {
      idleNodes: [{ node: 'n-a', why: `Spot interruption warning at ${at(0)}` }],
      shortOfCapacity: nextShortage(
        undefined,
        {
          launch: {
            status: 'Failed',
            at: at(0),
            message: 'There is no Spot capacity available that matches your request.',
          },
        },
        at(0),
        GRACE,
        true,
      ),
    },
  };
  const od = { name: 'od', spec: { ...l4.spec, nodeGroup: { ...l4.spec.nodeGroup, maxNodes: 4 } } };
  const profiles = [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16 }];
  const models = ['std-a', 'std-b'].map((name) => ({ name, spec: { profiles, class: 'standard' } })) as never;
  const min = (model: string) => ({
    ...unit(`${model}#min`),
    kind: 'min',
    placements: [{ compute: 'spot', profile: 'l4', replicas: 1 }],
  });
  // std-a runs on the warned node, std-b on the other; std-a comes first.
  const admissions = [
    { model: 'std-a', units: [min('std-a')] },
    { model: 'std-b', units: [min('std-b')] },
  ] as never;
  const pod = (node: string) => ({ compute: 'spot', node, ready: true });
  const workloads = [
    { model: 'std-a', readyOn: { spot: 1 }, pods: [pod('n-a')] },
    { model: 'std-b', readyOn: { spot: 1 }, pods: [pod('n-b')] },
  ];

  it('counts the Ready replicas on nodes that take no pods as going', () => {
    expect(replicasGoing(workloads, [spot])).toEqual({ 'std-a': { spot: 1 } });
    // Not Ready, or on a node that takes pods: not going.
    expect(
      replicasGoing([{ model: 'x', pods: [{ ...pod('n-a'), ready: false }, pod('n-b')] }], [spot]),
    ).toEqual({});
  });

  it('keeps the replica on the node that stays and moves the one whose node is going', () => {
    const ready = { 'std-a': { spot: 1 }, 'std-b': { spot: 1 } };
    const standing = standingReplicas({ ready, going: replicasGoing(workloads, [spot]) });
    const kept = restoreHeadroom([spot, od] as never, admissions, models, new ScopeTree([]), at(1), standing);
    // Before, the first in order kept the one slot: std-b's Ready replica on the healthy node was placed again on
    // od (stopped), and std-a waited on the reclaimed node until EC2 took it, two minutes later.
    expect(kept.admissions.map((a) => [a.model, a.units.map((u) => u.id)])).toEqual([
      ['std-a', []],
      ['std-b', ['std-b#min']],
    ]);
    // Without the pods (llmcap does not run them) the order of the admissions decides, as before.
    const blind = restoreHeadroom([spot, od] as never, admissions, models, new ScopeTree([]), at(1));
    expect(blind.admissions.flatMap((a) => a.units.map((u) => u.id))).toEqual(['std-a#min']);
  });
});
