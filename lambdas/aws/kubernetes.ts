import { Agent, request as httpsRequest } from 'node:https';
import { Sha256 } from '@aws-crypto/sha256-js';
import { DescribeClusterCommand } from '@aws-sdk/client-eks';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { DRAIN_FIELD_MANAGER } from '../domain/drain';
import { FIELD_MANAGER, type K8sMeta, type K8sObject } from '../domain/workloads';
import { eksClient } from '../shared/clients';
import { config } from '../shared/config';

/**
 * The reconciler's access to the cluster's Kubernetes API, as EKS grants it: a bearer token that is a presigned
 * STS GetCallerIdentity URL with the cluster's name in the signed `x-k8s-aws-id` header (the `k8s-aws-v1.`
 * scheme of aws-iam-authenticator and `aws eks get-token`), and the endpoint and CA that DescribeCluster
 * returns. The cluster maps the caller's role to its access entry (infra: the reconciler's). Locally the
 * cloud simulator answers DescribeCluster with its own API server, which checks the token the same way.
 */

export const TOKEN_PREFIX = 'k8s-aws-v1.';
/** aws-iam-authenticator accepts a token for 15 minutes from its signing; a client is remade well before. */
const TOKEN_EXPIRES_S = 900;
const CLIENT_MAX_AGE_MS = 10 * 60_000;

export async function eksToken(opts: {
  cluster: string;
  region: string;
  credentials: ConstructorParameters<typeof SignatureV4>[0]['credentials'];
  now?: Date;
}): Promise<string> {
  const host = `sts.${opts.region}.amazonaws.com`;
  const signer = new SignatureV4({
    credentials: opts.credentials,
    region: opts.region,
    service: 'sts',
    sha256: Sha256,
  });
  const signed = await signer.presign(
    {
      method: 'GET',
      protocol: 'https:',
      hostname: host,
      path: '/',
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      headers: { host, 'x-k8s-aws-id': opts.cluster },
    },
    { expiresIn: TOKEN_EXPIRES_S, ...(opts.now ? { signingDate: opts.now } : {}) },
  );
  const query = new URLSearchParams(signed.query as Record<string, string>).toString();
  return `${TOKEN_PREFIX}${Buffer.from(`https://${host}/?${query}`).toString('base64url')}`;
}

export interface ClusterEndpoint {
  endpoint: string;
  caData: string;
}

let endpointCache: { cluster: string; value: Promise<ClusterEndpoint> } | undefined;

/** DescribeCluster's endpoint and CA; they do not change while the cluster lives, so one call per container. */
export function clusterEndpoint(cluster = config().cluster): Promise<ClusterEndpoint> {
  if (endpointCache?.cluster !== cluster) {
    const value = eksClient()
      .send(new DescribeClusterCommand({ name: cluster }))
      .then((out) => {
        const endpoint = out.cluster?.endpoint;
        const caData = out.cluster?.certificateAuthority?.data;
        if (!endpoint || !caData)
          throw new Error(
            `EKS cluster ${cluster} has no endpoint or certificate authority yet (status ${out.cluster?.status}); llmcap deploys nothing until it is ACTIVE`,
          );
        return { endpoint, caData };
      });
    // A failure is not remembered: the next pass asks again.
    value.catch(() => {
      if (endpointCache?.value === value) endpointCache = undefined;
    });
    endpointCache = { cluster, value };
  }
  return endpointCache.value;
}

/** An object as the API server returns it: the metadata llmcap reads, and the rest as it came. */
export interface ListedObject {
  apiVersion?: string;
  kind?: string;
  metadata: K8sMeta & { [field: string]: unknown };
  [field: string]: unknown;
}

/** A refused Kubernetes call, in the API server's words (the message of its Status, not the raw body). */
export class KubernetesError extends Error {
  constructor(
    what: string,
    readonly code: number,
    message: string,
  ) {
    super(`${what}: ${message} (HTTP ${code})`);
    this.name = 'KubernetesError';
  }
}

/** Where the API server is and who calls it: DescribeCluster's endpoint and CA, and a bearer token. */
export interface ClusterAccess {
  server: string;
  /** Base64 of the CA's PEM, as DescribeCluster's certificateAuthority.data and a kubeconfig carry it. */
  caData: string;
  token: string;
  /** How long a call may wait for its answer; REQUEST_TIMEOUT_MS unless given. */
  timeoutMs?: number;
}

/** A pooled connection the server closed while idle fails at once; every call here is safe to send again. */
const STALE_SOCKET = new Set(['ECONNRESET', 'EPIPE']);
/** Idle connections close after this, so one never outlives a pass into a frozen Lambda container. */
const IDLE_SOCKET_MS = 5_000;
/** A call the API server has not answered by then fails, and the pass records it, rather than the Lambda hanging. */
const REQUEST_TIMEOUT_MS = 30_000;

/** `Pod ns/name`, `Node name`, or for a list `Pod in ns`, `Node`: what an error says was being done. */
const described = (kind: string, namespace: string | undefined, name?: string) =>
  name ? `${kind} ${namespace ? `${namespace}/` : ''}${name}` : namespace ? `${kind} in ${namespace}` : kind;

interface Resource {
  /** `/api/v1` or `/apis/<group>/<version>`. */
  base: string;
  plural: string;
  namespaced: boolean;
}

interface Answer {
  status: number;
  body: string;
}

/**
 * The calls the reconciler makes to the cluster's Kubernetes API, counted so that a pass can report (and the bench
 * measure) them. Plain HTTPS with the API server's own conventions (server-side apply, merge patch, the Eviction
 * subresource, discovery for a kind's resource path): the calls of one client share keep-alive connections, and
 * the Lambda bundle carries no generated client.
 */
export class ClusterClient {
  calls = 0;
  private readonly agent: Agent;
  private readonly server: URL;
  private readonly resources = new Map<string, Promise<Map<string, Resource>>>();
  constructor(private readonly access: ClusterAccess) {
    this.server = new URL(access.server);
    this.agent = new Agent({
      ca: Buffer.from(access.caData, 'base64').toString('utf8'),
      keepAlive: true,
      timeout: IDLE_SOCKET_MS,
    });
  }

  /** Server-side apply, forced: our fields are restored, other managers' fields are left alone. */
  async apply(obj: K8sObject, fieldManager = FIELD_MANAGER): Promise<void> {
    this.calls++;
    const { namespace, name } = obj.metadata;
    const what = `applying ${described(obj.kind, namespace, name)}`;
    const path = await this.path(what, obj.apiVersion, obj.kind, namespace ?? 'default', name);
    await this.send(
      what,
      'PATCH',
      path,
      { fieldManager, force: 'true' },
      obj,
      'application/apply-patch+yaml',
    );
  }

  async list(
    apiVersion: string,
    kind: string,
    namespace: string | undefined,
    opts: { labelSelector?: string; fieldSelector?: string } = {},
  ): Promise<ListedObject[]> {
    const what = `listing ${described(kind, namespace)}`;
    const path = await this.path(what, apiVersion, kind, namespace);
    const items: ListedObject[] = [];
    let next: string | undefined;
    do {
      this.calls++;
      const page = (await this.send(what, 'GET', path, {
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        limit: '500',
        continue: next,
      })) as { items?: ListedObject[]; metadata?: { continue?: string } };
      items.push(...(page.items ?? []));
      next = page.metadata?.continue || undefined;
    } while (next);
    return items;
  }

  /** `kubectl cordon`: no new pod is scheduled on the node. */
  async cordon(node: string): Promise<void> {
    await this.patch('v1', 'Node', undefined, node, { spec: { unschedulable: true } });
  }

  /**
   * A JSON merge patch of a few fields (`null` removes one), as DRAIN_FIELD_MANAGER: the drain's cordons, surge
   * replicas and annotations, a pod's deletion cost. Server-side apply as llmcap would drop every other field it owns.
   */
  async patch(
    apiVersion: string,
    kind: string,
    namespace: string | undefined,
    name: string,
    fields: Record<string, unknown>,
  ): Promise<void> {
    this.calls++;
    const what = `patching ${described(kind, namespace, name)}`;
    const path = await this.path(what, apiVersion, kind, namespace, name);
    await this.send(
      what,
      'PATCH',
      path,
      { fieldManager: DRAIN_FIELD_MANAGER },
      fields,
      'application/merge-patch+json',
    );
  }

  /**
   * The Eviction API, which honours PodDisruptionBudgets: false when the budget refuses it for now (429), so the
   * drain waits for the next pass.
   */
  async evict(namespace: string, name: string): Promise<boolean> {
    this.calls++;
    const what = `evicting pod ${namespace}/${name}`;
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}/eviction`;
    try {
      await this.send(
        what,
        'POST',
        path,
        {},
        {
          apiVersion: 'policy/v1',
          kind: 'Eviction',
          metadata: { name, namespace },
        },
      );
      return true;
    } catch (e) {
      const code = (e as KubernetesError).code;
      if (code === 429) return false;
      if (code === 404) return true;
      throw e;
    }
  }

  /** Deletes an object llmcap no longer wants; one already gone counts as deleted. */
  async remove(obj: Pick<ListedObject, 'apiVersion' | 'kind' | 'metadata'>): Promise<void> {
    this.calls++;
    const { namespace, name } = obj.metadata;
    const what = `deleting ${described(String(obj.kind), namespace, name)}`;
    try {
      const path = await this.path(what, String(obj.apiVersion), String(obj.kind), namespace, name);
      await this.send(what, 'DELETE', path, { propagationPolicy: 'Background' });
    } catch (e) {
      if ((e as KubernetesError).code !== 404) throw e;
    }
  }

  /**
   * A kind's path, from the API server's discovery document of its group version (asked once per client): the
   * resource's plural and whether it lives in a namespace are the cluster's to say.
   */
  private async path(
    what: string,
    apiVersion: string,
    kind: string,
    namespace: string | undefined,
    name?: string,
  ): Promise<string> {
    let known = this.resources.get(apiVersion);
    if (!known) {
      const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
      known = this.send(`discovering ${apiVersion}`, 'GET', base, {}).then((doc) => {
        const byKind = new Map<string, Resource>();
        for (const r of (doc as { resources?: { name: string; kind: string; namespaced: boolean }[] })
          .resources ?? [])
          if (!r.name.includes('/')) byKind.set(r.kind, { base, plural: r.name, namespaced: r.namespaced });
        return byKind;
      });
      // A failure is not remembered: the next call asks again.
      known.catch(() => this.resources.delete(apiVersion));
      this.resources.set(apiVersion, known);
    }
    const r = (await known).get(kind);
    if (!r) throw new Error(`${what}: the cluster serves no kind ${kind} in ${apiVersion}`);
    const ns = r.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
    return `${r.base}${ns}/${r.plural}${name ? `/${encodeURIComponent(name)}` : ''}`;
  }

  /**
   * A GET through the API server's pod proxy (RBAC `pods/proxy` get): what the pod's server answers on `port`
   * at `path`, as text. The reconciler reads the model servers' Prometheus metrics so (docs/workloads.md).
   */
  async podProxyGet(namespace: string, pod: string, port: number, path: string): Promise<string> {
    this.calls++;
    const what = `reading ${path} of pod ${namespace}/${pod}`;
    const at = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod)}:${port}/proxy${path}`;
    return (await this.send(what, 'GET', at, {}, undefined, undefined, 'text')) as string;
  }

  /** One call; a refusal becomes a KubernetesError with the message of the API server's Status. */
  private async send(
    what: string,
    method: string,
    path: string,
    query: Record<string, string | undefined>,
    body?: unknown,
    contentType = 'application/json',
    as: 'json' | 'text' = 'json',
  ): Promise<unknown> {
    // A server URL with a path (a proxy in front of the API server) keeps it: the API paths go beneath it.
    const url = new URL(`${this.server.pathname.replace(/\/$/, '')}${path}`, this.server);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, v);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const once = () => this.request(method, url, payload, contentType);
    const answer = await once()
      .catch((e: { code?: unknown }) => {
        if (typeof e?.code === 'string' && STALE_SOCKET.has(e.code)) return once();
        throw e;
      })
      // A call that got no answer (refused, reset twice, timed out) says which call it was, as a refusal does.
      .catch((e: Error) => {
        throw new Error(`${what}: ${e.message}`, { cause: e });
      });
    if (answer.status >= 200 && answer.status < 300)
      return as === 'text' ? answer.body : answer.body ? JSON.parse(answer.body) : undefined;
    let message = answer.body;
    try {
      const status = JSON.parse(answer.body) as { message?: string };
      if (status?.message) message = status.message;
    } catch {
      // Not a Status object: keep the body as it came.
    }
    throw new KubernetesError(what, answer.status, message);
  }

  private request(
    method: string,
    url: URL,
    payload: string | undefined,
    contentType: string,
  ): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        url,
        {
          method,
          agent: this.agent,
          headers: {
            authorization: `Bearer ${this.access.token}`,
            accept: 'application/json',
            ...(payload === undefined
              ? {}
              : { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
          );
        },
      );
      const timeoutMs = this.access.timeoutMs ?? REQUEST_TIMEOUT_MS;
      req.setTimeout(timeoutMs, () =>
        req.destroy(new Error(`no answer from the Kubernetes API at ${url.host} in ${timeoutMs / 1000} s`)),
      );
      req.on('error', reject);
      req.end(payload);
    });
  }
}

// The Lambda role's credentials (memoized by the provider, refreshed before they expire).
let credentials: ReturnType<typeof defaultProvider> | undefined;
let clientCache: { at: number; cluster: string; client: Promise<ClusterClient> } | undefined;

/**
 * A client for the cluster llmcap runs in, with a fresh token (the Lambda role's credentials, from the
 * default provider chain) whenever the last is older than 10 minutes.
 */
export function clusterClient(now = Date.now()): Promise<ClusterClient> {
  const cluster = config().cluster;
  if (!clientCache || clientCache.cluster !== cluster || now - clientCache.at > CLIENT_MAX_AGE_MS) {
    const client = (async () => {
      const { endpoint, caData } = await clusterEndpoint(cluster);
      const region = config().region;
      credentials ??= defaultProvider();
      const token = await eksToken({ cluster, region, credentials });
      return new ClusterClient({ server: endpoint, caData, token });
    })();
    client.catch(() => {
      if (clientCache?.client === client) clientCache = undefined;
    });
    clientCache = { at: now, cluster, client };
  }
  return clientCache.client;
}

export function resetClusterClient(): void {
  clientCache = undefined;
  endpointCache = undefined;
  credentials = undefined;
}
