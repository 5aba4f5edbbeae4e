import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { stringify as toYaml } from 'yaml';
import type { Simulator } from '../cloud-sim/state';
import type { AccessEntry, AuthConfig, Identity } from './auth';
import { type AppStartRule, Cluster } from './cluster';
import { decodeProtobufBody, PROTOBUF, UnsupportedProtobuf } from './protobuf';
import { type AuditEvent, handle } from './server';
import { clusterTls } from './tls';
import type { TrafficConfig } from './traffic';

export type { AccessEntry, AccessPolicyAssociation, Identity } from './auth';
export type { AppStartRule } from './cluster';
export type { AuditEvent } from './server';
export type { TrafficConfig } from './traffic';

/**
 * The simulated cluster's API server on HTTPS, for the cloud simulator's EKS cluster: its endpoint and CA are
 * what DescribeCluster returns, and a kubeconfig for it works with kubectl and @kubernetes/client-node as they
 * are. See docs/k8s-sim.md.
 */

export interface K8sSimConfig {
  /** Port on the host (0 = any free port, the default). */
  port?: number;
  /** The bearer token of the local cluster admin (system:masters); default a random one per start. */
  adminToken?: string;
  /** The credentials STS would know here, and the ARN it would answer for each. */
  identities?: Identity[];
  /** EKS access entries: which IAM principals are which Kubernetes users and groups. */
  accessEntries?: AccessEntry[];
  /** How long the servers of matching images take to answer their probes. */
  appStart?: AppStartRule[];
  /** Requests per second per model over time, which the model servers' /metrics report (docs/k8s-sim.md). */
  traffic?: TrafficConfig[];
}

export interface K8sSim {
  /** `https://127.0.0.1:<port>`, as DescribeCluster's endpoint. */
  endpoint: string;
  /** Base64 of the CA's PEM, as DescribeCluster's certificateAuthority.data. */
  caData: string;
  adminToken: string;
  cluster: Cluster;
  /** A kubeconfig (YAML) for the admin token, or for the given token. */
  kubeconfig(opts?: { token?: string; user?: string }): string;
  writeKubeconfig(path: string, opts?: { token?: string; user?: string }): void;
  /** Adds an identity and its access entry (e.g. a role the Lambda runs as) at run time. */
  allow(identity: Identity, entry: AccessEntry): void;
  /** Hears every resource request once answered (the audit log); returns the function that stops it. */
  onRequest(listener: (e: AuditEvent) => void): () => void;
  /** TLS handshakes served so far: one per connection, so a client that pools its connections makes few. */
  handshakes(): number;
  stop(): Promise<void>;
}

export async function startK8sSim(
  sim: Simulator,
  cfg: K8sSimConfig & { host?: string; log?: (line: string) => void } = {},
): Promise<K8sSim> {
  const tls = clusterTls();
  const cluster = new Cluster(sim, { appStart: cfg.appStart ?? [], traffic: cfg.traffic ?? [] });
  const adminToken = cfg.adminToken ?? `llmcap-local-admin.${randomBytes(16).toString('hex')}`;
  const auth: AuthConfig = {
    staticTokens: new Map([[adminToken, { name: 'kubernetes-admin', groups: ['system:masters'] }]]),
    identities: [...(cfg.identities ?? [])],
    accessEntries: [...(cfg.accessEntries ?? [])],
  };
  const host = cfg.host ?? '127.0.0.1';
  const log = cfg.log ?? (() => {});
  let address = '';
  const auditors = new Set<(e: AuditEvent) => void>();
  const audit = (e: AuditEvent) => {
    for (const a of auditors) a(e);
  };
  const server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let raw: string;
      try {
        raw = bodyOf(req, Buffer.concat(chunks));
      } catch (e) {
        if (!(e instanceof UnsupportedProtobuf)) throw e;
        res.writeHead(415, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            message: `${e.message}; send application/json`,
            reason: 'UnsupportedMediaType',
            code: 415,
          }),
        );
        return;
      }
      handle(
        { cluster, auth, clusterName: sim.opts.clusterName, serverAddress: () => address, log, audit },
        req,
        res,
        raw,
      ).catch((e: Error) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            message: e.message,
            code: 500,
          }),
        );
      });
    });
  });
  server.keepAliveTimeout = 65_000;
  // The simulator runs in its clients' process: while it works through simulated time it reads no socket, and
  // Node's request timeouts would then reset connections whose request was waiting on it all along.
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  let handshakes = 0;
  server.on('secureConnection', () => handshakes++);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(cfg.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  address = `${host}:${port}`;
  const endpoint = `https://${host}:${port}`;
  const caData = Buffer.from(tls.caPem).toString('base64');
  const clusterName = sim.opts.clusterName;
  const kubeconfig = (opts: { token?: string; user?: string } = {}) => {
    const user = opts.user ?? (opts.token ? 'user' : 'admin');
    const context = `${user}@${clusterName}`;
    return toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: clusterName, cluster: { server: endpoint, 'certificate-authority-data': caData } }],
      users: [{ name: user, user: { token: opts.token ?? adminToken } }],
      contexts: [{ name: context, context: { cluster: clusterName, user } }],
      'current-context': context,
      preferences: {},
    });
  };
  sim.clusterAccess = { endpoint, caData };
  return {
    endpoint,
    caData,
    adminToken,
    cluster,
    kubeconfig,
    writeKubeconfig(path, opts) {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, kubeconfig(opts), { mode: 0o600 });
    },
    allow(identity, entry) {
      auth.identities.push(identity);
      auth.accessEntries.push(entry);
    },
    handshakes: () => handshakes,
    onRequest(listener) {
      auditors.add(listener);
      return () => auditors.delete(listener);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The request body as text; a protobuf body (DeleteOptions, from kubectl) as its JSON form, the header with it. */
function bodyOf(req: IncomingMessage, body: Buffer): string {
  if (!(req.headers['content-type'] ?? '').startsWith(PROTOBUF)) return body.toString('utf8');
  const json = JSON.stringify(decodeProtobufBody(body));
  req.headers['content-type'] = 'application/json';
  return json;
}
