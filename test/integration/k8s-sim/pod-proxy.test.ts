import { ClusterClient, eksToken } from '../../../lambdas/aws/kubernetes';
import { reconcilerAccess } from '../../../lambdas/domain/workloads';
import { gpuGroup, type K8sHarness, k8sHarness, MIN, modelDeployment, SEC } from './helpers';

/**
 * The model servers' /metrics through the API server's pod proxy, from a traffic schedule (docs/k8s-sim.md):
 * read with kubectl get --raw as the docs show, set through the admin endpoint, and with the reconciler's
 * identity (the stack's access entry) in llmcap's namespaces only.
 */

const ROLE = 'arn:aws:iam::000000000000:role/llmcap-dev-reconciler';
const CREDS = { accessKeyId: 'ASIARECONCILERDEV001', secretAccessKey: 'reconciler-dev-secret' };
const NS = 'llmcap-dev-team-ml';

let h: K8sHarness;
beforeAll(async () => {
  h = await k8sHarness({
    kubernetes: {
      appStart: [{ image: 'vllm/*', ms: 2 * MIN }],
      // 10 rps for 2 s each = 20 requests in flight from the start; 40 after 10 minutes.
      traffic: [
        {
          model: 'chat',
          schedule: [
            { atSeconds: 0, rps: 10 },
            { atSeconds: 600, rps: 20 },
          ],
          concurrency: 8,
          requestSeconds: 2,
        },
      ],
      identities: [{ ...CREDS, arn: 'arn:aws:sts::000000000000:assumed-role/llmcap-dev-reconciler/fn' }],
      accessEntries: [{ principalArn: ROLE, ...reconcilerAccess('dev') }],
    },
  });
  await h.nodegroup('gpu', gpuGroup('gpu-l4-1x', 2));
  for (const ns of [NS, 'other']) {
    await h.core.createNamespace({ body: { metadata: { name: ns } } });
    await h.objects.create(
      modelDeployment('chat', { namespace: ns, compute: 'gpu-l4-1x', gpus: 1, replicas: 1 }) as never,
    );
  }
});
afterAll(() => h.close());

const podsOf = async (ns: string) =>
  JSON.parse((await h.kubectl('get', 'pods', '-n', ns, '-o', 'json')).stdout).items as {
    metadata: { name: string };
  }[];
const raw = (ns: string, pod: string, port = 8000) =>
  h.kubectl('get', '--raw', `/api/v1/namespaces/${ns}/pods/${pod}:${port}/proxy/metrics`);

it('refuses while the server loads, as a dial that is refused, and answers once it listens', async () => {
  h.advance(30 * SEC);
  const [pod] = await podsOf(NS);
  const loading = await raw(NS, pod!.metadata.name);
  expect(loading.code).not.toBe(0);
  expect(loading.stderr).toMatch(/ServiceUnavailable|connection refused/);
  h.advance(3 * MIN);
  const out = await raw(NS, pod!.metadata.name);
  expect(out.stderr).toBe('');
  // Two Ready replicas (one per namespace) share 20 requests in flight: 8 running and 2 waiting on each.
  expect(out.stdout).toContain('# TYPE vllm:num_requests_running gauge');
  expect(out.stdout).toContain('vllm:num_requests_running{model_name="chat"} 8');
  expect(out.stdout).toContain('vllm:num_requests_waiting{model_name="chat"} 2');
  expect(out.stdout).toContain('vllm:gpu_cache_usage_perc{model_name="chat"} 1');
  // Another port has nothing listening.
  expect((await raw(NS, pod!.metadata.name, 9000)).stderr).toMatch(/connection refused/);
  expect((await raw(NS, 'nope')).stderr).toMatch(/NotFound.*pods "nope" not found/);
});

it('follows the schedule over time and through the admin endpoint', async () => {
  const [pod] = await podsOf(NS);
  h.advance(10 * MIN);
  // 40 in flight over 2 replicas: 8 running, 12 waiting each.
  expect((await raw(NS, pod!.metadata.name)).stdout).toContain(
    'vllm:num_requests_waiting{model_name="chat"} 12',
  );
  const put = await fetch(`${h.sim.endpoint}/_sim/traffic`, {
    method: 'PUT',
    body: JSON.stringify([{ model: 'chat', schedule: [{ atSeconds: 0, rps: 1 }] }]),
  });
  expect(put.status).toBe(200);
  const text = (await raw(NS, pod!.metadata.name)).stdout;
  expect(text).toContain('vllm:num_requests_running{model_name="chat"} 1');
  expect(text).toContain('vllm:num_requests_waiting{model_name="chat"} 0');
  const bad = await fetch(`${h.sim.endpoint}/_sim/traffic`, {
    method: 'PUT',
    body: JSON.stringify([{ model: 'chat', schedule: [{ atSeconds: -1, rps: 'x' }] }]),
  });
  expect(bad.status).toBe(400);
  expect(((await bad.json()) as { message: string }).message).toContain(
    'traffic[0].schedule[0]: atSeconds and rps are numbers ≥ 0',
  );
});

it("lets the reconciler's identity read it in llmcap's namespaces and nowhere else", async () => {
  const token = await eksToken({
    cluster: 'llmcap-local',
    region: 'us-east-1',
    credentials: CREDS,
    now: new Date(h.clock.now()),
  });
  const client = new ClusterClient({
    server: h.sim.kubernetes!.endpoint,
    caData: h.sim.kubernetes!.caData,
    token,
  });
  const [mine] = await podsOf(NS);
  const [theirs] = await podsOf('other');
  expect(await client.podProxyGet(NS, mine!.metadata.name, 8000, '/metrics')).toContain(
    'vllm:num_requests_running',
  );
  await expect(client.podProxyGet('other', theirs!.metadata.name, 8000, '/metrics')).rejects.toThrow(
    /cannot get resource "pods\/proxy" in API group "" in the namespace "other" \(HTTP 403\)/,
  );
});
