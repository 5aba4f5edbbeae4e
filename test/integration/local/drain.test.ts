import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, passesUntil, reconcileUntil, testControlPlane } from '../../helpers/control-plane';
import { watchReady } from '../../helpers/ready-pods';

/**
 * Issue 20 §3 end to end: a scale-down removes the node llmcap chose from the pods (here the one the scaled-down
 * model left empty), by exactly that instance, and the other model's Ready replica stays where it is.
 */

let cp: ControlPlane;
let core: CoreV1Api;
let apps: AppsV1Api;
beforeAll(async () => {
  cp = await testControlPlane('drain');
  const kc = new KubeConfig();
  kc.loadFromString(cp.sim.kubernetes!.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
  const call = httpApi(cp);
  expect((await call('POST', '/v1/computes/gpu-l4-1x/clone', { name: 'l4-dr' })).status).toBe(201);
});
afterAll(() => cp.stop());

const call = (method: string, path: string, body?: unknown) => httpApi(cp)(method, path, body);
const model = (name: string, replicas: number) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name },
  spec: {
    source: `hf://org/${name}`,
    engine: 'vllm',
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'l4-dr' }],
    scaling: { min: replicas, max: replicas },
  },
});
const status = async (name: string) => (await call('GET', `/v1/models/${name}`)).body.status;
const nodes = async () =>
  (await core.listNode({ labelSelector: 'llmcap.dev/compute=l4-dr' })).items.map((n) => ({
    name: n.metadata!.name!,
    instance: n.spec!.providerID!.split('/').pop()!,
  }));

it('drains and removes exactly the node it chose, and no Ready replica of another model is lost', async () => {
  expect((await call('POST', '/v1/models', model('big', 2))).status).toBe(201);
  expect((await call('POST', '/v1/models', model('small', 1))).status).toBe(201);
  await reconcileUntil(
    cp,
    async () => (await status('big')).running === 2 && (await status('small')).running === 1,
  );
  const before = await nodes();
  expect(before).toHaveLength(3);
  const smallPod = (await status('small')).pods[0];

  expect((await call('PUT', '/v1/models/big/scaling', { min: 1, max: 1 })).status).toBe(200);
  const passes = await passesUntil(
    cp,
    async () => (await nodes()).length === 2,
    // Never, in any pass, is the other model's replica down.
    async () => expect((await status('small')).running).toBe(1),
  );
  const removed = passes
    .flatMap((p) => p.drains ?? [])
    .flatMap((d) => d.nodes.filter((n) => n.step === 'terminated'));
  expect(removed).toHaveLength(1);
  const after = await nodes();
  expect(before.filter((n) => !after.some((a) => a.name === n.name)).map((n) => n.instance)).toEqual([
    removed[0]!.instanceId,
  ]);
  const s = await status('small');
  expect(s.pods[0]).toMatchObject({ name: smallPod.name, node: smallPod.node, ready: true });
  // The next pass observes the group EKS lowered with the terminated instance, and has nothing left to do.
  passes.push(await cp.reconcile());
  expect((await call('GET', '/v1/computes/l4-dr')).body.status).toMatchObject({ desiredNodes: 2 });
  expect(passes.at(-1)!.computes.find((c) => c.compute === 'l4-dr')?.action).toBe('none');
  expect(
    passes.flatMap((p) => p.workflows).filter((w) => w.compute === 'l4-dr' && w.kind === 'scale'),
  ).toEqual([]);
});

describe('a Ready replica on a node that goes is replaced before it is removed', () => {
  const cpuModel = (name: string, replicas: number) => ({
    ...model(name, replicas),
    spec: {
      ...model(name, replicas).spec,
      source: `hf://org/${name}-GGUF`,
      engine: 'llamacpp',
      profiles: [{ name: 'cpu', gpus: 0, cpuCores: 1, minMemoryGb: 2, compute: 'cpu-dr' }],
    },
  });
  const cpuNodes = async () =>
    (await core.listNode({ labelSelector: 'llmcap.dev/compute=cpu-dr' })).items.map((n) => ({
      name: n.metadata!.name!,
      instance: n.spec!.providerID!.split('/').pop()!,
    }));

  it('a one-replica model keeps serving through the drain of its node: surge, then the old pod goes', async () => {
    expect((await call('POST', '/v1/computes/cpu-small/clone', { name: 'cpu-dr' })).status).toBe(201);
    // Three replicas fill one node (3 × 1 core of 3.42); the one-replica model then gets a node of its own.
    expect((await call('POST', '/v1/models', cpuModel('many', 3))).status).toBe(201);
    await reconcileUntil(cp, async () => (await status('many')).running === 3);
    expect((await call('POST', '/v1/models', cpuModel('solo', 1))).status).toBe(201);
    await reconcileUntil(cp, async () => (await status('solo')).running === 1);
    const before = await cpuNodes();
    expect(before).toHaveLength(2);
    const soloNode = (await status('solo')).pods[0].node;

    // Two replicas of `many` and `solo` fit on one node: the node of `solo` (fewest pods) goes.
    const sampler = watchReady(cp.sim.kubernetes!.cluster, ['solo', 'many']);
    expect((await call('PUT', '/v1/models/many/scaling', { min: 2, max: 2 })).status).toBe(200);
    const passes = await passesUntil(cp, async () => (await cpuNodes()).length === 1);
    const lowest = sampler.stop();
    // At no sampled moment was the one-replica model down, nor the other below what stays admitted.
    expect(lowest).toEqual({ solo: 1, many: 2 });
    const drains = passes.flatMap((p) => p.drains ?? []).filter((d) => d.compute === 'cpu-dr');
    expect(drains.flatMap((d) => d.nodes.map((n) => n.step))).toContain('surging');
    const removed = drains.flatMap((d) => d.nodes.filter((n) => n.step === 'terminated'));
    expect(removed.map((n) => n.node)).toEqual([soloNode]);
    const after = await cpuNodes();
    expect(before.filter((n) => !after.some((a) => a.name === n.name)).map((n) => n.instance)).toEqual([
      removed[0]!.instanceId,
    ]);
    const solo = await status('solo');
    expect(solo).toMatchObject({ running: 1 });
    expect(solo.pods.map((p: { node: string }) => p.node)).toEqual([after[0]!.name]);
    // The surge is over: the Deployment is back at what is admitted, and carries no surge.
    const solos = (await apps.listDeploymentForAllNamespaces({ labelSelector: 'llmcap.dev/model=solo' }))
      .items;
    expect(solos.map((d) => [d.spec?.replicas, d.metadata?.annotations?.['llmcap.dev/drain-surge']])).toEqual(
      [[1, undefined]],
    );
    passes.push(await cp.reconcile());
    expect((await call('GET', '/v1/computes/cpu-dr')).body.status).toMatchObject({ desiredNodes: 1 });
  });
});
