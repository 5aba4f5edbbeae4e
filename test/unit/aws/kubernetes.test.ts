import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { ClusterClient } from '../../../lambdas/aws/kubernetes';
import { clusterTls } from '../../../local/k8s-sim/tls';

/**
 * The reconciler's Kubernetes client against an API server that misbehaves in ways the simulator does not: one
 * that never answers, one that answers with a body that is not a Status, one that serves no such kind. What the
 * pass records is what on-call reads, so each error says which call failed and why.
 */

const tls = clusterTls();
let server: Server;
let answer: (path: string) => { status: number; body: string } | 'hang';
let client: ClusterClient;

beforeAll(async () => {
  server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    const a = answer(req.url ?? '');
    if (a === 'hang') return;
    res.writeHead(a.status, { 'content-type': 'application/json' });
    res.end(a.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  client = new ClusterClient({
    server: `https://127.0.0.1:${port}`,
    caData: Buffer.from(tls.caPem).toString('base64'),
    token: 't',
    timeoutMs: 200,
  });
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const coreV1 = JSON.stringify({
  kind: 'APIResourceList',
  groupVersion: 'v1',
  resources: [
    { name: 'pods', kind: 'Pod', namespaced: true },
    { name: 'pods/eviction', kind: 'Eviction', namespaced: true },
    { name: 'nodes', kind: 'Node', namespaced: false },
  ],
});

it('gives up on an API server that does not answer, and says which call', async () => {
  answer = () => 'hang';
  await expect(client.evict('ns', 'p')).rejects.toThrow(
    /^evicting pod ns\/p: no answer from the Kubernetes API at 127\.0\.0\.1:\d+ in 0\.2 s$/,
  );
});

it("finds a kind's path by discovery, and names a kind the cluster does not serve", async () => {
  const asked: string[] = [];
  answer = (path) => {
    asked.push(path);
    return path === '/api/v1' ? { status: 200, body: coreV1 } : { status: 200, body: '{"items":[]}' };
  };
  expect(await client.list('v1', 'Node', 'ignored-for-a-cluster-scoped-kind')).toEqual([]);
  expect(await client.list('v1', 'Pod', 'team-a', { labelSelector: 'app=x' })).toEqual([]);
  await expect(client.list('v1', 'Widget', undefined)).rejects.toThrow(
    'listing Widget: the cluster serves no kind Widget in v1',
  );
  // Discovery once per group version, then the resources' own paths.
  expect(asked).toEqual([
    '/api/v1',
    '/api/v1/nodes?limit=500',
    '/api/v1/namespaces/team-a/pods?labelSelector=app%3Dx&limit=500',
  ]);
});

it("keeps the API server's own words: a Status's message, or the body when it is not one", async () => {
  answer = (path) =>
    path === '/api/v1'
      ? { status: 200, body: coreV1 }
      : path.startsWith('/api/v1/nodes')
        ? { status: 403, body: JSON.stringify({ kind: 'Status', message: 'nodes is forbidden', code: 403 }) }
        : { status: 502, body: 'upstream connect error' };
  await expect(client.cordon('n1')).rejects.toThrow('patching Node n1: nodes is forbidden (HTTP 403)');
  await expect(client.list('v1', 'Pod', 'a')).rejects.toThrow(
    'listing Pod in a: upstream connect error (HTTP 502)',
  );
});

it('keeps a path the server URL has, as kubectl does behind a proxy', async () => {
  const asked: string[] = [];
  answer = (path) => {
    asked.push(path);
    return path.endsWith('/api/v1') ? { status: 200, body: coreV1 } : { status: 200, body: '{"items":[]}' };
  };
  const { port } = server.address() as AddressInfo;
  const proxied = new ClusterClient({
    server: `https://127.0.0.1:${port}/k8s/clusters/c-1/`,
    caData: Buffer.from(tls.caPem).toString('base64'),
    token: 't',
  });
  await proxied.list('v1', 'Node', undefined);
  expect(asked).toEqual(['/k8s/clusters/c-1/api/v1', '/k8s/clusters/c-1/api/v1/nodes?limit=500']);
});
