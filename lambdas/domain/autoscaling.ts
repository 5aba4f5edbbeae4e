import * as z from 'zod';
import type { RuleIssue } from './rules';

/**
 * Autoscaling on the model servers' load (docs/design.md, Autoscaling): the policy a model's spec may carry,
 * the metrics each engine serves, and the replicas load asks for, computed as the Kubernetes HPA computes them
 * (ratio to target, 10% tolerance, stabilization windows, pods not Ready set aside), plus scale to zero after
 * an idle window. Pure: the reconciler reads the pods' metrics and stores what this returns.
 */

type Engine = 'vllm' | 'sglang' | 'tgi' | 'llamacpp' | 'ollama';

/** What a metric measures: requests waiting, requests running, or the share of the KV cache in use (0..1). */
export type MetricKind = 'waiting' | 'running' | 'kvCache';

/**
 * The Prometheus gauges each engine serves on `/metrics`, by kind. vLLM renamed its KV-cache gauge
 * (gpu_cache_usage_perc, then kv_cache_usage_perc); both are accepted. Ollama serves no Prometheus metrics.
 */
export const ENGINE_METRICS: Record<Engine, Partial<Record<string, MetricKind>>> = {
  vllm: {
    'vllm:num_requests_waiting': 'waiting',
    'vllm:num_requests_running': 'running',
    'vllm:gpu_cache_usage_perc': 'kvCache',
    'vllm:kv_cache_usage_perc': 'kvCache',
  },
  sglang: {
    'sglang:num_queue_reqs': 'waiting',
    'sglang:num_running_reqs': 'running',
    'sglang:token_usage': 'kvCache',
  },
  tgi: { tgi_queue_size: 'waiting', tgi_batch_current_size: 'running' },
  llamacpp: {
    'llamacpp:requests_deferred': 'waiting',
    'llamacpp:requests_processing': 'running',
    'llamacpp:kv_cache_usage_ratio': 'kvCache',
  },
  ollama: {},
};

/** An engine's gauge of one kind (the first listed), or undefined when it serves none. */
export function engineMetric(engine: Engine, kind: MetricKind): string | undefined {
  return Object.entries(ENGINE_METRICS[engine]).find(([, k]) => k === kind)?.[0];
}

/** The HPA's defaults (autoscaling/v2 behavior): scale up at once, scale down on the highest of 5 minutes. */
export const DEFAULT_SCALE_UP_STABILIZATION_SECONDS = 0;
export const DEFAULT_SCALE_DOWN_STABILIZATION_SECONDS = 300;
/** The HPA's --horizontal-pod-autoscaler-tolerance default. */
export const TOLERANCE = 0.1;

export const AutoscalingSchema = z.strictObject({
  metric: z.string().min(1).max(100).describe("one of the engine's gauges (docs/workloads.md, Autoscaling)"),
  targetPerReplica: z.number().positive().max(1_000_000),
  // The HPA caps both windows at one hour.
  scaleUpStabilizationSeconds: z.number().int().min(0).max(3600).optional(),
  scaleDownStabilizationSeconds: z.number().int().min(0).max(3600).optional(),
  scaleToZeroAfterSeconds: z.number().int().min(1).max(604_800).optional(),
});
export type Autoscaling = z.output<typeof AutoscalingSchema>;

/** The rules across a spec's autoscaling, engine and scaling (paths relative to the spec). */
export function autoscalingIssues(spec: unknown): RuleIssue[] {
  const s = spec as { engine?: unknown; autoscaling?: unknown; scaling?: { min?: unknown } } | undefined;
  const a = s?.autoscaling as Partial<Autoscaling> | undefined;
  if (!a || typeof a !== 'object') return [];
  const engine = s?.engine as Engine;
  const table = ENGINE_METRICS[engine];
  if (!table) return [];
  const issues: RuleIssue[] = [];
  const names = Object.keys(table);
  if (names.length === 0) {
    issues.push({
      path: ['autoscaling'],
      message: `engine ${engine} serves no Prometheus metrics, so llmcap cannot scale it on load; drop autoscaling or use vllm, sglang, tgi or llamacpp`,
    });
  } else if (typeof a.metric === 'string' && !table[a.metric]) {
    issues.push({
      path: ['autoscaling', 'metric'],
      message: `engine ${engine} serves no metric ${a.metric}; use one of ${names.join(', ')}`,
    });
  } else if (
    typeof a.metric === 'string' &&
    table[a.metric] === 'kvCache' &&
    typeof a.targetPerReplica === 'number' &&
    a.targetPerReplica > 1
  ) {
    issues.push({
      path: ['autoscaling', 'targetPerReplica'],
      message: `${a.metric} is a share of the KV cache between 0 and 1; set targetPerReplica to at most 1 (0.8 is 80%)`,
    });
  }
  const min = s?.scaling?.min;
  if (a.scaleToZeroAfterSeconds !== undefined && typeof min === 'number' && min !== 0) {
    issues.push({
      path: ['autoscaling', 'scaleToZeroAfterSeconds'],
      message: `scaleToZeroAfterSeconds needs scaling.min 0 (it is ${min}); set min to 0 or drop scaleToZeroAfterSeconds`,
    });
  }
  return issues;
}

// ---------------------------------------------------------------------------------------------------------
// The replicas load asks for
// ---------------------------------------------------------------------------------------------------------

/** One pod of the model as the pass saw it. */
export interface PodLoad {
  /** Ready: serving. A pod not Ready is starting (or failing its probe) and is not scraped. */
  ready: boolean;
  /** The policy's metric as the pod served it; absent when a Ready pod's metrics could not be read. */
  value?: number;
  /** Requests running plus waiting on the pod; 0 means idle (absent: unknown, not idle). */
  busy?: number;
}

/** A recommendation the loop made, kept for the stabilization windows. */
export interface Recommendation {
  at: string;
  replicas: number;
}

/** What the loop keeps per model between passes (in its WORKLOAD item). */
export interface AutoscaleState {
  /** Recommendations within the longer window, oldest first. */
  history: Recommendation[];
  /** Since when every pod has been idle (no request running or waiting); absent while busy. */
  idleSince?: string;
  /** The replicas load last asked for, clamped to [min, max]: what admission reads as the model's demand. */
  desired?: number;
  /** The metric's mean per counted pod at the last read. */
  value?: number;
  /** When a wake (POST /v1/models/{name}/wake) last asked for replicas; idle time counts from then at least. */
  wokenAt?: string;
}

export interface AutoscaleInput {
  policy: Autoscaling;
  scaling: { min: number; max: number };
  /** The model's pods that are not terminating or failed (the HPA discards those). */
  pods: readonly PodLoad[];
  /** Replicas the model runs now (its Deployments' replicas): the HPA's currentReplicas. */
  current: number;
  prev?: AutoscaleState;
  now: string;
}

export interface AutoscaleResult {
  state: AutoscaleState;
  /** The replicas load asks for, before stabilization and bounds (undefined when no pod could be read). */
  raw?: number;
  why: string;
}

const secondsBetween = (a: string, b: string) => (Date.parse(b) - Date.parse(a)) / 1000;

/**
 * The HPA's replica calculation for a per-pod metric (kube-controller-manager's replica calculator): the mean
 * over pods that served it against the target; within 10% nothing changes. Pods not Ready and Ready pods
 * whose metrics are missing are set aside first; if the direction is up, both count as 0, if down, missing ones
 * count as exactly the target (not-Ready ones stay out); the ratio is then recomputed, and a change it would
 * reverse or bring within tolerance leaves the replicas as they are. Undefined when no pod served the metric.
 */
export function hpaReplicas(pods: readonly PodLoad[], target: number, current: number): number | undefined {
  const served = pods.filter((p) => p.ready && p.value !== undefined).map((p) => p.value!);
  const missing = pods.filter((p) => p.ready && p.value === undefined).length;
  const unready = pods.filter((p) => !p.ready).length;
  if (served.length === 0) return undefined;
  const sum = served.reduce((a, b) => a + b, 0);
  const ratio = sum / served.length / target;
  const scaleUpWithUnready = unready > 0 && ratio > 1;
  if (!scaleUpWithUnready && missing === 0) {
    if (Math.abs(1 - ratio) <= TOLERANCE) return current;
    return Math.ceil(ratio * served.length);
  }
  let total = sum;
  let counted = served.length;
  // At exactly the target the missing pods are left out, as the HPA leaves them out.
  if (missing > 0 && ratio !== 1) {
    if (ratio < 1) total += missing * target;
    counted += missing;
  }
  if (scaleUpWithUnready) counted += unready;
  const next = total / counted / target;
  if (Math.abs(1 - next) <= TOLERANCE || (ratio < 1 && next > 1) || (ratio > 1 && next < 1)) return current;
  const replicas = Math.ceil(next * counted);
  if ((next < 1 && replicas > current) || (next > 1 && replicas < current)) return current;
  return replicas;
}

/**
 * The HPA's stabilization (autoscaling/v2 behavior): the highest recommendation within the scale-down window
 * and the lowest within the scale-up window bound the new one, so a dip shorter than the scale-down window
 * never removes a replica and a spike shorter than the scale-up window never adds one.
 */
export function stabilize(
  recommendation: number,
  current: number,
  history: readonly Recommendation[],
  now: string,
  upSeconds: number,
  downSeconds: number,
): number {
  let up = recommendation;
  let down = recommendation;
  for (const r of history) {
    const age = secondsBetween(r.at, now);
    if (age < upSeconds) up = Math.min(up, r.replicas);
    if (age < downSeconds) down = Math.max(down, r.replicas);
  }
  let out = current;
  if (out < up) out = up;
  if (out > down) out = down;
  return out;
}

/**
 * One pass of the loop for one model: the replicas its load asks for within [min, max]. While any pod works
 * the floor is max(min, 1); the model goes to 0 only once every pod has been idle for scaleToZeroAfterSeconds
 * (min 0 only). With no pod to read (at zero, or all starting) the previous answer stands.
 */
export function autoscale(input: AutoscaleInput): AutoscaleResult {
  const { policy, scaling, pods, now } = input;
  const upSeconds = policy.scaleUpStabilizationSeconds ?? DEFAULT_SCALE_UP_STABILIZATION_SECONDS;
  const downSeconds = policy.scaleDownStabilizationSeconds ?? DEFAULT_SCALE_DOWN_STABILIZATION_SECONDS;
  const keep = Math.max(upSeconds, downSeconds);
  const prev = input.prev ?? { history: [] };
  const history = prev.history.filter((r) => secondsBetween(r.at, now) < keep);
  const readable = pods.filter((p) => p.ready && p.value !== undefined);
  const value = readable.length ? readable.reduce((n, p) => n + p.value!, 0) / readable.length : undefined;
  const wokenAt = prev.wokenAt;

  // Idle: every pod read and none has a request running or waiting.
  const idle = pods.length > 0 && pods.every((p) => p.ready && p.busy === 0);
  let idleSince = idle ? (prev.idleSince ?? now) : undefined;
  if (idleSince && wokenAt && wokenAt > idleSince) idleSince = wokenAt;
  const base = { history, ...(idleSince ? { idleSince } : {}), ...(wokenAt ? { wokenAt } : {}) };

  const zeroAfter = scaling.min === 0 ? policy.scaleToZeroAfterSeconds : undefined;
  if (zeroAfter !== undefined && idleSince && secondsBetween(idleSince, now) >= zeroAfter) {
    return {
      state: { ...base, history: [], desired: 0, ...(value !== undefined ? { value } : {}) },
      raw: 0,
      why: `idle since ${idleSince}, longer than scaleToZeroAfterSeconds (${zeroAfter})`,
    };
  }
  const raw = hpaReplicas(pods, policy.targetPerReplica, input.current);
  if (raw === undefined) {
    // Nothing to read: at zero stay there, otherwise keep the last answer (the HPA skips a pass without metrics).
    // Without one, load asks for nothing yet and admission keeps scaling.target: the pass reads load before
    // admission, so a new model has no pod yet, and "0 running" is not an answer.
    const desired = prev.desired;
    return {
      state: {
        ...base,
        ...(desired !== undefined ? { desired } : {}),
        ...(prev.value !== undefined ? { value: prev.value } : {}),
      },
      why: pods.length ? 'no Ready pod served the metric yet' : 'no pod runs',
    };
  }
  const floor = Math.max(scaling.min, 1);
  const stable = stabilize(raw, input.current, history, now, upSeconds, downSeconds);
  const desired = Math.min(scaling.max, Math.max(floor, stable));
  return {
    state: {
      ...base,
      history: [...history, { at: now, replicas: raw }],
      desired,
      ...(value !== undefined ? { value } : {}),
    },
    raw,
    why:
      value === undefined
        ? 'metrics missing'
        : `${policy.metric} ${round(value)} per replica against a target of ${policy.targetPerReplica}`,
  };
}

/** A wake: the model at zero asks for max(min, 1) replicas and counts as busy from now. */
export function wake(
  prev: AutoscaleState | undefined,
  scaling: { min: number },
  now: string,
): AutoscaleState {
  const desired = Math.max(prev?.desired ?? 0, scaling.min, 1);
  const { idleSince: _idle, ...rest } = prev ?? { history: [] };
  return { ...rest, history: rest.history ?? [], desired, wokenAt: now };
}

/** Admission's wanted replicas for a model: its demand within [min, max] when it autoscales and one is known. */
export function demandTarget(
  scaling: { min: number; max: number },
  autoscaled: boolean,
  demand: number | undefined,
  fallback: number,
): number {
  if (!autoscaled || demand === undefined) return fallback;
  return Math.max(scaling.min, Math.min(scaling.max, demand));
}

const round = (x: number) => Math.round(x * 1000) / 1000;

/**
 * The sum of a gauge over its series in Prometheus text (engines label theirs by model, engine or rank), or
 * undefined when the text has no sample of it.
 */
export function gaugeValue(text: string, name: string): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    const m = /^(?:\{[^}]*\})?\s+(\S+)/.exec(rest);
    if (!m) continue;
    const v = Number(m[1]);
    if (Number.isFinite(v)) sum = (sum ?? 0) + v;
  }
  return sum;
}

/**
 * What one pod's /metrics say for the policy: its metric, and its requests running plus waiting. A running
 * gauge stops at the engine's batch limit (vLLM's --max-num-seqs), so at any overload it reads the same and
 * the HPA's ratio can grow a model by only limit ÷ target per start: it counts the requests waiting beside it,
 * those the server would run if it had room.
 */
export function podLoadFromText(engine: Engine, metric: string, text: string): Omit<PodLoad, 'ready'> {
  const gauge = gaugeValue(text, metric);
  const running = engineMetric(engine, 'running');
  const waiting = engineMetric(engine, 'waiting');
  const r = running ? gaugeValue(text, running) : undefined;
  const w = waiting ? gaugeValue(text, waiting) : undefined;
  const value =
    gauge !== undefined && ENGINE_METRICS[engine][metric] === 'running' && w !== undefined
      ? gauge + w
      : gauge;
  return {
    ...(value !== undefined ? { value } : {}),
    ...(r !== undefined && w !== undefined ? { busy: r + w } : {}),
  };
}

/** What the reconciler stores per autoscaled model in its WORKLOAD item (store/workloads.ts). */
export interface ModelLoad extends AutoscaleState {
  metric: string;
}

/** The demand admission reads (World.demand): each autoscaled model's last desired replicas, by model. */
export function demandOf(
  demands: readonly { model: string; desired: number }[],
): ReadonlyMap<string, number> {
  return new Map(demands.map((d) => [d.model, d.desired]));
}

/**
 * The demand items a pass writes: each autoscaled model's whose replicas asked for changed (or that has none),
 * and the removal of those no longer autoscaled. A steady load writes nothing, so it wakes no admitter.
 */
export function demandChanges(
  loads: ReadonlyMap<string, AutoscaleState>,
  stored: readonly { model: string; desired: number; wokenAt?: string }[],
): { put: { model: string; desired: number; wokenAt?: string }[]; remove: string[] } {
  const before = new Map(stored.map((d) => [d.model, d]));
  const put: { model: string; desired: number; wokenAt?: string }[] = [];
  for (const [model, s] of loads) {
    if (s.desired === undefined) continue;
    const b = before.get(model);
    if (b && b.desired === s.desired && b.wokenAt === s.wokenAt) continue;
    put.push({ model, desired: s.desired, ...(s.wokenAt ? { wokenAt: s.wokenAt } : {}) });
  }
  return { put, remove: stored.filter((d) => !loads.has(d.model)).map((d) => d.model) };
}

/** The `autoscaling` part of a model's status: the load, what it asks for, what was admitted and why not more. */
export function autoscalingStatus(
  load: ModelLoad | undefined,
  admission:
    | { admitted?: number; reasons?: { reason: string; message: string; replicas: number }[] }
    | undefined,
) {
  if (!load) return undefined;
  return {
    metric: load.metric,
    ...(load.value !== undefined ? { value: round(load.value) } : {}),
    ...(load.desired !== undefined ? { desiredReplicas: load.desired } : {}),
    admitted: admission?.admitted ?? 0,
    reasons: admission?.reasons ?? [],
    ...(load.idleSince ? { idleSince: load.idleSince } : {}),
    ...(load.wokenAt ? { wokenAt: load.wokenAt } : {}),
  };
}

/**
 * What a model at zero waits for before it serves again, when nothing was observed (docs/workloads.md,
 * Autoscaling): a new node of a managed node group (EC2 launch, bootstrap, kubelet Ready), the engine's image
 * pulled on it, and the weights loaded. Defaults, not measurements: each part until it was observed on the
 * model's compute (StartTimes).
 */
export const WAKE_DEFAULTS = { nodeBootSeconds: 180, imagePullSeconds: 120, modelLoadSeconds: 120 } as const;

/**
 * What the reconciler last saw of a new replica's way to Ready on one compute (store/start-times.ts): its newest
 * Ready node's boot (Node created → Ready: the kubelet's registration on, not EC2's launch before it) and its
 * newest Ready replica's start (pod scheduled → its containers started: the image pull; started → Ready: the
 * model load). A part never seen is absent.
 */
export interface StartTimes {
  compute: string;
  nodeBootSeconds?: number;
  imagePullSeconds?: number;
  modelLoadSeconds?: number;
  /** When each part was last seen (the Ready transition it was measured at). */
  nodeReadyAt?: string;
  podReadyAt?: string;
}

/** The fields of a Node or a pod that tell how long it took to be Ready. */
export interface StartedObject {
  metadata?: { creationTimestamp?: unknown; labels?: Record<string, string> };
  status?: {
    conditions?: { type: string; status: string; lastTransitionTime?: unknown }[];
    containerStatuses?: { state?: { running?: { startedAt?: unknown } } }[];
  };
}

const time = (t: unknown): number | undefined => {
  const ms = t instanceof Date ? t.getTime() : typeof t === 'string' ? Date.parse(t) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
};
const readySince = (o: StartedObject) => {
  const c = o.status?.conditions?.find((x) => x.type === 'Ready');
  return c?.status === 'True' ? time(c.lastTransitionTime) : undefined;
};
const seconds = (from: number, to: number) => Math.max(0, Math.round((to - from) / 1000));

/**
 * What these Ready nodes and pods of one compute say, the newest of each (a node or replica that has been
 * Ready longer says less of what a wake waits for now), folded into what was kept: a part seen again replaces
 * its value, one not seen keeps it. Undefined when nothing changed, so that a steady pass writes nothing.
 */
export function observeStartTimes(
  compute: string,
  prev: StartTimes | undefined,
  nodes: readonly StartedObject[],
  pods: readonly StartedObject[],
): StartTimes | undefined {
  const next: StartTimes = { ...(prev ?? {}), compute };
  let node: { at: number; boot: number } | undefined;
  for (const n of nodes) {
    const ready = readySince(n);
    const created = time(n.metadata?.creationTimestamp);
    if (ready === undefined || created === undefined || (node && node.at >= ready)) continue;
    node = { at: ready, boot: seconds(created, ready) };
  }
  if (node) Object.assign(next, { nodeBootSeconds: node.boot, nodeReadyAt: new Date(node.at).toISOString() });
  let pod: { at: number; pull: number; load: number } | undefined;
  for (const p of pods) {
    const ready = readySince(p);
    const scheduled = time(
      p.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'True')?.lastTransitionTime,
    );
    const started = (p.status?.containerStatuses ?? [])
      .map((c) => time(c.state?.running?.startedAt))
      .filter((t): t is number => t !== undefined);
    if (ready === undefined || scheduled === undefined || started.length === 0 || (pod && pod.at >= ready))
      continue;
    // The last container to start ends the pull; the model loads from then until Ready.
    const last = Math.max(...started);
    pod = { at: ready, pull: seconds(scheduled, last), load: seconds(last, ready) };
  }
  if (pod)
    Object.assign(next, {
      imagePullSeconds: pod.pull,
      modelLoadSeconds: pod.load,
      podReadyAt: new Date(pod.at).toISOString(),
    });
  const same =
    prev &&
    prev.nodeReadyAt === next.nodeReadyAt &&
    prev.podReadyAt === next.podReadyAt &&
    prev.nodeBootSeconds === next.nodeBootSeconds &&
    prev.imagePullSeconds === next.imagePullSeconds &&
    prev.modelLoadSeconds === next.modelLoadSeconds;
  return same || (!node && !pod) ? undefined : next;
}

export interface WakeEstimate {
  expectedSecondsToReady: number;
  nodeBootSeconds: number;
  imagePullSeconds: number;
  modelLoadSeconds: number;
  /**
   * `running`: a replica already serves; `observed`: the parts as last seen on `compute` (a part never seen
   * there is its default); `default`: WAKE_DEFAULTS.
   */
  basis: 'running' | 'observed' | 'default';
  /** The compute whose observed times these are (basis `observed`). */
  compute?: string;
}

/**
 * The expected time to Ready of a wake: none while a replica serves, else a node boot, a pull and a load, as
 * last observed on the model's compute where they were, the defaults until then.
 */
export function wakeEstimate(running: number, observed?: StartTimes): WakeEstimate {
  if (running > 0)
    return {
      expectedSecondsToReady: 0,
      nodeBootSeconds: 0,
      imagePullSeconds: 0,
      modelLoadSeconds: 0,
      basis: 'running',
    };
  const d = WAKE_DEFAULTS;
  const parts = {
    nodeBootSeconds: observed?.nodeBootSeconds ?? d.nodeBootSeconds,
    imagePullSeconds: observed?.imagePullSeconds ?? d.imagePullSeconds,
    modelLoadSeconds: observed?.modelLoadSeconds ?? d.modelLoadSeconds,
  };
  const seen =
    observed &&
    [observed.nodeBootSeconds, observed.imagePullSeconds, observed.modelLoadSeconds].some(
      (x) => x !== undefined,
    );
  return {
    expectedSecondsToReady: parts.nodeBootSeconds + parts.imagePullSeconds + parts.modelLoadSeconds,
    ...parts,
    ...(seen ? { basis: 'observed' as const, compute: observed.compute } : { basis: 'default' as const }),
  };
}
