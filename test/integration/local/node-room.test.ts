import { clusterClient } from '../../../lambdas/aws/kubernetes';
import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, reconcileUntil, testControlPlane } from '../../helpers/control-plane';

/**
 * The room a node really has (issue 32 §2): llmcap plans with EKS's own kube-reserved formula until a node of the
 * instance type is seen, then with what those nodes report, read by the reconcile pass from the simulated
 * cluster's Nodes (local/k8s-sim, which reports allocatable as the EKS AMIs do).
 */

const compute = (name: string, instanceType: string) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Compute',
  metadata: { name },
  spec: { node: { instanceType }, nodeGroup: { maxNodes: 2 } },
});

const cpuModel = (name: string, computeName: string, cpuCores: number, minMemoryGb: number) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name },
  spec: {
    source: `hf://org/${name}-GGUF`,
    engine: 'llamacpp',
    profiles: [{ name: 'cpu', gpus: 0, cpuCores, minMemoryGb, compute: computeName }],
    scaling: { min: 1, max: 1 },
  },
});

let cp: ControlPlane;
let call: ReturnType<typeof httpApi>;
beforeAll(async () => {
  cp = await testControlPlane('node-room');
  call = httpApi(cp);
});
afterAll(() => cp.stop());

const statusOf = async (name: string) => (await call('GET', `/v1/computes/${name}`)).body.status;

describe('the room a node really has', () => {
  it('admits a 3.6-core replica on an m7i.xlarge, whose node has 3920m allocatable', async () => {
    expect((await call('POST', '/v1/computes', compute('m7i-a', 'm7i.xlarge'))).status).toBe(201);
    const before = await statusOf('m7i-a');
    // nodeadm: 4000m less 60 + 10 + 5 + 5; 16 GiB less 11 MiB × 110 pods + 255 MiB and the 100 MiB eviction threshold.
    expect(before.allocatable).toEqual({ millicores: 3920, memoryMiB: 16384 - 1565, gpus: 0 });
    expect(before.allocatableSource).toBe('formula');
    const r = await call('POST', '/v1/models', cpuModel('big-cpu', 'm7i-a', 3.6, 8));
    expect(r.status).toBe(201);
    // Still too big for one node: the refusal names the node's room.
    const tooBig = await call('POST', '/v1/models', cpuModel('too-big', 'm7i-a', 3.95, 8));
    expect(tooBig.status).toBe(409);
    expect(JSON.stringify(tooBig.body)).toContain('3.92 cores');
  });

  it("plans with what the type's nodes report once one is seen, for every compute of that type", async () => {
    await reconcileUntil(cp, async () => {
      const s = await statusOf('m7i-a');
      return s.readyNodes === 1 && s.allocatableSource === 'observed';
    });
    const client = await clusterClient();
    const nodes = await client.list('v1', 'Node', undefined, {
      labelSelector: 'node.kubernetes.io/instance-type=m7i.xlarge',
    });
    // m7i-a's node, and the built-in cpu-small's (the same type) if it has one: they report alike.
    expect(nodes.length).toBeGreaterThanOrEqual(1);
    const reported = nodes.map((n) => (n.status as { allocatable: Record<string, string> }).allocatable);
    const s = await statusOf('m7i-a');
    for (const r of reported) {
      expect(`${s.allocatable.millicores}m`).toBe(r.cpu);
      expect(s.allocatable.memoryMiB).toBe(Math.floor(Number(r.memory!.replace(/Ki$/, '')) / 1024));
    }
    // The node's memory is below EC2's 16 GiB (the kernel keeps some): the report is smaller than the formula.
    expect(s.allocatable.memoryMiB).toBeLessThan(16384 - 1565);

    // A compute of the same type created later plans with the report at the next pass, before it has a node.
    expect((await call('POST', '/v1/computes', compute('m7i-b', 'm7i.xlarge'))).status).toBe(201);
    expect((await statusOf('m7i-b')).allocatableSource).toBe('formula');
    await cp.reconcile();
    const b = await statusOf('m7i-b');
    expect(b).toMatchObject({ allocatableSource: 'observed', allocatable: s.allocatable, readyNodes: 0 });
  });
});
