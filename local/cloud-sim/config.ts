import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { K8sSimConfig } from '../k8s-sim';

/** Realistic durations in milliseconds (docs/reference/eks-nodegroup.md §1.4); every one is multiplied by timeScale. */
export interface Durations {
  /** CREATING → ACTIVE when no node has to wait longer (p50 of observed creates). */
  createMs: number;
  /** Pending → InService for the first instance of a launch batch. */
  instanceLaunchMs: number;
  /** Gap between two instances of a batch becoming InService, so nodes join one by one. */
  instanceStaggerMs: number;
  /** UPDATING → ACTIVE for UpdateNodegroupConfig ("up to about 30 seconds"). */
  updateMs: number;
  /** Terminating → gone for one instance on scale-in. */
  instanceTerminateMs: number;
  /** DELETING → gone (p50 of observed deletes). */
  deleteMs: number;
  /** A create whose instances cannot launch stays CREATING with no health issue this long (33–38 min observed). */
  createFailureMs: number;
  /** A scale-out whose instances cannot launch turns the group DEGRADED after this long [unverified]. */
  scaleOutFailureMs: number;
  /**
   * A launch EC2 refuses (no capacity, a quota) → its Failed scaling activity, on a create or a scale-out alike.
   * Auto Scaling records it when the launch attempt fails: real failed activities end in the second they start,
   * 1 to 5 s after the capacity change in their Cause (supply-and-demand.md A1, the ParallelCluster Spot and
   * eksctl Spot examples). EKS's health issue comes later (createFailureMs, scaleOutFailureMs).
   */
  launchFailureMs: number;
  /** InService → the kubelet registers its Node (NotReady). */
  nodeRegisterMs: number;
  /** Node registered → Ready (the VPC CNI is up). */
  nodeReadyMs: number;
  /** Pod bound to a node → its containers start (image pull and create). */
  imagePullMs: number;
  /** Container started → the server answers its probes; per image in `kubernetes.appStart`. */
  appStartMs: number;
  /** SIGTERM → a container has exited (never longer than the pod's grace period). */
  podStopMs: number;
  /** How long a container a `podCrashes` fault matches runs before it exits. */
  crashAfterMs: number;
  /** A Spot interruption warning → EC2 reclaims the instance (two minutes, as EC2 gives). */
  spotReclaimMs: number;
}

export const DEFAULT_DURATIONS: Durations = {
  createMs: 120_000,
  instanceLaunchMs: 90_000,
  instanceStaggerMs: 5_000,
  updateMs: 30_000,
  instanceTerminateMs: 60_000,
  spotReclaimMs: 120_000,
  deleteMs: 300_000,
  createFailureMs: 35 * 60_000,
  scaleOutFailureMs: 5 * 60_000,
  launchFailureMs: 5_000,
  nodeRegisterMs: 20_000,
  nodeReadyMs: 30_000,
  imagePullMs: 20_000,
  appStartMs: 30_000,
  podStopMs: 2_000,
  crashAfterMs: 5_000,
};

/** Selects node groups: `nodegroup` is an exact name or a glob with `*`; `instanceType` matches any of the group's types. */
export interface FaultSelector {
  nodegroup?: string;
  instanceType?: string;
}

/** Members of a health issue a fault may leave out: EKS's model makes both optional. */
export const OMITTABLE_ISSUE_MEMBERS = ['code', 'message'] as const;

/** Instances of matching groups never launch: CREATE_FAILED on create, DEGRADED on a scale-out. */
export interface LaunchFailureRule extends FaultSelector {
  /** NodegroupIssueCode reported in health.issues (default AsgInstanceLaunchFailures). */
  code?: string;
  /** Default: the InsufficientInstanceCapacity text EKS reports for the instance type. */
  message?: string;
  /**
   * Delay before the health issue shows (default durations.createFailureMs / scaleOutFailureMs); scaled. The
   * Failed scaling activity shows after durations.launchFailureMs, or this if shorter.
   */
  afterMs?: number;
  /** Report the health issue without these members (`code`, `message`), as EKS may. */
  omit?: (typeof OMITTABLE_ISSUE_MEMBERS)[number][];
  /**
   * Only in this Availability Zone (e.g. us-east-1a): Auto Scaling records the refusal and launches in the group's
   * other zones; the group fails as above only when every zone it spans is refused.
   */
  zone?: string;
}

export interface DeleteFailureRule extends FaultSelector {
  code?: string;
  message?: string;
  omit?: (typeof OMITTABLE_ISSUE_MEMBERS)[number][];
}

/**
 * EC2 reclaims instances of matching Spot groups: each InService instance is warned after a random time with
 * this mean (exponential, drawn from the seed; scaled), and terminated two minutes (scaled) after its warning.
 */
export interface SpotInterruptionRule extends FaultSelector {
  meanMs: number;
}

export interface VanishRule extends FaultSelector {
  /** The group and its ASG disappear this long after CreateNodegroup (scaled), as if deleted out of band. */
  afterMs: number;
}

/** Selects pods by their containers' image and their namespace (exact or glob with `*`). */
export interface PodSelector {
  image?: string;
  namespace?: string;
}

/** Containers of matching pods exit after crashAfterMs and restart with back-off (CrashLoopBackOff). */
export interface PodCrashRule extends PodSelector {
  /** Default 1. */
  exitCode?: number;
  /** The last state's message (what the container printed last); default none. */
  message?: string;
}

/** Containers of matching pods run but never pass their readiness (or startup) probe. */
export interface PodUnreadyRule extends PodSelector {
  /** Default `HTTP probe failed with statuscode: 503`. */
  message?: string;
}

export interface FaultConfig {
  /** Fraction (0–1) of API requests answered 429 ThrottlingException (Auto Scaling: 400 Throttling). */
  throttleRate?: number;
  /** Fraction (0–1) of API requests answered with a server error. */
  serverErrorRate?: number;
  /** EKS error for serverErrorRate: ServerException (500, default) or ServiceUnavailableException (503). */
  serverErrorType?: 'ServerException' | 'ServiceUnavailableException';
  /** Limit throttling and server errors to these operations (e.g. ["DescribeNodegroup"]); default all. */
  operations?: string[];
  /** Shorthand: instances of these types never launch (InsufficientInstanceCapacity). */
  unavailableInstanceTypes?: string[];
  launchFailures?: LaunchFailureRule[];
  deleteFailures?: DeleteFailureRule[];
  vanish?: VanishRule[];
  /** Spot instances EC2 reclaims at a rate (the warning event, then the termination); Spot groups only. */
  spotInterruptions?: SpotInterruptionRule[];
  /** Kubernetes: containers that crash. */
  podCrashes?: PodCrashRule[];
  /** Kubernetes: containers that never become ready. */
  podsUnready?: PodUnreadyRule[];
  /** Kubernetes: nodes of matching groups register but never become Ready. */
  nodesNotReady?: FaultSelector[];
}

export interface Limits {
  /** Managed node groups per cluster (quota L-6D54EA21). */
  nodegroupsPerCluster: number;
  /** Nodes per managed node group (quota L-BD136A63). */
  nodesPerNodegroup: number;
}

export const DEFAULT_LIMITS: Limits = { nodegroupsPerCluster: 30, nodesPerNodegroup: 450 };

/** What a config file (JSON or YAML, LLMCAP_SIM_CONFIG) may hold; options passed in code win over it. */
export interface SimConfigFile {
  /** 0 picks a free port; default 4510. */
  port?: number;
  /** Multiplies every lifecycle duration: 0.001 turns a 2-minute create into 120 ms. Default 1. */
  timeScale?: number;
  /** Seeds ids and fault draws; default random (printed in admin state). */
  seed?: number;
  clusterName?: string;
  clusterVersion?: string;
  region?: string;
  accountId?: string;
  durations?: Partial<Durations>;
  limits?: Partial<Limits>;
  /** Service Quotas values by quota code (local/cloud-sim/service-quotas.ts), e.g. `L-DB2E81BA: 0`. */
  quotas?: Record<string, number>;
  faults?: FaultConfig;
  /** The simulated cluster's Kubernetes API (docs/k8s-sim.md); `false` leaves it out. */
  kubernetes?: K8sSimConfig | false;
}

export function loadConfigFile(path: string): SimConfigFile {
  const text = readFileSync(path, 'utf8');
  const data = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data))
    throw new Error(`${path}: expected a mapping at top level`);
  return data as SimConfigFile;
}

/** The fault settings that are lists (the others are the two rates and serverErrorType). */
const LIST_FAULTS = [
  'operations',
  'unavailableInstanceTypes',
  'launchFailures',
  'deleteFailures',
  'vanish',
  'spotInterruptions',
  'podCrashes',
  'podsUnready',
  'nodesNotReady',
] as const satisfies readonly (keyof FaultConfig)[];

/** Rejects fault configs that would silently do nothing, so a typo in a test or a file is loud. */
export function checkFaults(f: FaultConfig): FaultConfig {
  const rate = (name: string, v: unknown) => {
    if (v !== undefined && (typeof v !== 'number' || v < 0 || v > 1))
      throw new Error(`faults.${name} must be a number between 0 and 1`);
  };
  rate('throttleRate', f.throttleRate);
  rate('serverErrorRate', f.serverErrorRate);
  if ((f.throttleRate ?? 0) + (f.serverErrorRate ?? 0) > 1)
    throw new Error('faults.throttleRate + faults.serverErrorRate must not exceed 1');
  if (
    f.serverErrorType !== undefined &&
    f.serverErrorType !== 'ServerException' &&
    f.serverErrorType !== 'ServiceUnavailableException'
  )
    throw new Error('faults.serverErrorType must be ServerException or ServiceUnavailableException');
  for (const key of LIST_FAULTS) {
    if (f[key] !== undefined && !Array.isArray(f[key])) throw new Error(`faults.${key} must be a list`);
  }
  for (const [key, rules] of [
    ['podCrashes', f.podCrashes],
    ['podsUnready', f.podsUnready],
  ] as const) {
    for (const r of rules ?? []) {
      if (typeof r !== 'object' || r === null || (r.image === undefined && r.namespace === undefined))
        throw new Error(`faults.${key}[] must name an image and/or a namespace`);
    }
  }
  for (const [key, rules] of [
    ['launchFailures', f.launchFailures],
    ['deleteFailures', f.deleteFailures],
  ] as const) {
    for (const r of rules ?? []) {
      const omit = r.omit;
      if (
        omit !== undefined &&
        (!Array.isArray(omit) ||
          omit.some((m) => !(OMITTABLE_ISSUE_MEMBERS as readonly string[]).includes(m)))
      )
        throw new Error(`faults.${key}[].omit must list code and/or message`);
    }
  }
  for (const r of f.spotInterruptions ?? []) {
    if (typeof r?.meanMs !== 'number' || r.meanMs <= 0)
      throw new Error('faults.spotInterruptions[].meanMs must be > 0 (the mean time to an interruption)');
  }
  for (const v of f.vanish ?? []) {
    if (typeof v.afterMs !== 'number' || v.afterMs < 0)
      throw new Error('faults.vanish[].afterMs must be >= 0');
  }
  const known = new Set<string>(['throttleRate', 'serverErrorRate', 'serverErrorType', ...LIST_FAULTS]);
  for (const k of Object.keys(f)) if (!known.has(k)) throw new Error(`unknown fault setting: ${k}`);
  return f;
}

export function globMatch(pattern: string, value: string): boolean {
  const re = new RegExp(`^${pattern.split('*').map(escapeRe).join('.*')}$`);
  return re.test(value);
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
