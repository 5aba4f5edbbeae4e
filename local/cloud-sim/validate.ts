import { EksError, invalidParam } from './errors';

/**
 * Request validation with the error types and texts EKS returns (docs/reference/eks-nodegroup.md §1.2).
 * Texts marked [unverified] in the reference follow the style of the real ones ("X can't be ...").
 */

export const AMI_TYPES = [
  'AL2_x86_64',
  'AL2_x86_64_GPU',
  'AL2_ARM_64',
  'CUSTOM',
  'BOTTLEROCKET_ARM_64',
  'BOTTLEROCKET_x86_64',
  'BOTTLEROCKET_ARM_64_FIPS',
  'BOTTLEROCKET_x86_64_FIPS',
  'BOTTLEROCKET_ARM_64_NVIDIA',
  'BOTTLEROCKET_x86_64_NVIDIA',
  'BOTTLEROCKET_ARM_64_NVIDIA_FIPS',
  'BOTTLEROCKET_x86_64_NVIDIA_FIPS',
  'WINDOWS_CORE_2019_x86_64',
  'WINDOWS_FULL_2019_x86_64',
  'WINDOWS_CORE_2022_x86_64',
  'WINDOWS_FULL_2022_x86_64',
  'WINDOWS_CORE_2025_x86_64',
  'WINDOWS_FULL_2025_x86_64',
  'AL2023_x86_64_STANDARD',
  'AL2023_ARM_64_STANDARD',
  'AL2023_x86_64_NEURON',
  'AL2023_x86_64_NVIDIA',
  'AL2023_ARM_64_NVIDIA',
];
export const CAPACITY_TYPES = ['ON_DEMAND', 'SPOT', 'CAPACITY_BLOCK'];
export const TAINT_EFFECTS = ['NO_SCHEDULE', 'NO_EXECUTE', 'PREFER_NO_SCHEDULE'];
export const UPDATE_STRATEGIES = ['DEFAULT', 'MINIMAL'];

export interface ScalingConfig {
  minSize: number;
  maxSize: number;
  desiredSize: number;
}
export interface Taint {
  key: string;
  value?: string;
  effect: string;
}
export interface UpdateConfig {
  maxUnavailable?: number;
  maxUnavailablePercentage?: number;
  updateStrategy?: string;
}

export interface CreateNodegroupInput {
  nodegroupName: string;
  subnets: string[];
  nodeRole: string;
  scalingConfig?: ScalingConfig;
  diskSize?: number;
  instanceTypes?: string[];
  amiType?: string;
  capacityType?: string;
  labels?: Record<string, string>;
  taints?: Taint[];
  tags?: Record<string, string>;
  launchTemplate?: { id?: string; name?: string; version?: string };
  updateConfig?: UpdateConfig;
  version?: string;
  releaseVersion?: string;
  remoteAccess?: unknown;
  nodeRepairConfig?: unknown;
}

export interface UpdateNodegroupConfigInput {
  labels?: { addOrUpdateLabels?: Record<string, string>; removeLabels?: string[] };
  taints?: { addOrUpdateTaints?: Taint[]; removeTaints?: Taint[] };
  scalingConfig?: Partial<ScalingConfig>;
  updateConfig?: UpdateConfig;
  nodeRepairConfig?: unknown;
}

const NODEGROUP_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
const ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/;
const SUBNET_ID = /^subnet-([0-9a-f]{8}|[0-9a-f]{17})$/;
const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const RESERVED_LABEL_PREFIXES = ['kubernetes.io/', 'k8s.io/', 'eks.amazonaws.com/'];

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

function checkType(ok: boolean, field: string): void {
  if (!ok) throw new EksError('SerializationException', `${field} has the wrong type`);
}

export function checkNodegroupName(name: unknown): asserts name is string {
  if (name === undefined || name === null || name === '') throw invalidParam("nodegroupName can't be empty");
  checkType(typeof name === 'string', 'nodegroupName');
  const s = name as string;
  if (s.length > 63) throw invalidParam("nodeGroupName can't be longer than 63 characters!");
  if (!NODEGROUP_NAME.test(s))
    throw invalidParam(
      `Nodegroup name ${s} is invalid. It must start with a letter or digit and can only contain letters, digits, hyphens and underscores`,
    );
}

function checkScalingTypes(sc: Record<string, unknown>): void {
  for (const k of ['minSize', 'maxSize', 'desiredSize']) {
    const v = sc[k];
    if (v !== undefined && v !== null) checkType(isInt(v), `scalingConfig.${k}`);
  }
  if (isInt(sc.minSize) && sc.minSize < 0) throw invalidParam("minSize can't be less than 0");
  if (isInt(sc.maxSize) && sc.maxSize < 1) throw invalidParam("maxSize can't be less than 1");
  if (isInt(sc.desiredSize) && sc.desiredSize < 0) throw invalidParam("desiredSize can't be less than 0");
}

function checkMaxQuota(max: number, quota: number): void {
  if (max > quota) throw invalidParam(`maxSize can't be greater than ${quota}`);
}

/** The label rules EKS applies: 1–63 characters, no reserved prefix, Kubernetes characters. */
export function checkLabels(labels: unknown): void {
  if (labels === undefined || labels === null) return;
  checkType(isObj(labels), 'labels');
  for (const [k, v] of Object.entries(labels as Record<string, unknown>)) {
    checkType(typeof v === 'string', `labels.${k}`);
    const value = v as string;
    if (k.length < 1 || k.length > 63)
      throw invalidParam(`Label key ${k} must be between 1 and 63 characters`);
    if (value.length < 1 || value.length > 63)
      throw invalidParam(`Label value ${value} for key ${k} must be between 1 and 63 characters`);
    if (RESERVED_LABEL_PREFIXES.some((p) => k.includes(p)))
      throw invalidParam(
        'Label cannot contain reserved prefixes [kubernetes.io/, k8s.io/, eks.amazonaws.com/]',
      );
    const slash = k.lastIndexOf('/');
    const prefix = slash >= 0 ? k.slice(0, slash) : undefined;
    const name = slash >= 0 ? k.slice(slash + 1) : k;
    if ((prefix !== undefined && !DNS_SUBDOMAIN.test(prefix)) || !LABEL_NAME.test(name))
      throw invalidParam(
        `Invalid key: "${k}": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
      );
    if (!LABEL_NAME.test(value))
      throw invalidParam(
        `Invalid value: "${value}": field must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
      );
  }
}

/** Taint rules from the EKS user guide: at most 50, key 1–63, value 0–63, the API's effect names. */
export function checkTaints(taints: unknown, field = 'taints'): void {
  if (taints === undefined || taints === null) return;
  checkType(Array.isArray(taints), field);
  const list = taints as unknown[];
  if (list.length > 50) throw invalidParam("Nodegroup can't have more than 50 taints");
  for (const t of list) {
    checkType(isObj(t), field);
    const { key, value, effect } = t as Record<string, unknown>;
    if (typeof key !== 'string' || key.length === 0) throw invalidParam("Taint key can't be empty");
    if (key.length > 63) throw invalidParam(`Taint key ${key} can't be longer than 63 characters`);
    const slash = key.lastIndexOf('/');
    const name = slash >= 0 ? key.slice(slash + 1) : key;
    if (!LABEL_NAME.test(name) || (slash >= 0 && !DNS_SUBDOMAIN.test(key.slice(0, slash))))
      throw invalidParam(
        `Invalid taint key ${key}: it must start and end with a letter or number and contain only letters, numbers, '-', '.' and '_'`,
      );
    if (value !== undefined && value !== null) {
      checkType(typeof value === 'string', `${field}.value`);
      const v = value as string;
      if (v.length > 63) throw invalidParam(`Taint value ${v} can't be longer than 63 characters`);
      if (v.length > 0 && !LABEL_NAME.test(v))
        throw invalidParam(
          `Invalid taint value ${v}: it must start and end with a letter or number and contain only letters, numbers, '-', '.' and '_'`,
        );
    }
    if (typeof effect !== 'string' || !TAINT_EFFECTS.includes(effect))
      throw invalidParam(
        `Taint effect ${String(effect)} is invalid. Valid values are NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE`,
      );
  }
}

/** Tag rules from the model: at most 50, key 1–128, value ≤ 256, and the reserved `aws:` prefix refused. */
export function checkTags(tags: unknown): void {
  if (tags === undefined || tags === null) return;
  checkType(isObj(tags), 'tags');
  const entries = Object.entries(tags as Record<string, unknown>);
  if (entries.length > 50) throw invalidParam("Resource can't have more than 50 tags");
  for (const [k, v] of entries) {
    checkType(typeof v === 'string', `tags.${k}`);
    if (k.length < 1 || k.length > 128)
      throw invalidParam(`Tag key ${k} must be between 1 and 128 characters`);
    if ((v as string).length > 256)
      throw invalidParam(`Tag value for key ${k} can't be longer than 256 characters`);
    if (k.toLowerCase().startsWith('aws:'))
      throw new EksError('InvalidRequestException', `'${k}' is not a valid tag key`);
  }
}

export function checkUpdateConfig(uc: unknown, maxSize: number): void {
  if (uc === undefined || uc === null) return;
  checkType(isObj(uc), 'updateConfig');
  const { maxUnavailable, maxUnavailablePercentage, updateStrategy } = uc as Record<string, unknown>;
  const hasAbs = maxUnavailable !== undefined && maxUnavailable !== null;
  const hasPct = maxUnavailablePercentage !== undefined && maxUnavailablePercentage !== null;
  if (hasAbs && hasPct)
    throw invalidParam('Only one of maxUnavailable and maxUnavailablePercentage can be specified');
  if (hasAbs && (!isInt(maxUnavailable) || maxUnavailable < 1 || maxUnavailable > Math.min(100, maxSize)))
    throw invalidParam('max-unavailable must be within the range 1 and max size of the node group');
  if (
    hasPct &&
    (!isInt(maxUnavailablePercentage) || maxUnavailablePercentage < 1 || maxUnavailablePercentage > 100)
  )
    throw invalidParam('max-unavailable-percentage must be within the range 1 and 100');
  if (
    updateStrategy !== undefined &&
    updateStrategy !== null &&
    !UPDATE_STRATEGIES.includes(String(updateStrategy))
  )
    throw invalidParam(
      `Update strategy ${String(updateStrategy)} is invalid. Valid values are DEFAULT, MINIMAL`,
    );
}

export interface CreateContext {
  clusterVersion: string;
  nodesQuota: number;
}

/** Validates a CreateNodegroup body, in the order a caller fixes them: identity, placement, sizes, metadata. */
export function validateCreate(body: Record<string, unknown>, ctx: CreateContext): CreateNodegroupInput {
  checkNodegroupName(body.nodegroupName);
  const subnets = body.subnets;
  if (subnets === undefined || subnets === null || (Array.isArray(subnets) && subnets.length === 0))
    throw invalidParam("subnets can't be empty");
  checkType(Array.isArray(subnets), 'subnets');
  for (const s of subnets as unknown[]) {
    if (typeof s !== 'string' || !SUBNET_ID.test(s))
      throw invalidParam(`The subnet ID '${String(s)}' is not valid`);
  }
  const role = body.nodeRole;
  if (role === undefined || role === null || role === '') throw invalidParam("nodeRole can't be empty");
  if (typeof role !== 'string' || role.length > 255 || !ROLE_ARN.test(role))
    throw invalidParam(`Invalid Role Arn: '${String(role)}'`);

  let scaling: ScalingConfig | undefined;
  if (body.scalingConfig !== undefined && body.scalingConfig !== null) {
    checkType(isObj(body.scalingConfig), 'scalingConfig');
    const sc = body.scalingConfig as Record<string, unknown>;
    checkScalingTypes(sc);
    const present = ['minSize', 'maxSize', 'desiredSize'].filter(
      (k) => sc[k] !== undefined && sc[k] !== null,
    );
    if (present.length !== 0 && present.length !== 3)
      throw invalidParam(
        'When creating a node group, you must specify all or none of the properties minSize, maxSize and desiredSize',
      );
    if (present.length === 3) {
      scaling = {
        minSize: sc.minSize as number,
        maxSize: sc.maxSize as number,
        desiredSize: sc.desiredSize as number,
      };
      if (scaling.minSize > scaling.desiredSize)
        throw invalidParam("minSize can't be greater than desiredSize");
      if (scaling.desiredSize > scaling.maxSize)
        throw invalidParam("desiredSize can't be greater than maxSize");
      checkMaxQuota(scaling.maxSize, ctx.nodesQuota);
    }
  }

  const lt = body.launchTemplate;
  if (lt !== undefined && lt !== null) {
    checkType(isObj(lt), 'launchTemplate');
    const l = lt as Record<string, unknown>;
    if (!l.id === !l.name)
      throw invalidParam('Either launch template ID or name must be specified, but not both');
    if (body.diskSize !== undefined && body.diskSize !== null)
      throw invalidParam('Disk size must be specified within the launch template.');
    if (body.remoteAccess !== undefined && body.remoteAccess !== null)
      throw invalidParam('Remote access configuration cannot be specified with a launch template.');
  }
  if (body.diskSize !== undefined && body.diskSize !== null) {
    checkType(isInt(body.diskSize), 'diskSize');
    if ((body.diskSize as number) < 1) throw invalidParam("diskSize can't be less than 1");
  }
  if (body.instanceTypes !== undefined && body.instanceTypes !== null) {
    checkType(Array.isArray(body.instanceTypes), 'instanceTypes');
    const types = body.instanceTypes as unknown[];
    if (types.length > 20) throw invalidParam("instanceTypes can't have more than 20 entries");
    for (const t of types)
      if (typeof t !== 'string' || !/^[a-z0-9-]+\.[a-z0-9-]+$/.test(t))
        throw invalidParam(`Instance type ${String(t)} is not valid`);
  }
  if (body.amiType !== undefined && body.amiType !== null && !AMI_TYPES.includes(String(body.amiType)))
    throw invalidParam(`AMI Type ${String(body.amiType)} is not a valid AMI type`);
  if (
    body.capacityType !== undefined &&
    body.capacityType !== null &&
    !CAPACITY_TYPES.includes(String(body.capacityType))
  )
    throw invalidParam(
      `Capacity type ${String(body.capacityType)} is not valid. Valid values are ON_DEMAND, SPOT, CAPACITY_BLOCK`,
    );
  if (body.version !== undefined && body.version !== null && body.version !== ctx.clusterVersion)
    throw invalidParam(
      `Requested Nodegroup version ${String(body.version)} is invalid. You can only create a node group for your cluster that is equal to the current Kubernetes version ${ctx.clusterVersion}`,
    );
  checkLabels(body.labels);
  checkTaints(body.taints);
  checkTags(body.tags);
  checkUpdateConfig(body.updateConfig, scaling?.maxSize ?? 2);
  return { ...(body as unknown as CreateNodegroupInput), scalingConfig: scaling };
}

/** Validates an UpdateNodegroupConfig body and returns the scaling config merged with the current one. */
export function validateUpdate(
  body: Record<string, unknown>,
  current: ScalingConfig,
  nodesQuota: number,
): { input: UpdateNodegroupConfigInput; merged: ScalingConfig } {
  const known = ['labels', 'taints', 'scalingConfig', 'updateConfig', 'nodeRepairConfig'];
  if (!known.some((k) => body[k] !== undefined && body[k] !== null))
    throw invalidParam('No changes needed for the node group configuration');
  let merged = current;
  if (body.scalingConfig !== undefined && body.scalingConfig !== null) {
    checkType(isObj(body.scalingConfig), 'scalingConfig');
    const sc = body.scalingConfig as Record<string, unknown>;
    checkScalingTypes(sc);
    merged = {
      minSize: isInt(sc.minSize) ? sc.minSize : current.minSize,
      maxSize: isInt(sc.maxSize) ? sc.maxSize : current.maxSize,
      desiredSize: isInt(sc.desiredSize) ? sc.desiredSize : current.desiredSize,
    };
    if (merged.minSize > merged.desiredSize)
      throw invalidParam(
        `Minimum capacity ${merged.minSize} can't be greater than desired size ${merged.desiredSize}`,
      );
    if (merged.desiredSize > merged.maxSize) throw invalidParam("desiredSize can't be greater than maxSize");
    checkMaxQuota(merged.maxSize, nodesQuota);
  }
  if (body.labels !== undefined && body.labels !== null) {
    checkType(isObj(body.labels), 'labels');
    const l = body.labels as Record<string, unknown>;
    checkLabels(l.addOrUpdateLabels);
    if (l.removeLabels !== undefined && l.removeLabels !== null)
      checkType(Array.isArray(l.removeLabels), 'removeLabels');
    const add = Object.keys((l.addOrUpdateLabels as Record<string, string> | undefined) ?? {});
    const both = ((l.removeLabels as string[] | undefined) ?? []).find((k) => add.includes(k));
    if (both !== undefined) throw invalidParam(`The label ${both} cannot be both added and removed`);
  }
  if (body.taints !== undefined && body.taints !== null) {
    checkType(isObj(body.taints), 'taints');
    const t = body.taints as Record<string, unknown>;
    checkTaints(t.addOrUpdateTaints, 'addOrUpdateTaints');
    if (t.removeTaints !== undefined && t.removeTaints !== null)
      checkType(Array.isArray(t.removeTaints), 'removeTaints');
  }
  checkUpdateConfig(body.updateConfig, merged.maxSize);
  return { input: body as UpdateNodegroupConfigInput, merged };
}
