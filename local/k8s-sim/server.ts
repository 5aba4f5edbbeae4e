import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import {
  type AuthConfig,
  AuthError,
  type Request as AuthzRequest,
  authorize,
  type User,
  userForArn,
  verifyEksToken,
} from './auth';
import type { Cluster } from './cluster';
import {
  apiGroup,
  apiGroupList,
  apiVersions,
  openApiGroupVersion,
  openApiIndex,
  resourceList,
  versionInfo,
} from './discovery';
import { evict } from './eviction';
import { podProxy } from './pod-proxy';
import { apiVersionOf, findResource, NAMESPACES, PODS, RESOURCES, type ResourceDef } from './resources';
import { badRequest, forbidden, K8sError, methodNotAllowed, notFoundPath, unauthorized } from './status';
import { toTable } from './table';
import type { JsonObject, KObject } from './types';

/**
 * The HTTP side of the API server: authentication, authorization, the URL scheme of core and named groups
 * (namespaced and cluster-scoped, subresources), content negotiation (Table for kubectl get), and answers as
 * JSON or metav1.Status. Every request first lets simulated time catch up, so what it sees is current.
 */

export interface HandlerContext {
  cluster: Cluster;
  auth: AuthConfig;
  clusterName: string;
  serverAddress: () => string;
  log: (line: string) => void;
  /** Told of every resource request once answered, as the API server's audit log records it. */
  audit?: (e: AuditEvent) => void;
}

/** One request as the audit log's ResponseComplete stage has it: who, what verb on what, and the answer. */
export interface AuditEvent {
  user: string;
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  code: number;
  /** Milliseconds the server spent on it, from the body read to the answer sent. */
  ms: number;
}

interface Route {
  def: ResourceDef;
  namespace?: string;
  name?: string;
  subresource?: string;
  /** For a `proxy` subresource: the path after it, as the proxied server receives it. */
  proxyPath?: string;
}

const PUBLIC_PATHS = new Set(['/version', '/healthz', '/livez', '/readyz']);

function send(res: ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': contentType,
    'cache-control': 'no-cache, private',
    'audit-id': `${Date.now().toString(16)}-${Math.floor(Math.random() * 1e9).toString(16)}`,
    'x-kubernetes-pf-flowschema-uid': 'llmcap-local',
    'x-kubernetes-pf-prioritylevel-uid': 'llmcap-local',
  });
  res.end(text);
}

async function authenticate(ctx: HandlerContext, req: IncomingMessage): Promise<User | undefined> {
  const header = req.headers.authorization ?? '';
  const m = /^Bearer\s+(\S+)$/i.exec(header);
  if (!m) return undefined;
  const token = m[1] as string;
  const fixed = ctx.auth.staticTokens.get(token);
  if (fixed) return { name: fixed.name, groups: [...fixed.groups, 'system:authenticated'], policies: [] };
  try {
    const who = await verifyEksToken(token, ctx.clusterName, ctx.cluster.now(), ctx.auth.identities);
    return userForArn(who.arn, ctx.auth.accessEntries);
  } catch (e) {
    if (e instanceof AuthError) {
      ctx.log(`k8s auth refused: ${e.message}`);
      return undefined;
    }
    throw e;
  }
}

/** /api/v1/..., /apis/<group>/<version>/...: the resource, namespace, name and subresource a path names. */
function route(path: string): Route | 'discovery' | undefined {
  const segs = path.split('/').filter(Boolean).map(decodeURIComponent);
  let group: string;
  let version: string;
  let rest: string[];
  if (segs[0] === 'api') {
    if (segs.length < 2) return 'discovery';
    group = '';
    version = segs[1] as string;
    rest = segs.slice(2);
  } else if (segs[0] === 'apis') {
    if (segs.length < 3) return 'discovery';
    group = segs[1] as string;
    version = segs[2] as string;
    rest = segs.slice(3);
  } else return undefined;
  if (rest.length === 0) return 'discovery';
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    const maybe = findResource(group, version, rest[2] as string);
    if (maybe?.namespaced) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
  }
  const def = findResource(group, version, rest[0] as string);
  if (!def) return undefined;
  if (!def.namespaced && namespace !== undefined) return undefined;
  const proxied = rest[2] === 'proxy' && rest.length > 3;
  if (rest.length > 3 && !proxied) return undefined;
  return {
    def,
    ...(namespace !== undefined ? { namespace } : {}),
    ...(rest[1] !== undefined ? { name: rest[1] } : {}),
    ...(rest[2] !== undefined ? { subresource: rest[2] } : {}),
    ...(proxied ? { proxyPath: `/${rest.slice(3).join('/')}` } : {}),
  };
}

function discovery(path: string, ctx: HandlerContext): unknown {
  const segs = path.split('/').filter(Boolean);
  if (segs.length === 1 && segs[0] === 'api') return apiVersions(ctx.serverAddress());
  if (segs.length === 1 && segs[0] === 'apis') return apiGroupList();
  if (segs[0] === 'api' && segs.length === 2) return resourceList('', segs[1] as string);
  if (segs[0] === 'apis' && segs.length === 2) return apiGroup(segs[1] as string);
  if (segs[0] === 'apis' && segs.length === 3) return resourceList(segs[1] as string, segs[2] as string);
  return undefined;
}

function verbOf(method: string, r: Route, watch: boolean): string {
  if (method === 'GET') return watch ? 'watch' : r.name ? 'get' : 'list';
  if (method === 'POST') return 'create';
  if (method === 'PUT') return 'update';
  if (method === 'PATCH') return 'patch';
  if (method === 'DELETE') return r.name ? 'delete' : 'deletecollection';
  return method.toLowerCase();
}

/** The field manager of a write: the parameter, else the client's product name from its User-Agent. */
function managerOf(q: URLSearchParams, req: IncomingMessage): string {
  const explicit = q.get('fieldManager');
  if (explicit) return explicit;
  const ua = req.headers['user-agent'] ?? 'unknown';
  return ua.split('/')[0]?.slice(0, 128) || 'unknown';
}

function parseBody(raw: string, contentType: string): unknown {
  if (raw.trim() === '') return {};
  try {
    if (contentType.includes('yaml')) return parseYaml(raw);
    return JSON.parse(raw);
  } catch (e) {
    throw badRequest(`the body of the request could not be decoded: ${(e as Error).message}`);
  }
}

export async function handle(
  ctx: HandlerContext,
  req: IncomingMessage,
  res: ServerResponse,
  raw: string,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'https://k8s');
  const method = req.method ?? 'GET';
  const path = url.pathname.replace(/\/+$/, '') || '/';
  const q = url.searchParams;
  let status = 200;
  let reason = '';
  const started = performance.now();
  let audited: Omit<AuditEvent, 'code' | 'ms'> | undefined;
  try {
    ctx.cluster.sim.catchUp();
    if (PUBLIC_PATHS.has(path)) {
      if (path === '/version') send(res, 200, versionInfo(ctx.cluster.sim.opts.clusterVersion));
      else {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('ok');
      }
      return;
    }
    const user = await authenticate(ctx, req);
    if (!user) throw unauthorized();
    if (path === '/openapi/v3' || path.startsWith('/openapi/v3/')) {
      const doc =
        path === '/openapi/v3' ? openApiIndex() : openApiGroupVersion(path.slice('/openapi/v3/'.length));
      if (!doc) throw notFoundPath();
      send(res, 200, doc);
      return;
    }
    const r = route(path);
    if (r === 'discovery') {
      if (method !== 'GET')
        throw methodNotAllowed(`the server does not allow this method on the requested resource`);
      const doc = discovery(path, ctx);
      if (!doc) throw notFoundPath();
      send(res, 200, doc);
      return;
    }
    if (!r) throw notFoundPath();
    const watch = q.get('watch') === 'true' || q.get('watch') === '1';
    const verb = verbOf(method, r, watch);
    const authz: AuthzRequest = {
      verb,
      group: r.def.group,
      resource: r.def.resource,
      ...(r.subresource ? { subresource: r.subresource } : {}),
      ...(r.namespace !== undefined ? { namespace: r.namespace } : {}),
      ...(r.name !== undefined ? { name: r.name } : {}),
    };
    audited = { user: user.name, ...authz };
    if (!authorize(ctx.cluster, user, authz))
      throw forbidden(
        user.name,
        verb,
        {
          resource: r.def.resource,
          group: r.def.group,
          ...(r.subresource ? { subresource: r.subresource } : {}),
          ...(r.name ? { name: r.name } : {}),
        },
        r.namespace,
      );
    if (watch)
      throw methodNotAllowed(
        'watch is not served by the llmcap cloud simulator; list again (with resourceVersion) instead',
      );
    if (r.subresource === 'proxy' && r.def === PODS) {
      const out = podProxy(ctx.cluster, method, r);
      status = out.status;
      res.writeHead(out.status, { 'content-type': out.contentType, 'cache-control': 'no-cache, private' });
      res.end(out.body);
      return;
    }
    const out = serve(ctx, req, r, method, q, raw);
    status = out.status;
    if (out.table) send(res, out.status, out.body, 'application/json;as=Table;v=v1;g=meta.k8s.io');
    else send(res, out.status, out.body);
  } catch (e) {
    const err =
      e instanceof K8sError
        ? e
        : new K8sError(500, 'InternalError', `Internal error occurred: ${(e as Error).message}`);
    status = err.code;
    reason = ` ${err.reason}: ${err.message}`;
    send(res, err.code, err.status());
  } finally {
    ctx.log(`k8s ${method} ${url.pathname}${url.search} ${status}${reason}`);
    if (audited) ctx.audit?.({ ...audited, code: status, ms: performance.now() - started });
  }
}

function serve(
  ctx: HandlerContext,
  req: IncomingMessage,
  r: Route,
  method: string,
  q: URLSearchParams,
  raw: string,
): { status: number; body: unknown; table?: boolean } {
  const c = ctx.cluster;
  const { def, namespace: ns, name, subresource } = r;
  const contentType = req.headers['content-type'] ?? 'application/json';
  const dryRun = q.getAll('dryRun').includes('All');
  const manager = managerOf(q, req);
  const accept = req.headers.accept ?? '';
  if (subresource === 'eviction') {
    if (method !== 'POST' || !name)
      throw methodNotAllowed('the server does not allow this method on the requested resource');
    const out = evict(c, ns as string, name, parseBody(raw, contentType));
    return { status: (out.code as number) ?? 201, body: out };
  }
  if (subresource && !['status', 'scale'].includes(subresource)) {
    if (subresource === 'log') {
      throw new K8sError(
        400,
        'BadRequest',
        `container logs are not simulated: the pod's containerStatuses show why it stopped`,
      );
    }
    throw notFoundPath();
  }
  if (subresource === 'scale') return scale(ctx, r, method, contentType, raw, manager);
  if (method === 'GET' && !name) {
    const list = c.api.list(def, ns, {
      labelSelector: q.get('labelSelector'),
      fieldSelector: q.get('fieldSelector'),
      limit: Number(q.get('limit') ?? 0),
      continue: q.get('continue'),
    });
    if (accept.includes('as=Table')) {
      const full = list.items.map(
        (o) => ({ apiVersion: apiVersionOf(def), kind: def.kind, ...o }) as KObject,
      );
      return {
        status: 200,
        body: toTable(def, full, list.metadata, c.now(), q.get('includeObject') ?? 'PartialObjectMetadata'),
        table: true,
      };
    }
    return { status: 200, body: list };
  }
  if (method === 'GET') {
    const o = c.api.get(def, ns, name as string);
    if (accept.includes('as=Table'))
      return {
        status: 200,
        body: toTable(
          def,
          [o],
          { resourceVersion: o.metadata?.resourceVersion },
          c.now(),
          q.get('includeObject') ?? 'PartialObjectMetadata',
        ),
        table: true,
      };
    return { status: 200, body: o };
  }
  if (method === 'POST' && !name) {
    const body = parseBody(raw, contentType) as KObject;
    if (def.namespaced) checkNamespaceOpen(c, ns);
    const created = c.api.create(def, ns, body, { manager, dryRun });
    c.settle();
    return { status: 201, body: created };
  }
  if (method === 'PUT' && name) {
    const body = parseBody(raw, contentType) as KObject;
    const out = c.api.update(def, ns, name, body, {
      manager,
      dryRun,
      ...(subresource ? { subresource } : {}),
    });
    c.settle();
    return { status: 200, body: out };
  }
  if (method === 'PATCH' && name) {
    const force = q.get('force');
    const existed = c.store.get(def, ns, name) !== undefined;
    if (!existed && def.namespaced) checkNamespaceOpen(c, ns);
    const out = c.api.patch(def, ns, name, contentType, raw, {
      manager,
      dryRun,
      ...(force !== null ? { force: force === 'true' } : {}),
      ...(subresource ? { subresource } : {}),
    });
    c.settle();
    return { status: existed ? 200 : 201, body: out };
  }
  if (method === 'DELETE' && name) {
    const body = parseBody(raw, contentType) as JsonObject;
    const grace = q.get('gracePeriodSeconds') ?? body.gracePeriodSeconds;
    const policy =
      q.get('propagationPolicy') ??
      body.propagationPolicy ??
      (q.get('orphanDependents') === 'true' ? 'Orphan' : undefined);
    const out = c.delete(def, ns, name, {
      ...(grace !== undefined && grace !== null ? { gracePeriodSeconds: Number(grace) } : {}),
      ...(policy ? { propagationPolicy: policy as 'Foreground' } : {}),
      ...(body.preconditions ? { preconditions: body.preconditions as JsonObject } : {}),
      dryRun,
    });
    const still = c.store.get(def, ns, name);
    if (still || def.resource === 'pods') return { status: 200, body: still ?? out };
    return {
      status: 200,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Success',
        details: {
          name,
          ...(def.group ? { group: def.group } : {}),
          kind: def.resource,
          uid: out.metadata?.uid,
        },
      },
    };
  }
  if (method === 'DELETE' && !name) {
    const items = c.api.list(def, ns, {
      labelSelector: q.get('labelSelector'),
      fieldSelector: q.get('fieldSelector'),
    }).items;
    for (const o of items) c.delete(def, ns, o.metadata?.name as string);
    return { status: 200, body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' } };
  }
  throw methodNotAllowed('the server does not allow this method on the requested resource');
}

function checkNamespaceOpen(c: Cluster, ns: string | undefined): void {
  const n = ns ? c.store.get(NAMESPACES, undefined, ns) : undefined;
  if (n?.metadata?.deletionTimestamp)
    throw new K8sError(
      403,
      'Forbidden',
      `unable to create new content in namespace ${ns} because it is being terminated`,
      {
        name: ns,
        kind: 'namespaces',
      },
    );
}

/** The scale subresource of deployments and replica sets (autoscaling/v1 Scale), as `kubectl scale` uses it. */
function scale(
  ctx: HandlerContext,
  r: Route,
  method: string,
  contentType: string,
  raw: string,
  manager: string,
) {
  const c = ctx.cluster;
  const o = c.api.get(r.def, r.namespace, r.name as string);
  const view = (x: KObject) => ({
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: {
      name: x.metadata?.name,
      namespace: x.metadata?.namespace,
      uid: x.metadata?.uid,
      resourceVersion: x.metadata?.resourceVersion,
      creationTimestamp: x.metadata?.creationTimestamp,
    },
    spec: { replicas: (x.spec as JsonObject).replicas },
    status: {
      replicas: (x.status as JsonObject)?.replicas ?? 0,
      selector: Object.entries(((x.spec as JsonObject).selector as JsonObject)?.matchLabels ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    },
  });
  if (method === 'GET') return { status: 200, body: view(o) };
  let replicas: unknown;
  const body = parseBody(raw, contentType) as JsonObject;
  if (method === 'PUT') replicas = (body.spec as JsonObject)?.replicas;
  else if (method === 'PATCH') {
    if (contentType.includes('json-patch')) {
      const op = (body as unknown as JsonObject[]).find?.((x) => x.path === '/spec/replicas');
      replicas = op?.value;
    } else replicas = (body.spec as JsonObject)?.replicas;
  } else throw methodNotAllowed('the server does not allow this method on the requested resource');
  if (typeof replicas !== 'number') throw badRequest('spec.replicas must be a number');
  const next = c.api.update(
    r.def,
    r.namespace,
    r.name as string,
    { ...o, spec: { ...(o.spec as JsonObject), replicas } },
    { manager, subresource: 'scale' },
  );
  c.settle();
  return { status: 200, body: view(next) };
}

export { RESOURCES };
