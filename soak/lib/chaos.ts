import { FAILURE_WINDOW_MINUTES } from '../../lambdas/domain/alarms';
import { nodegroupName } from '../../lambdas/domain/compute';
import { config } from '../../lambdas/shared/config';
import type { ControlPlane } from '../../local/control-plane';
import { expectOk, l4Model, P, setupTenancy } from './fixture';
import { invokeHttp, jsonClient, listAll } from './invoke';
import { converge, pass, type Violation } from './world';

/**
 * Chaos on the local control plane: while models are added, scaled and removed, the cloud simulator throttles
 * and fails a share of EKS and Auto Scaling calls, fails instance launches (CREATE_FAILED on a create,
 * DEGRADED on a scale-out), and node groups vanish out of band. Then the faults stop, and within a bounded
 * number of passes llmcap must match the simulator again with every admitted replica placed, no workflow
 * stuck, and every alarm that fired cleared.
 */

export interface ChaosOptions {
  /** Passes with faults on. */
  faultPasses: number;
  /** Passes allowed to converge once they stop. */
  convergePasses: number;
  throttleRate?: number;
  serverErrorRate?: number;
  seed?: number;
  log?: (line: string) => void;
}

export interface ChaosReport {
  faultPasses: number;
  throttleRate: number;
  serverErrorRate: number;
  apiOps: number;
  apiOpsFailed: string[];
  outOfBandDeletes: number;
  reconcileErrorsDuringFaults: number;
  workflowsStarted: number;
  workflowsFailed: number;
  workflowRetries: number;
  statusesSeen: Record<string, number>;
  alarmsFired: string[];
  alarmsStillOn: string[];
  /** ch-l4 was DEGRADED (a scale-out that could not launch) when the faults stopped. */
  endedDegraded: boolean;
  convergePasses: number;
  violations: Violation[];
  durationMs: number;
}

function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const cpuModel = (name: string, replicas: number) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name, owner: 'project:a' },
  spec: {
    source: `hf://org/${name}`,
    engine: 'llamacpp',
    profiles: [{ name: 'cpu', gpus: 0, cpuCores: 2, minMemoryGb: 4, compute: 'ch-cpu' }],
    scaling: { min: replicas, max: Math.max(replicas, 1) },
  },
});

export async function runChaos(cp: ControlPlane, o: ChaosOptions): Promise<ChaosReport> {
  const t0 = Date.now();
  const log = o.log ?? (() => undefined);
  const rnd = rng(o.seed ?? 7);
  const admin = jsonClient(invokeHttp(cp.apiUrl), P.platform);
  const stage = config().stage;
  const throttleRate = o.throttleRate ?? 0.3;
  const serverErrorRate = o.serverErrorRate ?? 0.1;

  await setupTenancy(admin);
  for (const [from, to] of [
    ['gpu-l4-1x', 'ch-l4'],
    ['gpu-a10g-1x', 'ch-a10'],
    ['cpu-small', 'ch-cpu'],
  ] as const)
    expectOk(`clone ${to}`, await admin('POST', `/v1/computes/${from}/clone`, { name: to }), 201);
  // Before the faults: one L4 node running, so that a scale-out can go DEGRADED.
  expectOk('ch-chat', await admin('POST', '/v1/models', l4Model('ch-chat', 'project:a', 1, 'ch-l4')), 201);
  await converge(cp, admin, 20);

  const execBefore = new Set(cp.sfn.executions.keys());
  cp.sim.admin.setFaults({
    throttleRate,
    serverErrorRate,
    // A10G instances never launch: the create of ch-a10 ends CREATE_FAILED.
    launchFailures: [
      { instanceType: 'g5.2xlarge', code: 'AsgInstanceLaunchFailures', afterMs: 0 },
      // L4 scale-outs fail: ch-l4, ACTIVE with one node, goes DEGRADED when asked for more.
      { instanceType: 'g6.2xlarge', code: 'AsgInstanceLaunchFailures', afterMs: 0 },
    ],
    // The CPU node group disappears shortly after each create, as if someone deleted it in the console.
    vanish: [{ nodegroup: `${nodegroupName(stage, 'ch-cpu')}`, afterMs: 2_000_000 }],
  });
  const report: ChaosReport = {
    faultPasses: 0,
    throttleRate,
    serverErrorRate,
    apiOps: 0,
    apiOpsFailed: [],
    outOfBandDeletes: 0,
    reconcileErrorsDuringFaults: 0,
    workflowsStarted: 0,
    workflowsFailed: 0,
    workflowRetries: 0,
    statusesSeen: {},
    alarmsFired: [],
    alarmsStillOn: [],
    endedDegraded: false,
    convergePasses: 0,
    violations: [],
    durationMs: 0,
  };
  const transitionsBefore = cp.transitions.length;
  const op = async (what: string, method: string, path: string, body?: unknown) => {
    report.apiOps++;
    const r = await admin(method, path, body);
    // 409s are the rules at work (a model that exists, a limit); anything 5xx is a failure.
    if (r.status >= 500) report.apiOpsFailed.push(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
    return r;
  };
  const present = new Set<string>(['ch-chat']);
  for (let i = 0; i < o.faultPasses; i++) {
    const x = rnd();
    if (i === 0) {
      await op('add ch-a10', 'POST', '/v1/models', {
        ...l4Model('ch-a10m', 'project:a', 1, 'ch-a10'),
        spec: {
          ...l4Model('ch-a10m', 'project:a', 1, 'ch-a10').spec,
          profiles: [
            { name: 'a10g', gpus: 1, gpuType: 'A10G', cpuCores: 4, minMemoryGb: 16, compute: 'ch-a10' },
          ],
        },
      });
      present.add('ch-a10m');
      await op('scale ch-chat', 'PUT', '/v1/models/ch-chat/scaling', { min: 2, max: 3 });
      await op('add ch-cpu-m', 'POST', '/v1/models', cpuModel('ch-cpu-m', 2));
      present.add('ch-cpu-m');
    } else if (x < 0.25) {
      const n = 1 + Math.floor(rnd() * 3);
      await op('scale ch-chat', 'PUT', '/v1/models/ch-chat/scaling', { min: n, max: 3 });
    } else if (x < 0.4) {
      if (present.has('ch-cpu-m')) {
        await op('remove ch-cpu-m', 'DELETE', '/v1/models/ch-cpu-m');
        present.delete('ch-cpu-m');
      } else {
        await op('add ch-cpu-m', 'POST', '/v1/models', cpuModel('ch-cpu-m', 1 + Math.floor(rnd() * 3)));
        present.add('ch-cpu-m');
      }
    } else if (x < 0.5) {
      const groups = cp.sim.admin
        .state()
        .nodegroups.filter((g) => g.status === 'ACTIVE' || g.status === 'DEGRADED');
      const g = groups[Math.floor(rnd() * groups.length)];
      if (g && cp.sim.admin.deleteNodegroup(g.name)) {
        report.outOfBandDeletes++;
        log(`chaos: deleted ${g.name} out of band`);
      }
    }
    const s = await cp.reconcile();
    report.faultPasses++;
    report.reconcileErrorsDuringFaults += s.errors.length;
    for (const c of s.computes) report.statusesSeen[c.status] = (report.statusesSeen[c.status] ?? 0) + 1;
    await cp.sfn.waitForIdle(30_000);
    await new Promise((r) => setTimeout(r, 50));
  }
  // End on a DEGRADED group, whatever the random part left: ch-l4 ACTIVE with 2 nodes (API faults off for this
  // step, so it is quick), then a scale-out to 3 that cannot launch.
  const l4 = nodegroupName(stage, 'ch-l4');
  const simStatus = () => cp.sim.admin.state().nodegroups.find((g) => g.name === l4)?.status;
  const faults = cp.sim.admin.getFaults();
  cp.sim.admin.setFaults({});
  await op('scale ch-chat', 'PUT', '/v1/models/ch-chat/scaling', { min: 2, max: 3 });
  const group = () => cp.sim.admin.state().nodegroups.find((g) => g.name === l4);
  for (let i = 0; i < 15; i++) {
    await pass(cp);
    const g = group();
    const ready = g?.autoScalingGroup.instances.filter((x) => x.lifecycleState === 'InService').length ?? 0;
    if (g?.status === 'ACTIVE' && g.scalingConfig.desiredSize === 2 && ready === 2) break;
  }
  cp.sim.admin.setFaults({ launchFailures: faults.launchFailures });
  await op('scale ch-chat', 'PUT', '/v1/models/ch-chat/scaling', { min: 3, max: 3 });
  for (let i = 0; i < 15 && simStatus() !== 'DEGRADED'; i++) await pass(cp);
  // One pass that observes it: llmcap records DEGRADED with the desired size it asked for.
  await pass(cp);
  report.endedDegraded = simStatus() === 'DEGRADED';
  cp.sim.admin.setFaults({});
  const faultsOffAt = Date.now();
  log(`chaos: faults off after ${report.faultPasses} passes (ch-l4 ${simStatus()}, ${Date.now() - t0} ms)`);
  // llmcap's back-offs run on the wall clock (scaled with the simulator), the alarms on the driven one, so the
  // passes below would cover an hour of alarm periods in a few wall seconds, before a back-off set during the
  // faults came due: wait them out first, as an hour of AWS's time would. Those are a create that failed (tried
  // again after LLMCAP_CREATE_RETRY_SECONDS, doubling per failure) and a compute short of capacity (asked for its
  // nodes again at nextProbeAt, the wait doubling per failed probe): how many failures the faults caused depends
  // on how long each pass took. First the passes still queued (a Spot warning's, an API request's) and the
  // workflows they start: they record the last failures, and with them the back-offs to wait for.
  const retryBy = Date.now() + 30_000;
  await cp.lambda.waitForIdle(30_000);
  await cp.sfn.waitForIdle(30_000);
  for (;;) {
    const items = (await listAll(admin, '/v1/computes')) as {
      status?: { nextCreateAttemptAt?: string; shortOfCapacity?: { nextProbeAt?: string } };
    }[];
    const next = Math.max(
      0,
      ...items.map((c) => Date.parse(c.status?.nextCreateAttemptAt ?? '') || 0),
      ...items.map((c) => Date.parse(c.status?.shortOfCapacity?.nextProbeAt ?? '') || 0),
    );
    if (next <= Date.now() || Date.now() > retryBy) break;
    await new Promise((r) => setTimeout(r, Math.min(1000, next - Date.now() + 10)));
  }
  const done = await converge(cp, admin, o.convergePasses);
  report.convergePasses = done.passes;
  report.violations = done.violations;
  // Passes until every alarm has cleared, for at most as long as the failure alarms remember a failed pass:
  // five a minute apart (the longest M-of-N window but the failure ones'), then one every third minute with the
  // clock driven in between, the sparsest schedule that keeps ReconcileStale quiet (3 periods without a pass).
  const stillOn = () => {
    const on = new Map<string, boolean>();
    for (const t of cp.transitions.slice(transitionsBefore)) on.set(t.key, t.alarm);
    return [...on.values()].some(Boolean);
  };
  // The workflow failure alarms count 5-minute periods, and with no data in the later ones CloudWatch looks back
  // over N + 2 periods (local/cloud-sim/alarm-eval.ts evaluationRange): a failure stays in view two periods past
  // the window, and one more for a failure late in its period.
  const clearBy = cp.clock.now() + (FAILURE_WINDOW_MINUTES + 3 * 5 + 1) * 60_000;
  for (let i = 0; i === 0 || (stillOn() && cp.clock.now() <= clearBy); i++) {
    await pass(cp);
    if (i >= 4) await cp.advance(2 * 60_000);
  }

  for (const [arn, e] of cp.sfn.executions) {
    if (execBefore.has(arn)) continue;
    if (e.status !== 'SUCCEEDED')
      log(
        `chaos: ${e.name} ${e.status} ${e.stopDate ? `${e.stopDate.getTime() - faultsOffAt} ms after the faults stopped` : ''}: ${e.error ?? ''} ${e.cause?.slice(0, 200) ?? ''}`,
      );
    report.workflowsStarted++;
    if (e.status !== 'SUCCEEDED') report.workflowsFailed++;
    report.workflowRetries += e.events.filter((ev) => ev.type === 'StateRetried').length;
  }
  const last = new Map<string, boolean>();
  for (const t of cp.transitions.slice(transitionsBefore)) {
    if (t.alarm && !report.alarmsFired.includes(t.key)) report.alarmsFired.push(t.key);
    last.set(t.key, t.alarm);
  }
  report.alarmsStillOn = [...last].filter(([, on]) => on).map(([k]) => k);
  for (const t of cp.transitions.slice(transitionsBefore))
    if (report.alarmsStillOn.includes(t.key))
      log(
        `chaos: ${t.key} ${t.from} → ${t.to} at ${t.at} (clock now ${new Date(cp.clock.now()).toISOString()}, clear by ${new Date(clearBy).toISOString()})`,
      );
  report.durationMs = Date.now() - t0;
  return report;
}
