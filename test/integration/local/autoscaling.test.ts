import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { documentClient } from '../../../lambdas/shared/clients';
import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, namespaceOf, reconcileUntil, testControlPlane } from '../../helpers/control-plane';

/**
 * Issue 33 end to end on the local control plane: the simulated model servers' load (a traffic schedule set on
 * the simulator's admin endpoint) is read through the pod proxy by the reconciler's own identity, becomes the
 * replicas the model asks for, goes through admission (the quota still binds, the rest pending with its
 * reason), and the model goes to zero after idling and comes back on a wake.
 */

let cp: ControlPlane;
let core: CoreV1Api;
let NS = '';
beforeAll(async () => {
  cp = await testControlPlane('as');
  const kc = new KubeConfig();
  kc.loadFromString(cp.sim.kubernetes!.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  expect((await call('POST', '/v1/computes/gpu-l4-1x/clone', { name: 'l4-as' })).status).toBe(201);
  expect((await call('POST', '/v1/scopes', { name: 'org:acme' })).status).toBe(201);
  expect((await call('POST', '/v1/scopes', { name: 'team:ml', parent: 'org:acme' })).status).toBe(201);
  expect((await call('PUT', '/v1/quotas/team:ml', { limit: { gpus: 3 } })).status).toBe(200);
  NS = await namespaceOf(cp, 'team:ml');
});
afterAll(() => cp.stop());

const call = (method: string, path: string, body?: unknown) => httpApi(cp)(method, path, body);
const status = async () => (await call('GET', '/v1/models/chat')).body.status;
const traffic = (rps: number) =>
  fetch(`${cp.sim.endpoint}/_sim/traffic`, {
    method: 'PUT',
    // 4 requests at once per replica, 1 s each: `rps` requests in flight.
    body: JSON.stringify([
      { model: 'chat', schedule: [{ atSeconds: 0, rps }], concurrency: 4, requestSeconds: 1 },
    ]),
  });
const demandItem = async () =>
  (await documentClient().send(new GetCommand({ TableName: cp.table, Key: { pk: 'DEMAND', sk: 'chat' } })))
    .Item;
const readyPods = async () =>
  (await core.listNamespacedPod({ namespace: NS, labelSelector: 'llmcap.dev/model=chat' })).items.filter(
    (p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  ).length;

const chat = {
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name: 'chat', owner: 'team:ml' },
  spec: {
    source: 'hf://org/chat-8b',
    engine: 'vllm',
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'l4-as' }],
    // Starts with one replica; load decides from there, between 0 and 5.
    scaling: { min: 0, max: 5, target: 1 },
    autoscaling: {
      metric: 'vllm:num_requests_waiting',
      targetPerReplica: 2,
      scaleDownStabilizationSeconds: 120,
      // Passes are stamped with the wall clock here: a short idle window keeps the test short.
      scaleToZeroAfterSeconds: 5,
    },
  },
};

it('follows the load up to the quota, the rest pending with the reason, Ready as admitted', async () => {
  expect((await traffic(40)).status).toBe(200);
  expect((await call('POST', '/v1/models', chat)).status).toBe(201);
  // One replica, 40 in flight: 4 running and 36 waiting, 18 per target of 2 → 18 replicas, 5 at most. At
  // the quota's 3 replicas still 28 waiting, 9.3 each: the model keeps asking for 5.
  // The load is read before the admitter runs: the pass that first reads it (once the first replica is Ready)
  // admits and places what it asks for.
  let placed: number | undefined;
  for (let i = 0; i < 40 && placed === undefined; i++) {
    const pass = await cp.reconcile();
    await cp.sfn.waitForIdle(10_000);
    if ((await status()).autoscaling?.desiredReplicas === 5)
      placed = pass.computes.find((c) => c.compute === 'l4-as')?.neededNodes ?? 0;
  }
  expect(placed).toBe(3);
  await reconcileUntil(cp, async () => (await status()).running === 3);
  // A steady load rewrites the loop's history, not what admission reads: the DEMAND item stays as written.
  const written = await demandItem();
  expect(written).toMatchObject({ desired: 5 });
  await cp.reconcile();
  expect(await demandItem()).toEqual(written);
  const s = await status();
  expect(s.autoscaling).toMatchObject({
    metric: 'vllm:num_requests_waiting',
    desiredReplicas: 5,
    admitted: 3,
    reasons: [expect.objectContaining({ reason: 'LimitExceeded', replicas: 2 })],
  });
  expect(s.autoscaling.reasons[0].message).toContain('gpus');
  expect(s).toMatchObject({ admitted: 3, running: 3, pending: 2 });
  expect(await readyPods()).toBe(3);
});

it('goes to zero replicas after idling for scaleToZeroAfterSeconds, and its pods go', async () => {
  expect((await traffic(0)).status).toBe(200);
  const first = await cp.reconcile();
  expect(first.errors).toEqual([]);
  const idle = await status();
  // The first idle pass starts the window: still serving.
  expect(idle.autoscaling).toMatchObject({ value: 0, idleSince: expect.any(String) });
  expect(idle.autoscaling.desiredReplicas).toBeGreaterThan(0);
  await reconcileUntil(cp, async () => (await status()).autoscaling.desiredReplicas === 0);
  await reconcileUntil(
    cp,
    async () =>
      (await readyPods()) === 0 && (await status()).admitted === 0 && (await status()).running === 0,
  );
  expect((await status()).autoscaling).toMatchObject({ desiredReplicas: 0, admitted: 0, reasons: [] });
});

it('comes back from zero on a wake: admitted like a start, Ready, and the answer says how long it expects', async () => {
  const r = await call('POST', '/v1/models/chat/wake');
  expect(r.status).toBe(202);
  // The passes above saw l4-as's nodes and chat's replicas turn Ready: the estimate is theirs, not the defaults.
  const seen = (
    await documentClient().send(
      new GetCommand({ TableName: cp.table, Key: { pk: 'STARTTIMES', sk: 'l4-as' } }),
    )
  ).Item!;
  expect(seen).toMatchObject({
    nodeBootSeconds: expect.any(Number),
    imagePullSeconds: expect.any(Number),
    modelLoadSeconds: expect.any(Number),
  });
  expect(r.body).toEqual({
    model: 'chat',
    desiredReplicas: 1,
    running: 0,
    expectedSecondsToReady: seen.nodeBootSeconds + seen.imagePullSeconds + seen.modelLoadSeconds,
    nodeBootSeconds: seen.nodeBootSeconds,
    imagePullSeconds: seen.imagePullSeconds,
    modelLoadSeconds: seen.modelLoadSeconds,
    basis: 'observed',
    compute: 'l4-as',
  });
  await reconcileUntil(cp, async () => (await status()).running === 1);
  expect((await status()).autoscaling).toMatchObject({ desiredReplicas: 1, admitted: 1 });
  expect(await readyPods()).toBe(1);
});
