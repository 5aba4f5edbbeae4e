import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { resetQuotaCache } from '../../../lambdas/aws/quotas';
import type { ControlPlane } from '../../../local/control-plane';
import { createTenancy } from '../../../soak/lib/fixture';
import {
  httpApi,
  namespaceOf,
  reconcileUntil,
  TWO_TENANTS,
  testControlPlane,
  vcpusInUse,
} from '../../helpers/control-plane';
import { llmcap } from '../cli/run';

/**
 * Issue 20 §2 end to end on the local control plane, through the CLI as a process: admitted replicas become
 * Ready pods, and `llmcap get pods` lists them across models on the nodes the simulated cluster put them on;
 * a pod that cannot schedule shows why in `get pods` and `describe model`; a tenant lists only its own
 * models' pods. The API reads what the reconciler stored: it has no access to the cluster.
 */

let cp: ControlPlane;
let core: CoreV1Api;
const ML_VIEWER = 'arn:aws:iam::111111111111:role/ml-viewer';
const OPS_VIEWER = 'arn:aws:iam::222222222222:role/ops-viewer';

const call = (method: string, path: string, body?: unknown) => httpApi(cp)(method, path, body);
const cli = (args: string[], as?: string) =>
  llmcap([...args, ...(as ? ['--as', as] : [])], { endpoint: cp.apiUrl });

const model = (name: string, owner: string, replicas: number) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name, owner },
  spec: {
    source: `hf://org/${name}-8b`,
    engine: 'vllm',
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'l4-pods' }],
    scaling: { min: replicas, max: replicas },
  },
});

const running = async (name: string) => (await call('GET', `/v1/models/${name}`)).body.status.running;

beforeAll(async () => {
  cp = await testControlPlane('pods');
  const kc = new KubeConfig();
  kc.loadFromString(cp.sim.kubernetes!.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  expect((await call('POST', '/v1/computes/gpu-l4-1x/clone', { name: 'l4-pods' })).status).toBe(201);
  await createTenancy(call, TWO_TENANTS, [
    ['team:ml', ML_VIEWER, 'viewer'],
    ['team:ops', OPS_VIEWER, 'viewer'],
  ]);
  expect((await call('POST', '/v1/models', model('chat', 'team:ml', 2))).status).toBe(201);
  expect((await call('POST', '/v1/models', model('ops-bot', 'team:ops', 1))).status).toBe(201);
  await reconcileUntil(cp, async () => (await running('chat')) === 2 && (await running('ops-bot')) === 1);
});
afterAll(() => cp.stop());

/** A table's rows as objects keyed by its header (columns are separated by runs of spaces). */
function rows(table: string): Record<string, string>[] {
  const [head, ...lines] = table.trimEnd().split('\n');
  const cols = head!.split(/\s{2,}/);
  return lines.map((l) => Object.fromEntries(l.split(/\s{2,}/).map((v, i) => [cols[i], v])));
}

it('lists the Ready pods of every model on the nodes they run on', async () => {
  const r = await cli(['get', 'pods']);
  expect(r).toMatchObject({ code: 0, stderr: '' });
  // The declared (shared) models of config/catalog.yaml run too, on the built-in computes.
  const all = rows(r.stdout);
  const listed = all.filter((p) => p.COMPUTE === 'l4-pods');
  expect(listed.map((p) => [p.MODEL, p.READY, p.STATUS])).toEqual([
    ['chat', '1/1', 'Running'],
    ['chat', '1/1', 'Running'],
    ['ops-bot', '1/1', 'Running'],
  ]);
  // Each on a node of its compute, as the cluster itself says, and each on its own (one GPU per node).
  const nodes = new Map((await core.listNode()).items.map((n) => [n.metadata!.name!, n.metadata!.labels!]));
  for (const p of listed) expect(nodes.get(p.NODE!)?.['llmcap.dev/compute']).toBe('l4-pods');
  expect(new Set(listed.map((p) => p.NODE)).size).toBe(3);
  const pods = (await core.listPodForAllNamespaces()).items;
  expect(all.map((p) => p.NAME).sort()).toEqual(pods.map((p) => p.metadata!.name).sort());

  const json = JSON.parse((await cli(['get', 'pods', '--model', 'chat', '-o', 'json'])).stdout);
  expect(json.items).toHaveLength(2);
  for (const p of json.items) {
    expect(p).toMatchObject({
      model: 'chat',
      namespace: await namespaceOf(cp, 'team:ml'),
      profile: 'l4',
      compute: 'l4-pods',
      phase: 'Running',
      ready: true,
      restarts: 0,
    });
    expect(Date.parse(p.observedAt)).not.toBeNaN();
    expect(Date.parse(p.createdAt)).not.toBeNaN();
  }
  const wide = rows((await cli(['get', 'pods', '--compute', 'l4-pods', '-o', 'wide'])).stdout);
  expect(wide[0]).toMatchObject({ NAMESPACE: await namespaceOf(cp, 'team:ml'), PROFILE: 'l4' });
  expect(wide[0]!.OBSERVED).toMatch(/^\d+[smhd] ago$/);
  // By name, as kubectl get pod NAME; a name llmcap has not seen is not found (exit 4).
  const one = await cli(['get', 'pods', json.items[0].name, 'nope']);
  expect(rows(one.stdout).map((p) => p.NAME)).toEqual([json.items[0].name]);
  expect(one).toMatchObject({ code: 4, stderr: expect.stringContaining('pod/nope: not found') });
  const described = (await cli(['describe', 'model', 'chat'])).stdout;
  expect(described).toMatch(/^Pods \(2 running of 2 admitted; observed \d+[smhd] ago\):$/m);
  for (const p of json.items) expect(described).toMatch(new RegExp(`^  ${p.name}\\s+${p.node}\\s`, 'm'));
});

it("shows a tenant only its own models' pods", async () => {
  const ml = rows((await cli(['get', 'pods', '--compute', 'l4-pods'], ML_VIEWER)).stdout);
  expect(ml.map((p) => p.MODEL)).toEqual(['chat', 'chat']);
  const ops = await cli(['get', 'pods', '-o', 'json'], OPS_VIEWER);
  const opsModels = JSON.parse(ops.stdout).items.map((p: { model: string }) => p.model);
  expect(opsModels).toContain('ops-bot');
  // Shared models' pods are everyone's to see; team:ml's are not team:ops's.
  expect(opsModels).not.toContain('chat');
  expect(ops.stdout).not.toContain('team-ml');
  // Asking for the other tenant's model by name reads as if it did not exist.
  const other = await cli(['get', 'pods', '--model', 'chat'], OPS_VIEWER);
  expect(other.code).toBe(4);
  expect(other.stderr).toContain('model chat does not exist');
});

it('says the pods were observed by the latest pass, even one that rewrote nothing', async () => {
  const observed = async () => ({
    pod: (await call('GET', '/v1/pods?model=chat')).body.items[0].observedAt,
    model: (await call('GET', '/v1/models/chat')).body.status.observedAt,
  });
  let before = await observed();
  for (let i = 0; i < 10; i++) {
    const pass = await cp.reconcile();
    const after = await observed();
    if (pass.workloads?.storeWrites === 0) {
      expect(Date.parse(after.pod)).toBeGreaterThan(Date.parse(before.pod));
      expect(after).toEqual({ pod: pass.startedAt, model: pass.startedAt });
      return;
    }
    before = after;
  }
  throw new Error('no steady pass in 10');
});

it('shows a pod that cannot schedule with the scheduler’s message in get pods and describe model', async () => {
  const chat = JSON.parse((await cli(['get', 'pods', '--model', 'chat', '-o', 'json'])).stdout).items;
  // The account's G vCPUs are all in use, so llmcap cannot add the node that would replace a cordoned one
  // (issue 32 §1): the replacement pod stays where the scheduler left it.
  cp.sim.admin.setQuotas({ 'L-DB2E81BA': await vcpusInUse(cp, /^g/) });
  resetQuotaCache();
  // A person cordons a node and its pod goes: the replacement has nowhere to run.
  const victim = chat[0];
  await core.patchNode({
    name: victim.node,
    body: [{ op: 'add', path: '/spec/unschedulable', value: true }],
  });
  await core.deleteNamespacedPod({ namespace: victim.namespace, name: victim.name, gracePeriodSeconds: 0 });
  await reconcileUntil(cp, async () => (await running('chat')) === 1);

  const r = await cli(['get', 'pods', '--ready', 'false', '-o', 'wide']);
  expect(r.code).toBe(0);
  const stuck = rows(r.stdout);
  expect(stuck).toEqual([
    expect.objectContaining({
      MODEL: 'chat',
      NODE: '<none>',
      READY: '0/1',
      STATUS: 'Unschedulable',
      MESSAGE: expect.stringMatching(/^0\/\d+ nodes are available: .*node\(s\) were unschedulable/),
    }),
  ]);
  const d = (await cli(['describe', 'model', 'chat'], ML_VIEWER)).stdout;
  expect(d).toMatch(/^Pods \(1 running of 2 admitted; observed \d+[smhd] ago\):$/m);
  expect(d).toMatch(
    new RegExp(`^  ${stuck[0]!.NAME}\\s+<none>\\s+l4-pods\\s+l4\\s+0/1\\s+Unschedulable`, 'm'),
  );
  expect(d).toMatch(/^Not ready:\n {2}1 pod\(s\) Unschedulable: 0\/\d+ nodes are available: /m);
  cp.sim.admin.setQuotas({ 'L-DB2E81BA': 768 });
  resetQuotaCache();
});
