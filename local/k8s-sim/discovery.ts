import { createHash } from 'node:crypto';
import { apiVersionOf, RESOURCES, type ResourceDef } from './resources';

/** Legacy discovery (/api, /apis, /api/v1, /apis/<group>/<version>) and /version, as the API server answers. */

const SUBRESOURCE_KINDS: Record<string, { kind: string; group?: string; version?: string; verbs: string[] }> =
  {
    status: { kind: '', verbs: ['get', 'patch', 'update'] },
    eviction: { kind: 'Eviction', group: 'policy', version: 'v1', verbs: ['create'] },
    binding: { kind: 'Binding', verbs: ['create'] },
    scale: { kind: 'Scale', group: 'autoscaling', version: 'v1', verbs: ['get', 'patch', 'update'] },
    log: { kind: 'Pod', verbs: ['get'] },
    proxy: { kind: '', verbs: ['create', 'delete', 'get', 'patch', 'update'] },
    finalize: { kind: 'Namespace', verbs: ['update'] },
  };

function hash(def: ResourceDef): string {
  return createHash('sha256')
    .update(`${def.group}/${def.version}/${def.resource}`)
    .digest('base64')
    .slice(0, 11);
}

export function groupVersions(): { group: string; version: string }[] {
  const out: { group: string; version: string }[] = [];
  for (const r of RESOURCES)
    if (!out.some((g) => g.group === r.group && g.version === r.version))
      out.push({ group: r.group, version: r.version });
  return out;
}

export function apiVersions(serverAddress: string) {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

export function apiGroupList() {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: groupVersions()
      .filter((g) => g.group !== '')
      .map((g) => {
        const gv = { groupVersion: `${g.group}/${g.version}`, version: g.version };
        return { name: g.group, versions: [gv], preferredVersion: gv };
      }),
  };
}

export function apiGroup(group: string) {
  const gvs = groupVersions().filter((g) => g.group === group);
  if (gvs.length === 0) return undefined;
  const versions = gvs.map((g) => ({ groupVersion: `${g.group}/${g.version}`, version: g.version }));
  return { kind: 'APIGroup', apiVersion: 'v1', name: group, versions, preferredVersion: versions[0] };
}

export function resourceList(group: string, version: string) {
  const defs = RESOURCES.filter((r) => r.group === group && r.version === version);
  if (defs.length === 0) return undefined;
  const resources: Record<string, unknown>[] = [];
  for (const d of defs) {
    resources.push({
      name: d.resource,
      singularName: d.singular,
      namespaced: d.namespaced,
      kind: d.kind,
      verbs: d.verbs,
      ...(d.shortNames ? { shortNames: d.shortNames } : {}),
      ...(d.categories ? { categories: d.categories } : {}),
      storageVersionHash: hash(d),
    });
    for (const sub of d.subresources) {
      const s = SUBRESOURCE_KINDS[sub];
      if (!s) continue;
      resources.push({
        name: `${d.resource}/${sub}`,
        singularName: '',
        namespaced: d.namespaced,
        ...(s.group ? { group: s.group, version: s.version } : {}),
        kind: s.kind || d.kind,
        verbs: s.verbs,
      });
    }
  }
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: apiVersionOf({ group, version }),
    resources,
  };
}

export function versionInfo(clusterVersion: string) {
  const [major, minor] = clusterVersion.split('.');
  return {
    major,
    minor: `${minor}+`,
    gitVersion: `v${clusterVersion}.0-eks-5d4a308`,
    gitCommit: '5d4a3080d4a44e3c9a4e0c8c9cbd0e2b9f3d2c1a',
    gitTreeState: 'clean',
    buildDate: '2025-01-10T18:21:34Z',
    goVersion: 'go1.23.4',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}

const OPENAPI_PARAMS = ['dryRun', 'fieldManager', 'fieldValidation', 'force', 'pretty'].map((name) => ({
  name,
  in: 'query',
  schema: { type: name === 'force' ? 'boolean' : 'string', uniqueItems: true },
}));

function gvPath(group: string, version: string): string {
  return group ? `apis/${group}/${version}` : `api/${version}`;
}

/**
 * /openapi/v3: the index, and per group-version the operations with their parameters. kubectl reads the PATCH
 * operations to learn that the server validates fields itself (fieldValidation), which is what lets
 * `kubectl apply` leave validation to the server; the schemas themselves are not served.
 */
export function openApiIndex() {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const g of groupVersions()) {
    const p = gvPath(g.group, g.version);
    paths[p] = {
      serverRelativeURL: `/openapi/v3/${p}?hash=${createHash('sha256').update(p).digest('hex').slice(0, 32).toUpperCase()}`,
    };
  }
  return { paths };
}

export function openApiGroupVersion(path: string) {
  const g = groupVersions().find((x) => gvPath(x.group, x.version) === path);
  if (!g) return undefined;
  const paths: Record<string, unknown> = {};
  for (const d of RESOURCES.filter((r) => r.group === g.group && r.version === g.version)) {
    const gvk = { group: d.group, version: d.version, kind: d.kind };
    const base = `/${path}${d.namespaced ? '/namespaces/{namespace}' : ''}/${d.resource}/{name}`;
    const op = (action: string) => ({
      operationId: `${action}${d.kind}`,
      parameters: OPENAPI_PARAMS,
      responses: { '200': { description: 'OK' } },
      'x-kubernetes-action': action,
      'x-kubernetes-group-version-kind': gvk,
    });
    paths[base] = { get: op('get'), put: op('put'), patch: op('patch'), delete: op('delete') };
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: 'v1.33.0' },
    paths,
    components: { schemas: {} },
  };
}
