import { parseQuantity, QUANTITY_ERROR } from './quantity';
import { matchesSelector } from './selectors';
import type { FieldError } from './status';
import { isObject, type JsonObject, type KObject } from './types';

/**
 * The resources the simulator serves, as discovery lists them, with the defaults the API server fills in and
 * the validation it does on them (the part llmcap's manifests can get wrong).
 */

export interface ResourceDef {
  group: string;
  version: string;
  /** Plural, as in the URL. */
  resource: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  verbs: string[];
  /** Subresources served besides the object itself. */
  subresources: string[];
  /** Field selectors the API server supports beyond metadata.name and metadata.namespace. */
  fieldSelectors: string[];
  /** Does the main resource ignore status writes (status subresource)? */
  statusSubresource: boolean;
  /** Does a spec change bump metadata.generation? */
  generation: boolean;
  /** DNS-1123 subdomain (default), label, or DNS-1035 label (services). */
  nameRule?: 'subdomain' | 'label' | 'dns1035';
  defaults?(obj: KObject): void;
  validate?(obj: KObject, old: KObject | undefined): FieldError[];
}

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export function apiVersionOf(def: Pick<ResourceDef, 'group' | 'version'>): string {
  return def.group ? `${def.group}/${def.version}` : def.version;
}

// ---- defaults ----

function imagePullPolicy(image: unknown): string {
  if (typeof image !== 'string') return 'IfNotPresent';
  const last = image.split('/').pop() ?? '';
  if (image.includes('@')) return 'IfNotPresent';
  const tag = last.includes(':') ? last.split(':').pop() : undefined;
  return tag === undefined || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultProbe(p: unknown): void {
  if (!isObject(p)) return;
  p.timeoutSeconds ??= 1;
  p.periodSeconds ??= 10;
  p.successThreshold ??= 1;
  p.failureThreshold ??= 3;
  if (isObject(p.httpGet)) p.httpGet.scheme ??= 'HTTP';
}

function defaultContainer(c: JsonObject): void {
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  c.imagePullPolicy ??= imagePullPolicy(c.image);
  c.resources ??= {};
  for (const p of (c.ports as JsonObject[]) ?? []) p.protocol ??= 'TCP';
  defaultProbe(c.readinessProbe);
  defaultProbe(c.livenessProbe);
  defaultProbe(c.startupProbe);
}

export function defaultPodSpec(spec: unknown): void {
  if (!isObject(spec)) return;
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.securityContext ??= {};
  spec.schedulerName ??= 'default-scheduler';
  for (const c of [
    ...((spec.containers as JsonObject[]) ?? []),
    ...((spec.initContainers as JsonObject[]) ?? []),
  ])
    if (isObject(c)) defaultContainer(c);
}

function defaultTemplate(obj: KObject): void {
  const spec = obj.spec as JsonObject | undefined;
  if (!isObject(spec)) return;
  spec.replicas ??= 1;
  if (isObject(spec.template)) defaultPodSpec(spec.template.spec);
}

const NOT_READY = 'node.kubernetes.io/not-ready';
const UNREACHABLE = 'node.kubernetes.io/unreachable';

function defaultPod(pod: KObject): void {
  const spec = pod.spec as JsonObject;
  if (!isObject(spec)) return;
  defaultPodSpec(spec);
  spec.enableServiceLinks ??= true;
  spec.preemptionPolicy ??= 'PreemptLowerPriority';
  spec.priority ??= 0;
  spec.serviceAccountName ??= 'default';
  spec.serviceAccount ??= spec.serviceAccountName;
  // Limits without requests: the requests default to the limits.
  for (const c of (spec.containers as JsonObject[]) ?? []) {
    const r = c.resources as JsonObject;
    if (isObject(r) && isObject(r.limits))
      r.requests = { ...r.limits, ...((r.requests as JsonObject) ?? {}) };
  }
  // The DefaultTolerationSeconds admission plugin.
  const tolerations = ((spec.tolerations as JsonObject[]) ?? []).slice();
  for (const key of [NOT_READY, UNREACHABLE])
    if (!tolerations.some((t) => t.key === key && (t.effect === 'NoExecute' || t.effect === undefined)))
      tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 });
  spec.tolerations = tolerations;
  pod.status ??= { phase: 'Pending', qosClass: qosClass(spec) };
}

/** Guaranteed when every container's requests equal its limits for cpu and memory; BestEffort with none. */
export function qosClass(spec: JsonObject): string {
  const containers = (spec.containers as JsonObject[]) ?? [];
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    const r = (c.resources as JsonObject) ?? {};
    const limits = (r.limits as JsonObject) ?? {};
    const requests = (r.requests as JsonObject) ?? {};
    if (Object.keys(limits).length > 0 || Object.keys(requests).length > 0) any = true;
    for (const res of ['cpu', 'memory'])
      if (
        limits[res] === undefined ||
        parseQuantity(limits[res]) !== parseQuantity(requests[res] ?? limits[res])
      )
        guaranteed = false;
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

// ---- validation ----

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

export function nameErrors(name: string, rule: ResourceDef['nameRule'] = 'subdomain'): string[] {
  if (rule === 'label') {
    const out: string[] = [];
    if (name.length > 63) out.push('must be no more than 63 characters');
    if (!LABEL.test(name))
      out.push(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
      );
    return out;
  }
  if (rule === 'dns1035') {
    const out: string[] = [];
    if (name.length > 63) out.push('must be no more than 63 characters');
    if (!DNS1035.test(name))
      out.push(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
      );
    return out;
  }
  const out: string[] = [];
  if (name.length > 253) out.push('must be no more than 253 characters');
  if (!SUBDOMAIN.test(name))
    out.push(
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    );
  return out;
}

const invalidValue = (field: string, value: unknown, detail: string): FieldError => ({
  type: 'FieldValueInvalid',
  field,
  value,
  detail,
});
const required = (field: string, detail = ''): FieldError => ({ type: 'FieldValueRequired', field, detail });

/** Resources whose requests may not exceed their limits and which need a limit (not overcommittable). */
function isExtended(resource: string): boolean {
  return resource.includes('/') && !resource.startsWith('kubernetes.io/');
}

function validateProbe(p: unknown, field: string, out: FieldError[]): void {
  if (p === undefined) return;
  if (!isObject(p)) return;
  const handlers = ['exec', 'httpGet', 'tcpSocket', 'grpc'].filter((h) => p[h] !== undefined);
  if (handlers.length === 0) out.push(required(field, 'must specify a handler type'));
  if (handlers.length > 1)
    out.push({ type: 'FieldValueForbidden', field, detail: 'may not specify more than 1 handler type' });
  for (const k of ['periodSeconds', 'failureThreshold', 'successThreshold', 'timeoutSeconds'])
    if (typeof p[k] === 'number' && (p[k] as number) < 1)
      out.push(invalidValue(`${field}.${k}`, p[k], 'must be greater than or equal to 1'));
}

export function validatePodSpec(spec: unknown, field: string, restartAlways: boolean): FieldError[] {
  const out: FieldError[] = [];
  if (!isObject(spec)) return [required(field)];
  const containers = spec.containers;
  if (!Array.isArray(containers) || containers.length === 0) out.push(required(`${field}.containers`));
  const names = new Set<string>();
  (Array.isArray(containers) ? containers : []).forEach((c: JsonObject, i) => {
    const f = `${field}.containers[${i}]`;
    if (typeof c.name !== 'string' || c.name === '') out.push(required(`${f}.name`));
    else {
      for (const e of nameErrors(c.name, 'label')) out.push(invalidValue(`${f}.name`, c.name, e));
      if (names.has(c.name))
        out.push({ type: 'FieldValueInvalid', field: `${f}.name`, value: c.name, detail: 'Duplicate value' });
      names.add(c.name);
    }
    if (typeof c.image !== 'string' || c.image === '') out.push(required(`${f}.image`));
    ((c.ports as JsonObject[]) ?? []).forEach((p, j) => {
      const port = p.containerPort;
      if (typeof port !== 'number' || port < 1 || port > 65535)
        out.push(
          invalidValue(`${f}.ports[${j}].containerPort`, port ?? 0, 'must be between 1 and 65535, inclusive'),
        );
    });
    const r = (c.resources as JsonObject) ?? {};
    const limits = (r.limits as JsonObject) ?? {};
    const requests = (r.requests as JsonObject) ?? {};
    for (const [kind, list] of [
      ['limits', limits],
      ['requests', requests],
    ] as const)
      for (const [res, q] of Object.entries(list))
        if (parseQuantity(q) === undefined)
          out.push(invalidValue(`${f}.resources.${kind}[${res}]`, q, QUANTITY_ERROR));
    for (const [res, q] of Object.entries(requests)) {
      const req = parseQuantity(q);
      const lim = parseQuantity(limits[res]);
      if (isExtended(res)) {
        if (limits[res] === undefined)
          out.push(required(`${f}.resources.limits`, 'Limit must be set for non overcommitable resources'));
        else if (req !== lim)
          out.push(
            invalidValue(
              `${f}.resources.requests[${res}]`,
              q,
              `must be equal to ${res} limit of ${limits[res]}`,
            ),
          );
      } else if (req !== undefined && lim !== undefined && req > lim)
        out.push(
          invalidValue(
            `${f}.resources.requests`,
            q,
            `must be less than or equal to ${res} limit of ${limits[res]}`,
          ),
        );
    }
    validateProbe(c.readinessProbe, `${f}.readinessProbe`, out);
    validateProbe(c.livenessProbe, `${f}.livenessProbe`, out);
    validateProbe(c.startupProbe, `${f}.startupProbe`, out);
  });
  if (restartAlways && spec.restartPolicy !== undefined && spec.restartPolicy !== 'Always')
    out.push({
      type: 'FieldValueNotSupported',
      field: `${field}.restartPolicy`,
      value: spec.restartPolicy,
      detail: 'supported values: "Always"',
    });
  ((spec.tolerations as JsonObject[]) ?? []).forEach((t, i) => {
    if (t.operator === 'Exists' && t.value !== undefined && t.value !== '')
      out.push(
        invalidValue(
          `${field}.tolerations[${i}].operator`,
          t.value,
          "value must be empty when `operator` is 'Exists'",
        ),
      );
    if (
      t.effect !== undefined &&
      !['NoSchedule', 'PreferNoSchedule', 'NoExecute', ''].includes(t.effect as string)
    )
      out.push({
        type: 'FieldValueNotSupported',
        field: `${field}.tolerations[${i}].effect`,
        value: t.effect,
        detail: 'supported values: "NoExecute", "NoSchedule", "PreferNoSchedule"',
      });
  });
  return out;
}

function validateReplicated(obj: KObject, old: KObject | undefined): FieldError[] {
  const out: FieldError[] = [];
  const spec = obj.spec as JsonObject;
  if (!isObject(spec)) return [required('spec')];
  if (typeof spec.replicas === 'number' && spec.replicas < 0)
    out.push(invalidValue('spec.replicas', spec.replicas, 'must be greater than or equal to 0'));
  const sel = spec.selector as JsonObject | undefined;
  if (
    !isObject(sel) ||
    (Object.keys((sel.matchLabels as object) ?? {}).length === 0 &&
      !((sel.matchExpressions as unknown[]) ?? []).length)
  )
    out.push(
      isObject(sel)
        ? invalidValue('spec.selector', sel, 'empty selector is invalid for deployment')
        : required('spec.selector'),
    );
  const template = spec.template as JsonObject | undefined;
  const labels = (isObject(template) && isObject(template.metadata) ? template.metadata.labels : undefined) as
    | Record<string, string>
    | undefined;
  if (isObject(sel) && !matchesSelector(sel, labels))
    out.push(
      invalidValue(
        'spec.template.metadata.labels',
        labels ?? {},
        '`selector` does not match template `labels`',
      ),
    );
  out.push(...validatePodSpec(isObject(template) ? template.spec : undefined, 'spec.template.spec', true));
  const oldSel = old && isObject(old.spec) ? (old.spec as JsonObject).selector : undefined;
  if (old && oldSel !== undefined && JSON.stringify(oldSel) !== JSON.stringify(sel))
    out.push(invalidValue('spec.selector', sel, 'field is immutable'));
  return out;
}

function validatePdb(obj: KObject): FieldError[] {
  const spec = (obj.spec as JsonObject) ?? {};
  const out: FieldError[] = [];
  if (spec.minAvailable !== undefined && spec.maxUnavailable !== undefined)
    out.push(invalidValue('spec', spec, 'minAvailable and maxUnavailable cannot be both set'));
  for (const k of ['minAvailable', 'maxUnavailable']) {
    const v = spec[k];
    if (typeof v === 'number' && v < 0)
      out.push(invalidValue(`spec.${k}`, v, 'must be greater than or equal to 0'));
    if (typeof v === 'string' && !/^\d+%$/.test(v))
      out.push(
        invalidValue(
          `spec.${k}`,
          v,
          "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        ),
      );
  }
  return out;
}

function validateService(obj: KObject): FieldError[] {
  const spec = (obj.spec as JsonObject) ?? {};
  const out: FieldError[] = [];
  const ports = spec.ports;
  if (spec.type !== 'ExternalName' && (!Array.isArray(ports) || ports.length === 0))
    out.push(required('spec.ports'));
  (Array.isArray(ports) ? (ports as JsonObject[]) : []).forEach((p, i) => {
    if (typeof p.port !== 'number' || p.port < 1 || p.port > 65535)
      out.push(invalidValue(`spec.ports[${i}].port`, p.port ?? 0, 'must be between 1 and 65535, inclusive'));
    if (ports && (ports as unknown[]).length > 1 && !p.name) out.push(required(`spec.ports[${i}].name`));
  });
  return out;
}

/** Pods are immutable but for a few fields; a changed spec is refused as the API server refuses it. */
function validatePodUpdate(obj: KObject, old: KObject | undefined): FieldError[] {
  const out = validatePodSpec(obj.spec, 'spec', false);
  if (!old) return out;
  const strip = (s: unknown) => {
    const c = structuredClone(s) as JsonObject;
    for (const x of (c.containers as JsonObject[]) ?? []) delete x.image;
    delete c.activeDeadlineSeconds;
    delete c.tolerations;
    delete c.nodeName;
    return JSON.stringify(c);
  };
  if (strip(obj.spec) !== strip(old.spec))
    out.push({
      type: 'FieldValueForbidden',
      field: 'spec',
      detail:
        'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
    });
  return out;
}

// ---- the resources ----

const base = {
  verbs: ALL_VERBS,
  subresources: [] as string[],
  fieldSelectors: [] as string[],
  statusSubresource: false,
  generation: false,
};

export const NAMESPACES: ResourceDef = {
  ...base,
  group: '',
  version: 'v1',
  resource: 'namespaces',
  singular: 'namespace',
  kind: 'Namespace',
  namespaced: false,
  shortNames: ['ns'],
  verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: ['status', 'finalize'],
  fieldSelectors: ['status.phase'],
  statusSubresource: true,
  nameRule: 'label',
  defaults(ns) {
    ns.metadata ??= {};
    const meta = ns.metadata;
    meta.labels = { ...(meta.labels ?? {}), 'kubernetes.io/metadata.name': meta.name as string };
    ns.spec = { finalizers: ['kubernetes'], ...((ns.spec as object) ?? {}) };
    ns.status ??= { phase: 'Active' };
  },
};

export const NODES: ResourceDef = {
  ...base,
  group: '',
  version: 'v1',
  resource: 'nodes',
  singular: 'node',
  kind: 'Node',
  namespaced: false,
  shortNames: ['no'],
  subresources: ['status', 'proxy'],
  fieldSelectors: ['spec.unschedulable'],
  statusSubresource: true,
};

export const PODS: ResourceDef = {
  ...base,
  group: '',
  version: 'v1',
  resource: 'pods',
  singular: 'pod',
  kind: 'Pod',
  namespaced: true,
  shortNames: ['po'],
  categories: ['all'],
  subresources: ['status', 'eviction', 'binding', 'log'],
  fieldSelectors: [
    'spec.nodeName',
    'spec.restartPolicy',
    'spec.schedulerName',
    'spec.serviceAccountName',
    'spec.hostNetwork',
    'status.phase',
    'status.podIP',
    'status.nominatedNodeName',
  ],
  statusSubresource: true,
  defaults: defaultPod,
  validate: validatePodUpdate,
};

export const SERVICES: ResourceDef = {
  ...base,
  group: '',
  version: 'v1',
  resource: 'services',
  singular: 'service',
  kind: 'Service',
  namespaced: true,
  shortNames: ['svc'],
  categories: ['all'],
  verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
  subresources: ['status', 'proxy'],
  statusSubresource: true,
  nameRule: 'dns1035',
  defaults(svc) {
    svc.spec ??= {};
    const spec = svc.spec as JsonObject;
    spec.type ??= 'ClusterIP';
    if (spec.type !== 'ExternalName' && spec.clusterIP === undefined) {
      // From the cluster's service CIDR (DescribeCluster: 10.100.0.0/16), derived from the service's identity.
      const h = [...`${svc.metadata?.namespace}/${svc.metadata?.name}`].reduce(
        (a, ch) => (a * 31 + ch.charCodeAt(0)) >>> 0,
        7,
      );
      spec.clusterIP = `10.100.${(h >>> 8) % 256}.${1 + (h % 254)}`;
    }
    if (typeof spec.clusterIP === 'string' && spec.clusterIP !== 'None') spec.clusterIPs ??= [spec.clusterIP];
    spec.sessionAffinity ??= 'None';
    spec.ipFamilies ??= ['IPv4'];
    spec.ipFamilyPolicy ??= 'SingleStack';
    spec.internalTrafficPolicy ??= 'Cluster';
    for (const p of (spec.ports as JsonObject[]) ?? []) {
      p.protocol ??= 'TCP';
      p.targetPort ??= p.port;
    }
    svc.status ??= { loadBalancer: {} };
  },
  validate: (o) => validateService(o),
};

export const EVENTS: ResourceDef = {
  ...base,
  group: '',
  version: 'v1',
  resource: 'events',
  singular: 'event',
  kind: 'Event',
  namespaced: true,
  shortNames: ['ev'],
  fieldSelectors: [
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
  ],
};

export const DEPLOYMENTS: ResourceDef = {
  ...base,
  group: 'apps',
  version: 'v1',
  resource: 'deployments',
  singular: 'deployment',
  kind: 'Deployment',
  namespaced: true,
  shortNames: ['deploy'],
  categories: ['all'],
  subresources: ['status', 'scale'],
  statusSubresource: true,
  generation: true,
  defaults(d) {
    defaultTemplate(d);
    const spec = d.spec as JsonObject;
    if (!isObject(spec)) return;
    spec.strategy ??= { type: 'RollingUpdate' };
    const s = spec.strategy as JsonObject;
    if (s.type === 'RollingUpdate' || s.type === undefined) {
      s.type = 'RollingUpdate';
      s.rollingUpdate = { maxUnavailable: '25%', maxSurge: '25%', ...((s.rollingUpdate as object) ?? {}) };
    }
    spec.revisionHistoryLimit ??= 10;
    spec.progressDeadlineSeconds ??= 600;
  },
  validate: validateReplicated,
};

export const REPLICASETS: ResourceDef = {
  ...DEPLOYMENTS,
  resource: 'replicasets',
  singular: 'replicaset',
  kind: 'ReplicaSet',
  shortNames: ['rs'],
  defaults: defaultTemplate,
};

export const PDBS: ResourceDef = {
  ...base,
  group: 'policy',
  version: 'v1',
  resource: 'poddisruptionbudgets',
  singular: 'poddisruptionbudget',
  kind: 'PodDisruptionBudget',
  namespaced: true,
  shortNames: ['pdb'],
  subresources: ['status'],
  statusSubresource: true,
  generation: true,
  validate: (o) => validatePdb(o),
};

const rbac = { ...base, group: 'rbac.authorization.k8s.io', version: 'v1' };
export const ROLES: ResourceDef = {
  ...rbac,
  resource: 'roles',
  singular: 'role',
  kind: 'Role',
  namespaced: true,
};
export const ROLEBINDINGS: ResourceDef = {
  ...rbac,
  resource: 'rolebindings',
  singular: 'rolebinding',
  kind: 'RoleBinding',
  namespaced: true,
};
export const CLUSTERROLES: ResourceDef = {
  ...rbac,
  resource: 'clusterroles',
  singular: 'clusterrole',
  kind: 'ClusterRole',
  namespaced: false,
};
export const CLUSTERROLEBINDINGS: ResourceDef = {
  ...rbac,
  resource: 'clusterrolebindings',
  singular: 'clusterrolebinding',
  kind: 'ClusterRoleBinding',
  namespaced: false,
};

export const LEASES: ResourceDef = {
  ...base,
  group: 'coordination.k8s.io',
  version: 'v1',
  resource: 'leases',
  singular: 'lease',
  kind: 'Lease',
  namespaced: true,
};

export const RESOURCES: ResourceDef[] = [
  NAMESPACES,
  NODES,
  PODS,
  SERVICES,
  EVENTS,
  DEPLOYMENTS,
  REPLICASETS,
  PDBS,
  ROLES,
  ROLEBINDINGS,
  CLUSTERROLES,
  CLUSTERROLEBINDINGS,
  LEASES,
];

export function findResource(group: string, version: string, resource: string): ResourceDef | undefined {
  return RESOURCES.find((r) => r.group === group && r.version === version && r.resource === resource);
}

export function byKind(apiVersion: string, kind: string): ResourceDef | undefined {
  return RESOURCES.find((r) => apiVersionOf(r) === apiVersion && r.kind === kind);
}
