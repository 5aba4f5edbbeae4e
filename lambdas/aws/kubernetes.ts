import { Agent } from 'node:https';
import { Sha256 } from '@aws-crypto/sha256-js';
import { DescribeClusterCommand } from '@aws-sdk/client-eks';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import {
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type RequestContext,
} from '@kubernetes/client-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { FIELD_MANAGER, type K8sObject } from '../domain/workloads';
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

export interface ListedObject extends KubernetesObject {
  metadata: NonNullable<KubernetesObject['metadata']> & { name: string };
  [field: string]: unknown;
}

/** A refused Kubernetes call, in the API server's words (client-node's error carries headers and the raw body). */
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

/** A pooled connection the server closed while idle fails at once; every call here is safe to send again. */
const STALE_SOCKET = new Set(['ECONNRESET', 'EPIPE']);

async function call<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn().catch((e: { code?: unknown }) => {
      if (typeof e?.code === 'string' && STALE_SOCKET.has(e.code)) return fn();
      throw e;
    });
  } catch (e) {
    const err = e as { code?: unknown; body?: unknown };
    if (typeof err.code !== 'number') throw e;
    let message = String(err.body ?? (e as Error).message);
    try {
      const status = (typeof err.body === 'string' ? JSON.parse(err.body) : err.body) as { message?: string };
      if (status?.message) message = status.message;
    } catch {
      // Not a Status object: keep the body as it came.
    }
    throw new KubernetesError(what, err.code, message);
  }
}

/** Idle connections close after this, so one never outlives a pass into a frozen Lambda container. */
const IDLE_SOCKET_MS = 5_000;

/**
 * A kubeconfig whose calls share one keep-alive connection pool. client-node makes a new https.Agent per request,
 * so every call paid a TLS handshake (and a fresh CA context): at 400 lists a pass, most of the pass's CPU.
 */
export class PooledKubeConfig extends KubeConfig {
  private agent: Agent | undefined;
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const made = context.getAgent();
    if (!(made instanceof Agent)) return;
    this.agent ??= new Agent({ ...made.options, keepAlive: true, timeout: IDLE_SOCKET_MS });
    context.setAgent(this.agent);
  }
}

const described = (kind: string, namespace: string | undefined, name?: string) =>
  `${kind} ${namespace ? `${namespace}/` : ''}${name ?? ''}`.trim();

/** The field manager of the drain's merge patches (cordons, surges, deletion costs). */
export const DRAIN_MANAGER = 'llmcap-drain';

/** The calls the reconciler makes, counted so that a pass can report (and the bench measure) them. */
export class ClusterClient {
  calls = 0;
  private readonly api: KubernetesObjectApi;
  private readonly core: CoreV1Api;
  constructor(kc: KubeConfig) {
    this.api = KubernetesObjectApi.makeApiClient(kc);
    this.core = kc.makeApiClient(CoreV1Api);
  }

  /** Server-side apply as llmcap, forced: our fields are restored, other managers' fields are left alone. */
  async apply(obj: K8sObject): Promise<void> {
    this.calls++;
    await call(`applying ${described(obj.kind, obj.metadata.namespace, obj.metadata.name)}`, () =>
      this.api.patch(
        obj as KubernetesObject,
        undefined,
        undefined,
        FIELD_MANAGER,
        true,
        PatchStrategy.ServerSideApply,
      ),
    );
  }

  async list(
    apiVersion: string,
    kind: string,
    namespace: string | undefined,
    opts: { labelSelector?: string; fieldSelector?: string } = {},
  ): Promise<ListedObject[]> {
    const items: ListedObject[] = [];
    let next: string | undefined;
    do {
      this.calls++;
      const token = next;
      const page = await call(`listing ${described(kind, namespace)}`, () =>
        this.api.list(
          apiVersion,
          kind,
          namespace,
          undefined,
          undefined,
          undefined,
          opts.fieldSelector,
          opts.labelSelector,
          500,
          token,
        ),
      );
      items.push(...(page.items as ListedObject[]));
      next = page.metadata?._continue || undefined;
    } while (next);
    return items;
  }

  /** `kubectl cordon`: no new pod is scheduled on the node. */
  async cordon(node: string): Promise<void> {
    await this.patch('v1', 'Node', undefined, node, { spec: { unschedulable: true } });
  }

  /**
   * A JSON merge patch of a few fields (`null` removes one), as DRAIN_MANAGER: the drain's surge replicas and
   * annotations, a pod's deletion cost. Server-side apply as llmcap would drop every other field it owns.
   */
  async patch(
    apiVersion: string,
    kind: string,
    namespace: string | undefined,
    name: string,
    fields: Record<string, unknown>,
  ): Promise<void> {
    this.calls++;
    await call(`patching ${described(kind, namespace, name)}`, () =>
      this.api.patch(
        {
          ...fields,
          apiVersion,
          kind,
          metadata: {
            ...(fields.metadata as Record<string, unknown> | undefined),
            name,
            ...(namespace ? { namespace } : {}),
          },
        },
        undefined,
        undefined,
        DRAIN_MANAGER,
        undefined,
        PatchStrategy.MergePatch,
      ),
    );
  }

  /**
   * The Eviction API, which honours PodDisruptionBudgets: false when the budget refuses it for now (429), so the
   * drain waits for the next pass.
   */
  async evict(namespace: string, name: string): Promise<boolean> {
    this.calls++;
    try {
      await call(`evicting pod ${namespace}/${name}`, () =>
        this.core.createNamespacedPodEviction({
          name,
          namespace,
          body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } },
        }),
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
    try {
      await call(`deleting ${described(String(obj.kind), obj.metadata.namespace, obj.metadata.name)}`, () =>
        this.api.delete(
          {
            apiVersion: obj.apiVersion,
            kind: obj.kind,
            metadata: { name: obj.metadata.name, namespace: obj.metadata.namespace },
          },
          undefined,
          undefined,
          undefined,
          undefined,
          'Background',
        ),
      );
    } catch (e) {
      if ((e as KubernetesError).code !== 404) throw e;
    }
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
      const kc = new PooledKubeConfig();
      kc.loadFromClusterAndUser(
        { name: cluster, server: endpoint, caData, skipTLSVerify: false },
        { name: 'llmcap', token },
      );
      return new ClusterClient(kc);
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
