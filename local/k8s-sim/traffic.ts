import type { JsonObject, KObject } from './types';

/**
 * The load on the simulated model servers (docs/k8s-sim.md, Model server metrics): a schedule of requests per
 * second per model, and the Prometheus text each Ready pod of the model serves on `/metrics` through the API
 * server's pod proxy. A fluid model, not a queue: at each instant the requests in flight are rps × seconds per
 * request; the model's Ready replicas each run up to `concurrency` of them, shared evenly, and the rest wait.
 */

export interface TrafficStep {
  /**
   * Seconds after the schedule was set from which `rps` holds (until the next step), scaled by the simulator's
   * time scale as every other duration is (at 0.1, 600 passes in 60 s).
   */
  atSeconds: number;
  rps: number;
}

export interface TrafficConfig {
  /** The model, as its pods' llmcap.dev/model label names it. */
  model: string;
  /** Piecewise constant; before the first step (and with none) there is no traffic. */
  schedule: TrafficStep[];
  /** Requests one replica runs at once (vLLM's max_num_seqs, SGLang's max running requests); default 8. */
  concurrency?: number;
  /** Seconds one request takes to serve; default 2. */
  requestSeconds?: number;
}

export const DEFAULT_CONCURRENCY = 8;
export const DEFAULT_REQUEST_SECONDS = 2;

/** The gauges each engine's image serves, by what they measure (names as lambdas/domain/autoscaling.ts). */
const ENGINE_GAUGES: { image: RegExp; waiting: string; running: string; kvCache?: string }[] = [
  {
    image: /vllm/,
    waiting: 'vllm:num_requests_waiting',
    running: 'vllm:num_requests_running',
    kvCache: 'vllm:gpu_cache_usage_perc',
  },
  {
    image: /sglang/,
    waiting: 'sglang:num_queue_reqs',
    running: 'sglang:num_running_reqs',
    kvCache: 'sglang:token_usage',
  },
  { image: /text-generation-inference/, waiting: 'tgi_queue_size', running: 'tgi_batch_current_size' },
  {
    image: /llama\.cpp|llama-cpp|llamacpp/,
    waiting: 'llamacpp:requests_deferred',
    running: 'llamacpp:requests_processing',
    kvCache: 'llamacpp:kv_cache_usage_ratio',
  },
];

export function checkTraffic(input: unknown): TrafficConfig[] {
  const problems: string[] = [];
  if (!Array.isArray(input)) throw new Error('traffic is a list of {model, schedule: [{atSeconds, rps}]}');
  input.forEach((t: Partial<TrafficConfig>, i) => {
    if (!t || typeof t.model !== 'string' || !t.model) problems.push(`traffic[${i}].model: a model name`);
    if (!Array.isArray(t?.schedule)) problems.push(`traffic[${i}].schedule: a list of {atSeconds, rps}`);
    else
      t.schedule.forEach((s, j) => {
        if (!(Number.isFinite(s?.atSeconds) && s.atSeconds >= 0 && Number.isFinite(s?.rps) && s.rps >= 0))
          problems.push(`traffic[${i}].schedule[${j}]: atSeconds and rps are numbers ≥ 0`);
      });
    for (const k of ['concurrency', 'requestSeconds'] as const)
      if (t?.[k] !== undefined && !(Number.isFinite(t[k]) && (t[k] as number) > 0))
        problems.push(`traffic[${i}].${k}: a number > 0`);
  });
  if (problems.length) throw new Error(problems.join('; '));
  return input as TrafficConfig[];
}

export class Traffic {
  private byModel = new Map<string, { cfg: TrafficConfig; since: number }>();

  /** `timeScale`: the simulator's, so that a schedule's seconds pass as fast as its other durations. */
  constructor(
    configs: readonly TrafficConfig[] = [],
    now = 0,
    private readonly timeScale = 1,
  ) {
    this.set(configs, now);
  }

  /** Replaces the schedules of the models given (the others keep theirs); times count from `now`. */
  set(configs: readonly TrafficConfig[], now: number): void {
    for (const cfg of checkTraffic(configs)) {
      const schedule = [...cfg.schedule].sort((a, b) => a.atSeconds - b.atSeconds);
      this.byModel.set(cfg.model, { cfg: { ...cfg, schedule }, since: now });
    }
  }

  list(): (TrafficConfig & { since: string })[] {
    return [...this.byModel.values()].map((t) => ({ ...t.cfg, since: new Date(t.since).toISOString() }));
  }

  /** Requests per second to `model` at `now` (ms). */
  rps(model: string, now: number): number {
    const t = this.byModel.get(model);
    if (!t) return 0;
    const s = (now - t.since) / 1000 / this.timeScale;
    let rps = 0;
    for (const step of t.cfg.schedule) if (step.atSeconds <= s) rps = step.rps;
    return rps;
  }

  /** Per Ready replica of `model` when `ready` replicas serve it: requests running, waiting, KV-cache share. */
  load(model: string, ready: number, now: number): { running: number; waiting: number; kvCache: number } {
    const cfg = this.byModel.get(model)?.cfg;
    const concurrency = cfg?.concurrency ?? DEFAULT_CONCURRENCY;
    const inFlight = this.rps(model, now) * (cfg?.requestSeconds ?? DEFAULT_REQUEST_SECONDS);
    if (ready <= 0) return { running: 0, waiting: 0, kvCache: 0 };
    const capacity = ready * concurrency;
    const running = Math.min(inFlight, capacity) / ready;
    const waiting = Math.max(0, inFlight - capacity) / ready;
    return { running, waiting, kvCache: running / concurrency };
  }

  /**
   * The Prometheus text a pod's server answers on /metrics, or undefined when its image serves none (Ollama,
   * or an image this simulator does not know).
   */
  metricsText(pod: KObject, readyPeers: number, now: number): string | undefined {
    const image = String(
      ((pod.spec as JsonObject)?.containers as JsonObject[] | undefined)?.[0]?.image ?? '',
    );
    const gauges = ENGINE_GAUGES.find((g) => g.image.test(image));
    if (!gauges) return undefined;
    const model = String(((pod.metadata as JsonObject)?.labels as JsonObject)?.['llmcap.dev/model'] ?? '');
    const l = this.load(model, readyPeers, now);
    const label = `{model_name="${model.replace(/["\\\n]/g, '_')}"}`;
    const lines: string[] = [];
    const gauge = (name: string, help: string, v: number) =>
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name}${label} ${fmt(v)}`);
    gauge(gauges.running, 'Number of requests running.', l.running);
    gauge(gauges.waiting, 'Number of requests waiting.', l.waiting);
    if (gauges.kvCache) gauge(gauges.kvCache, 'KV-cache usage (1 is full).', l.kvCache);
    return `${lines.join('\n')}\n`;
  }
}

// Prometheus writes floats in Go's shortest form; 3 decimals keep the text stable across runs.
const fmt = (v: number) => String(Math.round(v * 1000) / 1000);
