import fc from 'fast-check';
import { decideWorld, heldReplicas } from '../../../lambdas/domain/admission-world';
import {
  type AutoscaleState,
  autoscale,
  autoscalingIssues,
  demandChanges,
  demandTarget,
  gaugeValue,
  hpaReplicas,
  observeStartTimes,
  type PodLoad,
  podLoadFromText,
  stabilize,
  wake,
  wakeEstimate,
} from '../../../lambdas/domain/autoscaling';
import type { Compute } from '../../../lambdas/domain/compute';
import { type Model, ModelSpecSchema } from '../../../lambdas/domain/model';
import { BUILTIN_COMPUTES } from '../../helpers/computes';

const at = (s: number) => new Date(Date.UTC(2026, 0, 1) + s * 1000).toISOString();
const ready = (value: number, busy = value): PodLoad => ({ ready: true, value, busy });
const starting: PodLoad = { ready: false };
const missing: PodLoad = { ready: true };

describe('the policy in the spec', () => {
  const spec = (autoscaling: unknown, over: Record<string, unknown> = {}) => ({
    source: 'hf://Qwen/Qwen3-8B',
    engine: 'vllm',
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 24 }],
    scaling: { min: 0, max: 4 },
    autoscaling,
    ...over,
  });
  const messages = (s: unknown) => {
    const r = ModelSpecSchema.safeParse(s);
    return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  };

  it('accepts each engine its own gauges and keeps what was sent', () => {
    for (const [engine, metric] of [
      ['vllm', 'vllm:num_requests_waiting'],
      ['sglang', 'sglang:num_queue_reqs'],
      ['tgi', 'tgi_queue_size'],
      ['llamacpp', 'llamacpp:requests_deferred'],
    ]) {
      const r = ModelSpecSchema.parse(
        spec({ metric, targetPerReplica: 4, scaleToZeroAfterSeconds: 600 }, { engine }),
      );
      expect(r.autoscaling).toEqual({ metric, targetPerReplica: 4, scaleToZeroAfterSeconds: 600 });
    }
  });

  it('refuses ollama, another engine’s gauge, a KV share above 1 and scale to zero above min 0, all at once', () => {
    expect(messages(spec({ metric: 'x', targetPerReplica: 1 }, { engine: 'ollama' }))).toEqual([
      'autoscaling: engine ollama serves no Prometheus metrics, so llmcap cannot scale it on load; drop autoscaling or use vllm, sglang, tgi or llamacpp',
    ]);
    expect(messages(spec({ metric: 'sglang:num_queue_reqs', targetPerReplica: 1 }))).toEqual([
      expect.stringMatching(
        /^autoscaling\.metric: engine vllm serves no metric sglang:num_queue_reqs; use one of vllm:num_requests_waiting, /,
      ),
    ]);
    expect(
      messages(
        spec(
          { metric: 'vllm:gpu_cache_usage_perc', targetPerReplica: 80, scaleToZeroAfterSeconds: 60 },
          { scaling: { min: 1, max: 3 } },
        ),
      ),
    ).toEqual([
      'autoscaling.targetPerReplica: vllm:gpu_cache_usage_perc is a share of the KV cache between 0 and 1; set targetPerReplica to at most 1 (0.8 is 80%)',
      'autoscaling.scaleToZeroAfterSeconds: scaleToZeroAfterSeconds needs scaling.min 0 (it is 1); set min to 0 or drop scaleToZeroAfterSeconds',
    ]);
  });

  it('says nothing of a spec without autoscaling', () => {
    expect(autoscalingIssues({ engine: 'ollama', scaling: { min: 1, max: 1 } })).toEqual([]);
  });
});

describe('the HPA replica calculation', () => {
  it('scales by the ratio of the mean to the target, ceiling', () => {
    // 3 pods with 6, 8, 10 waiting, target 4: mean 8, ratio 2 → 6.
    expect(hpaReplicas([ready(6), ready(8), ready(10)], 4, 3)).toBe(6);
    // ratio 0.5 with 4 pods → 2.
    expect(hpaReplicas([ready(2), ready(2), ready(2), ready(2)], 4, 4)).toBe(2);
    // 7 / 3 = 2.33 → 3 (ceil) from 1 pod.
    expect(hpaReplicas([ready(7)], 3, 1)).toBe(3);
  });

  it('keeps the replicas within 10% of the target', () => {
    expect(hpaReplicas([ready(4.3), ready(4.3)], 4, 2)).toBe(2);
    expect(hpaReplicas([ready(3.7), ready(3.7)], 4, 2)).toBe(2);
    expect(hpaReplicas([ready(4.5), ready(4.5)], 4, 2)).toBe(3);
  });

  it('counts pods not Ready as 0 on a scale-up', () => {
    // 2 Ready at 12 (ratio 3), 2 starting: recomputed 24/4 = 6 → ratio 1.5 → ceil(1.5 × 4) = 6.
    expect(hpaReplicas([ready(12), ready(12), starting, starting], 4, 4)).toBe(6);
    // The starting pods absorb it: 2 Ready at 5 (1.25), 2 starting → 10/4 = 2.5, ratio 0.625 reverses: keep 4.
    expect(hpaReplicas([ready(5), ready(5), starting, starting], 4, 4)).toBe(4);
  });

  it('leaves pods not Ready out of a scale-down', () => {
    // 2 Ready at 1 (ratio 0.25), 1 starting: ceil(0.25 × 2) = 1.
    expect(hpaReplicas([ready(1), ready(1), starting], 4, 3)).toBe(1);
  });

  it('counts a Ready pod without metrics as the target on a scale-down and as 0 on a scale-up', () => {
    // Down: 0 and 0 with one missing → (0 + 0 + 4) / 3 / 4 = 0.33 → ceil(1) = 1.
    expect(hpaReplicas([ready(0), ready(0), missing], 4, 3)).toBe(1);
    // Up: 8 and 8 with one missing → 16 / 3 / 4 = 1.33 → 4.
    expect(hpaReplicas([ready(8), ready(8), missing], 4, 3)).toBe(4);
    // Up: 5 with one missing → 5 / 2 / 4 = 0.625, the direction reverses: keep 2.
    expect(hpaReplicas([ready(5), missing], 4, 2)).toBe(2);
  });

  it('has no answer without a pod that served the metric', () => {
    expect(hpaReplicas([], 4, 0)).toBeUndefined();
    expect(hpaReplicas([starting, missing], 4, 2)).toBeUndefined();
  });

  it('never moves against the direction of the load (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.nat(40).map((v) => ready(v)),
            fc.constant(starting),
            fc.constant(missing),
          ),
          {
            minLength: 1,
            maxLength: 12,
          },
        ),
        fc.integer({ min: 1, max: 10 }),
        (pods, target) => {
          const current = pods.length;
          const r = hpaReplicas(pods, target, current);
          const served = pods.filter((p) => p.ready && p.value !== undefined);
          if (served.length === 0) return r === undefined;
          const ratio = served.reduce((n, p) => n + p.value!, 0) / served.length / target;
          if (ratio > 1) return r! >= current;
          if (ratio < 1) return r! <= current;
          return r === current;
        },
      ),
    );
  });
});

describe('stabilization windows', () => {
  it('takes the highest recommendation of the scale-down window', () => {
    const history = [
      { at: at(0), replicas: 5 },
      { at: at(100), replicas: 3 },
    ];
    expect(stabilize(1, 5, history, at(200), 0, 300)).toBe(5);
    // The 5 left the window: the 3 still binds.
    expect(stabilize(1, 5, history, at(350), 0, 300)).toBe(3);
    expect(stabilize(1, 5, history, at(401), 0, 300)).toBe(1);
  });

  it('takes the lowest recommendation of the scale-up window', () => {
    const history = [{ at: at(0), replicas: 2 }];
    expect(stabilize(6, 2, history, at(30), 60, 300)).toBe(2);
    expect(stabilize(6, 2, history, at(61), 60, 300)).toBe(6);
  });

  it('never leaves [lowest in the up window, highest in the down window] (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ s: fc.nat(600), replicas: fc.nat(20) }), { maxLength: 10 }),
        fc.nat(20),
        fc.nat(20),
        fc.nat(300),
        fc.nat(600),
        (recs, rec, current, up, down) => {
          const history = recs.map((r) => ({ at: at(r.s), replicas: r.replicas }));
          const now = at(600);
          const out = stabilize(rec, current, history, now, up, down);
          const inUp = recs.filter((r) => 600 - r.s < up).map((r) => r.replicas);
          const inDown = recs.filter((r) => 600 - r.s < down).map((r) => r.replicas);
          const lo = Math.min(rec, ...inUp);
          const hi = Math.max(rec, ...inDown);
          // Between the bounds, or exactly current when current already lies between them.
          return lo <= hi ? out >= Math.min(lo, hi) && out <= hi : true;
        },
      ),
    );
  });
});

describe('one pass of the loop', () => {
  const policy = {
    metric: 'vllm:num_requests_waiting',
    targetPerReplica: 2,
    scaleToZeroAfterSeconds: 600,
  };
  const scaling = { min: 0, max: 5 };
  const pass = (pods: PodLoad[], current: number, prev: AutoscaleState | undefined, s: number) =>
    autoscale({ policy, scaling, pods, current, prev, now: at(s) }).state;

  it('follows a load step up at once and down only after the 300 s window, then to zero after idling', () => {
    let st = pass([ready(2, 4)], 1, undefined, 0);
    expect(st.desired).toBe(1);
    st = pass([ready(8, 10)], 1, st, 15); // ratio 4 → 4 replicas, no scale-up window.
    expect(st.desired).toBe(4);
    st = pass([ready(0, 1), ready(0, 1), ready(0, 1), ready(0, 1)], 4, st, 30);
    expect(st.desired).toBe(4); // the 4 of 15 s ago still in the scale-down window
    st = pass([ready(0, 1), ready(0, 1), ready(0, 1), ready(0, 1)], 4, st, 316);
    expect(st.desired).toBe(1); // running but none waiting: the floor is 1 while busy
    st = pass([ready(0, 0)], 1, st, 400);
    expect(st).toMatchObject({ desired: 1, idleSince: at(400) });
    st = pass([ready(0, 0)], 1, st, 999);
    expect(st.desired).toBe(1);
    st = pass([ready(0, 0)], 1, st, 1000);
    expect(st).toMatchObject({ desired: 0, history: [] });
    // At zero no pod runs: it stays there until a wake.
    st = pass([], 0, st, 1100);
    expect(st.desired).toBe(0);
    st = wake(st, scaling, at(1200));
    expect(st).toMatchObject({ desired: 1, wokenAt: at(1200) });
    st = pass([starting], 1, st, 1215);
    expect(st.desired).toBe(1);
    // Ready and idle from the wake on: zero again 600 s after the wake, not after the earlier idle.
    st = pass([ready(0, 0)], 1, st, 1230);
    expect(st.idleSince).toBe(at(1230));
    expect(pass([ready(0, 0)], 1, st, 1829).desired).toBe(1);
    expect(pass([ready(0, 0)], 1, st, 1830).desired).toBe(0);
  });

  it('never goes to zero without scaleToZeroAfterSeconds, nor below min, nor above max', () => {
    const { scaleToZeroAfterSeconds: _, ...noZero } = policy;
    const idle = autoscale({ policy: noZero, scaling, pods: [ready(0, 0)], current: 1, now: at(1e5) });
    expect(idle.state.desired).toBe(1);
    const high = autoscale({
      policy,
      scaling: { min: 2, max: 3 },
      pods: [ready(50)],
      current: 2,
      now: at(0),
    });
    expect(high.state.desired).toBe(3);
    expect(high.raw).toBe(25);
  });

  it('stays within [min, max] whatever the pods say (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.nat(50).map((v) => ready(v, v)),
            fc.constant(starting),
          ),
          { maxLength: 8 },
        ),
        fc.nat(3),
        fc.nat(5),
        (pods, min, extra) => {
          const sc = { min, max: min + extra };
          const r = autoscale({ policy, scaling: sc, pods, current: pods.length, now: at(0) });
          const d = r.state.desired;
          // Nothing read and nothing asked before: load asks for nothing yet (admission keeps scaling.target).
          return r.raw === undefined ? d === undefined : d !== undefined && d >= sc.min && d <= sc.max;
        },
      ),
    );
  });
});

describe("admission's target", () => {
  it('is the demand within the bounds for an autoscaled model, the spec’s target otherwise', () => {
    expect(demandTarget({ min: 1, max: 4 }, true, 9, 2)).toBe(4);
    expect(demandTarget({ min: 1, max: 4 }, true, 0, 2)).toBe(1);
    expect(demandTarget({ min: 0, max: 4 }, true, 0, 2)).toBe(0);
    expect(demandTarget({ min: 1, max: 4 }, true, undefined, 2)).toBe(2);
    expect(demandTarget({ min: 1, max: 4 }, false, 3, 2)).toBe(2);
  });
});

describe('reading /metrics', () => {
  const text = [
    '# HELP vllm:num_requests_waiting Number of requests waiting.',
    '# TYPE vllm:num_requests_waiting gauge',
    'vllm:num_requests_waiting{engine="0",model_name="chat"} 3.0',
    'vllm:num_requests_waiting{engine="1",model_name="chat"} 2.0',
    'vllm:num_requests_waiting_total 99',
    'vllm:num_requests_running{model_name="chat"} 8',
  ].join('\n');

  it('sums a gauge over its series and tells a busy pod', () => {
    expect(gaugeValue(text, 'vllm:num_requests_waiting')).toBe(5);
    expect(gaugeValue(text, 'vllm:gpu_cache_usage_perc')).toBeUndefined();
    expect(podLoadFromText('vllm', 'vllm:num_requests_waiting', text)).toEqual({ value: 5, busy: 13 });
    // Without both gauges a pod is not known to be idle.
    expect(podLoadFromText('vllm', 'vllm:num_requests_running', 'vllm:num_requests_running 0\n')).toEqual({
      value: 0,
    });
  });

  test('a running gauge counts the requests waiting beside it: at its batch limit it would read the same at any overload', () => {
    // issue 33's bench: a replica running its 16 with 104 more waiting read 16 against a target of 12, so the
    // HPA asked for 2, then 3, 4, 6, 8, one start at a time, while requests waited for 40 minutes.
    const text = 'vllm:num_requests_running 16\nvllm:num_requests_waiting 104\n';
    const load = podLoadFromText('vllm', 'vllm:num_requests_running', text);
    expect(load).toEqual({ value: 120, busy: 120 });
    expect(hpaReplicas([{ ready: true, ...load }], 12, 1)).toBe(10);
    // A waiting gauge reads as it is.
    expect(podLoadFromText('vllm', 'vllm:num_requests_waiting', text).value).toBe(104);
  });
});

describe('the demand seam of admission', () => {
  const model = (name: string, autoscaling?: boolean): Model => ({
    name,
    spec: {
      source: 'hf://org/x',
      engine: 'llamacpp',
      profiles: [{ name: 'cpu', gpus: 0, cpuCores: 1, minMemoryGb: 2 }],
      scaling: { min: 1, max: 4 },
      ...(autoscaling ? { autoscaling: { metric: 'llamacpp:requests_deferred', targetPerReplica: 2 } } : {}),
    },
    declared: false,
    version: 1,
    createdAt: at(0),
    createdBy: 't',
    updatedAt: at(0),
    updatedBy: 't',
  });
  const held = (world: Parameters<typeof decideWorld>[0], name: string) =>
    heldReplicas(decideWorld(world, at(10)).admissions.find((a) => a.model === name));
  const base = {
    computes: [...BUILTIN_COMPUTES] as unknown as Compute[],
    scopes: [],
    quotas: [],
    admissions: [],
  };

  it('admits clamp(demand, min, max) for an autoscaled model, and ignores demand for the others', () => {
    const models = [model('auto', true), model('fixed')];
    const demand = new Map([
      ['auto', 3],
      ['fixed', 3],
    ]);
    expect(held({ ...base, models, demand }, 'auto')).toBe(3);
    expect(held({ ...base, models, demand }, 'fixed')).toBe(1);
    expect(held({ ...base, models, demand: new Map([['auto', 9]]) }, 'auto')).toBe(4);
    // No demand known yet: scaling.target (min), as before autoscaling.
    expect(held({ ...base, models }, 'auto')).toBe(1);
  });
});

describe("a wake's expected time to Ready", () => {
  const node = (created: string, ready: string) => ({
    metadata: { creationTimestamp: created },
    status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: ready }] },
  });
  const pod = (scheduled: string, started: string, ready: string) => ({
    status: {
      conditions: [
        { type: 'PodScheduled', status: 'True', lastTransitionTime: scheduled },
        { type: 'Ready', status: 'True', lastTransitionTime: ready },
      ],
      containerStatuses: [{ state: { running: { startedAt: started } } }],
    },
  });

  it('is the defaults until a compute was seen, then its newest node boot, image pull and model load', () => {
    expect(wakeEstimate(0)).toMatchObject({ expectedSecondsToReady: 420, basis: 'default' });
    const seen = observeStartTimes(
      'l4',
      undefined,
      // The newest Ready node tells: 95 s from its Node to Ready (the older one booted slower).
      [node(at(0), at(200)), node(at(1000), at(1095))],
      [pod(at(1100), at(1130), at(1190))],
    )!;
    expect(seen).toMatchObject({ nodeBootSeconds: 95, imagePullSeconds: 30, modelLoadSeconds: 60 });
    expect(wakeEstimate(0, seen)).toEqual({
      expectedSecondsToReady: 185,
      nodeBootSeconds: 95,
      imagePullSeconds: 30,
      modelLoadSeconds: 60,
      basis: 'observed',
      compute: 'l4',
    });
    // A part not seen yet keeps its default; a replica already serving expects nothing.
    const nodesOnly = observeStartTimes('a10g', undefined, [node(at(0), at(100))], [])!;
    expect(wakeEstimate(0, nodesOnly)).toMatchObject({ expectedSecondsToReady: 340, basis: 'observed' });
    expect(wakeEstimate(2, seen)).toMatchObject({ expectedSecondsToReady: 0, basis: 'running' });
  });

  it('is written only when a newer node or replica turned Ready', () => {
    const seen = observeStartTimes('l4', undefined, [node(at(0), at(95))], [pod(at(100), at(130), at(190))])!;
    // The same objects again, or none (the pods went): nothing to write, and what was seen stands.
    expect(
      observeStartTimes('l4', seen, [node(at(0), at(95))], [pod(at(100), at(130), at(190))]),
    ).toBeUndefined();
    expect(observeStartTimes('l4', seen, [], [])).toBeUndefined();
    // Not Ready yet: tells nothing.
    expect(
      observeStartTimes('l4', undefined, [{ metadata: { creationTimestamp: at(0) } }], []),
    ).toBeUndefined();
    const later = observeStartTimes('l4', seen, [], [pod(at(500), at(510), at(700))])!;
    expect(later).toMatchObject({ nodeBootSeconds: 95, imagePullSeconds: 10, modelLoadSeconds: 190 });
  });
});

describe('the DEMAND items a pass writes', () => {
  it('only where the replicas asked for changed, and none for a model no longer autoscaled', () => {
    const loads = new Map([
      ['steady', { history: [{ at: at(60), replicas: 3 }], desired: 3 }],
      ['up', { history: [], desired: 5 }],
      ['new', { history: [], desired: 1 }],
      ['unread', { history: [] }],
    ]);
    const stored = [
      { model: 'steady', desired: 3 },
      { model: 'up', desired: 2 },
      { model: 'gone', desired: 4 },
    ];
    expect(demandChanges(loads, stored)).toEqual({
      put: [
        { model: 'up', desired: 5 },
        { model: 'new', desired: 1 },
      ],
      remove: ['gone'],
    });
  });
});
