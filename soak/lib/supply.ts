import { DEFAULT_DURATIONS } from '../../local/cloud-sim';
import type { ControlPlane } from '../../local/control-plane';

/**
 * Supply chaos (issue 32, Figures): EC2 reclaims Spot nodes that models run on, with and without Spot capacity
 * to replace them, against the local control plane. Per round: one Spot instance is warned (the simulator's
 * EventBridge event, as EC2 sends it), then passes run until every model has its minimum Ready again and the
 * instance is gone. Every round but the last, the Spot group has room and capacity to replace the node; in the
 * last it has no Spot capacity, so the replicas move On-Demand. Times are simulated: wall time divided by the simulator's time scale (node boot, image pull
 * and model load all run on that scaled clock).
 */

export interface SupplyChaosReport {
  rounds: number;
  timeScale: number;
  /** Simulated seconds from the warning to every model's minimum Ready again, per round. */
  recoverySeconds: number[];
  p50Seconds: number;
  p99Seconds: number;
  /** A node's boot in the simulator (launch → InService → Node registers → Ready), simulated seconds. */
  nodeBootSeconds: number;
  /** Simulated replica-minutes admitted but not Running, over the whole run. */
  admittedNotRunningMinutes: number;
  /** Share of samples (one per pass) in which every model of the class had its minimum Running. */
  availability: Record<string, number>;
  /** Rounds in which the Spot group had no capacity to replace its node. */
  roundsWithoutSpotCapacity: number;
  interruptionsCounted: number;
}

type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

const MODELS = [
  { name: 'sc-crit', cls: 'critical' },
  { name: 'sc-std-a', cls: 'standard' },
  { name: 'sc-std-b', cls: 'standard' },
];

export async function runSupplyChaos(
  cp: ControlPlane,
  call: Call,
  opts: { rounds: number; timeScale: number; log?: (l: string) => void },
): Promise<SupplyChaosReport> {
  const log = opts.log ?? (() => {});
  const base = (await call('GET', '/v1/computes/gpu-l4-1x')).body.spec;
  for (const [name, capacityType, perHour, maxNodes] of [
    ['sc-spot', 'SPOT', 0.3, 4],
    ['sc-od', 'ON_DEMAND', 0.5, 4],
  ] as const) {
    const r = await call('POST', '/v1/computes', {
      apiVersion: 'llmcap/v1',
      kind: 'Compute',
      metadata: { name },
      spec: { node: { ...base.node, capacityType }, nodeGroup: { maxNodes }, cost: { perHour } },
    });
    if (r.status !== 201) throw new Error(`compute ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  for (const m of MODELS) {
    const r = await call('POST', '/v1/models', {
      apiVersion: 'llmcap/v1',
      kind: 'Model',
      metadata: { name: m.name },
      spec: {
        source: `hf://org/${m.name}`,
        engine: 'vllm',
        class: m.cls,
        profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16 }],
        scaling: { min: 1, max: 1 },
      },
    });
    if (r.status !== 201) throw new Error(`model ${m.name}: ${r.status} ${JSON.stringify(r.body)}`);
  }

  const samples: Record<string, { ok: number; n: number }> = {};
  let notRunningMs = 0;
  let last = Date.now();
  /** One pass, and what it left: per model, admitted and running. */
  const pass = async () => {
    await cp.reconcile();
    await cp.sfn.waitForIdle(10_000);
    const now = Date.now();
    const byClass: Record<string, boolean> = {};
    let short = 0;
    for (const m of MODELS) {
      const s = (await call('GET', `/v1/models/${m.name}`)).body.status;
      short += Math.max(0, (s.admitted ?? 0) - (s.running ?? 0));
      byClass[m.cls] = (byClass[m.cls] ?? true) && (s.running ?? 0) >= 1;
    }
    notRunningMs += short * (now - last);
    last = now;
    for (const [cls, ok] of Object.entries(byClass)) {
      samples[cls] ??= { ok: 0, n: 0 };
      samples[cls].n++;
      if (ok) samples[cls].ok++;
    }
    return Object.values(byClass).every(Boolean);
  };
  const until = async (done: () => Promise<boolean>, max = 60) => {
    for (let i = 0; i < max; i++) if (await done()) return;
    const models = await Promise.all(
      MODELS.map(async (m) => (await call('GET', `/v1/models/${m.name}`)).body.status),
    );
    const spot = (await call('GET', '/v1/computes/sc-spot')).body.status;
    throw new Error(
      `supply chaos: did not recover within ${max} passes: ${JSON.stringify({ models: models.map((s) => ({ admitted: s.admitted, running: s.running, placements: s.placements, reasons: s.reasons, podReasons: s.podReasons })), spot, group: spotGroup()?.autoScalingGroup })}`,
    );
  };
  await until(pass);
  // Figures from here: the start (nodes booting for the first time) is not a fault.
  for (const k of Object.keys(samples)) delete samples[k];
  notRunningMs = 0;
  last = Date.now();

  const spotGroup = () => cp.sim.admin.state().nodegroups.find((g) => g.name.includes('sc-spot'));
  const recovery: number[] = [];
  let withoutCapacity = 0;
  for (let round = 0; round < opts.rounds; round++) {
    // The last round EC2 has no Spot capacity left to replace the node with: the replicas go On-Demand and stay
    // there (moving back when Spot returns is consolidation's, not measured here).
    const noCapacity = round === opts.rounds - 1;
    cp.sim.admin.patchFaults({
      launchFailures: noCapacity
        ? [
            {
              nodegroup: spotGroup()!.name,
              message: 'There is no Spot capacity available that matches your request.',
            },
          ]
        : [],
    });
    if (noCapacity) withoutCapacity++;
    const live =
      spotGroup()?.autoScalingGroup.instances.filter((i) => i.lifecycleState === 'InService') ?? [];
    if (live.length === 0) throw new Error('supply chaos: no Spot node left to reclaim');
    const instance = live[round % live.length]!.id;
    const t0 = Date.now();
    cp.sim.admin.interruptSpot(instance);
    await until(async () => {
      const ok = await pass();
      const gone = !spotGroup()?.autoScalingGroup.instances.some((i) => i.id === instance);
      return ok && gone;
    });
    const s = (Date.now() - t0) / opts.timeScale / 1000;
    recovery.push(s);
    log(
      `supply round ${round + 1}: ${noCapacity ? 'no Spot capacity' : 'Spot capacity'}; recovered in ${s.toFixed(0)} s simulated`,
    );
  }
  cp.sim.admin.patchFaults({ launchFailures: [] });
  const sorted = [...recovery].sort((a, b) => a - b);
  const q = (p: number) =>
    sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]! : 0;
  const interruptions = (await call('GET', '/v1/computes/sc-spot')).body.status.interruptions?.count ?? 0;
  return {
    rounds: opts.rounds,
    timeScale: opts.timeScale,
    recoverySeconds: recovery.map((x) => Math.round(x)),
    p50Seconds: Math.round(q(0.5)),
    p99Seconds: Math.round(q(0.99)),
    nodeBootSeconds:
      (DEFAULT_DURATIONS.instanceLaunchMs +
        DEFAULT_DURATIONS.nodeRegisterMs +
        DEFAULT_DURATIONS.nodeReadyMs) /
      1000,
    admittedNotRunningMinutes: Math.round((notRunningMs / opts.timeScale / 60_000) * 10) / 10,
    availability: Object.fromEntries(
      Object.entries(samples).map(([k, v]) => [k, Math.round((v.ok / v.n) * 1000) / 1000]),
    ),
    roundsWithoutSpotCapacity: withoutCapacity,
    interruptionsCounted: interruptions,
  };
}
