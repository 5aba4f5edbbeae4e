import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { ClusterClient, eksToken } from '../../../lambdas/aws/kubernetes';
import { reconcilerAccess } from '../../../lambdas/domain/workloads';
import { cpuGroup, type K8sHarness, k8sHarness, statusOf } from './helpers';

/**
 * The reconciler's access as docs/workloads.md grants it: the stack's access entry (Edit in llmcap-<stage>-*,
 * group llmcap:reconciler) and the RBAC file a cluster admin applies with the command the docs show. The token
 * is the adapter's own.
 */

const ROLE = 'arn:aws:iam::000000000000:role/llmcap-dev-reconciler';
const CREDS = { accessKeyId: 'ASIARECONCILERDEV000', secretAccessKey: 'reconciler-dev-secret' };

let h: K8sHarness;
let core: CoreV1Api;
let apps: AppsV1Api;
let client: ClusterClient;
beforeAll(async () => {
  h = await k8sHarness({
    kubernetes: {
      identities: [{ ...CREDS, arn: 'arn:aws:sts::000000000000:assumed-role/llmcap-dev-reconciler/fn' }],
      accessEntries: [{ principalArn: ROLE, ...reconcilerAccess('dev') }],
    },
  });
  await h.nodegroup('cpu', cpuGroup('cpu-small', 1));
  const token = await eksToken({
    cluster: 'llmcap-local',
    region: 'us-east-1',
    credentials: CREDS,
    now: new Date(h.clock.now()),
  });
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { name: 'c', server: h.sim.kubernetes!.endpoint, caData: h.sim.kubernetes!.caData, skipTLSVerify: false },
    { name: 'reconciler', token },
  );
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  client = new ClusterClient({ server: h.sim.kubernetes!.endpoint, caData: h.sim.kubernetes!.caData, token });
});
afterAll(() => h.close());

it('refuses the reconciler nodes until a cluster admin applies the RBAC file, as docs/workloads.md says', async () => {
  expect((await statusOf(core.listNode())).code).toBe(403);
  // What a pass records in its errors: the API server's words, not client-node's dump of headers.
  await expect(client.list('v1', 'Node', undefined)).rejects.toThrow(
    /^listing Node: nodes is forbidden: User "arn:aws:sts::000000000000:assumed-role\/llmcap-dev-reconciler\/fn" cannot list resource "nodes" .* \(HTTP 403\)$/,
  );
  const out = await h.kubectl('apply', '-f', 'config/kubernetes/reconciler-rbac.yaml');
  expect(out.stderr).toBe('');
  expect(out.stdout).toMatch(
    /clusterrole.rbac.authorization.k8s.io\/llmcap-reconciler (created|serverside-applied)/,
  );
  expect((await core.listNode()).items).toHaveLength(1);
});

it("lets it create its stage's namespaces and deploy there, and nothing in anyone else's", async () => {
  await core.createNamespace({ body: { metadata: { name: 'llmcap-dev-team-ml' } } });
  const body = {
    metadata: { name: 'x' },
    spec: {
      selector: { matchLabels: { a: 'x' } },
      template: { metadata: { labels: { a: 'x' } }, spec: { containers: [{ name: 's', image: 'nginx:1' }] } },
    },
  };
  await apps.createNamespacedDeployment({ namespace: 'llmcap-dev-team-ml', body });
  expect((await statusOf(apps.createNamespacedDeployment({ namespace: 'default', body }))).code).toBe(403);
  // Another stage's namespaces are outside llmcap-dev-*.
  await h.kubectl('create', 'namespace', 'llmcap-prod-team-ml');
  expect((await statusOf(core.listNamespacedPod({ namespace: 'llmcap-prod-team-ml' }))).code).toBe(403);
  expect((await statusOf(core.deleteNamespace({ name: 'llmcap-dev-team-ml' }))).code).toBe(403);
});
