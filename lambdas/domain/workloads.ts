import { createHash, randomBytes } from 'node:crypto';
import * as z from 'zod';
import type { ModelLoad } from './autoscaling';
import { type Compute, labels, taint } from './compute';
import { ENGINES, type Model, type Profile } from './model';
import { isTwinKey, keyFromLabel, labelValue, nameOf, TWIN_MARK } from './names';
import { type ModelAdmission, modelStatus } from './quota';

/**
 * What llmcap runs on the node groups (docs/workloads.md): for every placement (model × profile × compute) a
 * Deployment of the model's engine with as many replicas as are admitted there, and per model a Service and a
 * PodDisruptionBudget, in a namespace per owner scope. Pure: the reconciler applies these with server-side
 * apply, so the objects here are exactly the fields llmcap owns.
 */

export const FIELD_MANAGER = 'llmcap';
export const MANAGED_BY = 'app.kubernetes.io/managed-by';
export const LABEL_STAGE = 'llmcap.dev/stage';
export const LABEL_MODEL = 'llmcap.dev/model';
export const LABEL_PROFILE = 'llmcap.dev/profile';
export const LABEL_COMPUTE = 'llmcap.dev/compute';

const EngineSchema = z.strictObject({
  image: z.string().min(1).max(512),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).default([]),
  /** What makes the server serve /metrics, added for an autoscaled model only (its pods restart anyway). */
  metricsArgs: z.array(z.string()).default([]),
  port: z.number().int().min(1).max(65535),
  health: z.string().regex(/^\//, 'a health path starts with /'),
  startupSeconds: z.number().int().min(10).max(86400).default(1800),
  env: z.record(z.string(), z.string()).optional(),
});
export type EngineConfig = z.output<typeof EngineSchema>;

export const EnginesConfigSchema = z.strictObject({
  engines: z.strictObject(
    Object.fromEntries(ENGINES.map((e) => [e, EngineSchema])) as {
      [K in (typeof ENGINES)[number]]: typeof EngineSchema;
    },
  ),
  models: z.record(z.string(), EngineSchema.partial().strict()).default({}),
});
export type EnginesConfig = z.output<typeof EnginesConfigSchema>;

/** The engine settings in force for one model: its engine's, with the model's overrides on top. */
export function engineFor(cfg: EnginesConfig, model: Pick<Model, 'name' | 'spec'>): EngineConfig {
  const base = cfg.engines[model.spec.engine];
  // A model may be named `constructor`: only the config's own entries count, never Object.prototype's.
  const own = Object.hasOwn(cfg.models, model.name) ? cfg.models[model.name]! : {};
  return { ...base, ...Object.fromEntries(Object.entries(own).filter(([, v]) => v !== undefined)) };
}

/** A DNS-1123 label of at most `max` characters: cut, with 8 hex digits of the full name so cuts stay apart. */
export function dnsLabel(raw: string, max = 63): string {
  let s = raw.toLowerCase().replace(/[^a-z0-9-]+/g, '-');
  // Services must start with a letter (DNS-1035); model names may start with a digit.
  if (!/^[a-z]/.test(s)) s = `m-${s}`;
  s = s.replace(/-+$/, '');
  if (s.length <= max) return s;
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, 8);
  return `${s.slice(0, max - 9).replace(/-+$/, '')}-${hash}`;
}

/**
 * The namespace of a scope stored before namespaces were stored, and of shared models: `llmcap-<stage>-shared`
 * for shared models, `llmcap-<stage>-team-ml` for a model owned by team:ml.
 */
export function namespaceFor(stage: string, owner: string | undefined): string {
  // A twin scope (domain/names.ts) always has a stored namespace; this keeps one derived from its key apart.
  if (owner && isTwinKey(owner)) {
    const [kindAndId, mark] = owner.split(TWIN_MARK) as [string, string];
    return dnsLabel(`llmcap-${stage}-t-${kindAndId.replace(':', '-')}-${mark}`);
  }
  return dnsLabel(`llmcap-${stage}-${owner ? owner.replace(':', '-') : 'shared'}`);
}

const NS_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/**
 * The namespace a new scope gets, stored with it: `llmcap-<stage>-<kind>-<id>-<5 random characters>` for every
 * scope, so that a namespace never tells whether another scope of its name exists (docs/security.md). `taken`
 * are the namespaces of the scopes there are; one of them is never given again.
 */
export function newScopeNamespace(
  stage: string,
  key: string,
  taken: ReadonlySet<string>,
  random: (n: number) => Uint8Array = randomBytes,
): string {
  for (;;) {
    const bytes = random(5);
    let suffix = '';
    for (let i = 0; i < 5; i++) suffix += NS_ALPHABET[(bytes[i] as number) & 31];
    const base = `llmcap-${stage}-${nameOf(key).replace(':', '-')}`;
    // Cut before the suffix, so the random part always survives a long name.
    const ns = `${dnsLabel(base, 63 - 6)}-${suffix}`;
    if (!taken.has(ns)) return ns;
  }
}

/** Which namespace a model of each owner runs in. */
export type NamespaceOf = (owner: string | undefined) => string;

/** A scope's namespace: stored, or derived for one stored before namespaces were (namespaceFor). */
export function scopeNamespace(stage: string, s: { name: string; namespace?: string }): string {
  return s.namespace || namespaceFor(stage, s.name);
}

/** The namespaces of these scopes' models (and of shared ones). */
export function namespacesOf(
  stage: string,
  scopes: readonly { name: string; namespace?: string }[],
): NamespaceOf {
  const stored = new Map(scopes.map((s) => [s.name, scopeNamespace(stage, s)]));
  return (owner) => (owner && stored.get(owner)) || namespaceFor(stage, owner);
}

/** Every namespace llmcap manages starts so; the access entry's namespace scope is this prefix and `*`. */
export function namespacePrefix(stage: string): string {
  return `llmcap-${stage}-`;
}

// Pod names add 17 characters (`-<hash>-<5 chars>`) to a Deployment's and should stay a 63-character label.
const DEPLOYMENT_NAME_MAX = 46;

export function deploymentName(model: string, profile: string, compute: string): string {
  return dnsLabel(`${model}-${profile}-${compute}`, DEPLOYMENT_NAME_MAX);
}

export function serviceName(model: string): string {
  return dnsLabel(model);
}

/** What the placeholders of an engine's args read (config/engines.yaml). */
export function sourceFields(source: string): { model: string; hfRepo: string; hfFile: string } {
  if (source.startsWith('hf://')) {
    const parts = source.slice(5).split('/');
    const hfRepo = parts.slice(0, 2).join('/');
    return { model: hfRepo, hfRepo, hfFile: parts.slice(2).join('/') };
  }
  return { model: source, hfRepo: '', hfFile: '' };
}

/**
 * Fills the placeholders. An argument that comes out empty is dropped with the flag before it, so that
 * `--hf-file {hfFile}` disappears for a source that names no file.
 */
export function expandArgs(args: readonly string[], vars: Record<string, string>): string[] {
  const fill = (a: string) => a.replace(/\{(\w+)\}/g, (m, k: string) => vars[k] ?? m);
  const out: string[] = [];
  for (const a of args) {
    const v = fill(a);
    if (v === '' && a !== '') {
      if (out.length && out[out.length - 1]!.startsWith('-')) out.pop();
      continue;
    }
    out.push(v);
  }
  return out;
}

/**
 * The engine's args, and for an autoscaled model those that make it serve the metrics the loop reads (SGLang's
 * `--enable-metrics`, llama.cpp's `--metrics`), unless the args already have them. Only an autoscaled model's
 * pods get them, so enabling autoscaling is the one change that restarts a server for them.
 */
export function serverArgs(
  engine: Pick<EngineConfig, 'args' | 'metricsArgs'>,
  autoscaled: boolean,
): string[] {
  if (!autoscaled) return [...engine.args];
  return [...engine.args, ...(engine.metricsArgs ?? []).filter((a) => !engine.args.includes(a))];
}

/** Kubernetes quantities in their canonical form, so what the cluster reports compares equal. */
export function cpuQuantity(cores: number): string {
  const m = Math.ceil(Math.round(cores * 1e6) / 1e3);
  return m % 1000 === 0 ? String(m / 1000) : `${m}m`;
}

export function memoryQuantity(gb: number): string {
  const mi = Math.ceil(Math.round(gb * 1024 * 1e3) / 1e3);
  return mi % 1024 === 0 ? `${mi / 1024}Gi` : `${mi}Mi`;
}

export interface Placement {
  model: Pick<Model, 'name' | 'owner' | 'spec'>;
  profile: Profile;
  compute: Pick<Compute, 'name' | 'spec'>;
  replicas: number;
}

/** The metadata llmcap writes and reads of an object. */
export interface K8sMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** One object as server-side apply takes it. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: K8sMeta;
  [field: string]: unknown;
}

/**
 * Labels carry keys (a twin's as its label value) so the reconciler tells twins apart; object names carry the
 * name, which is unique in its owner's namespace and in the reach of its models (domain/names.ts).
 */
function commonLabels(stage: string, model: string): Record<string, string> {
  return { [MANAGED_BY]: FIELD_MANAGER, [LABEL_STAGE]: stage, [LABEL_MODEL]: labelValue(model) };
}

export function deploymentFor(
  stage: string,
  p: Placement,
  cfg: EnginesConfig,
  ns: string = namespaceFor(stage, p.model.owner),
): K8sObject {
  const { model, profile, compute } = p;
  const engine = engineFor(cfg, model);
  const gpus = profile.gpus;
  const vars = {
    ...sourceFields(model.spec.source),
    source: model.spec.source,
    gpus: String(Math.max(1, gpus)),
    port: String(engine.port),
    name: nameOf(model.name),
  };
  const selector = {
    [LABEL_MODEL]: labelValue(model.name),
    [LABEL_PROFILE]: profile.name,
    [LABEL_COMPUTE]: labelValue(compute.name),
  };
  const gpuResource = compute.spec.node.gpu?.resource ?? 'nvidia.com/gpu';
  const requests: Record<string, string> = { cpu: cpuQuantity(profile.cpuCores) };
  const limits: Record<string, string> = {};
  if (profile.minMemoryGb) {
    requests.memory = memoryQuantity(profile.minMemoryGb);
    // A replica that grows past what was admitted is killed rather than squeezing its neighbours.
    limits.memory = requests.memory;
  }
  if (gpus > 0) {
    requests[gpuResource] = String(gpus);
    limits[gpuResource] = String(gpus);
  }
  const t = taint(compute.name, compute.spec);
  const probe = (periodSeconds: number, failureThreshold: number) => ({
    httpGet: { path: engine.health, port: 'http' },
    periodSeconds,
    failureThreshold,
  });
  const env = Object.entries(engine.env ?? {}).map(([name, value]) => ({
    name,
    value: expandArgs([value], vars)[0] ?? '',
  }));
  const container: Record<string, unknown> = {
    name: 'server',
    image: engine.image,
    ...(engine.command ? { command: engine.command } : {}),
    args: expandArgs(serverArgs(engine, p.model.spec.autoscaling !== undefined), vars),
    ports: [{ name: 'http', containerPort: engine.port, protocol: 'TCP' }],
    ...(env.length ? { env } : {}),
    resources: { requests, ...(Object.keys(limits).length ? { limits } : {}) },
    // Loading weights takes minutes; the startup probe holds the others off until the server answers.
    startupProbe: probe(10, Math.ceil(engine.startupSeconds / 10)),
    readinessProbe: probe(10, 3),
    livenessProbe: probe(20, 3),
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: deploymentName(nameOf(model.name), profile.name, nameOf(compute.name)),
      namespace: ns,
      labels: {
        ...commonLabels(stage, model.name),
        [LABEL_PROFILE]: profile.name,
        [LABEL_COMPUTE]: labelValue(compute.name),
      },
    },
    spec: {
      replicas: p.replicas,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels: { ...commonLabels(stage, model.name), ...selector } },
        spec: {
          nodeSelector: labels(compute.name),
          tolerations: [{ key: t.key, operator: 'Equal', value: t.value, effect: 'NoSchedule' }],
          containers: [container],
        },
      },
    },
  };
}

/** One Service per model over all its placements: clients call the model, wherever its replicas run. */
export function serviceFor(
  stage: string,
  model: Placement['model'],
  ns: string = namespaceFor(stage, model.owner),
): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: serviceName(nameOf(model.name)),
      namespace: ns,
      labels: commonLabels(stage, model.name),
    },
    spec: {
      selector: { [LABEL_MODEL]: labelValue(model.name) },
      ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }],
    },
  };
}

/**
 * What others' drains (kubectl drain, a node group upgrade) may take, whichever computes the replicas are on:
 * one replica at a time, and none of a model that has only one, since that would stop it serving until a
 * replacement loads its weights (such a drain waits; llmcap's own surges a replacement first). A pod that is
 * not Ready serves nothing and may always go (unhealthyPodEvictionPolicy), so a crash loop never blocks a drain.
 */
export function disruptionBudgetFor(
  stage: string,
  model: Placement['model'],
  replicas: number,
  ns: string = namespaceFor(stage, model.owner),
): K8sObject {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: {
      name: serviceName(nameOf(model.name)),
      namespace: ns,
      labels: commonLabels(stage, model.name),
    },
    spec: {
      ...(replicas <= 1 ? { minAvailable: 1 } : { maxUnavailable: 1 }),
      selector: { matchLabels: { [LABEL_MODEL]: labelValue(model.name) } },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    },
  };
}

export function namespaceObject(stage: string, name: string): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { [MANAGED_BY]: FIELD_MANAGER, [LABEL_STAGE]: stage } },
  };
}

/** The placements admission holds: replicas of units whose take-back has finished, per (profile, compute). */
export function placementsOf(
  models: readonly Pick<Model, 'name' | 'owner' | 'spec'>[],
  admissions: readonly ModelAdmission[],
  computes: readonly Pick<Compute, 'name' | 'spec'>[],
): Placement[] {
  const byModel = new Map(models.map((m) => [m.name, m]));
  const byCompute = new Map(computes.map((c) => [c.name, c]));
  const out: Placement[] = [];
  for (const a of admissions) {
    const model = byModel.get(a.model);
    if (!model) continue;
    for (const pl of modelStatus(model, a).placements) {
      const profile = model.spec.profiles.find((p) => p.name === pl.profile);
      const compute = byCompute.get(pl.compute);
      if (!profile || !compute || pl.replicas <= 0) continue;
      out.push({ model, profile, compute, replicas: pl.replicas });
    }
  }
  return out;
}

export interface DesiredWorkloads {
  namespaces: K8sObject[];
  /** Deployments, Services and PodDisruptionBudgets, in the order they are applied. */
  objects: K8sObject[];
}

/** Everything llmcap wants in the cluster for these placements. */
export function desiredWorkloads(
  stage: string,
  placements: readonly Placement[],
  cfg: EnginesConfig,
  namespaceOf: NamespaceOf = (owner) => namespaceFor(stage, owner),
): DesiredWorkloads {
  const namespaces = new Map<string, K8sObject>();
  const perModel = new Map<string, Placement['model']>();
  const deployments: K8sObject[] = [];
  const replicas = new Map<string, number>();
  for (const p of placements) {
    replicas.set(p.model.name, (replicas.get(p.model.name) ?? 0) + p.replicas);
    const ns = namespaceOf(p.model.owner);
    if (!namespaces.has(ns)) namespaces.set(ns, namespaceObject(stage, ns));
    perModel.set(p.model.name, p.model);
    deployments.push(deploymentFor(stage, p, cfg, ns));
  }
  const objects = [...deployments];
  for (const m of perModel.values()) {
    const ns = namespaceOf(m.owner);
    objects.push(serviceFor(stage, m, ns), disruptionBudgetFor(stage, m, replicas.get(m.name) ?? 0, ns));
  }
  const key = (o: K8sObject) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`;
  return {
    namespaces: [...namespaces.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)),
    objects: objects.sort((a, b) => key(a).localeCompare(key(b))),
  };
}

/**
 * True when every field llmcap sets is as it wants it in `live` (the object the cluster reports, with the
 * defaults the API server filled in). Lists must have the same length, so a removed arg or toleration counts
 * as a change; maps may carry more keys (defaults, other managers' labels).
 */
export function appliedAsWanted(want: unknown, live: unknown): boolean {
  if (Array.isArray(want)) {
    if (!Array.isArray(live) || live.length !== want.length) return false;
    return want.every((w, i) => appliedAsWanted(w, live[i]));
  }
  if (want && typeof want === 'object') {
    if (!live || typeof live !== 'object' || Array.isArray(live)) return false;
    const l = live as Record<string, unknown>;
    return Object.entries(want as Record<string, unknown>).every(
      ([k, v]) => v === undefined || appliedAsWanted(v, l[k]),
    );
  }
  return want === live;
}

/**
 * Who changed a field llmcap sets on a live object (kubectl edit, kubectl scale, another controller): a field
 * manager other than `ours` that owns one of the fields `want` sets (metadata.managedFields). A forced apply
 * takes those fields back, so the next pass finds none: an object that is not as wanted with no such owner
 * changed because llmcap wants something new, not because someone else changed it. Status writes do not count.
 */
export function driftedBy(
  want: unknown,
  live: { metadata?: object },
  ours: readonly string[],
): string | undefined {
  const managed = (live.metadata as { managedFields?: unknown } | undefined)?.managedFields;
  const fields = Array.isArray(managed) ? managed : [];
  const entries = fields as { manager?: string; subresource?: string; fieldsV1?: unknown }[];
  return entries.find(
    (e) => !ours.includes(e.manager ?? '') && e.subresource !== 'status' && ownsSome(want, e.fieldsV1),
  )?.manager;
}

/** True when `owned` (a fieldsV1 set) holds a field `want` sets; a list llmcap sets counts whole. */
function ownsSome(want: unknown, owned: unknown): boolean {
  if (!owned || typeof owned !== 'object') return false;
  if (!want || typeof want !== 'object' || Array.isArray(want)) return true;
  const set = owned as Record<string, unknown>;
  return Object.entries(want as Record<string, unknown>).some(
    ([k, v]) => v !== undefined && `f:${k}` in set && ownsSome(v, set[`f:${k}`]),
  );
}

/** The fields of a pod (V1Pod) that say whether it serves, and if not why. */
export interface PodLike {
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    deletionTimestamp?: unknown;
    /** An RFC 3339 string on the wire; client-node may hand it over as a Date. */
    creationTimestamp?: unknown;
  };
  spec?: { nodeName?: string };
  status?: {
    phase?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    containerStatuses?: {
      ready?: boolean;
      restartCount?: number;
      state?: { waiting?: { reason?: string; message?: string } };
      lastState?: { terminated?: { reason?: string; message?: string; exitCode?: number } };
    }[];
  };
}

export const POD_REASONS = ['Unschedulable', 'CrashLoopBackOff', 'Unready', 'Starting'] as const;
export type PodReason = (typeof POD_REASONS)[number];

export interface PodView {
  name: string;
  model: string;
  namespace: string;
  compute: string;
  profile: string;
  node?: string;
  phase: string;
  ready: boolean;
  restarts: number;
  reason?: PodReason;
  message?: string;
  /** When the pod was created (its age in `llmcap get pods`). */
  createdAt?: string;
}

/** What a model's status says about its pods: Ready replicas apart from admitted ones, and why others are not. */
export interface WorkloadStatus {
  running: number;
  /** Every pod of the model, when `pods` lists only the first MAX_PODS_SHOWN. */
  total: number;
  pods: PodView[];
  podReasons: { reason: PodReason; message: string; replicas: number }[];
  /**
   * Ready pods per compute (absent when none): what consolidation needs to move a replica surge-first, the new
   * one Ready before the old goes (World.ready, domain/consolidation.ts observedReady). Counts every pod, as
   * `running` does, not only those `pods` lists.
   */
  readyOn?: Record<string, number>;
  /** An autoscaled model's load and the replicas it asks for (domain/autoscaling.ts); kept at zero pods too. */
  autoscaling?: ModelLoad;
}

/** At most this many pods are listed in a model's status (the counts always cover all). */
export const MAX_PODS_SHOWN = 50;

/**
 * Why a pod does not serve, in the pod's own words: the scheduler's message, the crashed container's last
 * message, or (for a running pod that is not ready) the latest failed probe's event when there is one.
 */
export function podView(pod: PodLike, probeMessage?: string): PodView {
  const labelsOf = pod.metadata?.labels ?? {};
  const conds = pod.status?.conditions ?? [];
  const cond = (t: string) => conds.find((c) => c.type === t);
  const containers = pod.status?.containerStatuses ?? [];
  const ready = cond('Ready')?.status === 'True' && !pod.metadata?.deletionTimestamp;
  const createdAt = isoTime(pod.metadata?.creationTimestamp);
  const base: PodView = {
    name: pod.metadata?.name ?? '',
    model: keyFromLabel(labelsOf[LABEL_MODEL] ?? ''),
    namespace: pod.metadata?.namespace ?? '',
    compute: keyFromLabel(labelsOf[LABEL_COMPUTE] ?? ''),
    profile: labelsOf[LABEL_PROFILE] ?? '',
    ...(pod.spec?.nodeName ? { node: pod.spec.nodeName } : {}),
    phase: pod.status?.phase ?? 'Pending',
    ready,
    restarts: containers.reduce((n, c) => n + (c.restartCount ?? 0), 0),
    ...(createdAt ? { createdAt } : {}),
  };
  if (ready) return base;
  const scheduled = cond('PodScheduled');
  if (scheduled?.status === 'False')
    return {
      ...base,
      reason: 'Unschedulable',
      message: scheduled.message ?? scheduled.reason ?? 'not scheduled',
    };
  const crashed = containers.find((c) => c.state?.waiting?.reason === 'CrashLoopBackOff');
  if (crashed) {
    const t = crashed.lastState?.terminated;
    const message =
      t?.message ?? (t ? `exited with code ${t.exitCode} (${t.reason})` : crashed.state?.waiting?.message);
    return { ...base, reason: 'CrashLoopBackOff', message: message ?? 'the container keeps exiting' };
  }
  if (base.phase === 'Running' && probeMessage) return { ...base, reason: 'Unready', message: probeMessage };
  const waiting = containers.find((c) => c.state?.waiting)?.state?.waiting;
  const message = waiting?.reason ?? cond('Ready')?.message ?? 'starting';
  return { ...base, reason: base.phase === 'Running' ? 'Unready' : 'Starting', message };
}

function isoTime(t: unknown): string | undefined {
  const d = t instanceof Date ? t : typeof t === 'string' ? new Date(t) : undefined;
  return d && !Number.isNaN(d.getTime()) ? d.toISOString() : undefined;
}

/** Per model: Ready pods and the reasons of the others, grouped by reason and message. */
export function workloadStatus(pods: readonly PodView[]): WorkloadStatus {
  const reasons = new Map<string, { reason: PodReason; message: string; replicas: number }>();
  for (const p of pods) {
    if (p.ready || !p.reason) continue;
    const key = `${p.reason}\u0000${p.message}`;
    const r = reasons.get(key);
    if (r) r.replicas++;
    else reasons.set(key, { reason: p.reason, message: p.message ?? '', replicas: 1 });
  }
  const sorted = [...pods].sort((a, b) => Number(a.ready) - Number(b.ready) || a.name.localeCompare(b.name));
  const readyOn: Record<string, number> = {};
  for (const p of pods) if (p.ready) readyOn[p.compute] = (readyOn[p.compute] ?? 0) + 1;
  const running = pods.filter((p) => p.ready).length;
  return {
    running,
    total: pods.length,
    pods: sorted.slice(0, MAX_PODS_SHOWN),
    podReasons: [...reasons.values()],
    ...(running ? { readyOn } : {}),
  };
}

/** What `GET /v1/pods` narrows the pods to; every field given must match. */
export interface PodFilter {
  model?: string;
  compute?: string;
  profile?: string;
  node?: string;
  namespace?: string;
  ready?: boolean;
}

export function podMatches(p: PodView, f: PodFilter): boolean {
  return (
    (f.model === undefined || p.model === f.model) &&
    (f.compute === undefined || p.compute === f.compute) &&
    (f.profile === undefined || p.profile === f.profile) &&
    (f.node === undefined || p.node === f.node) &&
    (f.namespace === undefined || p.namespace === f.namespace) &&
    (f.ready === undefined || p.ready === f.ready)
  );
}

/** The Kubernetes group of the reconciler's access entry; config/kubernetes/reconciler-rbac.yaml binds it. */
export const RECONCILER_GROUP = 'llmcap:reconciler';
export const EDIT_POLICY_ARN = 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy';

/**
 * The reconciler's EKS access entry, as the stack creates it and the local control plane registers it with the
 * simulated cluster: its group (for the cluster-scoped RBAC) and Edit in llmcap's own namespaces only.
 */
export function reconcilerAccess(stage: string) {
  return {
    kubernetesGroups: [RECONCILER_GROUP],
    accessPolicies: [
      {
        policyArn: EDIT_POLICY_ARN,
        accessScope: { type: 'namespace' as const, namespaces: [`${namespacePrefix(stage)}*`] },
      },
    ],
  };
}

/** An object someone else had changed since llmcap last applied it, set back this pass. */
export interface DriftRepaired {
  /** `Deployment/<namespace>/<name>`, as `applied` lists it. */
  object: string;
  /** The model the object serves (its llmcap.dev/model label), when it has one. */
  model?: string;
  /** The field manager that changed it (kubectl, kubectl-edit, another controller). */
  by: string;
}

/** What the workloads step of a pass did, in its summary. */
export interface WorkloadsReport {
  /** Objects applied (created or restored) and removed this pass. */
  applied: string[];
  removed: string[];
  /** Of those applied, the ones someone else had changed: drift set back. */
  repaired: DriftRepaired[];
  /** Kubernetes API calls this pass. */
  calls: number;
  running: number;
  /** Models with a replica that does not serve, and why (the first reason of each). */
  notRunning: { model: string; reason: string; message: string; replicas: number }[];
  /** Pods of admitted replicas the scheduler cannot place (reason Unschedulable): ReplicasUnscheduled's figure. */
  unscheduled: number;
  /** Pod items written (changed or removed); the per-pass observation stamp is not counted. */
  storeWrites: number;
}
