import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resetQuotaCache } from '../../../lambdas/aws/quotas';
import { UNSCHEDULED_MINUTES } from '../../../lambdas/domain/alarms';
import type { ControlPlane } from '../../../local/control-plane';
import {
  httpApi,
  passesUntil,
  reconcileUntil,
  testControlPlane,
  vcpusInUse,
} from '../../helpers/control-plane';
import { llmcap } from '../cli/run';

/**
 * Capacity that exists (issue 32 §1) on the local control plane, driven as an operator would with the real
 * kubectl against the simulated cluster: a cordoned and drained node takes no pods, so llmcap says so on the
 * compute, shows the stuck replica's scheduler message on the model, grows the group to replace the node within
 * maxNodes, and pages when replicas stay unscheduled.
 */

let cp: ControlPlane;
let dir: string;
let call: ReturnType<typeof httpApi>;

const kubectl = (...args: string[]) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
    execFile(
      'kubectl',
      ['--kubeconfig', join(dir, 'kubeconfig'), '--cache-dir', join(dir, 'cache'), ...args],
      { timeout: 30_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );

const model = (name: string, compute: string, replicas: number) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name },
  spec: {
    source: `hf://org/${name}-8b`,
    engine: 'vllm',
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute }],
    scaling: { min: replicas, max: replicas },
  },
});

const compute = async (name: string) => (await call('GET', `/v1/computes/${name}`)).body.status;
const status = async (name: string) => (await call('GET', `/v1/models/${name}`)).body.status;
const nodesOf = async (c: string) =>
  JSON.parse((await kubectl('get', 'nodes', '-l', `llmcap.dev/compute=${c}`, '-o', 'json')).stdout).items as {
    metadata: { name: string };
    spec?: { unschedulable?: boolean };
  }[];

beforeAll(async () => {
  // Graces in wall seconds (not 300 × 0.001). The capacity grace is also the window from its end to the probe,
  // which the GPUs test needs one whole pass to fall in (the pass that must no longer count on the short compute):
  // 10 s, since a pass beside the loaded CI suite took 7.5 s. (Before Auto Scaling's retries stopped counting as
  // probes, each retry read pushed the probe out and hid how narrow 5 s was.)
  cp = await testControlPlane('supply', { supplyGraceSeconds: 5, capacityGraceSeconds: 10 });
  call = httpApi(cp);
  dir = mkdtempSync(join(tmpdir(), 'supply-'));
  cp.sim.kubernetes!.writeKubeconfig(join(dir, 'kubeconfig'));
});
afterAll(async () => {
  await cp.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('nodes that take no pods', () => {
  it('replaces a cordoned and drained node within maxNodes, showing the stuck replica meanwhile', async () => {
    expect((await call('POST', '/v1/computes/gpu-l4-1x/clone', { name: 'l4-pool' })).status).toBe(201);
    expect((await call('POST', '/v1/models', model('chat', 'l4-pool', 2))).status).toBe(201);
    await reconcileUntil(cp, async () => (await status('chat')).running === 2);
    expect(await compute('l4-pool')).toMatchObject({ desiredNodes: 2, neededNodes: 2 });

    // An operator takes one node out: cordon, then drain (evicting the replica on it).
    const [first] = (await nodesOf('l4-pool')).map((n) => n.metadata.name);
    expect((await kubectl('cordon', first!)).stdout.trim()).toBe(`node/${first} cordoned`);
    const drained = await kubectl(
      'drain',
      first!,
      '--ignore-daemonsets',
      '--delete-emptydir-data',
      '--timeout=20s',
    );
    expect(drained).toMatchObject({ code: 0, stdout: expect.stringContaining(`node/${first} drained`) });

    // The evicted replica's replacement has nowhere to go, as the scheduler says.
    for (let i = 0; ; i++) {
      const pending = await kubectl(
        'get',
        'pods',
        '-A',
        '--field-selector=status.phase=Pending',
        '-o',
        'json',
      );
      const stuck = JSON.parse(pending.stdout).items.filter(
        (p: { status: { conditions?: { reason?: string }[] } }) =>
          p.status.conditions?.some((c) => c.reason === 'Unschedulable'),
      );
      if (stuck.length === 1) break;
      if (i > 100) throw new Error(`no Unschedulable pod after the drain: ${pending.stdout}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // The next pass sees the node idle, the replica Unschedulable with the scheduler's words, and wants one node
    // more. (The G vCPU quota holds that node back for this pass only, so the pod is still where the scheduler
    // left it when the pass reads it: at time scale 0.001 a node joins within the pass.)
    cp.sim.admin.setQuotas({ 'L-DB2E81BA': await vcpusInUse(cp, /^g/) });
    resetQuotaCache();
    const pass = await cp.reconcile();
    cp.sim.admin.setQuotas({ 'L-DB2E81BA': 768 });
    resetQuotaCache();
    const s = await compute('l4-pool');
    expect(s.idleNodes).toEqual([{ node: first, why: 'cordoned' }]);
    expect(s.replacementNodes).toBe(1);
    expect((await status('chat')).podReasons).toEqual([
      expect.objectContaining({
        reason: 'Unschedulable',
        replicas: 1,
        message: expect.stringMatching(/^0\/\d+ nodes are available: .*1 node\(s\) were unschedulable/),
      }),
    ]);
    expect(pass.workloads?.unscheduled).toBe(1);

    // The new node joins and the replica runs there; the cordoned node stays, idle, until someone acts.
    await reconcileUntil(cp, async () => (await status('chat')).running === 2);
    expect(await compute('l4-pool')).toMatchObject({ desiredNodes: 3, neededNodes: 2, replacementNodes: 1 });
    expect((await nodesOf('l4-pool')).filter((n) => !n.spec?.unschedulable)).toHaveLength(2);

    // Uncordoned, it takes pods again: the group goes back to what the replicas need (llmcap drains one).
    expect((await kubectl('uncordon', first!)).code).toBe(0);
    await reconcileUntil(cp, async () => (await compute('l4-pool')).desiredNodes === 2);
    const after = await compute('l4-pool');
    expect(after.idleNodes).toBeUndefined();
    expect(after.replacementNodes).toBeUndefined();
    await reconcileUntil(cp, async () => (await status('chat')).running === 2);
  });

  it('pages when admitted replicas stay unscheduled longer than UNSCHEDULED_MINUTES', async () => {
    // A G vCPU quota with room for one more g6.2xlarge: llmcap admits two replicas but asks for one node, so one
    // never schedules.
    cp.sim.admin.setQuotas({ 'L-DB2E81BA': (await vcpusInUse(cp, /^g/)) + 8 });
    resetQuotaCache();
    expect((await call('POST', '/v1/computes/gpu-l4-1x/clone', { name: 'l4-held' })).status).toBe(201);
    expect((await call('POST', '/v1/models', model('held', 'l4-held', 2))).status).toBe(201);
    const firing = () =>
      cp.transitions.find((t) => t.alarmName === 'llmcap-local-ReplicasUnscheduled' && t.to === 'ALARM');
    let unscheduledPasses = 0;
    for (let i = 0; i < 3 * UNSCHEDULED_MINUTES && !firing(); i++) {
      const pass = await cp.reconcile();
      await cp.sfn.waitForIdle(10_000);
      unscheduledPasses = (pass.workloads?.unscheduled ?? 0) > 0 ? unscheduledPasses + 1 : 0;
    }
    expect(firing()).toBeDefined();
    // Not before the replica had been unscheduled for the whole window (one pass per minute).
    expect(unscheduledPasses).toBeGreaterThanOrEqual(UNSCHEDULED_MINUTES);
    expect((await status('held')).podReasons).toEqual([
      expect.objectContaining({ reason: 'Unschedulable', replicas: 1 }),
    ]);
    cp.sim.admin.setQuotas({ 'L-DB2E81BA': 768 });
    resetQuotaCache();
    await reconcileUntil(cp, async () => (await status('held')).running === 2);
  });
});

describe('GPUs that cannot be had', () => {
  it('marks a compute short of capacity from its failed launch, and places the replica on the next profile', async () => {
    expect((await call('POST', '/v1/computes/gpu-l4-1x/clone', { name: 'l4-first' })).status).toBe(201);
    expect((await call('POST', '/v1/computes/gpu-a10g-1x/clone', { name: 'a10g-next' })).status).toBe(201);
    const profiles = [
      { name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'l4-first' },
      { name: 'a10g', gpus: 1, gpuType: 'A10G', cpuCores: 4, minMemoryGb: 16, compute: 'a10g-next' },
    ];
    const m = model('two-kinds', 'l4-first', 1);
    expect((await call('POST', '/v1/models', { ...m, spec: { ...m.spec, profiles } })).status).toBe(201);
    await reconcileUntil(cp, async () => (await status('two-kinds')).running === 1);

    // EC2 runs out of g6.2xlarge; the model wants a second replica, which its first profile prefers.
    cp.sim.admin.patchFaults({ unavailableInstanceTypes: ['g6.2xlarge'] });
    // One replica more beyond min: a unit of its own, placed by the first profile that has room.
    expect((await call('PUT', '/v1/models/two-kinds/scaling', { min: 1, max: 2, target: 2 })).status).toBe(
      200,
    );
    const reports: { failed: boolean }[] = [];
    const passes = await passesUntil(
      cp,
      async () => (await compute('l4-first')).shortOfCapacity !== undefined,
    );
    const short = (await compute('l4-first')).shortOfCapacity;
    // The pass that saw the shortage, within its grace: the replica still counts on l4-first, but the node it
    // will need on a10g-next is asked for already, so that it boots while the grace runs.
    const saw = passes.find((p) =>
      p.computes.some((c) => c.compute === 'l4-first' && c.shortOfCapacitySince),
    )!;
    expect(saw.startedAt < short.countedUntil).toBe(true);
    expect(saw.computes.find((c) => c.compute === 'a10g-next')).toMatchObject({
      neededNodes: 1,
      aheadNodes: 1,
    });
    // Both replicas still placed on l4-first, whose group cannot launch the second's node.
    expect(saw.computes.find((c) => c.compute === 'l4-first')).toMatchObject({ neededNodes: 2 });
    // The compute's status says why it has a node no replica is placed on yet.
    expect((await compute('a10g-next')).aheadNodes).toBe(1);
    const described = await llmcap(['describe', 'compute', 'a10g-next'], { endpoint: cp.apiUrl });
    expect(described.stdout).toMatch(/1 needed .*; 1 of them ahead of replicas moving here/);
    expect(saw.workflows).toContainEqual(expect.objectContaining({ compute: 'a10g-next' }));
    expect(short.message).toMatch(
      /InsufficientInstanceCapacity - We currently do not have sufficient g6\.2xlarge/,
    );
    expect(Date.parse(short.nextProbeAt)).toBeGreaterThan(Date.parse(short.since));
    const listed = await llmcap(['get', 'computes', 'l4-first', '-o', 'wide'], { endpoint: cp.apiUrl });
    expect(listed.stdout).toMatch(/\bshort \d+[smhd]\b/);
    expect(listed.stdout).toContain('InsufficientInstanceCapacity');

    // Past the grace, admission no longer counts the node that cannot be launched: the first pass after it
    // places the replica on the next profile's compute (the shortage's own countedUntil, before its probe).
    expect(Date.parse(short.countedUntil)).toBeLessThan(Date.parse(short.nextProbeAt));
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(short.countedUntil) - Date.now())));
    await cp.reconcile();
    expect(Date.now()).toBeLessThan(Date.parse(short.nextProbeAt));
    const placed = (await status('two-kinds')).placements as { compute: string; replicas: number }[];
    const on = (c: string) => placed.filter((p) => p.compute === c).reduce((n, p) => n + p.replicas, 0);
    expect({ 'l4-first': on('l4-first'), 'a10g-next': on('a10g-next') }).toEqual({
      'l4-first': 1,
      'a10g-next': 1,
    });
    // And runs there.
    await reconcileUntil(cp, async () => {
      const pass = await cp.reconcile();
      const r = pass.computes.find((c) => c.compute === 'l4-first');
      if (r) reports.push(r);
      return (await status('two-kinds')).running === 2;
    });
    // The Ready ones: once l4-first's probe is due, a move back may already have a pod waiting there (surge-back).
    const pods = (await status('two-kinds')).pods
      .filter((p: { ready: boolean }) => p.ready)
      .map((p: { compute: string }) => p.compute)
      .sort();
    expect(pods).toEqual(['a10g-next', 'l4-first']);
    await reconcileUntil(cp, async () => (await compute('l4-first')).desiredNodes === 1);
    // Nobody can fix EC2's capacity: the DEGRADED group is reported short, not failed (no NodegroupFailed page).
    expect(reports.length).toBeGreaterThan(0);
    expect(reports.every((r) => !r.failed)).toBe(true);
    expect(
      cp.transitions.filter(
        (t) => t.kind === 'NodegroupFailed' && t.subject === 'l4-first' && t.to === 'ALARM',
      ),
    ).toEqual([]);
    cp.sim.admin.patchFaults({ unavailableInstanceTypes: [] });
  });

  it('marks a zone short where a group of several zones launches elsewhere, and a one-zone compute of its type short without asking', async () => {
    // The test before left EC2's g6.2xlarge refusals in both zones on l4-first, which hold for twice the grace:
    // every compute of that type is rightly short until they lapse, so this one starts once they have.
    await reconcileUntil(cp, async () => (await compute('l4-first')).shortZones === undefined, 200);
    // The stage's two subnets are us-east-1a and us-east-1b; EC2 has no g6.2xlarge in us-east-1a only.
    const l4 = (await call('GET', '/v1/computes/gpu-l4-1x')).body;
    const post = (name: string, subnetIds?: string[]) =>
      call('POST', '/v1/computes', {
        apiVersion: 'llmcap/v1',
        kind: 'Compute',
        metadata: { name },
        spec: { ...l4.spec, nodeGroup: { ...l4.spec.nodeGroup, ...(subnetIds ? { subnetIds } : {}) } },
      });
    expect((await post('l4-ab')).status).toBe(201);
    expect((await post('l4-a', ['subnet-0aaaaaaaaaaaaaaa1'])).status).toBe(201);
    expect((await call('POST', '/v1/computes/gpu-a10g-1x/clone', { name: 'a10g-ab' })).status).toBe(201);
    cp.sim.admin.patchFaults({ launchFailures: [{ instanceType: 'g6.2xlarge', zone: 'us-east-1a' }] });

    // Two replicas on the two-zone compute: Auto Scaling launches both in us-east-1b after us-east-1a refused.
    expect((await call('POST', '/v1/models', model('zonal', 'l4-ab', 2))).status).toBe(201);
    await reconcileUntil(cp, async () => (await status('zonal')).running === 2);
    await reconcileUntil(cp, async () => (await compute('l4-ab')).shortZones !== undefined);
    const ab = await compute('l4-ab');
    expect(ab.zones).toEqual(['us-east-1a', 'us-east-1b']);
    expect(ab.shortOfCapacity).toBeUndefined();
    expect(ab.shortZones).toEqual([
      expect.objectContaining({
        zone: 'us-east-1a',
        message: expect.stringContaining('capacity in the Availability Zone you requested (us-east-1a)'),
      }),
    ]);
    const listed = await llmcap(['get', 'computes', 'l4-ab'], { endpoint: cp.apiUrl });
    expect(listed.stdout).toContain('short in us-east-1a');
    const described = await llmcap(['describe', 'compute', 'l4-ab'], { endpoint: cp.apiUrl });
    expect(described.stdout).toMatch(/Zones:\s+us-east-1a, us-east-1b/);
    expect(described.stdout).toMatch(
      /Zones short:\s+us-east-1a since \S+ \(tried again after \S+\): Could not launch/,
    );

    // The compute in us-east-1a only has the same instance type and market: EC2 has none for it either, so it is
    // short although it never asked, and a model preferring it runs on its next profile instead.
    await reconcileUntil(cp, async () => (await compute('l4-a')).shortOfCapacity !== undefined);
    expect((await compute('l4-a')).shortOfCapacity.message).toContain('(us-east-1a)');
    const a = await compute('l4-a');
    expect(a.zones).toEqual(['us-east-1a']);
    const m = model('prefers-a', 'l4-a', 1);
    const profiles = [
      m.spec.profiles[0],
      { name: 'a10g', gpus: 1, gpuType: 'A10G', cpuCores: 4, minMemoryGb: 16, compute: 'a10g-ab' },
    ];
    expect((await call('POST', '/v1/models', { ...m, spec: { ...m.spec, profiles } })).status).toBe(201);
    await new Promise((r) =>
      setTimeout(r, Math.max(0, Date.parse(a.shortOfCapacity.countedUntil) - Date.now())),
    );
    await reconcileUntil(cp, async () => {
      const s = await status('prefers-a');
      return s.pods?.some((p: { ready: boolean; compute: string }) => p.ready && p.compute === 'a10g-ab');
    });
    cp.sim.admin.patchFaults({ launchFailures: [] });
  }, 120_000); // it first waits out the test before's refusals: twice the 10 s capacity grace
});
