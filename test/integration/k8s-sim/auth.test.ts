import { request } from 'node:https';
import { Sha256 } from '@aws-crypto/sha256-js';
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { cpuGroup, type K8sHarness, k8sHarness, statusOf } from './helpers';

/**
 * EKS authentication as aws-iam-authenticator does it (a presigned STS GetCallerIdentity URL with the cluster
 * name in a signed header), access entries, and RBAC bound to the groups an entry gives.
 */

const RECONCILER = {
  accessKeyId: 'ASIAEXAMPLERECONCILE',
  secretAccessKey: 'reconciler-secret',
  arn: 'arn:aws:sts::000000000000:assumed-role/llmcap-local-reconciler/llmcap-local-reconcile',
};
const STRANGER = {
  accessKeyId: 'AKIAEXAMPLESTRANGER0',
  secretAccessKey: 'stranger-secret',
  arn: 'arn:aws:iam::000000000000:user/stranger',
};
const VIEWER = {
  accessKeyId: 'AKIAEXAMPLEVIEWER000',
  secretAccessKey: 'viewer-secret',
  arn: 'arn:aws:iam::000000000000:user/viewer',
};

/** A `k8s-aws-v1.` token as `aws eks get-token` makes it: the presigned URL, base64url without padding. */
async function eksToken(
  creds: { accessKeyId: string; secretAccessKey: string },
  opts: { cluster: string; at: number; expires?: number; signClusterHeader?: boolean },
): Promise<string> {
  const host = 'sts.us-east-1.amazonaws.com';
  const signer = new SignatureV4({ credentials: creds, region: 'us-east-1', service: 'sts', sha256: Sha256 });
  const signed = await signer.presign(
    {
      method: 'GET',
      protocol: 'https:',
      hostname: host,
      path: '/',
      query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
      headers: { host, ...(opts.signClusterHeader === false ? {} : { 'x-k8s-aws-id': opts.cluster }) },
    },
    { signingDate: new Date(opts.at), expiresIn: opts.expires ?? 60 },
  );
  const qs = new URLSearchParams(signed.query as Record<string, string>).toString();
  return `k8s-aws-v1.${Buffer.from(`https://${host}/?${qs}`).toString('base64url')}`;
}

let h: K8sHarness;
beforeAll(async () => {
  h = await k8sHarness({
    kubernetes: {
      identities: [RECONCILER, STRANGER, VIEWER],
      accessEntries: [
        {
          principalArn: 'arn:aws:iam::000000000000:role/llmcap-local-reconciler',
          kubernetesGroups: ['llmcap:reconciler'],
        },
        {
          principalArn: VIEWER.arn,
          accessPolicies: [
            {
              policyArn: 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy',
              accessScope: { type: 'namespace', namespaces: ['team-a'] },
            },
          ],
        },
      ],
    },
  });
  await h.nodegroup('cpu', cpuGroup('cpu-small', 1));
  await h.core.createNamespace({ body: { metadata: { name: 'team-a' } } });
  // The Kubernetes side of the reconciler's access entry: read nodes; manage its namespace.
  const rbac = h.kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRole({
    body: {
      metadata: { name: 'llmcap-node-reader' },
      rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] }],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: 'llmcap-node-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'llmcap-node-reader' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'llmcap:reconciler' }],
    },
  });
  await rbac.createNamespacedRole({
    namespace: 'team-a',
    body: {
      metadata: { name: 'llmcap' },
      rules: [
        {
          apiGroups: ['apps'],
          resources: ['deployments'],
          verbs: ['get', 'list', 'create', 'patch', 'delete'],
        },
        { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
        { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: 'team-a',
    body: {
      metadata: { name: 'llmcap' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'llmcap' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'llmcap:reconciler' }],
    },
  });
});
afterAll(async () => {
  await h.close();
});

function clientWith(token: string): CoreV1Api {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: h.sim.kubernetes!.endpoint, caData: h.sim.kubernetes!.caData }],
    users: [{ name: 'u', token }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc.makeApiClient(CoreV1Api);
}

/** A request verified against the cluster's CA (DescribeCluster's certificateAuthority.data). */
function raw(path: string, token: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${h.sim.kubernetes!.endpoint}${path}`,
      {
        ca: Buffer.from(h.sim.kubernetes!.caData, 'base64'),
        headers: token ? { authorization: `Bearer ${token}` } : {},
      },
      (res) => {
        let text = '';
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const USER = 'arn:aws:sts::000000000000:assumed-role/llmcap-local-reconciler/llmcap-local-reconcile';

it('maps the reconciler role to its access entry, and RBAC allows it nodes and its namespace only', async () => {
  const api = clientWith(await eksToken(RECONCILER, { cluster: 'llmcap-local', at: h.clock.now() }));
  expect((await api.listNode()).items).toHaveLength(1);
  expect((await api.listNamespacedPod({ namespace: 'team-a' })).items).toEqual([]);
  const other = await statusOf(api.listNamespacedPod({ namespace: 'kube-system' }));
  expect(other).toEqual({
    code: 403,
    body: expect.objectContaining({
      reason: 'Forbidden',
      message: `pods is forbidden: User "${USER}" cannot list resource "pods" in API group "" in the namespace "kube-system"`,
    }),
  });
  const node = (await api.listNode()).items[0]!.metadata!.name!;
  const cordon = await statusOf(api.patchNode({ name: node, body: { spec: { unschedulable: true } } }));
  expect(cordon.body.message).toBe(
    `nodes "${node}" is forbidden: User "${USER}" cannot patch resource "nodes" in API group "" at the cluster scope`,
  );
});

it('applies an access policy in its namespaces only', async () => {
  const api = clientWith(await eksToken(VIEWER, { cluster: 'llmcap-local', at: h.clock.now() }));
  await api.listNamespacedPod({ namespace: 'team-a' });
  expect((await statusOf(api.listNamespacedPod({ namespace: 'default' }))).code).toBe(403);
  expect(
    (
      await statusOf(
        api.createNamespacedService({
          namespace: 'team-a',
          body: { metadata: { name: 's' }, spec: { ports: [{ port: 80 }] } },
        }),
      )
    ).code,
  ).toBe(403);
});

describe('refuses with 401 Unauthorized', () => {
  const refused = async (token: string) => {
    expect((await statusOf(clientWith(token).listNode())).code).toBe(401);
    expect(await raw('/api/v1/nodes', token)).toEqual({
      status: 401,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'Unauthorized',
        reason: 'Unauthorized',
        code: 401,
      },
    });
  };

  it('a token past its X-Amz-Expires on the simulator clock, but not before', async () => {
    const token = await eksToken(RECONCILER, { cluster: 'llmcap-local', at: h.clock.now(), expires: 60 });
    await clientWith(token).listNode();
    h.advance(61_000);
    await refused(token);
  });

  it('a token for another cluster (its x-k8s-aws-id is signed)', async () => {
    await refused(await eksToken(RECONCILER, { cluster: 'prod', at: h.clock.now() }));
  });

  it('a token that does not sign x-k8s-aws-id, or asks for more than 15 minutes', async () => {
    await refused(
      await eksToken(RECONCILER, { cluster: 'llmcap-local', at: h.clock.now(), signClusterHeader: false }),
    );
    await refused(
      await eksToken(RECONCILER, { cluster: 'llmcap-local', at: h.clock.now(), expires: 16 * 60 }),
    );
  });

  it('a malformed token, a wrong secret, an unknown key, and a principal without an access entry', async () => {
    await refused('k8s-aws-v1.not*base64');
    await refused(
      `k8s-aws-v1.${Buffer.from('https://evil.example.com/?Action=GetCallerIdentity').toString('base64url')}`,
    );
    await refused(
      await eksToken(
        { ...RECONCILER, secretAccessKey: 'guess' },
        { cluster: 'llmcap-local', at: h.clock.now() },
      ),
    );
    await refused(
      await eksToken(
        { accessKeyId: 'AKIAUNKNOWN000000000', secretAccessKey: 'x' },
        { cluster: 'llmcap-local', at: h.clock.now() },
      ),
    );
    await refused(await eksToken(STRANGER, { cluster: 'llmcap-local', at: h.clock.now() }));
    await refused('');
  });
});

it('shows kubectl the 401 as EKS does, while /version stays public', async () => {
  const denied = await h.kubectl('--token=k8s-aws-v1.bogus', 'get', 'nodes');
  expect(denied.code).toBe(1);
  expect(denied.stderr).toContain('error: You must be logged in to the server');
  const version = await h.kubectl('--token=k8s-aws-v1.bogus', 'version', '-o', 'json');
  expect(JSON.parse(version.stdout).serverVersion.gitVersion).toMatch(/^v1\.33\.0-eks-/);
});
