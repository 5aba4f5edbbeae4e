import type { Clock } from './clock';
import {
  type DeleteFailureRule,
  type Durations,
  type FaultConfig,
  type FaultSelector,
  globMatch,
  type LaunchFailureRule,
  type Limits,
} from './config';
import { EksError, invalidParam } from './errors';
import { Rng } from './rng';
import type { CreateNodegroupInput, ScalingConfig, Taint, UpdateNodegroupConfigInput } from './validate';

/**
 * The simulated account: one cluster, its managed node groups and their Auto Scaling groups. Time moves as
 * a queue of scheduled events that `catchUp()` runs, in order, up to the clock's now; requests call it first,
 * so everything a client can observe is a pure function of the requests, the seed and the clock.
 */

export type LifecycleState = 'Pending' | 'InService' | 'Terminating';

export interface SimInstance {
  id: string;
  type: string;
  az: string;
  subnet: string;
  state: LifecycleState;
  launchedAt: number;
  /** When EC2 warned it will reclaim this Spot instance (it goes two minutes later). */
  spotWarnedAt?: number;
}

/** An event as EventBridge delivers it to a rule's target (the fields every AWS event has). */
export interface SimEvent {
  version: '0';
  id: string;
  'detail-type': string;
  source: string;
  account: string;
  time: string;
  region: string;
  resources: string[];
  detail: Record<string, unknown>;
}

/** EKS's model makes code and message optional: a fault can leave either out (`omit`). */
export interface HealthIssue {
  code?: string;
  message?: string;
  resourceIds: string[];
}

/** What happens to an instance, for those who follow it (the simulated cluster's nodes). */
export type InstanceChange = 'InService' | 'Terminating' | 'Terminated';
export type InstanceObserver = (ng: SimNodegroup, inst: SimInstance, change: InstanceChange) => void;

/**
 * An Auto Scaling activity: a launch or termination of one instance, what DescribeScalingActivities lists and
 * TerminateInstanceInAutoScalingGroup answers with. A failed launch says why in `statusMessage`, as AWS does.
 */
export interface SimActivity {
  id: string;
  asgName: string;
  description: string;
  cause: string;
  startTime: number;
  endTime?: number;
  statusCode: 'InProgress' | 'Successful' | 'Failed';
  statusMessage?: string;
  progress: number;
  details: string;
}

export interface SimUpdate {
  id: string;
  nodegroupName: string;
  status: 'InProgress' | 'Failed' | 'Cancelled' | 'Successful';
  type: 'ConfigUpdate';
  params: { type: string; value: string }[];
  createdAt: number;
}

type Phase = 'CREATING' | 'ACTIVE' | 'CREATE_FAILED' | 'DELETING' | 'DELETE_FAILED';

/** The states a node group made out of band can be put in at once. */
export const OUT_OF_BAND_STATES = [
  'CREATING',
  'ACTIVE',
  'DEGRADED',
  'CREATE_FAILED',
  'DELETING',
  'DELETE_FAILED',
] as const;
export type OutOfBandState = (typeof OUT_OF_BAND_STATES)[number];

export interface SimAsg {
  name: string;
  arn: string;
  createdAt: number;
  minSize: number;
  maxSize: number;
  desired: number;
  instances: SimInstance[];
  launchTemplate: { id: string; name: string; version: string };
  /** Newest first; Auto Scaling keeps six weeks of them, the simulator the group's life. */
  activities: SimActivity[];
}

export interface SimNodegroup {
  seq: number;
  name: string;
  uuid: string;
  arn: string;
  createdAt: number;
  modifiedAt: number;
  phase: Phase;
  degraded: boolean;
  activeUpdate?: string;
  /** A launch fault has scheduled CREATE_FAILED or DEGRADED and it has not fired yet. */
  launchFailurePending: boolean;
  /** A launch fault has scheduled the Failed scaling activity of a launch attempt and it has not fired yet. */
  launchAttemptPending: boolean;
  /** Auto Scaling's own retry of a refused launch is due (one at a time). */
  launchRetryPending: boolean;
  input: CreateNodegroupInput;
  scaling: ScalingConfig;
  instanceTypes: string[];
  labels: Record<string, string> | null;
  taints: Taint[] | null;
  /** The node group's tags: those of CreateNodegroup, then as TagResource and UntagResource change them. */
  tags: Record<string, string>;
  updateConfig: Record<string, unknown>;
  issues: HealthIssue[];
  asg: SimAsg;
  updates: Map<string, SimUpdate>;
}

export interface SimOptions {
  clock: Clock;
  seed: number;
  timeScale: number;
  durations: Durations;
  limits: Limits;
  faults: FaultConfig;
  clusterName: string;
  clusterVersion: string;
  region: string;
  accountId: string;
}

interface ScheduledEvent {
  at: number;
  seq: number;
  label: string;
  run: () => void;
}

interface TokenRecord {
  hash: string;
  at: number;
  respond: () => Record<string, unknown>;
}

const TOKEN_TTL_MS = 10 * 60_000;
const AZ_LETTERS = 'abcdef';

/** The simulated cluster's subnets (DescribeCluster), in zones a, b and c of the region. */
export const CLUSTER_SUBNETS = [
  'subnet-0a1b2c3d4e5f60001',
  'subnet-0a1b2c3d4e5f60002',
  'subnet-0a1b2c3d4e5f60003',
];

export class Simulator {
  readonly clusterCreatedAt: number;
  faults: FaultConfig;
  /** The cluster's API server, once the simulated Kubernetes serves it: DescribeCluster's endpoint and CA. */
  clusterAccess?: { endpoint: string; caData: string };
  private groups = new Map<string, SimNodegroup>();
  private events: ScheduledEvent[] = [];
  private eventSeq = 0;
  private ngSeq = 0;
  private tokens = new Map<string, TokenRecord>();
  private ids: Rng;
  private faultRng: Rng;
  /** Simulated "now": the time of the event being run, else the clock's now at the last catch-up. */
  private t: number;
  private readonly observers: InstanceObserver[] = [];
  private readonly eventTargets: ((e: SimEvent) => void)[] = [];
  private readonly resetters: (() => void)[] = [];
  /**
   * Each subnet's zone: the cluster's in a, b, c; any other well-formed id, the first time a node group names it,
   * in the zone of its place in that list (a subnet's zone never changes, so every group agrees on it after).
   */
  private readonly subnetZones = new Map<string, string>();

  constructor(readonly opts: SimOptions) {
    this.faults = opts.faults;
    this.ids = new Rng(opts.seed);
    this.faultRng = new Rng(opts.seed ^ 0x5bd1e995);
    this.t = opts.clock.now();
    this.clusterCreatedAt = this.t - 86_400_000;
    for (const [i, id] of CLUSTER_SUBNETS.entries()) this.subnetZones.set(id, azFor(opts.region, i));
  }

  /** DescribeSubnets: the subnets named (every one seen so far when none is), each with its zone and its place. */
  subnets(ids: readonly string[]): { id: string; zone: string; index: number }[] {
    const zones = this.zonesOf(ids);
    const order = [...this.subnetZones.keys()];
    const named = ids.length ? ids.map((id, i) => [id, zones[i]!] as const) : [...this.subnetZones];
    return named.map(([id, zone]) => ({ id, zone, index: order.indexOf(id) }));
  }

  /** The zone of each of a group's subnets, in its order. */
  zonesOf(subnets: readonly string[]): string[] {
    return subnets.map((id, i) => {
      const known = this.subnetZones.get(id);
      if (known) return known;
      const az = azFor(this.opts.region, i);
      this.subnetZones.set(id, az);
      return az;
    });
  }

  reset(faults: FaultConfig): void {
    for (const ng of this.groups.values()) this.forgetInstances(ng);
    this.groups.clear();
    this.events = [];
    this.tokens.clear();
    this.faults = faults;
    this.ids = new Rng(this.opts.seed);
    this.faultRng = new Rng(this.opts.seed ^ 0x5bd1e995);
    this.t = this.opts.clock.now();
    for (const r of this.resetters) r();
  }

  /** Follows every instance's InService, Terminating and Terminated; `onReset` runs after a reset. */
  observeInstances(o: InstanceObserver, onReset?: () => void): void {
    this.observers.push(o);
    if (onReset) this.resetters.push(onReset);
  }

  /**
   * The events the account's services send to EventBridge (EC2's Spot warnings): the local control plane
   * delivers those its rules match to their targets, as EventBridge would. Returns the unsubscribe.
   */
  onEvent(target: (e: SimEvent) => void): () => void {
    this.eventTargets.push(target);
    return () => {
      const i = this.eventTargets.indexOf(target);
      if (i >= 0) this.eventTargets.splice(i, 1);
    };
  }

  /**
   * EC2 reclaims a Spot instance: the "EC2 Spot Instance Interruption Warning" event now (as EC2 sends it), and the
   * instance terminated durations.spotReclaimMs (two minutes; scaled) later, which Auto Scaling then replaces. Only instances of SPOT
   * groups; a second warning for the same instance is not sent.
   */
  interruptSpot(instanceId: string): SimEvent {
    const found = this.list()
      .map((ng) => ({ ng, inst: ng.asg.instances.find((i) => i.id === instanceId) }))
      .find((x) => x.inst);
    if (!found?.inst) throw new Error(`no instance ${instanceId}`);
    const { ng, inst } = found;
    if (ng.input.capacityType !== 'SPOT')
      throw new Error(
        `${instanceId} is not a Spot instance (node group ${ng.name} is ${ng.input.capacityType ?? 'ON_DEMAND'})`,
      );
    if (inst.state !== 'InService') throw new Error(`${instanceId} is ${inst.state}, not InService`);
    if (inst.spotWarnedAt !== undefined) throw new Error(`${instanceId} was warned already`);
    inst.spotWarnedAt = this.t;
    const { region, accountId } = this.opts;
    const event: SimEvent = {
      version: '0',
      id: this.ids.uuidV4(),
      'detail-type': 'EC2 Spot Instance Interruption Warning',
      source: 'aws.ec2',
      account: accountId,
      time: new Date(this.t).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      region,
      resources: [`arn:aws:ec2:${region}:${accountId}:instance/${inst.id}`],
      detail: { 'instance-id': inst.id, 'instance-action': 'terminate' },
    };
    this.schedule(this.d(this.opts.durations.spotReclaimMs), `${inst.id}: Spot instance reclaimed`, () => {
      if (!this.alive(ng) || inst.state !== 'InService') return;
      const at = new Date(this.t).toISOString().replace(/\.\d{3}Z$/, 'Z');
      const ending = this.activity(
        ng,
        `Terminating EC2 instance: ${inst.id}`,
        `At ${at} an instance was taken out of service in response to an EC2 Spot interruption notice.`,
        inst,
      );
      this.terminateOne(ng, inst, 0, ending);
      this.reconcileAsg(ng);
    });
    this.emit(event);
    return event;
  }

  /** Sends an event to the targets (the stack's EventBridge rules, local/control-plane.ts). */
  private emit(event: SimEvent): void {
    for (const t of [...this.eventTargets]) t(event);
  }

  /**
   * Auto Scaling's "EC2 Instance Launch Unsuccessful" for a failed launch activity, in the shape of the Auto
   * Scaling event reference's example (detail keys as there; EC2InstanceId empty: no instance was launched).
   */
  private launchUnsuccessful(ng: SimNodegroup, a: SimActivity): SimEvent {
    const { region, accountId } = this.opts;
    const iso = (t: number) => new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
    return {
      version: '0',
      id: this.ids.uuidV4(),
      'detail-type': 'EC2 Instance Launch Unsuccessful',
      source: 'aws.autoscaling',
      account: accountId,
      time: iso(this.t),
      region,
      resources: [ng.asg.arn],
      detail: {
        StatusCode: 'Failed',
        AutoScalingGroupName: ng.asg.name,
        ActivityId: a.id,
        Details: JSON.parse(a.details),
        RequestId: a.id,
        StatusMessage: a.statusMessage ?? '',
        EndTime: iso(a.endTime ?? this.t),
        EC2InstanceId: '',
        StartTime: iso(a.startTime),
        Cause: a.cause,
        Description: a.description,
        Origin: 'EC2',
        Destination: 'AutoScalingGroup',
      },
    };
  }

  /** With a matching spotInterruptions rule, the instance's interruption is drawn when it comes InService. */
  private drawSpotInterruption(ng: SimNodegroup, inst: SimInstance): void {
    if (ng.input.capacityType !== 'SPOT') return;
    const rule = (this.faults.spotInterruptions ?? []).find((r) => matches(r, ng));
    if (!rule) return;
    const wait = -Math.log(1 - this.faultRng.next()) * rule.meanMs;
    this.schedule(this.d(wait), `${inst.id}: Spot interruption warning`, () => {
      if (!this.alive(ng) || inst.state !== 'InService' || inst.spotWarnedAt !== undefined) return;
      this.interruptSpot(inst.id);
    });
  }

  private notify(ng: SimNodegroup, inst: SimInstance, change: InstanceChange): void {
    for (const o of this.observers) o(ng, inst, change);
  }

  /** A group that disappears takes its instances with it. */
  private forgetInstances(ng: SimNodegroup): void {
    for (const i of ng.asg.instances) this.notify(ng, i, 'Terminated');
    ng.asg.instances = [];
  }

  private drop(ng: SimNodegroup): void {
    if (this.groups.get(ng.name) !== ng) return;
    this.forgetInstances(ng);
    this.groups.delete(ng.name);
  }

  /** Runs `run` this long (already scaled) after the simulated now, in order with every other event. */
  after(delayMs: number, label: string, run: () => void): void {
    this.schedule(delayMs, label, run);
  }

  /** A duration multiplied by the time scale, as every simulated delay is. */
  scaled(ms: number): number {
    return this.d(ms);
  }

  now(): number {
    return this.t;
  }

  /** Runs every event due by the clock's now, in time order (ties in scheduling order). */
  catchUp(): void {
    const now = this.opts.clock.now();
    for (;;) {
      const next = this.events[0];
      if (!next || next.at > now) break;
      this.events.shift();
      this.t = Math.max(this.t, next.at);
      next.run();
    }
    this.t = Math.max(this.t, now);
  }

  private schedule(delayMs: number, label: string, run: () => void): void {
    const ev = { at: this.t + delayMs, seq: this.eventSeq++, label, run };
    let i = this.events.length;
    while (i > 0 && (this.events[i - 1] as ScheduledEvent).at > ev.at) i--;
    this.events.splice(i, 0, ev);
  }

  /** A duration from the config, scaled by timeScale. */
  private d(ms: number): number {
    return Math.max(0, Math.round(ms * this.opts.timeScale));
  }

  /** One draw per API request: the same seed and request sequence throttle the same requests. */
  drawFault(operation: string): 'throttle' | 'server' | undefined {
    const f = this.faults;
    const tr = f.throttleRate ?? 0;
    const sr = f.serverErrorRate ?? 0;
    if (tr + sr <= 0) return undefined;
    if (f.operations && !f.operations.includes(operation)) return undefined;
    const r = this.faultRng.next();
    if (r < tr) return 'throttle';
    if (r < tr + sr) return 'server';
    return undefined;
  }

  // ---- queries ----

  get(name: string): SimNodegroup | undefined {
    return this.groups.get(name);
  }

  require(name: string): SimNodegroup {
    const ng = this.groups.get(name);
    if (!ng)
      throw new EksError('ResourceNotFoundException', `No node group found for name: ${name}.`, {
        clusterName: this.opts.clusterName,
        nodegroupName: name,
      });
    return ng;
  }

  list(): SimNodegroup[] {
    return [...this.groups.values()].sort((a, b) => a.seq - b.seq);
  }

  status(ng: SimNodegroup): string {
    if (ng.phase !== 'ACTIVE') return ng.phase;
    if (ng.activeUpdate) return 'UPDATING';
    return ng.degraded ? 'DEGRADED' : 'ACTIVE';
  }

  pendingEvents(): { at: number; label: string }[] {
    return this.events.map((e) => ({ at: e.at, label: e.label }));
  }

  // ---- idempotency ----

  /** Returns the first response for a repeated token with the same body; refuses it with another body. */
  replay(op: string, token: unknown, body: Record<string, unknown>): Record<string, unknown> | undefined {
    if (typeof token !== 'string' || token === '') return undefined;
    const rec = this.tokens.get(`${op}:${token}`);
    if (!rec || this.t - rec.at > TOKEN_TTL_MS) return undefined;
    if (rec.hash !== stableHash(body))
      throw invalidParam(
        `The client request token ${token} has already been used with different request parameters`,
      );
    return rec.respond();
  }

  remember(
    op: string,
    token: unknown,
    body: Record<string, unknown>,
    respond: () => Record<string, unknown>,
  ): void {
    if (typeof token !== 'string' || token === '') return;
    for (const [k, r] of this.tokens) if (this.t - r.at > TOKEN_TTL_MS) this.tokens.delete(k);
    this.tokens.set(`${op}:${token}`, { hash: stableHash(body), at: this.t, respond });
  }

  // ---- operations ----

  create(input: CreateNodegroupInput): SimNodegroup {
    const { clusterName, region, accountId, limits } = this.opts;
    if (this.groups.has(input.nodegroupName))
      throw new EksError(
        'ResourceInUseException',
        `NodeGroup already exists with name ${input.nodegroupName} and cluster name ${clusterName}`,
        { clusterName, nodegroupName: input.nodegroupName },
      );
    if (this.groups.size >= limits.nodegroupsPerCluster)
      throw new EksError(
        'ResourceLimitExceededException',
        `Nodegroup limit exceeded for cluster. A cluster can have at most ${limits.nodegroupsPerCluster} managed node groups.`,
        { clusterName, nodegroupName: input.nodegroupName },
      );
    const uuid = this.ids.uuidLike();
    const name = input.nodegroupName;
    const scaling = input.scalingConfig ?? { minSize: 2, maxSize: 2, desiredSize: 2 };
    const asgName = `eks-${name}-${uuid}`;
    const ng: SimNodegroup = {
      seq: this.ngSeq++,
      name,
      uuid,
      arn: `arn:aws:eks:${region}:${accountId}:nodegroup/${clusterName}/${name}/${uuid}`,
      createdAt: this.t,
      modifiedAt: this.t,
      phase: 'CREATING',
      degraded: false,
      launchFailurePending: false,
      launchAttemptPending: false,
      launchRetryPending: false,
      input,
      scaling: { ...scaling },
      instanceTypes:
        input.launchTemplate && !input.instanceTypes ? [] : (input.instanceTypes ?? ['t3.medium']),
      labels: input.labels ?? null,
      taints: input.taints && input.taints.length > 0 ? input.taints : null,
      tags: { ...(input.tags ?? {}) },
      updateConfig: { ...(input.updateConfig ?? { maxUnavailable: 1 }) },
      issues: [],
      asg: {
        name: asgName,
        arn: `arn:aws:autoscaling:${region}:${accountId}:autoScalingGroup:${this.ids.uuidV4()}:autoScalingGroupName/${asgName}`,
        createdAt: this.t,
        minSize: scaling.minSize,
        maxSize: scaling.maxSize,
        desired: scaling.desiredSize,
        instances: [],
        launchTemplate: { id: `lt-${this.ids.hex(17)}`, name: `eks-${uuid}`, version: '1' },
        activities: [],
      },
      updates: new Map(),
    };
    this.groups.set(name, ng);
    const launched = this.launch(ng, scaling.desiredSize);
    if (launched !== undefined) {
      const { createMs, instanceLaunchMs, instanceStaggerMs } = this.opts.durations;
      const nodesReady =
        scaling.desiredSize > 0
          ? this.d(instanceLaunchMs) + (scaling.desiredSize - 1) * this.d(instanceStaggerMs)
          : 0;
      this.schedule(Math.max(this.d(createMs), nodesReady), `${name}: ACTIVE`, () => {
        if (!this.alive(ng) || ng.phase !== 'CREATING') return;
        ng.phase = 'ACTIVE';
        ng.modifiedAt = this.t;
      });
    }
    for (const rule of this.faults.vanish ?? []) {
      if (!matches(rule, ng)) continue;
      this.schedule(this.d(rule.afterMs), `${name}: deleted out of band`, () => this.drop(ng));
      break;
    }
    return ng;
  }

  update(ng: SimNodegroup, input: UpdateNodegroupConfigInput, merged: ScalingConfig): SimUpdate {
    const status = this.status(ng);
    if (status !== 'ACTIVE' && status !== 'DEGRADED')
      throw new EksError(
        'ResourceInUseException',
        'Nodegroup cannot be updated as it is currently not in Active State',
        {
          clusterName: this.opts.clusterName,
          nodegroupName: ng.name,
        },
      );
    const params: SimUpdate['params'] = [];
    const sc = input.scalingConfig;
    if (sc?.minSize != null) params.push({ type: 'MinSize', value: String(sc.minSize) });
    if (sc?.maxSize != null) params.push({ type: 'MaxSize', value: String(sc.maxSize) });
    if (sc?.desiredSize != null) params.push({ type: 'DesiredSize', value: String(sc.desiredSize) });

    let labels = ng.labels;
    const addLabels = input.labels?.addOrUpdateLabels;
    const removeLabels = input.labels?.removeLabels;
    if (addLabels && Object.keys(addLabels).length > 0) {
      labels = { ...(labels ?? {}), ...addLabels };
      params.push({ type: 'LabelsToAdd', value: JSON.stringify(addLabels) });
    }
    if (removeLabels && removeLabels.length > 0) {
      labels = Object.fromEntries(Object.entries(labels ?? {}).filter(([k]) => !removeLabels.includes(k)));
      params.push({ type: 'LabelsToRemove', value: JSON.stringify(removeLabels) });
    }
    // Taints are identified by (key, effect), as EKS, Terraform and eksctl do.
    let taints = ng.taints ?? [];
    const addTaints = input.taints?.addOrUpdateTaints;
    const removeTaints = input.taints?.removeTaints;
    if (addTaints && addTaints.length > 0) {
      taints = [...taints.filter((t) => !addTaints.some((a) => sameTaint(a, t))), ...addTaints];
      params.push({ type: 'TaintsToAdd', value: JSON.stringify(addTaints) });
    }
    if (removeTaints && removeTaints.length > 0) {
      taints = taints.filter((t) => !removeTaints.some((r) => sameTaint(r, t)));
      params.push({ type: 'TaintsToRemove', value: JSON.stringify(removeTaints) });
    }
    if (taints.length > 50) throw invalidParam("Nodegroup can't have more than 50 taints");
    const uc = input.updateConfig;
    if (uc?.maxUnavailable != null) params.push({ type: 'MaxUnavailable', value: String(uc.maxUnavailable) });
    if (uc?.maxUnavailablePercentage != null)
      params.push({ type: 'MaxUnavailablePercentage', value: String(uc.maxUnavailablePercentage) });
    if (uc?.updateStrategy != null) params.push({ type: 'UpdateStrategy', value: uc.updateStrategy });
    const repair = input.nodeRepairConfig as { enabled?: boolean } | undefined;
    if (repair?.enabled != null) params.push({ type: 'NodeRepairEnabled', value: String(repair.enabled) });

    const upd: SimUpdate = {
      id: this.ids.uuidV4(),
      nodegroupName: ng.name,
      status: 'InProgress',
      type: 'ConfigUpdate',
      params,
      createdAt: this.t,
    };
    ng.updates.set(upd.id, upd);
    ng.activeUpdate = upd.id;
    ng.modifiedAt = this.t;
    ng.scaling = { ...merged };
    ng.labels = labels;
    ng.taints = taints.length > 0 ? taints : ng.taints === null ? null : [];
    if (uc) {
      const next: Record<string, unknown> = { ...ng.updateConfig };
      if (uc.maxUnavailable != null) {
        next.maxUnavailable = uc.maxUnavailable;
        delete next.maxUnavailablePercentage;
      }
      if (uc.maxUnavailablePercentage != null) {
        next.maxUnavailablePercentage = uc.maxUnavailablePercentage;
        delete next.maxUnavailable;
      }
      if (uc.updateStrategy != null) next.updateStrategy = uc.updateStrategy;
      ng.updateConfig = next;
    }
    if (repair) ng.input = { ...ng.input, nodeRepairConfig: repair };
    ng.asg.minSize = merged.minSize;
    ng.asg.maxSize = merged.maxSize;
    ng.asg.desired = merged.desiredSize;
    this.reconcileAsg(ng);
    this.schedule(this.d(this.opts.durations.updateMs), `${ng.name}: update ${upd.id} Successful`, () => {
      upd.status = 'Successful';
      if (!this.alive(ng) || ng.activeUpdate !== upd.id) return;
      ng.activeUpdate = undefined;
      ng.modifiedAt = this.t;
    });
    return upd;
  }

  delete(ng: SimNodegroup): void {
    const status = this.status(ng);
    if (!['ACTIVE', 'DEGRADED', 'CREATE_FAILED', 'DELETE_FAILED'].includes(status))
      throw new EksError(
        'ResourceInUseException',
        'Nodegroup cannot be deleted as it is currently not in Active State',
        {
          clusterName: this.opts.clusterName,
          nodegroupName: ng.name,
        },
      );
    ng.phase = 'DELETING';
    ng.modifiedAt = this.t;
    // EKS sets the ASG to 0/0/0 and lets Auto Scaling drain and terminate every node.
    ng.asg.minSize = 0;
    ng.asg.maxSize = 0;
    ng.asg.desired = 0;
    this.reconcileAsg(ng);
    this.schedule(this.d(this.opts.durations.deleteMs), `${ng.name}: deleted`, () => {
      if (!this.alive(ng) || ng.phase !== 'DELETING') return;
      const rule = (this.faults.deleteFailures ?? []).find((r) => matches(r, ng));
      if (rule) {
        ng.phase = 'DELETE_FAILED';
        ng.modifiedAt = this.t;
        ng.issues = [deleteIssue(rule, this.ids)];
        return;
      }
      this.drop(ng);
    });
  }

  /** Deletes a node group and its ASG at once, as someone with console access would. */
  deleteOutOfBand(name: string): boolean {
    const ng = this.groups.get(name);
    if (!ng) return false;
    this.drop(ng);
    return true;
  }

  /**
   * Creates a node group as someone else would (another team, a tool, an older deploy): with their tags and
   * already in the given state, its nodes InService at once. DELETING goes on to be deleted as a delete would.
   */
  createOutOfBand(input: CreateNodegroupInput, state: OutOfBandState = 'ACTIVE'): SimNodegroup {
    const ng = this.create(input);
    if (state === 'CREATING') return ng;
    for (const i of ng.asg.instances) {
      i.state = 'InService';
      this.notify(ng, i, 'InService');
    }
    ng.phase = state === 'DELETE_FAILED' || state === 'CREATE_FAILED' ? state : 'ACTIVE';
    if (state === 'DEGRADED' || state === 'CREATE_FAILED')
      ng.issues = [launchIssue({}, ng, this.zonesOf(ng.input.subnets))];
    if (state === 'DEGRADED') ng.degraded = true;
    if (state === 'DELETE_FAILED') ng.issues = [deleteIssue({}, this.ids)];
    if (state === 'DELETING') this.delete(ng);
    return ng;
  }

  // ---- tags (TagResource, UntagResource, ListTagsForResource) ----

  byArn(arn: string): SimNodegroup {
    const ng = this.list().find((g) => g.arn === arn);
    if (!ng) throw new EksError('NotFoundException', `Resource ${arn} was not found`);
    return ng;
  }

  tag(ng: SimNodegroup, tags: Record<string, string>): void {
    const next = { ...ng.tags, ...tags };
    if (Object.keys(next).length > 50)
      throw new EksError('BadRequestException', "Resource can't have more than 50 tags");
    ng.tags = next;
  }

  untag(ng: SimNodegroup, keys: string[]): void {
    ng.tags = Object.fromEntries(Object.entries(ng.tags).filter(([k]) => !keys.includes(k)));
  }

  // ---- Auto Scaling behaviour ----

  private alive(ng: SimNodegroup): boolean {
    return this.groups.get(ng.name) === ng;
  }

  private reconcileAsg(ng: SimNodegroup): void {
    const live = ng.asg.instances.filter((i) => i.state !== 'Terminating');
    if (live.length < ng.asg.desired) this.launch(ng, ng.asg.desired - live.length);
    else if (live.length > ng.asg.desired) this.terminate(ng, live.length - ng.asg.desired);
  }

  /** Launches `count` instances, or schedules the failure a launch fault calls for; undefined means failed. */
  private launch(ng: SimNodegroup, count: number): SimInstance[] | undefined {
    if (count <= 0) return [];
    const zones = [...new Set(this.zonesOf(ng.input.subnets))];
    const refused = new Map(
      zones.flatMap((z) => {
        const r = this.launchFailure(ng, z);
        return r ? [[z, r] as const] : [];
      }),
    );
    const rule = refused.size === zones.length ? refused.get(zones[0]!) : undefined;
    if (rule) {
      const creating = ng.phase === 'CREATING';
      const { createFailureMs, scaleOutFailureMs, launchFailureMs } = this.opts.durations;
      const healthDelay = this.d(rule.afterMs ?? (creating ? createFailureMs : scaleOutFailureMs));
      // Auto Scaling records the launch attempt as a Failed activity as soon as EC2 refuses it (seconds); EKS
      // shows the health issue (CREATE_FAILED, DEGRADED) much later. Never later than the issue it is the cause of.
      if (!ng.launchAttemptPending) {
        ng.launchAttemptPending = true;
        // The activity began when the launch was asked for, as Auto Scaling's StartTime says.
        const askedAt = this.t;
        this.schedule(
          Math.min(this.d(launchFailureMs), healthDelay),
          `${ng.name}: launch attempt failed`,
          () => {
            if (!this.alive(ng)) return;
            ng.launchAttemptPending = false;
            // Auto Scaling tries each of the group's zones in turn: a Failed activity for each.
            for (const z of zones) this.refusedLaunch(ng, refused.get(z)!, z, askedAt);
            // And tries again on its own later, as long as the group is short of its desired size.
            if (ng.launchRetryPending) return;
            ng.launchRetryPending = true;
            this.schedule(this.d(this.opts.durations.launchRetryMs), `${ng.name}: launch retried`, () => {
              ng.launchRetryPending = false;
              if (this.alive(ng) && ng.phase === 'ACTIVE') this.reconcileAsg(ng);
            });
          },
        );
      }
      if (!ng.launchFailurePending) {
        ng.launchFailurePending = true;
        this.schedule(
          healthDelay,
          `${ng.name}: launch failure (${rule.code ?? 'AsgInstanceLaunchFailures'})`,
          () => {
            if (!this.alive(ng)) return;
            ng.launchFailurePending = false;
            const issue = launchIssue(rule, ng, zones);
            if (ng.phase === 'CREATING') {
              ng.phase = 'CREATE_FAILED';
            } else if (ng.phase === 'ACTIVE') {
              ng.degraded = true;
            } else return;
            ng.issues = [issue];
            ng.modifiedAt = this.t;
          },
        );
      }
      return undefined;
    }
    const { instanceLaunchMs, instanceStaggerMs } = this.opts.durations;
    const batch: SimInstance[] = [];
    const tried = new Set<string>();
    for (let k = 0; k < count; k++) {
      const balanced = this.placeInstance(ng);
      // EC2 refused the zone balance asks for: Auto Scaling records the failure and launches in another zone.
      const rule = refused.get(balanced.az);
      if (rule && !tried.has(balanced.az)) {
        tried.add(balanced.az);
        this.refusedLaunch(ng, rule, balanced.az, this.t);
      }
      const { subnet, az } = rule ? this.placeInstance(ng, refused) : balanced;
      const inst: SimInstance = {
        id: `i-${this.ids.hex(17)}`,
        type: ng.instanceTypes[0] ?? 't3.medium',
        az,
        subnet,
        state: 'Pending',
        launchedAt: this.t,
      };
      const live = ng.asg.instances.filter((i) => i.state !== 'Terminating').length;
      const launching = this.activity(
        ng,
        `Launching a new EC2 instance: ${inst.id}`,
        this.capacityCause(ng, 'increasing', live, live + 1),
        inst,
      );
      ng.asg.instances.push(inst);
      batch.push(inst);
      this.schedule(this.d(instanceLaunchMs) + k * this.d(instanceStaggerMs), `${inst.id}: InService`, () => {
        if (!this.alive(ng) || inst.state !== 'Pending') return;
        Object.assign(launching, { statusCode: 'Successful', progress: 100, endTime: this.t });
        inst.state = 'InService';
        this.notify(ng, inst, 'InService');
        this.drawSpotInterruption(ng, inst);
        this.maybeRecover(ng);
      });
    }
    return batch;
  }

  /** DEGRADED clears only when a scale-out succeeds: every wanted node is InService and no failure is due. */
  private maybeRecover(ng: SimNodegroup): void {
    if (!ng.degraded || ng.launchFailurePending) return;
    const live = ng.asg.instances.filter((i) => i.state !== 'Terminating');
    if (live.length >= ng.asg.desired && live.every((i) => i.state === 'InService')) {
      ng.degraded = false;
      ng.issues = [];
      ng.modifiedAt = this.t;
    }
  }

  /** Scale-in takes Pending instances first, then the newest, each one Terminating before it disappears. */
  private terminate(ng: SimNodegroup, count: number): void {
    const live = ng.asg.instances.filter((i) => i.state !== 'Terminating');
    const order = [
      ...live.filter((i) => i.state === 'Pending').reverse(),
      ...live.filter((i) => i.state === 'InService').reverse(),
    ];
    order.slice(0, count).forEach((inst, k) => {
      this.terminateOne(ng, inst, k);
    });
  }

  private terminateOne(ng: SimNodegroup, inst: SimInstance, k: number, activity?: SimActivity): void {
    const { instanceTerminateMs, instanceStaggerMs } = this.opts.durations;
    const live = ng.asg.instances.filter((i) => i.state !== 'Terminating').length;
    const ending =
      activity ??
      this.activity(
        ng,
        `Terminating EC2 instance: ${inst.id}`,
        this.capacityCause(ng, 'shrinking', live, live - 1),
        inst,
      );
    inst.state = 'Terminating';
    this.notify(ng, inst, 'Terminating');
    this.schedule(
      this.d(instanceTerminateMs) + k * this.d(instanceStaggerMs),
      `${inst.id}: terminated`,
      () => {
        if (!ng.asg.instances.includes(inst)) return;
        Object.assign(ending, { statusCode: 'Successful', progress: 100, endTime: this.t });
        ng.asg.instances = ng.asg.instances.filter((i) => i !== inst);
        if (this.alive(ng)) this.notify(ng, inst, 'Terminated');
      },
    );
  }

  /**
   * TerminateInstanceInAutoScalingGroup: that one instance goes Terminating, then away. With `decrement`
   * the group's desired capacity drops by one (never below its minimum) and EKS reports the new desired size as
   * the node group's; without it, Auto Scaling launches a replacement.
   */
  terminateInstance(instanceId: string, decrement: boolean): SimActivity {
    const found = this.list()
      .map((ng) => ({ ng, inst: ng.asg.instances.find((i) => i.id === instanceId) }))
      .find((x) => x.inst);
    if (!found?.inst)
      throw new TerminateError(
        `Instance Id not found - No managed instance found for instance ID: ${instanceId}`,
      );
    const { ng, inst } = found;
    const before = ng.asg.desired;
    const activity: SimActivity = {
      id: this.ids.uuidV4(),
      asgName: ng.asg.name,
      description: `Terminating EC2 instance: ${inst.id}`,
      cause: '',
      startTime: this.t,
      statusCode: 'InProgress',
      progress: 0,
      details: JSON.stringify({ 'Subnet ID': inst.subnet, 'Availability Zone': inst.az }),
    };
    const at = new Date(this.t).toISOString().replace(/\.\d{3}Z$/, 'Z');
    // Already on its way out: nothing more to do, and the desired capacity is not lowered twice.
    if (inst.state === 'Terminating') {
      activity.cause = `At ${at} instance ${inst.id} was taken out of service in response to a user request.`;
      return activity;
    }
    if (decrement) {
      if (ng.asg.desired <= ng.asg.minSize)
        throw new TerminateError(
          `Currently, desiredSize equals minSize (${ng.asg.minSize}). Terminating instance without replacement will violate group's min size constraint. Either set shouldDecrementDesiredCapacity flag to false or lower group's min size.`,
        );
      ng.asg.desired -= 1;
      ng.scaling = { ...ng.scaling, desiredSize: ng.asg.desired };
      ng.modifiedAt = this.t;
      activity.cause = `At ${at} instance ${inst.id} was taken out of service in response to a user request, shrinking the capacity from ${before} to ${ng.asg.desired}.`;
    } else {
      activity.cause = `At ${at} instance ${inst.id} was taken out of service in response to a user request.`;
    }
    ng.asg.activities.unshift(activity);
    this.terminateOne(ng, inst, 0, activity);
    if (!decrement) this.reconcileAsg(ng);
    return activity;
  }

  /** Records a new activity of the group, in progress (DescribeScalingActivities lists it, newest first). */
  private activity(ng: SimNodegroup, description: string, cause: string, inst?: SimInstance): SimActivity {
    const a: SimActivity = {
      id: this.ids.uuidV4(),
      asgName: ng.asg.name,
      description,
      cause,
      startTime: this.t,
      statusCode: 'InProgress',
      progress: 0,
      details: JSON.stringify(inst ? { 'Subnet ID': inst.subnet, 'Availability Zone': inst.az } : {}),
    };
    ng.asg.activities.unshift(a);
    return a;
  }

  /** Auto Scaling's cause of a launch or termination it starts itself. */
  private capacityCause(
    ng: SimNodegroup,
    way: 'increasing' | 'shrinking',
    from = ng.asg.instances.filter((i) => i.state !== 'Terminating').length,
    to = ng.asg.desired,
  ): string {
    const at = new Date(this.t).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const what = way === 'increasing' ? 'an instance was started' : 'an instance was taken out of service';
    return `At ${at} ${what} in response to a difference between desired and actual capacity, ${way} the capacity from ${from} to ${to}.`;
  }

  /** Auto Scaling balances instances across the subnets' Availability Zones (those not `avoid`ed). */
  private placeInstance(
    ng: SimNodegroup,
    avoid?: ReadonlyMap<string, unknown>,
  ): { subnet: string; az: string } {
    const subnets = ng.input.subnets;
    const zones = this.zonesOf(subnets);
    let best = -1;
    let bestCount = Number.POSITIVE_INFINITY;
    subnets.forEach((s, i) => {
      if (avoid?.has(zones[i]!)) return;
      const n = ng.asg.instances.filter((x) => x.subnet === s && x.state !== 'Terminating').length;
      if (n < bestCount) {
        best = i;
        bestCount = n;
      }
    });
    return { subnet: subnets[best] as string, az: zones[best] as string };
  }

  /** A launch EC2 refused in `zone` (asked for at `askedAt`): the Failed activity and its EventBridge event. */
  private refusedLaunch(ng: SimNodegroup, rule: LaunchFailureRule, zone: string, askedAt: number): void {
    const zones = this.zonesOf(ng.input.subnets);
    const issue = launchIssue(rule, ng, zones, zone);
    const failed = this.activity(ng, 'Launching a new EC2 instance', this.capacityCause(ng, 'increasing'));
    const subnet = ng.input.subnets[zones.indexOf(zone)];
    failed.details = JSON.stringify({ 'Subnet ID': subnet, 'Availability Zone': zone });
    failed.startTime = askedAt;
    failed.statusCode = 'Failed';
    failed.progress = 100;
    failed.endTime = this.t;
    failed.statusMessage = issue.message ?? issue.code ?? 'Launching EC2 instance failed.';
    failed.description = `Launching a new EC2 instance.  Status Reason: ${failed.statusMessage}`;
    this.emit(this.launchUnsuccessful(ng, failed));
  }

  /** The rule refusing launches of the group in `zone`: a rule without a zone refuses them in every zone. */
  private launchFailure(ng: SimNodegroup, zone: string): LaunchFailureRule | undefined {
    const rules: LaunchFailureRule[] = [
      ...(this.faults.launchFailures ?? []),
      ...(this.faults.unavailableInstanceTypes ?? []).map((instanceType) => ({ instanceType })),
    ];
    return rules.find((r) => matches(r, ng) && (r.zone === undefined || r.zone === zone));
  }
}

/** An Auto Scaling ValidationError from TerminateInstanceInAutoScalingGroup, worded as AWS words it. */
export class TerminateError extends Error {}

export function azFor(region: string, index: number): string {
  return `${region}${AZ_LETTERS[index % AZ_LETTERS.length]}`;
}

function matches(rule: FaultSelector, ng: SimNodegroup): boolean {
  if (rule.nodegroup !== undefined && !globMatch(rule.nodegroup, ng.name)) return false;
  if (rule.instanceType !== undefined && !ng.instanceTypes.includes(rule.instanceType)) return false;
  return true;
}

function sameTaint(a: Taint, b: Taint): boolean {
  return a.key === b.key && a.effect === b.effect;
}

/** Leaves out the members a fault's `omit` names, as EKS may (both are optional in its model). */
function withOmitted(issue: HealthIssue, omit: readonly string[] | undefined): HealthIssue {
  const out = { ...issue };
  if (omit?.includes('code')) delete out.code;
  if (omit?.includes('message')) delete out.message;
  return out;
}

/** The health issue (and activity message) of a launch refused in `zone`, one of the group's `zones`. */
function launchIssue(
  rule: LaunchFailureRule,
  ng: SimNodegroup,
  zones: readonly string[],
  zone = zones[0]!,
): HealthIssue {
  const code = rule.code ?? 'AsgInstanceLaunchFailures';
  const type = rule.instanceType ?? ng.instanceTypes[0] ?? 't3.medium';
  const market = ng.input.capacityType === 'SPOT' ? 'Spot' : 'On-Demand';
  // EC2 names zones of the region where capacity may be had; a one-zone group still hears of another.
  const others =
    zones.filter((z) => z !== zone).join(', ') || zone.slice(0, -1) + (zone.endsWith('a') ? 'b' : 'a');
  const message =
    rule.message ??
    (code === 'AsgInstanceLaunchFailures'
      ? `Could not launch ${market} Instances. InsufficientInstanceCapacity - We currently do not have sufficient ${type} capacity in the Availability Zone you requested (${zone}). Our system will be working on provisioning additional capacity. You can currently get ${type} capacity by not specifying an Availability Zone in your request or choosing ${others}. Launching EC2 instance failed.`
      : `Could not launch ${market} Instances. ${code}. Launching EC2 instance failed.`);
  return withOmitted({ code, message, resourceIds: [ng.asg.name] }, rule.omit);
}

function deleteIssue(rule: DeleteFailureRule, ids: Rng): HealthIssue {
  const sg = `sg-${ids.hex(17)}`;
  return withOmitted(
    {
      code: rule.code ?? 'Ec2SecurityGroupDeletionFailure',
      message: rule.message ?? `DependencyViolation - resource has a dependent object`,
      resourceIds: [sg],
    },
    rule.omit,
  );
}

function stableHash(body: Record<string, unknown>): string {
  const { clientRequestToken: _ignored, ...rest } = body;
  return JSON.stringify(sortKeys(rest));
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v as object)
        .sort()
        .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
    );
  return v;
}
