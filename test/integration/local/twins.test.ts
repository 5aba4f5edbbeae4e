import { DescribeNodegroupCommand } from '@aws-sdk/client-eks';
import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { eksClient } from '../../../lambdas/shared/clients';
import type { ControlPlane } from '../../../local/control-plane';
import { createTenancy } from '../../../soak/lib/fixture';
import {
  httpApi,
  namespaceOf,
  reconcileUntil,
  TWO_TENANTS,
  testControlPlane,
} from '../../helpers/control-plane';
import { llmcap } from '../cli/run';

/**
 * Names per owner end to end (issue 17 §3): two tenants each hold a compute `l4-pool` and a model `chat`
 * pinned to it. One reconcile loop makes two node groups in the simulated EKS and runs each tenant's model on
 * its own nodes, in its own namespace; each tenant's CLI shows only its own, by the plain names.
 */

let cp: ControlPlane;
let core: CoreV1Api;
let apps: AppsV1Api;
const ML_EDITOR = 'arn:aws:iam::111111111111:role/ml-dev';
const OPS_EDITOR = 'arn:aws:iam::222222222222:role/ops-dev';

const call = (method: string, path: string, body?: unknown, as?: string) =>
  httpApi(cp)(method, path, body, as);
const cli = (args: string[], as?: string) =>
  llmcap([...args, ...(as ? ['--as', as] : [])], { endpoint: cp.apiUrl });

const model = (owner: string) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name: 'chat', owner },
  spec: {
    source: 'hf://org/chat-8b',
    engine: 'vllm',
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'l4-pool' }],
    scaling: { min: 1, max: 1 },
  },
});

const running = async (owner: string) =>
  (await call('GET', `/v1/models/chat?owner=${owner}`)).body.status?.running;

beforeAll(async () => {
  cp = await testControlPlane('twins');
  const kc = new KubeConfig();
  kc.loadFromString(cp.sim.kubernetes!.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  await createTenancy(call, TWO_TENANTS, [
    ['team:ml', ML_EDITOR, 'editor'],
    ['team:ops', OPS_EDITOR, 'editor'],
  ]);
  // Each tenant clones the built-in under the same name, and adds the same model pinned to it.
  for (const [who, owner] of [
    [ML_EDITOR, 'team:ml'],
    [OPS_EDITOR, 'team:ops'],
  ] as const) {
    const c = await call('POST', '/v1/computes/gpu-l4-1x/clone', { name: 'l4-pool', owner }, who);
    expect({ status: c.status, name: c.body.metadata?.name }).toEqual({ status: 201, name: 'l4-pool' });
    const m = await call('POST', '/v1/models', model(owner), who);
    expect({ status: m.status, name: m.body.metadata?.name }).toEqual({ status: 201, name: 'chat' });
  }
  // And a project:x under each team (the second a twin), each with a model of its own.
  for (const [who, parent] of [
    [ML_EDITOR, 'team:ml'],
    [OPS_EDITOR, 'team:ops'],
  ] as const) {
    expect((await call('POST', '/v1/scopes', { name: 'project:x', parent })).status).toBe(201);
    const m = await call(
      'POST',
      '/v1/models',
      { ...model('project:x'), metadata: { name: 'helper', owner: 'project:x' } },
      who,
    );
    expect(m.status).toBe(201);
  }
  const helpers = async () => {
    const r = await call('GET', '/v1/pods?model=helper', undefined, ML_EDITOR);
    const s = await call('GET', '/v1/pods?model=helper', undefined, OPS_EDITOR);
    return (
      r.body.items?.length === 1 &&
      s.body.items?.length === 1 &&
      r.body.items[0].ready &&
      s.body.items[0].ready
    );
  };
  await reconcileUntil(
    cp,
    async () => (await running('team:ml')) === 1 && (await running('team:ops')) === 1 && (await helpers()),
  );
});
afterAll(() => cp.stop());

it("makes a node group per tenant and runs each tenant's model on its own nodes", async () => {
  const groups = new Map<string, string>();
  for (const owner of ['team:ml', 'team:ops']) {
    const c = await call('GET', `/v1/computes/l4-pool?owner=${owner}`);
    expect(c.status).toBe(200);
    groups.set(owner, c.body.status.nodegroupName);
  }
  expect(new Set(groups.values()).size).toBe(2);
  for (const g of groups.values()) {
    const ng = await eksClient().send(
      new DescribeNodegroupCommand({ clusterName: 'llmcap-local', nodegroupName: g }),
    );
    expect(ng.nodegroup?.status).toBe('ACTIVE');
  }
  const nodes = new Map((await core.listNode()).items.map((n) => [n.metadata!.name!, n.metadata!.labels!]));
  for (const [owner, group] of groups) {
    const ns = await namespaceOf(cp, owner);
    const deployments = (await apps.listNamespacedDeployment({ namespace: ns })).items.map(
      (d) => d.metadata!.name,
    );
    expect(deployments).toEqual(['chat-l4-l4-pool']);
    const pods = (await core.listNamespacedPod({ namespace: ns })).items;
    expect(pods).toHaveLength(1);
    expect(nodes.get(pods[0]!.spec!.nodeName!)?.['eks.amazonaws.com/nodegroup']).toBe(group);
  }
});

it('gives each of two projects of one name its own namespace, of the same shape', async () => {
  const seen: string[] = [];
  for (const who of [ML_EDITOR, OPS_EDITOR]) {
    const scope = await call('GET', '/v1/scopes/project:x', undefined, who);
    expect(scope.status).toBe(200);
    const ns: string = scope.body.status.namespace;
    expect(ns).toMatch(/^llmcap-local-project-x-[a-z2-7]{5}$/);
    const pods = (await call('GET', '/v1/pods?model=helper', undefined, who)).body.items;
    expect(pods.map((p: { namespace: string }) => p.namespace)).toEqual([ns]);
    const live = (await apps.listNamespacedDeployment({ namespace: ns })).items.map((d) => d.metadata!.name);
    expect(live).toEqual(['helper-l4-l4-pool']);
    seen.push(ns);
  }
  expect(new Set(seen).size).toBe(2);
});

it('shows each tenant its own compute, model and pods by their plain names', async () => {
  for (const [who, owner] of [
    [ML_EDITOR, 'team:ml'],
    [OPS_EDITOR, 'team:ops'],
  ] as const) {
    const ns = await namespaceOf(cp, owner);
    const pods = JSON.parse((await cli(['get', 'pods', '--model', 'chat', '-o', 'json'], who)).stdout).items;
    expect(
      pods.map((p: { model: string; compute: string; namespace: string }) => [
        p.model,
        p.compute,
        p.namespace,
      ]),
    ).toEqual([['chat', 'l4-pool', ns]]);
    const described = await cli(['describe', 'compute', 'l4-pool'], who);
    expect(described.code).toBe(0);
    expect(described.stdout).not.toMatch(/[~_.][a-z2-7]{8}/);
    const yaml = await cli(['get', 'model', 'chat', '-o', 'yaml'], who);
    expect(yaml.stdout).toContain(`owner: ${owner}`);
    expect(yaml.stdout).not.toContain('~');
  }
  // The platform admin sees both and says which.
  const both = await cli(['get', 'compute', 'l4-pool']);
  expect(both.code).not.toBe(0);
  expect(both.stderr).toContain('--owner');
  const one = await cli(['get', 'compute', 'l4-pool', '--owner', 'team:ops', '-o', 'json']);
  expect(JSON.parse(one.stdout).metadata.owner).toBe('team:ops');
});
