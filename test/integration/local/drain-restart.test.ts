import { randomUUID } from 'node:crypto';
import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { ReconcileSummary } from '../../../lambdas/service/reconcile';
import { type CloudSim, DrivenClock, startCloudSim } from '../../../local/cloud-sim';
import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, passesUntil, reconcileUntil, testControlPlane } from '../../helpers/control-plane';
import { watchReady } from '../../helpers/ready-pods';

/**
 * Issue 20 §6: a restart of the control plane mid-drain loses nothing. AWS and the cluster outlive llmcap's
 * control plane, so the simulator keeps running while the control plane (API, reconciler, workflows) stops
 * with a surge in flight and starts again on the same DynamoDB table. The drain's state is the cluster's (the
 * cordoned node, the surge annotation), so the new process resumes it: the same node goes, by exactly its
 * instance, and no model is ever short of a Ready replica it had.
 */

let sim: CloudSim;
let cp: ControlPlane | undefined;
let core: CoreV1Api;
let apps: AppsV1Api;
const table = `drain-restart-${randomUUID().slice(0, 8)}`;
const start = () => testControlPlane('drain-restart', { sim, table });

beforeAll(async () => {
  sim = await startCloudSim({
    port: 0,
    timeScale: 0.001,
    clusterName: 'llmcap-local',
    kubernetes: { port: 0 },
    metricsClock: new DrivenClock(Math.floor(Date.now() / 60_000) * 60_000),
  });
  const kc = new KubeConfig();
  kc.loadFromString(sim.kubernetes!.kubeconfig());
  core = kc.makeApiClient(CoreV1Api);
  apps = kc.makeApiClient(AppsV1Api);
});
afterAll(async () => {
  await cp?.stop();
  await sim.stop();
});

const call = (method: string, path: string, body?: unknown) => httpApi(cp!)(method, path, body);
const model = (name: string, replicas: number) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name },
  spec: {
    source: `hf://org/${name}-GGUF`,
    engine: 'llamacpp',
    profiles: [{ name: 'cpu', gpus: 0, cpuCores: 1, minMemoryGb: 2, compute: 'cpu-rs' }],
    scaling: { min: replicas, max: replicas },
  },
});
const status = async (name: string) => (await call('GET', `/v1/models/${name}`)).body.status;
const nodes = async () =>
  (await core.listNode({ labelSelector: 'llmcap.dev/compute=cpu-rs' })).items.map((n) => ({
    name: n.metadata!.name!,
    instance: n.spec!.providerID!.split('/').pop()!,
    cordoned: n.spec?.unschedulable === true,
  }));
const surges = async () =>
  (await apps.listDeploymentForAllNamespaces({ labelSelector: 'app.kubernetes.io/managed-by=llmcap' })).items
    .filter((d) => d.metadata?.annotations?.['llmcap.dev/drain-surge'])
    .map((d) => d.metadata!.name!);

it('resumes a drain stopped with a surge in flight: the chosen node goes, sizes end right, no Ready replica is lost', async () => {
  cp = await start();
  expect((await call('POST', '/v1/computes/cpu-small/clone', { name: 'cpu-rs' })).status).toBe(201);
  // Three replicas fill a node; the one-replica model gets the second node, alone.
  expect((await call('POST', '/v1/models', model('many', 3))).status).toBe(201);
  await reconcileUntil(cp, async () => (await status('many')).running === 3);
  expect((await call('POST', '/v1/models', model('solo', 1))).status).toBe(201);
  await reconcileUntil(cp, async () => (await status('solo')).running === 1);
  const before = await nodes();
  expect(before).toHaveLength(2);

  const ready = watchReady(sim.kubernetes!.cluster, ['solo', 'many']);
  const passes: ReconcileSummary[] = [];
  expect((await call('PUT', '/v1/models/many/scaling', { min: 2, max: 2 })).status).toBe(200);
  // Reconcile until the drain has cordoned a node and surged the one-replica model off it, then stop.
  await reconcileUntil(cp, async () => {
    return (await surges()).length > 0;
  });
  const cordoned = (await nodes()).filter((n) => n.cordoned);
  expect(cordoned).toHaveLength(1);
  await cp.stop();
  cp = undefined;

  cp = await start();
  passes.push(...(await passesUntil(cp, async () => (await nodes()).length === 1)));
  passes.push(await cp.reconcile());
  const lowest = ready.stop();

  // Exactly the node chosen before the restart went, by its instance.
  const after = await nodes();
  expect(before.filter((n) => !after.some((a) => a.name === n.name)).map((n) => n.name)).toEqual([
    cordoned[0]!.name,
  ]);
  const terminated = passes
    .flatMap((p) => p.drains ?? [])
    .flatMap((d) => d.nodes.filter((n) => n.step === 'terminated'));
  expect(terminated.map((n) => n.instanceId)).toEqual([cordoned[0]!.instance]);
  expect(after.map((n) => n.cordoned)).toEqual([false]);
  // The node group's sizes follow the removed instance, and nothing is left to do.
  expect((await call('GET', '/v1/computes/cpu-rs')).body.status).toMatchObject({ desiredNodes: 1 });
  expect(passes.at(-1)!.computes.find((c) => c.compute === 'cpu-rs')?.action).toBe('none');
  // At no moment, before, during or after the restart, was a model short of the Ready replicas it keeps.
  expect(lowest).toEqual({ solo: 1, many: 2 });
  expect(await surges()).toEqual([]);
  expect(await status('solo')).toMatchObject({ running: 1 });
  expect(await status('many')).toMatchObject({ running: 2 });
}, 120_000);
