import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { ReconcileSummary } from '../../../lambdas/service/reconcile';
import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, reconcileUntil, testControlPlane } from '../../helpers/control-plane';

/**
 * Issue 20 §3 end to end: a scale-down removes the node llmcap chose from the pods (here the one the scaled-down
 * model left empty), by exactly that instance, and the other model's Ready replica stays where it is.
 */

let cp: ControlPlane;
let core: CoreV1Api;
beforeAll(async () => {
  cp = await testControlPlane('drain');
  const kc = new KubeConfig();
  kc.loadFromString(cp.sim.kubernetes!.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
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
  const passes: ReconcileSummary[] = [];
  const orig = cp.reconcile.bind(cp);
  await reconcileUntil(
    {
      ...cp,
      reconcile: async () => {
        const s = await orig();
        passes.push(s);
        // Never, in any pass, is the other model's replica down.
        expect((await status('small')).running).toBe(1);
        return s;
      },
    },
    async () => (await nodes()).length === 2,
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
  passes.push(await orig());
  expect((await call('GET', '/v1/computes/l4-dr')).body.status).toMatchObject({ desiredNodes: 2 });
  expect(passes.at(-1)!.computes.find((c) => c.compute === 'l4-dr')?.action).toBe('none');
  expect(
    passes.flatMap((p) => p.workflows).filter((w) => w.compute === 'l4-dr' && w.kind === 'scale'),
  ).toEqual([]);
});
