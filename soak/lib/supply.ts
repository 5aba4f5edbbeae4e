import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resetQuotaCache } from '../../lambdas/aws/quotas';
import { LABEL_MODEL } from '../../lambdas/domain/workloads';
import { DEFAULT_DURATIONS } from '../../local/cloud-sim';
import type { ControlPlane } from '../../local/control-plane';
import { NODES, PODS } from '../../local/k8s-sim/resources';
import { listAll } from './invoke';

/**
 * Supply chaos (issue 32, Figures) against the local control plane, one kind of round per fault the issue names:
 * - spot: EC2 reclaims a Spot node a model runs on (the simulator's EventBridge warning, as EC2 sends it); the last
 *   Spot round has no Spot capacity to replace it, so the replicas move On-Demand.
 * - ice: InsufficientInstanceCapacity on the preferred instance type (g5.2xlarge) of two models at once, as each
 *   asks for a second replica: past the grace they go to their next profile (L4 On-Demand), and move back when
 *   EC2 has the type again.
 * - cordon: an operator cordons and drains (kubectl) the node a standard model runs on.
 * - quota: the account's G and VT vCPU quota binds as a new model is admitted: the compute's pending reason names
 *   the quota and no node beyond it is asked for; then the quota is raised.
 * Times are simulated: wall time divided by the simulator's time scale (node boot, image pull and model load all
 * run on that scaled clock, and so does the grace).
 */

export type FaultKind = 'spot' | 'zone' | 'ice' | 'cordon' | 'quota';

export interface FaultFigures {
  rounds: number;
  /**
   * Simulated seconds per round from the fault being reported to the replacement Ready (read from the simulated
   * cluster's pods every 20 ms, not at the next pass): spot, the warning to each model that ran on the node Ready
   * on another; zone, the ask for a replica more to both replicas of each Ready on the preferred compute, whose
   * group's next zone EC2 refuses (Auto Scaling launches in its other zone: a node's boot, no grace); ice, EC2's failed launch (the shortage's `since`) to both replicas of each model Ready; cordon, the
   * drain done (cordon, then the pod deleted) to the model Ready on another node; quota, the quota raised to the
   * held replicas Ready.
   */
  recoverySeconds: number[];
  p50Seconds: number;
  p99Seconds: number;
  /** Simulated replica-minutes admitted but not Running during this kind's rounds. */
  admittedNotRunningMinutes: number;
}

export interface SupplyChaosReport {
  /** Spot rounds (the figures before the other kinds were added; kept for the results already recorded). */
  rounds: number;
  timeScale: number;
  recoverySeconds: number[];
  p50Seconds: number;
  p99Seconds: number;
  /** A node's boot in the simulator (launch → InService → Node registers → Ready), simulated seconds. */
  nodeBootSeconds: number;
  /**
   * A reconcile pass's own wall time in simulated seconds (p50, p99): inside every figure once or twice (the pass
   * that sees the fault runs its steps before asking for a node), and a time-scale artifact: in AWS a pass
   * takes about as many real seconds.
   */
  passSeconds: { p50: number; p99: number };
  /** Simulated replica-minutes admitted but not Running, over the whole run. */
  admittedNotRunningMinutes: number;
  /** Share of samples (one per pass) in which every model of the class had its minimum Running. */
  availability: Record<string, number>;
  /** Rounds in which the Spot group had no capacity to replace its node. */
  roundsWithoutSpotCapacity: number;
  interruptionsCounted: number;
  faults: Record<FaultKind, FaultFigures>;
  /** LLMCAP_CAPACITY_GRACE_SECONDS in simulated seconds: how long a failed launch is counted on. */
  graceSeconds: number;
  /**
   * Most passes, each run wholly within a grace after a short compute's `countedUntil` (its grace over), after
   * which more replicas were placed on it than it runs nodes taking pods: admission counted on nodes EC2 cannot
   * launch past the grace. 0 is the target.
   */
  admittedOnShortMaxPasses: number;
  /** Samples (per pass and compute) of such a count. */
  admittedPastGrace: number;
  /** Longest such overrun, simulated seconds from `countedUntil` to the end of the last pass that still held it. */
  admittedPastGraceMaxSeconds: number;
  /**
   * Zone rounds (EC2 refused the preferred type in one of its group's two zones) in which the preferred compute
   * was never marked short and no replica was placed elsewhere.
   */
  zoneStayed?: number;
  /** ICE rounds whose replicas all went back to the preferred compute once EC2 had capacity, and how long it took. */
  movedBack: number;
  moveBackSeconds: number[];
  /** Quota rounds whose compute named the quota in its pending reason while it bound. */
  quotaNamed: number;
  /** Passes while the quota bound that left a G node group wanting more vCPUs than the quota (AWS would refuse). */
  beyondQuotaPasses: number;
  /** Cordon rounds whose cordoned node was gone by the time the operator uncordoned it. */
  cordonedNodesGone: number;
}

type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

const L4 = { name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16 };
const MODELS = [
  { name: 'sc-crit', cls: 'critical', profiles: [L4] },
  { name: 'sc-std-a', cls: 'standard', profiles: [L4] },
  { name: 'sc-std-b', cls: 'standard', profiles: [L4] },
  // ICE: preferred A10G (sc-ice), else L4 On-Demand.
  ...['sc-ice-crit', 'sc-ice-std'].map((name) => ({
    name,
    cls: name.endsWith('crit') ? 'critical' : 'standard',
    profiles: [
      { name: 'a10g', gpus: 1, gpuType: 'A10G', cpuCores: 4, minMemoryGb: 16, compute: 'sc-ice' },
      { ...L4, compute: 'sc-od' },
    ],
  })),
];
const ICE_MODELS = MODELS.filter((m) => m.name.startsWith('sc-ice'));
const ICE_TYPE = 'g5.2xlarge';
const G_QUOTA = 'L-DB2E81BA';

const quantile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]! : 0;
};

export async function runSupplyChaos(
  cp: ControlPlane,
  call: Call,
  opts: {
    /** Spot rounds (the last without Spot capacity). */
    rounds: number;
    /** Rounds of each other kind; default 1. */
    zoneRounds?: number;
    iceRounds?: number;
    cordonRounds?: number;
    quotaRounds?: number;
    timeScale: number;
    log?: (l: string) => void;
  },
): Promise<SupplyChaosReport> {
  const log = opts.log ?? (() => {});
  const sim = (ms: number) => ms / opts.timeScale / 1000;
  // The control plane's grace (local/control-plane.ts): wall seconds.
  const graceMs = Number(process.env.LLMCAP_CAPACITY_GRACE_SECONDS ?? 60 * opts.timeScale) * 1000;
  const l4 = (await call('GET', '/v1/computes/gpu-l4-1x')).body.spec;
  const a10g = (await call('GET', '/v1/computes/gpu-a10g-1x')).body.spec;
  for (const [name, base, capacityType, perHour, maxNodes] of [
    ['sc-spot', l4, 'SPOT', 0.3, 4],
    ['sc-od', l4, 'ON_DEMAND', 0.5, 8],
    ['sc-ice', a10g, 'ON_DEMAND', 0.4, 4],
  ] as const) {
    const r = await call('POST', '/v1/computes', {
      apiVersion: 'llmcap/v1',
      kind: 'Compute',
      metadata: { name },
      spec: { node: { ...base.node, capacityType }, nodeGroup: { maxNodes }, cost: { perHour } },
    });
    if (r.status !== 201) throw new Error(`compute ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const createModel = async (name: string, cls: string, profiles: object[], replicas = 1) => {
    const r = await call('POST', '/v1/models', {
      apiVersion: 'llmcap/v1',
      kind: 'Model',
      metadata: { name },
      spec: {
        source: `hf://org/${name}`,
        engine: 'vllm',
        class: cls,
        profiles,
        scaling: { min: replicas, max: replicas },
      },
    });
    if (r.status !== 201) throw new Error(`model ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  };
  for (const m of MODELS) await createModel(m.name, m.cls, m.profiles);

  const dir = mkdtempSync(join(tmpdir(), 'supply-chaos-'));
  cp.sim.kubernetes!.writeKubeconfig(join(dir, 'kubeconfig'));
  const kubectl = (...args: string[]) =>
    new Promise<string>((resolve, reject) =>
      execFile(
        'kubectl',
        ['--kubeconfig', join(dir, 'kubeconfig'), '--cache-dir', join(dir, 'cache'), ...args],
        { timeout: 60_000 },
        (err, stdout, stderr) => (err ? reject(new Error(`kubectl ${args[0]}: ${stderr}`)) : resolve(stdout)),
      ),
    );

  const samples: Record<string, { ok: number; n: number }> = {};
  const notRunningMs: Record<FaultKind | 'start', number> = {
    start: 0,
    spot: 0,
    zone: 0,
    ice: 0,
    cordon: 0,
    quota: 0,
  };
  let kind: FaultKind | 'start' = 'start';
  /** Models outside the availability figures (the quota rounds' own), still counted when admitted and not Running. */
  const extra = new Set<string>();
  let onShortMaxPasses = 0;
  const held = new Map<string, number>();
  let pastGrace = 0;
  let pastGraceMaxMs = 0;
  /** Each pass's wall time (reconcile only), for the figures' share of it. */
  const passMs: number[] = [];
  let last = Date.now();
  const status = async (name: string) => (await call('GET', `/v1/models/${name}`)).body.status;
  const computeStatus = async (name: string) => (await call('GET', `/v1/computes/${name}`)).body.status;
  /** One pass, and what it left: per model admitted and Running, and replicas held on computes that cannot launch. */
  const pass = async () => {
    const started = Date.now();
    const summary = await cp.reconcile();
    const ended = Date.now();
    passMs.push(ended - started);
    await cp.sfn.waitForIdle(10_000);
    const now = Date.now();
    const byClass: Record<string, boolean> = {};
    // Short computes whose grace (to `countedUntil`) was over for the whole pass, and not by a grace more: the
    // time admission must count only the nodes they run that take pods, whenever llmcap's probe is due (its
    // admission runs inside the pass, after the shortage is read). One replica a node here (every profile asks
    // for the one GPU its instance type has), so the replicas placed there count.
    const short: Record<string, { countedUntil: string; nodes: number; placed: number }> = {};
    for (const c of ['sc-spot', 'sc-ice']) {
      const st = await computeStatus(c);
      const s = st.shortOfCapacity;
      if (s && started >= Date.parse(s.countedUntil) && ended < Date.parse(s.countedUntil) + graceMs)
        short[c] = {
          countedUntil: s.countedUntil,
          nodes: Math.max(0, (st.readyNodes ?? 0) - (st.idleNodes?.length ?? 0)),
          placed: 0,
        };
    }
    let notRunning = 0;
    for (const name of [...MODELS.map((m) => m.name), ...extra]) {
      const s = await status(name);
      notRunning += Math.max(0, (s.admitted ?? 0) - (s.running ?? 0));
      const m = MODELS.find((x) => x.name === name);
      if (m) byClass[m.cls] = (byClass[m.cls] ?? true) && (s.running ?? 0) >= 1;
      for (const [c, sh] of Object.entries(short))
        sh.placed += (s.placements ?? [])
          .filter((p: { compute: string }) => p.compute === c)
          .reduce((n: number, p: { replicas: number }) => n + p.replicas, 0);
    }
    for (const [c, { countedUntil, nodes, placed }] of Object.entries(short)) {
      if (placed <= nodes) continue;
      const key = `${c}@${countedUntil}`;
      const n = (held.get(key) ?? 0) + 1;
      held.set(key, n);
      onShortMaxPasses = Math.max(onShortMaxPasses, n);
      pastGrace++;
      pastGraceMaxMs = Math.max(pastGraceMaxMs, ended - Date.parse(countedUntil));
      log(
        `supply: ${placed} replica(s) admitted on ${c}, which runs ${nodes} node(s) taking pods, after a pass run wholly past its grace (${countedUntil})`,
      );
    }
    notRunningMs[kind] += notRunning * (now - last);
    last = now;
    for (const [cls, ok] of Object.entries(byClass)) {
      samples[cls] ??= { ok: 0, n: 0 };
      samples[cls].n++;
      if (ok) samples[cls].ok++;
    }
    return { ok: Object.values(byClass).every(Boolean), summary };
  };
  const spotGroup = () => cp.sim.admin.state().nodegroups.find((g) => g.name.includes('sc-spot'));
  // The figures end when the pods were Ready, read from the simulated cluster every 20 ms (its events run on
  // catching up), not when the next pass looked: a pass is 30 to 150 s simulated at 0.01.
  const cluster = cp.sim.kubernetes!.cluster;
  type Pod = {
    metadata: { labels?: Record<string, string> };
    spec?: { nodeName?: string };
    status?: { conditions?: { type: string; status: string }[] };
  };
  const isReady = (p: Pod) =>
    (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  /** Ready pods of a model, on nodes other than `not`. */
  const readyPods = (pods: Pod[], model: string, not?: string) =>
    pods.filter((p) => p.metadata.labels?.[LABEL_MODEL] === model && isReady(p) && p.spec?.nodeName !== not)
      .length;
  const watchPods = (done: (pods: Pod[]) => boolean) => {
    let at: number | undefined;
    const check = () => {
      if (at !== undefined) return;
      cluster.sim.catchUp();
      if (done(cluster.store.list(PODS) as unknown as Pod[])) at = Date.now();
    };
    const timer = setInterval(check, 20);
    return {
      /** When `done` first held (now, if it holds now and was not seen before). */
      at: () => {
        check();
        clearInterval(timer);
        return at ?? Date.now();
      },
      stop: () => clearInterval(timer),
    };
  };
  const nodeOfInstance = (id: string) =>
    (
      cluster.store.list(NODES) as unknown as { metadata: { name: string }; spec?: { providerID?: string } }[]
    ).find((n) => n.spec?.providerID?.endsWith(`/${id}`))?.metadata.name;
  // Bounds in passes, set at 0.01: at a slower time scale a pass is less simulated time, so more of them.
  const passes = (n: number) => Math.ceil(n * Math.max(1, opts.timeScale / 0.01));
  const until = async (done: () => Promise<boolean>, max = passes(60)) => {
    for (let i = 0; i < max; i++) if (await done()) return true;
    return false;
  };
  const mustUntil = async (what: string, done: () => Promise<boolean>, max = passes(60)) => {
    if (await until(done, max)) return;
    const models = await Promise.all(MODELS.map(async (m) => ({ name: m.name, ...(await status(m.name)) })));
    throw new Error(
      `supply chaos: ${what} not within ${max} passes: ${JSON.stringify({ models: models.map((s) => ({ name: s.name, admitted: s.admitted, running: s.running, placements: s.placements, reasons: s.reasons, podReasons: s.podReasons })), spot: await computeStatus('sc-spot'), ice: await computeStatus('sc-ice'), group: spotGroup()?.autoScalingGroup })}`,
    );
  };
  /**
   * Passes until the L4 groups hold just what they need, every node taking pods: a round that began beside a spare
   * node left by the last one (its replacement, not yet scaled away) would time a pod's restart, not a node's
   * boot.
   */
  const settle = (what: string) =>
    mustUntil(`the L4 groups settled before ${what}`, async () => {
      await pass();
      for (const c of ['sc-spot', 'sc-od']) {
        const st = await computeStatus(c);
        const group = cp.sim.admin.state().nodegroups.find((g) => g.name.endsWith(`-${c}`));
        const live = group?.autoScalingGroup.instances.filter(
          (i) => i.lifecycleState !== 'Terminated',
        ).length;
        if (
          st.desiredNodes !== st.neededNodes ||
          st.readyNodes !== st.desiredNodes ||
          live !== st.desiredNodes ||
          st.idleNodes?.length
        )
          return false;
      }
      return true;
    });
  const recovery: Record<FaultKind, number[]> = { spot: [], zone: [], ice: [], cordon: [], quota: [] };
  let zoneStayed = 0;
  const moveBack: number[] = [];
  let quotaNamed = 0;
  let beyondQuota = 0;
  let withoutCapacity = 0;
  let cordonedGone = 0;
  try {
    await mustUntil('the start', async () => (await pass()).ok);
    // Figures from here: the start (nodes booting for the first time) is not a fault.
    for (const k of Object.keys(samples)) delete samples[k];
    last = Date.now();

    kind = 'spot';
    for (let round = 0; round < opts.rounds; round++) {
      await settle(`Spot round ${round + 1}`);
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
      // An instance a model runs on (in turn), so that each round takes a replica away.
      cluster.sim.catchUp();
      const pods = cluster.store.list(PODS) as unknown as Pod[];
      const runsOn = (id: string) =>
        pods.filter(
          (p) => isReady(p) && p.spec?.nodeName === nodeOfInstance(id) && p.metadata.labels?.[LABEL_MODEL],
        );
      const busy = live.filter((i) => runsOn(i.id).length > 0);
      const instance = (busy.length ? busy : live)[round % (busy.length || live.length)]!.id;
      const warned = nodeOfInstance(instance);
      const victims = runsOn(instance).map((p) => p.metadata.labels![LABEL_MODEL]!);
      const t0 = Date.now();
      // Recovered: each model that ran there Ready on another node (its minimum Running again).
      const watch = watchPods((ps) => victims.every((m) => readyPods(ps, m, warned) >= 1));
      cp.sim.admin.interruptSpot(instance);
      await mustUntil('recovery from a Spot reclaim', async () => {
        const { ok } = await pass();
        return ok && !spotGroup()?.autoScalingGroup.instances.some((i) => i.id === instance);
      }).finally(() => watch.stop());
      recovery.spot.push(sim(watch.at() - t0));
      log(
        `supply spot ${round + 1}: ${noCapacity ? 'no Spot capacity' : 'Spot capacity'}; ${victims.join(', ')} Ready elsewhere ${recovery.spot.at(-1)!.toFixed(0)} s simulated after the warning`,
      );
    }
    cp.sim.admin.patchFaults({ launchFailures: [] });

    const scale = (name: string, body: object) =>
      call('PUT', `/v1/models/${name}/scaling`, body).then((r) => {
        if (r.status !== 200) throw new Error(`scaling ${name}: ${r.status} ${JSON.stringify(r.body)}`);
      });
    const backToOne = async (what: string) => {
      for (const m of ICE_MODELS) await scale(m.name, { min: 1, max: 1 });
      await mustUntil(what, async () => {
        const { ok } = await pass();
        const all = await Promise.all(ICE_MODELS.map((m) => status(m.name)));
        return ok && all.every((s) => s.admitted === 1 && s.running === 1);
      });
    };

    kind = 'zone';
    for (let round = 0; round < (opts.zoneRounds ?? 1); round++) {
      // EC2 runs out of the preferred type in the zone Auto Scaling would launch the next node in (the one with
      // fewest of the group's instances); the group's other zone has it.
      const group = cp.sim.admin.state().nodegroups.find((g) => g.name.endsWith('-sc-ice'));
      const zones: string[] = (await computeStatus('sc-ice')).zones ?? [];
      const inZone = (z: string) =>
        group?.autoScalingGroup.instances.filter((i) => i.az === z && i.lifecycleState !== 'Terminating')
          .length ?? 0;
      const zone = [...zones].sort((a, b) => inZone(a) - inZone(b))[0];
      if (zones.length < 2 || !zone)
        throw new Error(`supply chaos: sc-ice spans ${zones.length} zones, not two`);
      // Auto Scaling's "EC2 Instance Launch Unsuccessful" events say EC2 did refuse the zone.
      let refused = false;
      const stopListening = cp.sim.onEvent((e) => {
        const d = e.detail as { AutoScalingGroupName?: string; Details?: Record<string, string> };
        if (
          d.AutoScalingGroupName === group?.autoScalingGroup.name &&
          d.Details?.['Availability Zone'] === zone
        )
          refused = true;
      });
      cp.sim.admin.patchFaults({ launchFailures: [{ instanceType: ICE_TYPE, zone }] });
      const t0 = Date.now();
      for (const m of ICE_MODELS) await scale(m.name, { min: 1, max: 2, target: 2 });
      let short = false;
      let elsewhere = false;
      let named = false;
      const watch = watchPods((ps) => ICE_MODELS.every((m) => readyPods(ps, m.name) >= 2));
      await mustUntil('zone: replicas Ready on the preferred compute', async () => {
        await pass();
        const st = await computeStatus('sc-ice');
        short ||= st.shortOfCapacity !== undefined;
        named ||= (st.shortZones ?? []).some((z: { zone: string }) => z.zone === zone);
        const all = await Promise.all(ICE_MODELS.map((m) => status(m.name)));
        elsewhere ||= all.some((s) =>
          (s.placements ?? []).some((p: { compute: string }) => p.compute !== 'sc-ice'),
        );
        return refused && all.every((s) => s.running === 2);
      }).finally(() => {
        watch.stop();
        stopListening();
      });
      recovery.zone.push(sim(watch.at() - t0));
      if (!short && !elsewhere) zoneStayed++;
      // The zone is listed for twice the grace after its refusal: at a small time scale a pass may not see it.
      log(
        `supply zone ${round + 1}: ${zone} refused; Ready ${recovery.zone.at(-1)!.toFixed(0)} s after the ask; compute marked short: ${short}, replicas placed elsewhere: ${elsewhere}, zone listed on the compute: ${named}`,
      );
      cp.sim.admin.patchFaults({ launchFailures: [] });
      await backToOne('zone models back to one replica');
    }

    kind = 'ice';
    for (let round = 0; round < (opts.iceRounds ?? 1); round++) {
      // EC2 runs out of the preferred type just as both models want a replica more.
      cp.sim.admin.patchFaults({ unavailableInstanceTypes: [ICE_TYPE] });
      for (const m of ICE_MODELS) await scale(m.name, { min: 1, max: 2, target: 2 });
      // From EC2's failed launch (the shortage's `since`, when AWS reported it) to both replicas of each Ready.
      let since: number | undefined;
      const watch = watchPods((ps) => ICE_MODELS.every((m) => readyPods(ps, m.name) >= 2));
      await mustUntil('ICE replicas Running elsewhere', async () => {
        await pass();
        const short = (await computeStatus('sc-ice')).shortOfCapacity;
        if (since === undefined && short) since = Date.parse(short.since);
        const all = await Promise.all(ICE_MODELS.map((m) => status(m.name)));
        return since !== undefined && all.every((s) => s.running === 2);
      }).finally(() => watch.stop());
      recovery.ice.push(sim(watch.at() - since!));
      // Capacity returns: the replicas on the fallback move back surge-first (bounded: a figure, not a wait).
      cp.sim.admin.patchFaults({ unavailableInstanceTypes: [] });
      const t1 = Date.now();
      const back = await until(async () => {
        await pass();
        const all = await Promise.all(ICE_MODELS.map((m) => status(m.name)));
        return all.every(
          (s) =>
            s.running === 2 && (s.placements ?? []).every((p: { compute: string }) => p.compute === 'sc-ice'),
        );
      }, passes(40));
      if (back) moveBack.push(sim(Date.now() - t1));
      log(
        `supply ice ${round + 1}: short → Running elsewhere ${recovery.ice.at(-1)!.toFixed(0)} s; moved back: ${back ? `${moveBack.at(-1)!.toFixed(0)} s` : 'no'}`,
      );
      await backToOne('ICE models back to one replica');
    }

    kind = 'cordon';
    for (let round = 0; round < (opts.cordonRounds ?? 1); round++) {
      await settle(`cordon round ${round + 1}`);
      const victim = round % 2 ? 'sc-std-b' : 'sc-std-a';
      const pod = (await status(victim)).pods?.find((p: { ready: boolean }) => p.ready) as
        | { name: string; namespace: string; node: string }
        | undefined;
      if (!pod) throw new Error(`supply chaos: ${victim} runs on no node to cordon`);
      const node = pod.node;
      // The one-replica model's PodDisruptionBudget (minAvailable 1) makes an evicting drain wait for ever, by
      // design; the operator drains with --disable-eviction, which cordons the node and deletes its pods.
      await kubectl(
        'drain',
        node,
        '--ignore-daemonsets',
        '--delete-emptydir-data',
        '--disable-eviction',
        '--timeout=50s',
      );
      // From the drain done (the replica gone): the two kubectl runs take about a wall second, which the
      // simulated clock would count a hundred times over at 0.01.
      const t0 = Date.now();
      const watch = watchPods((ps) => readyPods(ps, victim, node) >= 1);
      await mustUntil('recovery from a cordon', async () => {
        const { ok } = await pass();
        return (
          ok &&
          (await status(victim)).pods?.some(
            (p: { ready: boolean; node: string }) => p.ready && p.node !== node,
          )
        );
      }).finally(() => watch.stop());
      recovery.cordon.push(sim(watch.at() - t0));
      log(`supply cordon ${round + 1}: ${victim} Running again in ${recovery.cordon.at(-1)!.toFixed(0)} s`);
      // The node may be gone (seen once after a round without Spot capacity): said, not hidden.
      await kubectl('uncordon', node).catch((e: Error) => {
        if (!/NotFound/.test(e.message)) throw e;
        cordonedGone++;
        log(`supply cordon ${round + 1}: ${node} was gone before the operator uncordoned it`);
      });
    }

    kind = 'quota';
    const gComputes = async () =>
      (
        (await listAll(call, '/v1/computes')) as {
          metadata: { name: string };
          spec: { node: { instanceType: string; cpu: number; capacityType?: string } };
          status: { desiredNodes?: number; neededNodes?: number; readyNodes?: number };
        }[]
      ).filter((c) => /^g/.test(c.spec.node.instanceType));
    // Spot nodes count against the Spot quota, not this one.
    const onDemand = (c: { spec: { node: { capacityType?: string } } }) =>
      c.spec.node.capacityType !== 'SPOT';
    for (let round = 0; round < (opts.quotaRounds ?? 1); round++) {
      // The On-Demand G groups settled first: the last round's model gone before a pass began (so that pass
      // planned without it) and each group at the nodes it needs, with no more running. A node still leaving
      // would be room the new model takes, and the quota would not bind (the second round of the run of
      // 2026-12-06 07:09).
      const previous = `sc-quota-${round}`;
      await mustUntil('the On-Demand G groups settled before a quota round', async () => {
        const gone = round === 0 || (await call('GET', `/v1/models/${previous}`)).status === 404;
        await pass();
        // sc-od needs a node per replica placed on it (one a node), no more.
        let onOd = 0;
        for (const m of MODELS)
          for (const p of (await status(m.name)).placements ?? [])
            if (p.compute === 'sc-od') onOd += p.replicas;
        const groups = (await gComputes()).filter(onDemand);
        return (
          gone &&
          groups.find((c) => c.metadata.name === 'sc-od')?.status.neededNodes === onOd &&
          groups.every(
            (c) =>
              (c.status.desiredNodes ?? 0) === (c.status.neededNodes ?? 0) &&
              (c.status.readyNodes ?? 0) === (c.status.desiredNodes ?? 0),
          )
        );
      });
      // The G and VT vCPUs the groups want now (as their computes say), and sc-od's nodes to spare: the quota
      // binds at that value, and the model asks for one replica more than the spare nodes hold.
      const before = await gComputes();
      const quota = before
        .filter(onDemand)
        .reduce((n, c) => n + c.spec.node.cpu * (c.status.neededNodes ?? 0), 0);
      const desiredBefore = new Map(before.map((c) => [c.metadata.name, c.status.desiredNodes ?? 0]));
      const od = await computeStatus('sc-od');
      const replicas = Math.max(0, (od.desiredNodes ?? 0) - (od.neededNodes ?? 0)) + 1;
      cp.sim.admin.setQuotas({ [G_QUOTA]: quota });
      resetQuotaCache();
      const name = `sc-quota-${round + 1}`;
      extra.add(name);
      await createModel(name, 'standard', [{ ...L4, compute: 'sc-od' }], replicas);
      let named = false;
      for (let i = 0; i < 3; i++) {
        await pass();
        // A group asked for more nodes while the quota binds: a launch AWS would refuse.
        if (
          (await gComputes()).some((c) => (c.status.desiredNodes ?? 0) > desiredBefore.get(c.metadata.name)!)
        )
          beyondQuota++;
        named ||= ((await computeStatus('sc-od')).pendingReason ?? '').includes(
          `(${G_QUOTA}) of ${quota} vCPUs`,
        );
      }
      if (named) quotaNamed++;
      else
        log(
          `supply quota ${round + 1}: sc-od did not name the quota of ${quota}: ${JSON.stringify(await computeStatus('sc-od'))}; ${name} (${replicas}): ${JSON.stringify(await status(name))}`,
        );
      cp.sim.admin.setQuotas({ [G_QUOTA]: 768 });
      resetQuotaCache();
      const t0 = Date.now();
      const watch = watchPods((ps) => readyPods(ps, name) >= replicas);
      await mustUntil('the held replica Running once the quota is raised', async () => {
        const { ok } = await pass();
        return ok && (await status(name)).running === replicas;
      }).finally(() => watch.stop());
      recovery.quota.push(sim(watch.at() - t0));
      log(
        `supply quota ${round + 1}: named in the pending reason: ${named}; Running ${recovery.quota.at(-1)!.toFixed(0)} s after the raise`,
      );
      const d = await call('DELETE', `/v1/models/${name}`);
      if (d.status >= 300) throw new Error(`delete ${name}: ${d.status} ${JSON.stringify(d.body)}`);
      extra.delete(name);
    }
  } finally {
    cp.sim.admin.patchFaults({ launchFailures: [], unavailableInstanceTypes: [] });
    rmSync(dir, { recursive: true, force: true });
  }
  const minutes = (ms: number) => Math.round((sim(ms) / 60) * 10) / 10;
  const figures = (k: FaultKind): FaultFigures => ({
    rounds: recovery[k].length,
    recoverySeconds: recovery[k].map((x) => Math.round(x)),
    p50Seconds: Math.round(quantile(recovery[k], 0.5)),
    p99Seconds: Math.round(quantile(recovery[k], 0.99)),
    admittedNotRunningMinutes: minutes(notRunningMs[k]),
  });
  const interruptions = (await computeStatus('sc-spot')).interruptions?.count ?? 0;
  return {
    rounds: opts.rounds,
    timeScale: opts.timeScale,
    recoverySeconds: recovery.spot.map((x) => Math.round(x)),
    p50Seconds: Math.round(quantile(recovery.spot, 0.5)),
    p99Seconds: Math.round(quantile(recovery.spot, 0.99)),
    passSeconds: {
      p50: Math.round(sim(quantile(passMs, 0.5))),
      p99: Math.round(sim(quantile(passMs, 0.99))),
    },
    nodeBootSeconds:
      (DEFAULT_DURATIONS.instanceLaunchMs +
        DEFAULT_DURATIONS.nodeRegisterMs +
        DEFAULT_DURATIONS.nodeReadyMs) /
      1000,
    admittedNotRunningMinutes: minutes(
      notRunningMs.spot + notRunningMs.zone + notRunningMs.ice + notRunningMs.cordon + notRunningMs.quota,
    ),
    availability: Object.fromEntries(
      Object.entries(samples).map(([k, v]) => [k, Math.round((v.ok / v.n) * 1000) / 1000]),
    ),
    roundsWithoutSpotCapacity: withoutCapacity,
    interruptionsCounted: interruptions,
    faults: {
      spot: figures('spot'),
      zone: figures('zone'),
      ice: figures('ice'),
      cordon: figures('cordon'),
      quota: figures('quota'),
    },
    graceSeconds: Math.round(sim(graceMs)),
    admittedOnShortMaxPasses: onShortMaxPasses,
    admittedPastGrace: pastGrace,
    admittedPastGraceMaxSeconds: Math.round(sim(pastGraceMaxMs)),
    zoneStayed,
    movedBack: moveBack.length,
    moveBackSeconds: moveBack.map((x) => Math.round(x)),
    quotaNamed,
    beyondQuotaPasses: beyondQuota,
    cordonedNodesGone: cordonedGone,
  };
}
