import { AppsV1Api, CoreV1Api, KubeConfig, PolicyV1Api } from '@kubernetes/client-node';
import { resetQuotaCache } from '../../../lambdas/aws/quotas';
import type { ControlPlane } from '../../../local/control-plane';
import {
  httpApi,
  namespaceOf,
  reconcileUntil,
  testControlPlane,
  vcpusInUse,
} from '../../helpers/control-plane';
import { decided } from '../../helpers/passes';

/**
 * Issue 20 end to end on the local control plane: an admitted replica becomes a Deployment on its compute's
 * nodes, its pod turns Ready and the model's status counts it `running`; the reconciler reaches the cluster with
 * an EKS token of its own role (no admin), and a replica that cannot run says why in the pod's words.
 */

let cp: ControlPlane;
let core: CoreV1Api;
let apps: AppsV1Api;
let policy: PolicyV1Api;
beforeAll(async () => {
  cp = await testControlPlane('wl');
  // The admin's view, to check what the reconciler did (it has no such rights itself).
  const kc = new KubeConfig();
  kc.loadFromString(cp.sim.kubernetes!.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  policy = kc.makeApiClient(PolicyV1Api);
  const call = httpApi(cp);
  expect((await call('POST', '/v1/computes/gpu-l4-1x/clone', { name: 'l4-wl' })).status).toBe(201);
  expect((await call('POST', '/v1/scopes', { name: 'org:acme' })).status).toBe(201);
  expect((await call('POST', '/v1/scopes', { name: 'team:ml', parent: 'org:acme' })).status).toBe(201);
  NS = await namespaceOf(cp, 'team:ml');
  // Fixed when the scope is made, with a random end, so that it never tells of another scope of its name.
  expect(NS).toMatch(/^llmcap-local-team-ml-[a-z2-7]{5}$/);
});
afterAll(() => cp.stop());

const call = (method: string, path: string, body?: unknown) => httpApi(cp)(method, path, body);
let NS = '';

const chat = (replicas: number) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name: 'chat', owner: 'team:ml' },
  spec: {
    source: 'hf://org/chat-8b',
    engine: 'vllm',
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'l4-wl' }],
    scaling: { min: replicas, max: replicas },
  },
});

const status = async () => (await call('GET', '/v1/models/chat')).body.status;

it('runs an admitted model: Deployment on its compute, pods Ready on its nodes, status.running apart from admitted', async () => {
  const r = await call('POST', '/v1/models', chat(2));
  expect(r.status).toBe(201);
  expect((await decided(() => call('GET', '/v1/models/chat'))).body.status).toMatchObject({
    admitted: 2,
    running: 0,
  });
  await reconcileUntil(cp, async () => (await status()).running === 2);
  const s = await status();
  expect(s).toMatchObject({ admitted: 2, running: 2, podReasons: [] });
  expect(s.pods).toHaveLength(2);

  const d = await apps.readNamespacedDeployment({ namespace: NS, name: 'chat-l4-l4-wl' });
  expect(d.spec?.replicas).toBe(2);
  const c = d.spec!.template.spec!.containers[0]!;
  expect(c.args).toEqual(expect.arrayContaining(['--model', 'org/chat-8b', '--tensor-parallel-size', '1']));
  expect(c.resources?.limits).toMatchObject({ 'nvidia.com/gpu': '1' });
  expect(d.metadata?.managedFields?.map((f) => f.manager)).toContain('llmcap');
  // Every pod sits on a node of its compute.
  const nodes = new Map((await core.listNode()).items.map((n) => [n.metadata!.name!, n.metadata!.labels!]));
  for (const p of s.pods) expect(nodes.get(p.node)?.['llmcap.dev/compute']).toBe('l4-wl');
  expect(await core.readNamespacedService({ namespace: NS, name: 'chat' })).toBeTruthy();
  expect(
    (await policy.readNamespacedPodDisruptionBudget({ namespace: NS, name: 'chat' })).spec?.maxUnavailable,
  ).toBe(1);
});

it('makes no Kubernetes write in a steady pass, and restores its own fields after a hand edit while keeping the others', async () => {
  const steady = await cp.reconcile();
  expect(steady.errors).toEqual([]);
  expect(steady.workloads).toMatchObject({ applied: [], removed: [], storeWrites: 0 });

  // Someone scales it by hand and adds a label of their own.
  await apps.patchNamespacedDeployment(
    {
      namespace: NS,
      name: 'chat-l4-l4-wl',
      body: [
        { op: 'add', path: '/metadata/labels/owner-team', value: 'ml' },
        { op: 'replace', path: '/spec/replicas', value: 5 },
      ],
    },
    undefined,
  );
  const after = await cp.reconcile();
  expect(after.workloads?.applied).toEqual([`Deployment/${NS}/chat-l4-l4-wl`]);
  // Set back because someone else changed a field llmcap sets, which the pass and the model's events say.
  expect(after.workloads?.repaired).toEqual([
    { object: `Deployment/${NS}/chat-l4-l4-wl`, model: 'chat', by: expect.any(String) },
  ]);
  const events = (await call('GET', '/v1/models/chat/events')).body.items;
  expect(events.find((e: any) => e.reason === 'DriftRepaired')).toMatchObject({
    source: 'reconcile',
    message: expect.stringContaining(`Deployment/${NS}/chat-l4-l4-wl had been changed by `),
  });
  const d = await apps.readNamespacedDeployment({ namespace: NS, name: 'chat-l4-l4-wl' });
  expect(d.spec?.replicas).toBe(2);
  expect(d.metadata?.labels?.['owner-team']).toBe('ml');
});

it('shows a replica that cannot schedule with the scheduler’s own message', async () => {
  const s = await status();
  // The account's G vCPUs are all in use, so llmcap cannot add the node that would replace a cordoned one
  // (issue 32 §1): the replacement pod stays where the scheduler left it.
  cp.sim.admin.setQuotas({ 'L-DB2E81BA': await vcpusInUse(cp, /^g/) });
  resetQuotaCache();
  // A person cordons a node and its pod goes: the replacement has nowhere to run.
  const victim = s.pods[0];
  await core.patchNode({
    name: victim.node,
    body: [{ op: 'add', path: '/spec/unschedulable', value: true }],
  });
  await core.deleteNamespacedPod({ namespace: NS, name: victim.name, gracePeriodSeconds: 0 });
  await reconcileUntil(cp, async () => (await status()).podReasons?.length > 0);
  const now = await status();
  expect(now.running).toBe(1);
  expect(now.admitted).toBe(2);
  expect(now.podReasons).toEqual([
    {
      reason: 'Unschedulable',
      message: expect.stringMatching(/^0\/\d+ nodes are available: .*node\(s\) were unschedulable/),
      replicas: 1,
    },
  ]);
  cp.sim.admin.setQuotas({ 'L-DB2E81BA': 768 });
  resetQuotaCache();
});

it('removes what llmcap no longer wants when the model goes', async () => {
  expect((await call('DELETE', '/v1/models/chat')).status).toBe(204);
  await reconcileUntil(
    cp,
    async () => (await apps.listNamespacedDeployment({ namespace: NS })).items.length === 0,
  );
  expect((await core.listNamespacedService({ namespace: NS })).items).toEqual([]);
  expect((await policy.listNamespacedPodDisruptionBudget({ namespace: NS })).items).toEqual([]);
});
