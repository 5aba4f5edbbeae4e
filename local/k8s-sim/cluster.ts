import { createHash } from 'node:crypto';
import type { FaultSelector, PodSelector } from '../cloud-sim/config';
import { globMatch } from '../cloud-sim/config';
import { Rng } from '../cloud-sim/rng';
import type { InstanceChange, SimInstance, SimNodegroup, Simulator } from '../cloud-sim/state';
import { ApiServer, type DeleteOptions, rfc3339 } from './api';
import { runControllers } from './controllers';
import { deepEqual } from './fieldset';
import { nodeFacts } from './instance-types';
import { Kubelet } from './kubelet';
import { sameButVersion, update as updateFields } from './managed';
import { LABELS, MANAGERS, TAINTS } from './names';
import { formatCpu, formatKi } from './quantity';
import {
  apiVersionOf,
  CLUSTERROLES,
  DEPLOYMENTS,
  EVENTS,
  LEASES,
  NAMESPACES,
  NODES,
  PDBS,
  PODS,
  REPLICASETS,
  type ResourceDef,
} from './resources';
import { Scheduler } from './scheduler';
import { K8sError, notFound } from './status';
import { Store } from './store';
import { Traffic, type TrafficConfig } from './traffic';
import type { JsonObject, KObject } from './types';

/**
 * The simulated cluster: an API server over an object store, and the components that make objects behave
 * (the kubelet of each node, the scheduler, the deployment, replica set, disruption, garbage and node
 * controllers, and EKS's node lifecycle). Time is the cloud simulator's: every delay is an event in its
 * queue, so a driven clock moves pods and nodes exactly as it moves node groups.
 */

export interface AppStartRule extends PodSelector {
  /** Container start → ready to serve, in ms (scaled by the time scale). */
  ms: number;
}

export interface ClusterOptions {
  /** How long the servers of matching images take to start; first match wins, else durations.appStartMs. */
  appStart?: AppStartRule[];
  /** The requests per second each model's servers get, which their /metrics report (traffic.ts). */
  traffic?: TrafficConfig[];
}

const EFFECTS: Record<string, string> = {
  NO_SCHEDULE: 'NoSchedule',
  NO_EXECUTE: 'NoExecute',
  PREFER_NO_SCHEDULE: 'PreferNoSchedule',
};

const EVENT_TTL_MS = 60 * 60_000;

function matchesGroup(rule: FaultSelector, ng: SimNodegroup): boolean {
  if (rule.nodegroup !== undefined && !globMatch(rule.nodegroup, ng.name)) return false;
  if (rule.instanceType !== undefined && !ng.instanceTypes.includes(rule.instanceType)) return false;
  return true;
}

/** EKS's kube-reserved CPU: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of the rest. */
export function kubeReservedCpuMilli(vcpus: number): number {
  let m = 0;
  for (let c = 1; c <= vcpus; c++) m += c === 1 ? 60 : c === 2 ? 10 : c <= 4 ? 5 : 2.5;
  return Math.round(m);
}

interface NodeRecord {
  ng: SimNodegroup;
  inst: SimInstance;
  name: string;
  ip: string;
  /** Pod IPs handed out on this node (the VPC CNI gives pods addresses of the subnet). */
  nextPodIp: number;
}

export class Cluster {
  readonly store = new Store();
  readonly api: ApiServer;
  readonly scheduler: Scheduler;
  readonly kubelet: Kubelet;
  /** The load on the model servers: what their /metrics serve through the pod proxy. */
  readonly traffic: Traffic;
  readonly nodes = new Map<string, NodeRecord>();
  private readonly byInstance = new Map<string, string>();
  private readonly rng: Rng;
  private eventSeq = 0;
  /** Events by what makes two of them the same (object, reason, source, message), for the counting. */
  private readonly eventIndex = new Map<string, string>();
  /** PDBs by the `key=value` pairs of their matchLabels (those with none under ''), per namespace. */
  private readonly pdbIndex = new Map<string, Map<string, Set<string>>>();
  private settling = false;
  private usedIps = new Set<string>();
  /** Work queues of the controllers: keys `namespace/name` (owner uids for the garbage collector). */
  readonly dirty = {
    deployments: new Set<string>(),
    replicasets: new Set<string>(),
    pdbs: new Set<string>(),
    gc: new Set<string>(),
    namespaces: new Set<string>(),
    nodes: new Set<string>(),
  };

  constructor(
    readonly sim: Simulator,
    readonly opts: ClusterOptions = {},
  ) {
    this.rng = new Rng(sim.opts.seed ^ 0x6b387331);
    this.api = new ApiServer(this.store, () => this.now(), this.rng);
    this.scheduler = new Scheduler(this);
    this.kubelet = new Kubelet(this);
    this.traffic = new Traffic(opts.traffic ?? [], this.now(), sim.opts.timeScale);
    this.api.hooks.gracefulPodDeletion = (pod, grace) => this.kubelet.beginTermination(pod, grace);
    this.store.onChange((type, def, obj, old) => this.enqueue(type, def, obj, old));
    sim.observeInstances(
      (ng, inst, change) => this.onInstance(ng, inst, change),
      () => this.reset(),
    );
    this.bootstrap();
    // Instances that were there before the cluster was watching them.
    for (const ng of sim.list())
      for (const inst of ng.asg.instances)
        if (inst.state === 'InService') this.onInstance(ng, inst, 'InService');
  }

  now(): number {
    return this.sim.now();
  }

  ts(ms = this.now()): string {
    return rfc3339(ms);
  }

  private readonly pendingChecks = new Set<string>();

  /** Like `after`, but at most one pending check per label: a controller's requeue-after. */
  checkLater(label: string, ms: number, fn: () => void): void {
    if (this.pendingChecks.has(label)) return;
    this.pendingChecks.add(label);
    this.after(ms, label, () => {
      this.pendingChecks.delete(label);
      fn();
    });
  }

  /** Runs `fn` after `ms` of simulated time (scaled), then lets the controllers react. */
  after(ms: number, label: string, fn: () => void): void {
    this.sim.after(this.sim.scaled(ms), `k8s: ${label}`, () => {
      fn();
      this.settle();
    });
  }

  private reset(): void {
    this.store.clear();
    this.nodes.clear();
    this.byInstance.clear();
    this.usedIps.clear();
    this.pendingChecks.clear();
    this.eventIndex.clear();
    this.pdbIndex.clear();
    for (const q of Object.values(this.dirty)) q.clear();
    this.scheduler.reset();
    this.kubelet.reset();
    this.bootstrap();
  }

  private bootstrap(): void {
    for (const name of ['default', 'kube-system', 'kube-public', 'kube-node-lease'])
      this.api.create(NAMESPACES, undefined, { metadata: { name } }, { manager: 'kube-apiserver' });
    for (const [name, rules] of Object.entries(BUILTIN_CLUSTER_ROLES))
      this.api.create(
        CLUSTERROLES,
        undefined,
        { metadata: { name, labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' } }, rules },
        { manager: 'kube-apiserver' },
      );
  }

  // ---- writes by the components ----

  /**
   * A component's write: managedFields as the API server records them for it, a new resourceVersion, and
   * nothing at all when the object did not change.
   */
  write(def: ResourceDef, next: KObject, manager: string, subresource?: string): KObject {
    const ns = next.metadata?.namespace;
    const name = next.metadata?.name as string;
    const live = this.store.get(def, ns, name);
    const ctx = {
      manager,
      apiVersion: apiVersionOf(def),
      now: this.ts(),
      ...(subresource ? { subresource } : {}),
      ignoreTop: subresource === 'status' ? ['spec', 'metadata'] : def.statusSubresource ? ['status'] : [],
    };
    if (live && def.generation && !deepEqual(live.spec, next.spec))
      next.metadata = { ...next.metadata, generation: (live.metadata?.generation ?? 1) + 1 };
    const obj = updateFields(live, next, ctx);
    if (live && sameButVersion(live, obj)) return live;
    return this.store.put(def, obj);
  }

  /** Records an Event as the component's event recorder does: a repeat of the same event counts up. */
  event(
    obj: KObject,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    component: string,
    host?: string,
  ): void {
    const meta = obj.metadata ?? {};
    const ns = meta.namespace ?? 'default';
    const now = this.ts();
    const dedupe = `${meta.uid}|${reason}|${component}|${message}`;
    const known = this.eventIndex.get(dedupe);
    const same = known ? this.store.get(EVENTS, ns, known) : undefined;
    if (same) {
      this.store.put(EVENTS, { ...same, count: ((same.count as number) ?? 1) + 1, lastTimestamp: now });
      return;
    }
    const nanos = BigInt(this.now()) * 1_000_000n + BigInt(this.eventSeq++ % 1_000_000);
    const eventName = `${meta.name}.${nanos.toString(16)}`;
    this.eventIndex.set(dedupe, eventName);
    this.store.put(EVENTS, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: {
        name: eventName,
        namespace: ns,
        uid: this.api.uid(),
        creationTimestamp: now,
      },
      involvedObject: {
        kind: obj.kind,
        ...(meta.namespace ? { namespace: meta.namespace } : {}),
        name: meta.name,
        uid: meta.uid,
        apiVersion: obj.apiVersion,
        resourceVersion: meta.resourceVersion,
      },
      reason,
      message,
      source: { component, ...(host ? { host } : {}) },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      type,
      eventTime: null,
      reportingComponent: component,
      reportingInstance: host ?? '',
    });
    this.expireEvents();
  }

  /** Events live an hour after their last occurrence, as the API server's event TTL has it. */
  private expireEvents(): void {
    if (this.eventSeq % 500 !== 0) return;
    const cutoff = this.ts(this.now() - EVENT_TTL_MS);
    for (const e of this.store.list(EVENTS))
      if ((e.lastTimestamp as string) < cutoff)
        this.store.remove(EVENTS, e.metadata?.namespace, e.metadata?.name as string);
  }

  /** The PDBs whose selector may match these labels (their matchLabels are among them). */
  private pdbsFor(ns: string, labels: Record<string, string> | undefined): string[] {
    const idx = this.pdbIndex.get(ns);
    if (!idx) return [];
    const out = new Set<string>(idx.get('') ?? []);
    for (const [k, v] of Object.entries(labels ?? {})) for (const n of idx.get(`${k}=${v}`) ?? []) out.add(n);
    return [...out];
  }

  private indexPdb(ns: string, name: string, old: KObject | undefined, now: KObject | undefined): void {
    let idx = this.pdbIndex.get(ns);
    if (!idx) {
      idx = new Map();
      this.pdbIndex.set(ns, idx);
    }
    const keys = (o: KObject | undefined) => {
      if (!o) return [];
      const ml =
        (((o.spec as JsonObject)?.selector as JsonObject)?.matchLabels as Record<string, string>) ?? {};
      const ks = Object.entries(ml).map(([k, v]) => `${k}=${v}`);
      return ks.length > 0 ? ks : [''];
    };
    for (const k of keys(old)) idx.get(k)?.delete(name);
    for (const k of keys(now)) {
      let s = idx.get(k);
      if (!s) {
        s = new Set();
        idx.set(k, s);
      }
      s.add(name);
    }
  }

  // ---- deletes that need more than the API server's generic logic ----

  delete(def: ResourceDef, ns: string | undefined, name: string, opts: DeleteOptions = {}): KObject {
    if (def === NAMESPACES) {
      const live = this.api.get(def, ns, name);
      if (['default', 'kube-system', 'kube-public'].includes(name))
        throw new K8sError(
          403,
          'Forbidden',
          `namespaces "${name}" is forbidden: this namespace may not be deleted`,
          {
            name,
            kind: 'namespaces',
          },
        );
      if (live.metadata?.deletionTimestamp) return live;
      const out = this.store.put(def, {
        ...live,
        metadata: { ...live.metadata, deletionTimestamp: this.ts(), deletionGracePeriodSeconds: 0 },
        status: { phase: 'Terminating' },
      });
      this.settle();
      return out;
    }
    const out = this.api.delete(def, ns, name, opts);
    this.settle();
    return out;
  }

  // ---- work queues ----

  private enqueue(type: string, def: ResourceDef, obj: KObject, old: KObject | undefined): void {
    const meta = obj.metadata ?? {};
    const key = `${meta.namespace ?? ''}/${meta.name}`;
    const owner = (o: KObject | undefined, kind: string) =>
      o?.metadata?.ownerReferences?.find((r) => r.controller && r.kind === kind);
    if (type === 'DELETED') this.dirty.gc.add(meta.uid as string);
    if (meta.deletionTimestamp) this.dirty.gc.add(meta.uid as string);
    if (def === DEPLOYMENTS) {
      this.dirty.deployments.add(key);
      const tl = ((((obj.spec as JsonObject)?.template as JsonObject)?.metadata as JsonObject)?.labels ??
        {}) as Record<string, string>;
      for (const p of this.pdbsFor(meta.namespace as string, tl))
        this.dirty.pdbs.add(`${meta.namespace}/${p}`);
    } else if (def === REPLICASETS) {
      this.dirty.replicasets.add(key);
      const d = owner(obj, 'Deployment');
      if (d) this.dirty.deployments.add(`${meta.namespace}/${d.name}`);
      // A scale change moves the expected count of the PDBs over its pods.
      const tl = ((((obj.spec as JsonObject)?.template as JsonObject)?.metadata as JsonObject)?.labels ??
        {}) as Record<string, string>;
      for (const p of this.pdbsFor(meta.namespace as string, tl))
        this.dirty.pdbs.add(`${meta.namespace}/${p}`);
    } else if (def === PODS) {
      const rs = owner(obj, 'ReplicaSet') ?? owner(old, 'ReplicaSet');
      if (rs) this.dirty.replicasets.add(`${meta.namespace}/${rs.name}`);
      for (const p of new Set([
        ...this.pdbsFor(meta.namespace as string, meta.labels),
        ...this.pdbsFor(meta.namespace as string, old?.metadata?.labels),
      ]))
        this.dirty.pdbs.add(`${meta.namespace}/${p}`);
      this.scheduler.podChanged(type, obj, old);
      if (type === 'DELETED') this.kubelet.forget(meta.uid as string);
      else if ((obj.spec as JsonObject)?.nodeName && !meta.deletionTimestamp)
        this.dirty.nodes.add((obj.spec as JsonObject).nodeName as string);
      if (meta.namespace) this.dirty.namespaces.add(meta.namespace);
    } else if (def === PDBS) {
      this.indexPdb(meta.namespace as string, meta.name as string, old, type === 'DELETED' ? undefined : obj);
      this.dirty.pdbs.add(key);
    } else if (def === EVENTS && type === 'DELETED') {
      const inv = (obj.involvedObject as JsonObject) ?? {};
      this.eventIndex.delete(
        `${inv.uid}|${obj.reason}|${(obj.source as JsonObject)?.component}|${obj.message}`,
      );
    } else if (def === NODES) {
      this.dirty.nodes.add(meta.name as string);
      this.scheduler.nodesChanged(obj, type === 'DELETED');
    } else if (def === NAMESPACES) this.dirty.namespaces.add(meta.name as string);
    else if (meta.namespace) this.dirty.namespaces.add(meta.namespace);
  }

  /** Lets every controller work until nothing is left to do. */
  settle(): void {
    if (this.settling) return;
    this.settling = true;
    try {
      for (let round = 0; round < 10_000; round++) {
        const worked = runControllers(this) || this.scheduler.run() || this.syncNodes();
        if (!worked) break;
      }
    } finally {
      this.settling = false;
    }
  }

  // ---- nodes: EKS joins each instance of a node group to the cluster ----

  private onInstance(ng: SimNodegroup, inst: SimInstance, change: InstanceChange): void {
    if (change === 'InService') {
      this.after(this.sim.opts.durations.nodeRegisterMs, `${inst.id}: node registers`, () =>
        this.registerNode(ng, inst),
      );
      return;
    }
    const name = this.byInstance.get(inst.id);
    if (change === 'Terminating') {
      if (name) this.drainForTermination(name);
    } else {
      if (name) this.removeNode(name);
      this.byInstance.delete(inst.id);
    }
    this.settle();
  }

  private nodeIp(subnetIndex: number): string {
    for (;;) {
      const ip = `10.0.${subnetIndex * 32 + Math.floor(this.rng.next() * 32)}.${1 + Math.floor(this.rng.next() * 254)}`;
      if (!this.usedIps.has(ip)) {
        this.usedIps.add(ip);
        return ip;
      }
    }
  }

  podIp(nodeName: string): string {
    const rec = this.nodes.get(nodeName);
    if (!rec) return '';
    const [a, b, c] = rec.ip.split('.');
    for (;;) {
      rec.nextPodIp = (rec.nextPodIp % 250) + 1;
      const ip = `${a}.${b}.${(Number(c) + 128) % 256}.${rec.nextPodIp}`;
      if (!this.usedIps.has(ip)) return ip;
    }
  }

  private registerNode(ng: SimNodegroup, inst: SimInstance): void {
    if (inst.state !== 'InService' || this.byInstance.has(inst.id) || this.sim.get(ng.name) !== ng) return;
    const region = this.sim.opts.region;
    const subnetIndex = Math.max(0, ng.input.subnets.indexOf(inst.subnet));
    const ip = this.nodeIp(subnetIndex);
    const domain = region === 'us-east-1' ? 'ec2.internal' : `${region}.compute.internal`;
    const name = `ip-${ip.replace(/\./g, '-')}.${domain}`;
    this.byInstance.set(inst.id, name);
    this.nodes.set(name, { ng, inst, name, ip, nextPodIp: 0 });
    const f = nodeFacts(inst.type);
    const ami = ng.input.amiType ?? 'AL2023_x86_64_STANDARD';
    const gpus =
      f.gpus > 0 && /NVIDIA|GPU/.test(ami) ? f.gpus : f.gpus > 0 && ng.input.launchTemplate ? f.gpus : 0;
    const memKi = Math.floor(f.memoryMiB * 1024 * 0.965);
    const diskKi = (ng.input.diskSize ?? 20) * 1024 * 1024 - 4 * 1024 * 1024;
    const capacity: Record<string, string> = {
      cpu: String(f.vcpus),
      'ephemeral-storage': `${diskKi}Ki`,
      'hugepages-1Gi': '0',
      'hugepages-2Mi': '0',
      memory: `${memKi}Ki`,
      pods: String(f.maxPods),
    };
    const reservedMemKi = (255 + 11 * f.maxPods + 100) * 1024;
    const allocatable: Record<string, string> = {
      cpu: formatCpu((f.vcpus * 1000 - kubeReservedCpuMilli(f.vcpus)) / 1000),
      'ephemeral-storage': String(Math.floor((diskKi * 0.9 - 1024 * 1024) * 1024)),
      'hugepages-1Gi': '0',
      'hugepages-2Mi': '0',
      memory: formatKi((memKi - reservedMemKi) * 1024),
      pods: String(f.maxPods),
    };
    if (gpus > 0) {
      capacity['nvidia.com/gpu'] = String(gpus);
      allocatable['nvidia.com/gpu'] = String(gpus);
    }
    const now = this.ts();
    const labels: Record<string, string> = {
      'beta.kubernetes.io/arch': f.arch,
      'beta.kubernetes.io/instance-type': inst.type,
      'beta.kubernetes.io/os': 'linux',
      [LABELS.capacityType]: ng.input.capacityType ?? 'ON_DEMAND',
      [LABELS.nodegroup]: ng.name,
      'eks.amazonaws.com/nodegroup-image': `ami-${createHash('sha256').update(ng.arn).digest('hex').slice(0, 17)}`,
      'eks.amazonaws.com/sourceLaunchTemplateId': ng.asg.launchTemplate.id,
      'eks.amazonaws.com/sourceLaunchTemplateVersion': ng.asg.launchTemplate.version,
      'failure-domain.beta.kubernetes.io/region': region,
      'failure-domain.beta.kubernetes.io/zone': inst.az,
      [LABELS.arch]: f.arch,
      [LABELS.hostname]: name,
      [LABELS.os]: 'linux',
      [LABELS.instanceType]: inst.type,
      [LABELS.region]: region,
      [LABELS.zone]: inst.az,
      ...(ng.labels ?? {}),
    };
    const taints = [
      ...(ng.taints ?? []).map((t) => ({
        key: t.key,
        ...(t.value ? { value: t.value } : {}),
        effect: EFFECTS[t.effect] ?? t.effect,
      })),
      { key: TAINTS.notReady, effect: 'NoSchedule', timeAdded: now },
      { key: TAINTS.notReady, effect: 'NoExecute', timeAdded: now },
    ];
    const notReady = {
      type: 'Ready',
      status: 'False',
      lastHeartbeatTime: now,
      lastTransitionTime: now,
      reason: 'KubeletNotReady',
      message:
        'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized',
    };
    const node: KObject = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name,
        uid: this.api.uid(),
        creationTimestamp: now,
        labels,
        annotations: {
          'alpha.kubernetes.io/provided-node-ip': ip,
          'node.alpha.kubernetes.io/ttl': '0',
          'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
        },
      },
      spec: { providerID: `aws:///${inst.az}/${inst.id}`, taints },
      status: {
        capacity,
        allocatable,
        conditions: [
          ...['MemoryPressure', 'DiskPressure', 'PIDPressure'].map((type) => ({
            type,
            status: 'False',
            lastHeartbeatTime: now,
            lastTransitionTime: now,
            reason: `KubeletHas${type === 'MemoryPressure' ? 'SufficientMemory' : type === 'DiskPressure' ? 'NoDiskPressure' : 'SufficientPID'}`,
            message: `kubelet has ${type === 'MemoryPressure' ? 'sufficient memory available' : type === 'DiskPressure' ? 'no disk pressure' : 'sufficient PID available'}`,
          })),
          notReady,
        ],
        addresses: [
          { type: 'InternalIP', address: ip },
          { type: 'InternalDNS', address: name },
          { type: 'Hostname', address: name },
        ],
        daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
        nodeInfo: {
          machineID: createHash('md5').update(inst.id).digest('hex'),
          systemUUID: `ec2${createHash('md5').update(`${inst.id}u`).digest('hex').slice(3)}`,
          bootID: this.api.uid(),
          kernelVersion: '6.1.119-129.201.amzn2023.x86_64',
          osImage: 'Amazon Linux 2023.6.20250107',
          containerRuntimeVersion: 'containerd://1.7.25',
          kubeletVersion: `v${this.sim.opts.clusterVersion}.0-eks-5d4a308`,
          kubeProxyVersion: `v${this.sim.opts.clusterVersion}.0-eks-5d4a308`,
          operatingSystem: 'linux',
          architecture: f.arch,
        },
      },
    };
    const written = this.write(NODES, node, MANAGERS.kubelet);
    this.write(
      LEASES,
      {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: {
          name,
          namespace: 'kube-node-lease',
          uid: this.api.uid(),
          creationTimestamp: now,
          ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name, uid: written.metadata?.uid as string }],
        },
        spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: `${now.slice(0, -1)}.000000Z` },
      },
      MANAGERS.kubelet,
    );
    this.event(node, 'Normal', 'Starting', 'Starting kubelet.', 'kubelet', name);
    this.event(
      node,
      'Normal',
      'RegisteredNode',
      `Node ${name} event: Registered Node ${name} in Controller`,
      'node-controller',
    );
    const never = (this.sim.faults.nodesNotReady ?? []).some((r) => matchesGroup(r, ng));
    if (!never) this.after(this.sim.opts.durations.nodeReadyMs, `${name}: Ready`, () => this.markReady(name));
    this.settle();
  }

  private markReady(name: string): void {
    const node = this.store.get(NODES, undefined, name);
    if (!node) return;
    const now = this.ts();
    const status = structuredClone(node.status) as JsonObject;
    status.conditions = (status.conditions as JsonObject[]).map((c) =>
      c.type === 'Ready'
        ? {
            type: 'Ready',
            status: 'True',
            lastHeartbeatTime: now,
            lastTransitionTime: now,
            reason: 'KubeletReady',
            message: 'kubelet is posting ready status',
          }
        : c,
    );
    this.write(NODES, { ...node, status }, MANAGERS.kubelet, 'status');
    this.event(node, 'Normal', 'NodeReady', `Node ${name} status is now: NodeReady`, 'kubelet', name);
  }

  /** EKS's lifecycle hook drains a node whose instance Auto Scaling terminates: cordon, then evict its pods. */
  private drainForTermination(name: string): void {
    const node = this.store.get(NODES, undefined, name);
    if (!node) return;
    if (!(node.spec as JsonObject)?.unschedulable)
      this.write(
        NODES,
        { ...node, spec: { ...(node.spec as JsonObject), unschedulable: true } },
        MANAGERS.eks,
      );
    for (const pod of this.store.podsOnNode(PODS, name)) {
      if (pod.metadata?.deletionTimestamp) continue;
      this.api.delete(PODS, pod.metadata?.namespace, pod.metadata?.name as string);
    }
  }

  /** The instance is gone: its Node is deleted and the pods bound to it with it (pod garbage collection). */
  private removeNode(name: string): void {
    const node = this.store.get(NODES, undefined, name);
    this.nodes.delete(name);
    for (const pod of this.store.podsOnNode(PODS, name))
      this.api.removeNow(PODS, pod.metadata?.namespace, pod.metadata?.name as string);
    if (this.store.get(LEASES, 'kube-node-lease', name)) this.store.remove(LEASES, 'kube-node-lease', name);
    if (node) {
      this.event(
        node,
        'Normal',
        'RemovingNode',
        `Node ${name} event: Removing Node ${name} from Controller`,
        'node-controller',
      );
      this.store.remove(NODES, undefined, name);
    }
  }

  /** The node lifecycle controller's taints: not-ready while NotReady, unschedulable while cordoned. */
  private syncNodes(): boolean {
    if (this.dirty.nodes.size === 0) return false;
    const names = [...this.dirty.nodes];
    this.dirty.nodes.clear();
    for (const name of names) {
      const node = this.store.get(NODES, undefined, name);
      if (!node) continue;
      const spec = (node.spec as JsonObject) ?? {};
      const ready =
        ((node.status as JsonObject)?.conditions as JsonObject[] | undefined)?.find((c) => c.type === 'Ready')
          ?.status === 'True';
      const taints = ((spec.taints as JsonObject[]) ?? []).slice();
      const want = (key: string, effect: string, on: boolean) => {
        const i = taints.findIndex((t) => t.key === key && t.effect === effect);
        if (on && i < 0) taints.push({ key, effect, timeAdded: this.ts() });
        if (!on && i >= 0) taints.splice(i, 1);
      };
      want(TAINTS.notReady, 'NoSchedule', !ready);
      want(TAINTS.notReady, 'NoExecute', !ready);
      want(TAINTS.unschedulable, 'NoSchedule', spec.unschedulable === true);
      if (JSON.stringify(taints) !== JSON.stringify(spec.taints ?? [])) {
        const next = { ...spec, taints };
        if (taints.length === 0) delete (next as JsonObject).taints;
        this.write(NODES, { ...node, spec: next }, 'kube-controller-manager');
      }
      if (ready) this.kubelet.nodeReady(name);
    }
    return true;
  }

  nodeRecord(name: string): NodeRecord | undefined {
    return this.nodes.get(name);
  }

  requireNode(name: string): KObject {
    const n = this.store.get(NODES, undefined, name);
    if (!n) throw notFound(NODES, name);
    return n;
  }
}

/** The default ClusterRoles RBAC bootstraps that bindings refer to. */
const BUILTIN_CLUSTER_ROLES: Record<string, unknown[]> = {
  'cluster-admin': [
    { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
    { nonResourceURLs: ['*'], verbs: ['*'] },
  ],
  admin: [{ apiGroups: ['', 'apps', 'policy', 'rbac.authorization.k8s.io'], resources: ['*'], verbs: ['*'] }],
  edit: [
    {
      apiGroups: ['', 'apps', 'policy'],
      resources: [
        'pods',
        'pods/eviction',
        'services',
        'deployments',
        'deployments/scale',
        'replicasets',
        'replicasets/scale',
        'poddisruptionbudgets',
        'events',
      ],
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
    },
  ],
  view: [
    {
      apiGroups: ['', 'apps', 'policy'],
      resources: [
        'pods',
        'services',
        'deployments',
        'replicasets',
        'poddisruptionbudgets',
        'events',
        'namespaces',
      ],
      verbs: ['get', 'list', 'watch'],
    },
  ],
};
