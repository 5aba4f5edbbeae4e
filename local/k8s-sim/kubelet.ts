import { createHash } from 'node:crypto';
import type { PodCrashRule, PodUnreadyRule } from '../cloud-sim/config';
import type { Cluster } from './cluster';
import { MANAGERS, matchesPodSelector } from './names';
import { NODES, PODS, qosClass } from './resources';
import type { JsonObject, KObject } from './types';

/**
 * The kubelets of all nodes: start a bound pod's containers after the image pull, run their startup and
 * readiness probes against a server that answers after its start time, restart crashed containers with the
 * kubelet's back-off (CrashLoopBackOff), and stop a deleted pod within its grace period. Probe schedules come
 * from the pod spec (initialDelaySeconds, periodSeconds, failureThreshold, successThreshold), so a probe set
 * too tight for the server's start time fails here as it would on a node.
 */

interface Probe {
  initialDelaySeconds?: number;
  periodSeconds?: number;
  failureThreshold?: number;
  successThreshold?: number;
  httpGet?: { path?: string; port?: number | string; scheme?: string };
  tcpSocket?: { port?: number | string };
  exec?: { command?: string[] };
  grpc?: { port?: number };
}

interface ContainerRun {
  name: string;
  image: string;
  spec: JsonObject;
  /** Bumped at each (re)start so that events of an older incarnation are ignored. */
  incarnation: number;
  state: 'creating' | 'running' | 'backoff';
  startedAt?: number;
  started: boolean;
  ready: boolean;
  restartCount: number;
  crashes: number;
  lastTerminated?: JsonObject;
  waiting?: { reason: string; message?: string };
  containerId?: string;
}

interface PodRun {
  uid: string;
  ns: string;
  name: string;
  node: string;
  ip: string;
  startTime: number;
  containers: ContainerRun[];
  terminating: boolean;
}

const INITIAL_BACKOFF_S = 10;
const MAX_BACKOFF_S = 300;

/** Go's time.Duration text: 10s, 1m20s, 5m0s. */
function goDuration(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  return `${Math.floor(seconds / 60)}m${seconds % 60}s`;
}

export class Kubelet {
  private readonly runs = new Map<string, PodRun>();

  constructor(private readonly c: Cluster) {}

  reset(): void {
    this.runs.clear();
  }

  forget(uid: string): void {
    this.runs.delete(uid);
  }

  private podOf(run: PodRun): KObject | undefined {
    const p = this.c.store.get(PODS, run.ns, run.name);
    return p && p.metadata?.uid === run.uid ? p : undefined;
  }

  /** Pods created with spec.nodeName already set skip the scheduler; the kubelet of that node takes them. */
  nodeReady(node: string): void {
    for (const p of this.c.store.podsOnNode(PODS, node))
      if (!this.runs.has(p.metadata?.uid as string) && !p.metadata?.deletionTimestamp) this.podBound(p);
  }

  podBound(pod: KObject): void {
    const uid = pod.metadata?.uid as string;
    const node = (pod.spec as JsonObject).nodeName as string;
    if (this.runs.has(uid)) return;
    const nodeObj = this.c.store.get(NODES, undefined, node);
    const ready = ((nodeObj?.status as JsonObject)?.conditions as JsonObject[] | undefined)?.some(
      (x) => x.type === 'Ready' && x.status === 'True',
    );
    if (!nodeObj || !ready) return;
    const run: PodRun = {
      uid,
      ns: pod.metadata?.namespace as string,
      name: pod.metadata?.name as string,
      node,
      ip: this.c.podIp(node),
      startTime: this.c.now(),
      terminating: false,
      containers: (((pod.spec as JsonObject).containers as JsonObject[]) ?? []).map((s) => ({
        name: s.name as string,
        image: s.image as string,
        spec: s,
        incarnation: 0,
        state: 'creating',
        started: false,
        ready: false,
        restartCount: 0,
        crashes: 0,
      })),
    };
    this.runs.set(uid, run);
    this.writeStatus(run);
    const pull = this.c.sim.opts.durations.imagePullMs;
    for (const ct of run.containers)
      this.c.event(pod, 'Normal', 'Pulling', `Pulling image "${ct.image}"`, 'kubelet', node);
    this.c.after(pull, `${run.name}: containers start`, () => {
      const p = this.podOf(run);
      if (!p || run.terminating) return;
      for (const ct of run.containers) {
        const secs = (this.c.sim.scaled(pull) / 1000).toFixed(3);
        this.c.event(
          p,
          'Normal',
          'Pulled',
          `Successfully pulled image "${ct.image}" in ${secs}s (${secs}s including waiting). Image size: 4812463680 bytes.`,
          'kubelet',
          node,
        );
        this.start(run, ct);
      }
    });
  }

  private crashRule(run: PodRun, ct: ContainerRun): PodCrashRule | undefined {
    const pod = this.podOf(run);
    return pod
      ? (this.c.sim.faults.podCrashes ?? []).find((r) => matchesPodSelector(r, pod, ct.image))
      : undefined;
  }

  private unreadyRule(run: PodRun, ct: ContainerRun): PodUnreadyRule | undefined {
    const pod = this.podOf(run);
    return pod
      ? (this.c.sim.faults.podsUnready ?? []).find((r) => matchesPodSelector(r, pod, ct.image))
      : undefined;
  }

  private appStartMs(run: PodRun, ct: ContainerRun): number {
    const pod = this.podOf(run);
    const rule = pod
      ? (this.c.opts.appStart ?? []).find((r) => matchesPodSelector(r, pod, ct.image))
      : undefined;
    return rule?.ms ?? this.c.sim.opts.durations.appStartMs;
  }

  /** When the container's n-th probe runs, in ms after it started. */
  private probeTime(p: Probe, n: number): number {
    return ((p.initialDelaySeconds ?? 0) + n * (p.periodSeconds ?? 10)) * 1000;
  }

  private start(run: PodRun, ct: ContainerRun): void {
    const pod = this.podOf(run);
    if (!pod || run.terminating) return;
    ct.incarnation++;
    const inc = ct.incarnation;
    ct.state = 'running';
    ct.startedAt = this.c.now();
    ct.waiting = undefined;
    ct.started = false;
    ct.ready = false;
    ct.containerId = `containerd://${createHash('sha256').update(`${run.uid}/${ct.name}/${inc}`).digest('hex')}`;
    this.c.event(pod, 'Normal', 'Created', `Created container: ${ct.name}`, 'kubelet', run.node);
    this.c.event(pod, 'Normal', 'Started', `Started container ${ct.name}`, 'kubelet', run.node);
    const live = (fn: () => void) => () => {
      if (ct.incarnation !== inc || run.terminating || !this.podOf(run)) return;
      fn();
      this.writeStatus(run);
    };
    const crash = this.crashRule(run, ct);
    const unready = this.unreadyRule(run, ct);
    const appReady = crash || unready ? Number.POSITIVE_INFINITY : this.appStartMs(run, ct);
    const startup = ct.spec.startupProbe as Probe | undefined;
    const readiness = ct.spec.readinessProbe as Probe | undefined;
    const horizon = crash ? this.c.sim.opts.durations.crashAfterMs : Number.POSITIVE_INFINITY;
    if (crash)
      this.c.after(
        horizon,
        `${run.name}/${ct.name}: exits`,
        live(() => this.terminated(run, ct, crash.exitCode ?? 1, crash.message)),
      );
    // Startup: the first probe at or after the server is up succeeds; failureThreshold misses kill the container.
    let startedAt = 0;
    if (startup) {
      const ft = startup.failureThreshold ?? 3;
      let k = 0;
      while (k < ft && this.probeTime(startup, k) < appReady) k++;
      if (k < ft) startedAt = this.probeTime(startup, k);
      else {
        const failAt = this.probeTime(startup, ft - 1);
        if (failAt < horizon) {
          this.probeFails(run, ct, 'Startup', startup, unready, this.probeTime(startup, 0), live);
          this.c.after(
            failAt,
            `${run.name}/${ct.name}: killed by startup probe`,
            live(() => {
              const p = this.podOf(run) as KObject;
              this.c.event(
                p,
                'Normal',
                'Killing',
                `Container ${ct.name} failed startup probe, will be restarted`,
                'kubelet',
                run.node,
              );
              this.terminated(run, ct, 137, undefined);
            }),
          );
        }
        this.writeStatus(run);
        return;
      }
    }
    if (startedAt >= horizon) {
      this.writeStatus(run);
      return;
    }
    const markStarted = () => {
      ct.started = true;
    };
    if (startup) this.c.after(startedAt, `${run.name}/${ct.name}: started`, live(markStarted));
    else ct.started = true;
    // Readiness: probes on their own schedule, from the container's start, once the startup probe passed.
    let readyAt: number;
    if (readiness) {
      const st = readiness.successThreshold ?? 1;
      const from = Math.max(startedAt, appReady);
      if (from === Number.POSITIVE_INFINITY) {
        let k = 0;
        while (this.probeTime(readiness, k) < startedAt) k++;
        const at = this.probeTime(readiness, k);
        if (at < horizon) this.probeFails(run, ct, 'Readiness', readiness, unready, at, live);
        this.writeStatus(run);
        return;
      }
      let k = 0;
      while (this.probeTime(readiness, k) < from) k++;
      readyAt = this.probeTime(readiness, k + st - 1);
    } else readyAt = startedAt;
    if (readyAt >= horizon) {
      this.writeStatus(run);
      return;
    }
    if (readyAt === 0) ct.ready = true;
    else
      this.c.after(
        readyAt,
        `${run.name}/${ct.name}: ready`,
        live(() => {
          ct.started = true;
          ct.ready = true;
        }),
      );
    this.writeStatus(run);
  }

  /** The kubelet's Unhealthy event for a probe that fails at `at` (ms after the container started). */
  private probeFails(
    run: PodRun,
    ct: ContainerRun,
    kind: 'Startup' | 'Readiness',
    probe: Probe,
    unready: PodUnreadyRule | undefined,
    at: number,
    live: (fn: () => void) => () => void,
  ): void {
    this.c.after(
      at,
      `${run.name}/${ct.name}: ${kind.toLowerCase()} probe fails`,
      live(() => {
        const p = this.podOf(run) as KObject;
        const why = this.probeFailure(run, ct, probe, unready);
        this.c.event(p, 'Warning', 'Unhealthy', `${kind} probe failed: ${why}`, 'kubelet', run.node);
      }),
    );
  }

  private probeFailure(run: PodRun, ct: ContainerRun, p: Probe, unready: PodUnreadyRule | undefined): string {
    if (unready) return unready.message ?? 'HTTP probe failed with statuscode: 503';
    const portOf = (port: unknown) => {
      if (typeof port === 'number') return port;
      const named = ((ct.spec.ports as JsonObject[]) ?? []).find((x) => x.name === port);
      return (named?.containerPort as number) ?? port;
    };
    if (p.httpGet) {
      const port = portOf(p.httpGet.port);
      const scheme = (p.httpGet.scheme ?? 'HTTP').toLowerCase();
      return `Get "${scheme}://${run.ip}:${port}${p.httpGet.path ?? '/'}": dial tcp ${run.ip}:${port}: connect: connection refused`;
    }
    if (p.tcpSocket) {
      const port = portOf(p.tcpSocket.port);
      return `dial tcp ${run.ip}:${port}: connect: connection refused`;
    }
    return 'command terminated with non-zero exit code: exit status 1';
  }

  /** The container exited: the first time it restarts at once, after that with a doubling back-off. */
  private terminated(run: PodRun, ct: ContainerRun, exitCode: number, message: string | undefined): void {
    ct.lastTerminated = {
      exitCode,
      reason: 'Error',
      ...(message ? { message } : {}),
      startedAt: this.c.ts(ct.startedAt),
      finishedAt: this.c.ts(),
      containerID: ct.containerId,
    };
    ct.crashes++;
    ct.ready = false;
    ct.started = false;
    ct.incarnation++;
    const restart = () => {
      ct.restartCount++;
      this.start(run, ct);
    };
    if (ct.crashes === 1) {
      restart();
      return;
    }
    const backoff = Math.min(MAX_BACKOFF_S, INITIAL_BACKOFF_S * 2 ** (ct.crashes - 2));
    const pod = this.podOf(run) as KObject;
    ct.state = 'backoff';
    ct.waiting = {
      reason: 'CrashLoopBackOff',
      message: `back-off ${goDuration(backoff)} restarting failed container=${ct.name} pod=${run.name}_${run.ns}(${run.uid})`,
    };
    this.c.event(
      pod,
      'Warning',
      'BackOff',
      `Back-off restarting failed container ${ct.name} in pod ${run.name}_${run.ns}(${run.uid})`,
      'kubelet',
      run.node,
    );
    const inc = ct.incarnation;
    this.c.after(backoff * 1000, `${run.name}/${ct.name}: restarts`, () => {
      if (ct.incarnation !== inc || run.terminating || !this.podOf(run)) return;
      restart();
    });
  }

  /** A deleted pod: its containers get SIGTERM and the pod goes once they have stopped. */
  beginTermination(pod: KObject, graceSeconds: number): boolean {
    const run = this.runs.get(pod.metadata?.uid as string);
    if (!run || graceSeconds <= 0 || !this.c.store.get(NODES, undefined, run.node)) return false;
    run.terminating = true;
    for (const ct of run.containers)
      if (ct.state === 'running')
        this.c.event(pod, 'Normal', 'Killing', `Stopping container ${ct.name}`, 'kubelet', run.node);
    const stop = Math.min(this.c.sim.opts.durations.podStopMs, graceSeconds * 1000);
    this.c.after(0, `${run.name}: stopping`, () => {
      for (const ct of run.containers) ct.ready = false;
      if (this.podOf(run)) this.writeStatus(run);
    });
    this.c.after(stop, `${run.name}: stopped`, () => {
      const p = this.podOf(run);
      if (p) this.c.api.removeNow(PODS, run.ns, run.name);
    });
    return true;
  }

  private writeStatus(run: PodRun): void {
    const pod = this.podOf(run);
    if (!pod) return;
    const prev = (pod.status as JsonObject) ?? {};
    const prevConds = (prev.conditions as JsonObject[]) ?? [];
    const now = this.c.ts();
    const anyStarted = run.containers.some((ct) => ct.startedAt !== undefined);
    const unready = run.containers.filter((ct) => !ct.ready).map((ct) => ct.name);
    const cond = (type: string, ok: boolean, reason?: string, message?: string) => {
      const old = prevConds.find((x) => x.type === type);
      const status = ok ? 'True' : 'False';
      return {
        type,
        status,
        lastProbeTime: null,
        lastTransitionTime: old && old.status === status ? old.lastTransitionTime : now,
        ...(reason ? { reason } : {}),
        ...(message ? { message } : {}),
      };
    };
    const conditions = [
      cond('PodReadyToStartContainers', anyStarted),
      cond('Initialized', true),
      unready.length === 0
        ? cond('Ready', true)
        : cond(
            'Ready',
            false,
            'ContainersNotReady',
            `containers with unready status: [${unready.join(' ')}]`,
          ),
      unready.length === 0
        ? cond('ContainersReady', true)
        : cond(
            'ContainersReady',
            false,
            'ContainersNotReady',
            `containers with unready status: [${unready.join(' ')}]`,
          ),
      prevConds.find((x) => x.type === 'PodScheduled') ?? cond('PodScheduled', true),
    ];
    const repo = (img: string) => (img.includes('/') ? img : `library/${img}`).replace(/[:@].*$/, '');
    const status: JsonObject = {
      phase: anyStarted ? 'Running' : 'Pending',
      conditions,
      hostIP: this.c.nodeRecord(run.node)?.ip ?? '',
      hostIPs: [{ ip: this.c.nodeRecord(run.node)?.ip ?? '' }],
      podIP: run.ip,
      podIPs: [{ ip: run.ip }],
      startTime: this.c.ts(run.startTime),
      containerStatuses: run.containers.map((ct) => {
        const state =
          ct.state === 'running'
            ? { running: { startedAt: this.c.ts(ct.startedAt) } }
            : { waiting: ct.waiting ?? { reason: 'ContainerCreating' } };
        return {
          name: ct.name,
          state,
          lastState: ct.lastTerminated ? { terminated: ct.lastTerminated } : {},
          ready: ct.ready,
          restartCount: ct.restartCount,
          image: ct.image,
          imageID:
            ct.startedAt !== undefined
              ? `${repo(ct.image)}@sha256:${createHash('sha256').update(ct.image).digest('hex')}`
              : '',
          ...(ct.containerId && ct.startedAt !== undefined ? { containerID: ct.containerId } : {}),
          started: ct.started,
        };
      }),
      qosClass: prev.qosClass ?? qosClass(pod.spec as JsonObject),
    };
    this.c.write(PODS, { ...pod, status }, MANAGERS.kubelet, 'status');
  }
}
