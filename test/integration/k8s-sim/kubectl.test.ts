import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { cpuGroup, gpuGroup, type K8sHarness, k8sHarness, MIN, modelDeployment } from './helpers';

/** kubectl 1.32, unchanged, against the simulated cluster through the kubeconfig the simulator writes. */

let h: K8sHarness;
beforeAll(async () => {
  h = await k8sHarness({ durations: { podStopMs: 0 } });
  await h.nodegroup('cpu', cpuGroup('cpu-small', 2));
  await h.nodegroup('gpu', gpuGroup('gpu-l4-1x', 1));
});
afterAll(async () => {
  await h.close();
});

function manifest(name: string, docs: unknown[]): string {
  const file = join(tmpdir(), `k8s-sim-${process.pid}-${name}.yaml`);
  writeFileSync(file, docs.map((d) => stringify(d)).join('---\n'));
  return file;
}

const emb = () =>
  modelDeployment('emb', {
    compute: 'cpu-small',
    taintKey: 'llmcap.dev/compute',
    replicas: 2,
    namespace: 'team-a',
  });

it('lists the nodes with their status and version', async () => {
  const out = await h.kubectl('get', 'nodes');
  expect(out.stderr).toBe('');
  const lines = out.stdout.trim().split('\n');
  expect(lines[0]).toMatch(/^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION$/);
  expect(lines).toHaveLength(4);
  for (const l of lines.slice(1))
    expect(l).toMatch(/^ip-10-0-\d+-\d+\.ec2\.internal\s+Ready\s+<none>\s+\d+[smh]\S*\s+v1\.33\.0-eks-/);
  const labelled = await h.kubectl('get', 'nodes', '-l', 'llmcap.dev/compute=gpu-l4-1x', '-o', 'name');
  expect(labelled.stdout.trim().split('\n')).toHaveLength(1);
});

it('applies a namespace, a Deployment and a PDB server-side, and the pods come up', async () => {
  const file = manifest('emb', [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } },
    emb(),
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'emb', namespace: 'team-a' },
      spec: { minAvailable: 1, selector: { matchLabels: { 'llmcap.dev/model': 'emb' } } },
    },
  ]);
  const out = await h.kubectl('apply', '--server-side', '--field-manager=llmcap', '-f', file);
  expect(out.stderr).toBe('');
  expect(out.stdout.trim().split('\n')).toEqual([
    'namespace/team-a serverside-applied',
    'deployment.apps/emb serverside-applied',
    'poddisruptionbudget.policy/emb serverside-applied',
  ]);
  h.advance(2 * MIN);
  const pods = JSON.parse((await h.kubectl('get', 'pods', '-n', 'team-a', '-o', 'json')).stdout);
  expect(pods.kind).toBe('List');
  expect(pods.items).toHaveLength(2);
  for (const p of pods.items) {
    expect(p.apiVersion).toBe('v1');
    expect(p.status.phase).toBe('Running');
    expect(p.status.conditions.find((c: { type: string }) => c.type === 'Ready').status).toBe('True');
  }
  const table = await h.kubectl('get', 'pods', '-n', 'team-a');
  expect(table.stdout).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\n/);
  expect(table.stdout).toMatch(/emb-\S+\s+1\/1\s+Running\s+0\s+\d/);
});

it('keeps hand edits of other fields, reports a conflict on ours, and takes ours back with --force-conflicts', async () => {
  const file = manifest('emb2', [emb()]);
  expect((await h.kubectl('annotate', 'deployment/emb', '-n', 'team-a', 'owner=alice')).code).toBe(0);
  const edit = await h.kubectl(
    'patch',
    'deployment/emb',
    '-n',
    'team-a',
    '--type=merge',
    '-p',
    '{"spec":{"replicas":3}}',
  );
  expect(edit.stdout.trim()).toBe('deployment.apps/emb patched');
  const conflict = await h.kubectl('apply', '--server-side', '--field-manager=llmcap', '-f', file);
  expect(conflict.code).toBe(1);
  expect(conflict.stderr).toContain(
    'Apply failed with 1 conflict: conflict with "kubectl-patch" using apps/v1: .spec.replicas',
  );
  const forced = await h.kubectl(
    'apply',
    '--server-side',
    '--field-manager=llmcap',
    '--force-conflicts',
    '-f',
    file,
  );
  expect(forced.code).toBe(0);
  const d = JSON.parse(
    (await h.kubectl('get', 'deployment/emb', '-n', 'team-a', '-o', 'json', '--show-managed-fields')).stdout,
  );
  expect(d.spec.replicas).toBe(2);
  expect(d.metadata.annotations.owner).toBe('alice');
  const managers = d.metadata.managedFields.map(
    (m: { manager: string; operation: string }) => `${m.manager}/${m.operation}`,
  );
  expect(managers).toEqual(
    expect.arrayContaining(['llmcap/Apply', 'kubectl-annotate/Update', 'kube-controller-manager/Update']),
  );
  // kubectl-patch lost .spec.replicas, its only field, and with it its entry.
  expect(managers).not.toContain('kubectl-patch/Update');
});

it('cordons a node, and drains it through evictions that honour the PDB', async () => {
  const pods = JSON.parse((await h.kubectl('get', 'pods', '-n', 'team-a', '-o', 'json')).stdout).items;
  const [first, second] = [pods[0].spec.nodeName, pods[1].spec.nodeName];
  expect(first).not.toBe(second);
  const cordon = await h.kubectl('cordon', first);
  expect(cordon.stdout.trim()).toBe(`node/${first} cordoned`);
  expect((await h.kubectl('get', 'node', first)).stdout).toContain('Ready,SchedulingDisabled');
  const drained = await h.kubectl(
    'drain',
    first,
    '--ignore-daemonsets',
    '--delete-emptydir-data',
    '--timeout=20s',
  );
  expect(drained.code).toBe(0);
  expect(drained.stdout).toContain(`node/${first} already cordoned`);
  expect(drained.stdout).toContain(`pod/${pods[0].metadata.name} evicted`);
  expect(drained.stdout).toContain(`node/${first} drained`);
  // The replacement runs on the other node but is not Ready yet: minAvailable 1 blocks the second drain.
  const blocked = await h.kubectl(
    'drain',
    second,
    '--ignore-daemonsets',
    '--delete-emptydir-data',
    '--timeout=1s',
  );
  expect(blocked.code).toBe(1);
  expect(blocked.stderr).toContain(
    `error when evicting pods/"${pods[1].metadata.name}" -n "team-a" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`,
  );
  // Once the replacement is Ready the budget allows the eviction (the drained node stays cordoned: it waits).
  expect((await h.kubectl('uncordon', first)).code).toBe(0);
  h.advance(2 * MIN);
  const again = await h.kubectl(
    'drain',
    second,
    '--ignore-daemonsets',
    '--delete-emptydir-data',
    '--timeout=20s',
  );
  expect(again.code).toBe(0);
  expect(again.stdout).toContain(`node/${second} drained`);
  expect((await h.kubectl('uncordon', second)).code).toBe(0);
});

it('describes a pod that cannot schedule with the scheduler event', async () => {
  const file = manifest('big', [
    modelDeployment('huge', { compute: 'gpu-l4-1x', gpus: 2, cpu: '4', memory: '16Gi', namespace: 'team-a' }),
  ]);
  expect((await h.kubectl('apply', '--server-side', '-f', file)).code).toBe(0);
  const name = (
    await h.kubectl('get', 'pods', '-n', 'team-a', '-l', 'llmcap.dev/model=huge', '-o', 'name')
  ).stdout.trim();
  const out = await h.kubectl('describe', '-n', 'team-a', name);
  expect(out.stdout).toMatch(/Status:\s+Pending/);
  // (The event's age is kubectl's wall clock against the simulator's driven one: not asserted.)
  expect(out.stdout).toMatch(
    /Warning\s+FailedScheduling\s+\S+\s+default-scheduler\s+0\/3 nodes are available: 1 Insufficient nvidia\.com\/gpu, 2 node\(s\) had untolerated taint \{llmcap\.dev\/compute: cpu-small\}/,
  );
});

it('drains with --disable-eviction: each pod deleted, with DeleteOptions as kubectl encodes them (protobuf)', async () => {
  const pods = JSON.parse(
    (await h.kubectl('get', 'pods', '-n', 'team-a', '-l', 'llmcap.dev/model=emb', '-o', 'json')).stdout,
  ).items;
  const node = pods[0].spec.nodeName;
  const on = pods.filter((p: any) => p.spec.nodeName === node).map((p: any) => p.metadata.name);
  const drained = await h.kubectl(
    'drain',
    node,
    '--ignore-daemonsets',
    '--delete-emptydir-data',
    '--disable-eviction',
    '--grace-period=0',
    '--timeout=20s',
  );
  expect(drained.stderr).not.toMatch(/error/i);
  expect(drained.code).toBe(0);
  for (const name of on) expect(drained.stdout).toContain(`pod/${name} deleted`);
  expect(drained.stdout).toContain(`node/${node} drained`);
  const left = JSON.parse((await h.kubectl('get', 'pods', '-n', 'team-a', '-o', 'json')).stdout).items;
  expect(left.filter((p: any) => on.includes(p.metadata.name))).toEqual([]);
  expect((await h.kubectl('uncordon', node)).code).toBe(0);
});
