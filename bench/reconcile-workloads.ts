import { namespaceFor } from '../lambdas/domain/workloads';
import { config } from '../lambdas/shared/config';
import { startControlPlane } from '../local/control-plane';
import type { AuditEvent } from '../local/k8s-sim';
import { benchPass, loadBenchWorld, raiseInstanceQuotas } from './reconcile';

/**
 * One reconcile pass with the model servers (issue 20 §6): the world of bench/reconcile.ts (200 computes, 10,000
 * models of one replica), the real pass against DynamoDB Local, the local Step Functions and the cloud
 * simulator, with the workloads step talking to the simulated cluster's API over HTTPS through the reconciler's
 * own client and EKS token. The Kubernetes calls are counted where a real API server would count them: the
 * simulator's audit hook, one event per request answered. BENCH_COMPUTES and BENCH_MODELS (default 40 and 2,000) size the world.
 */

interface Tally {
  calls: number;
  writes: number;
  byVerb: Record<string, number>;
  /** Time the simulated API server spent answering, summed over the requests. */
  serverMs: number;
  /** First request to last answer: the part of the pass spent with the cluster. */
  spanMs: number;
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

function counter(sim: NonNullable<Awaited<ReturnType<typeof startControlPlane>>['sim']['kubernetes']>) {
  let events: (AuditEvent & { at: number })[] = [];
  sim.onRequest((e) => events.push({ ...e, at: performance.now() }));
  return {
    reset: () => {
      events = [];
    },
    take(): Tally {
      const byVerb: Record<string, number> = {};
      for (const e of events) {
        const what = `${e.verb} ${e.resource}${e.subresource ? `/${e.subresource}` : ''}`;
        byVerb[what] = (byVerb[what] ?? 0) + 1;
      }
      const first = events[0];
      const last = events[events.length - 1];
      const out: Tally = {
        calls: events.length,
        writes: events.filter((e) => WRITE_VERBS.has(e.verb)).length,
        byVerb: Object.fromEntries(Object.entries(byVerb).sort(([a], [b]) => a.localeCompare(b))),
        serverMs: Math.round(events.reduce((n, e) => n + e.ms, 0)),
        spanMs: first && last ? Math.round(last.at - first.at + first.ms) : 0,
      };
      events = [];
      return out;
    },
  };
}

/**
 * The target: no call for what has not changed. The role is namespaced (config/kubernetes, the access entry), so
 * the least a pass can read is the namespaces and llmcap's Nodes once each and one labelled list per kind and
 * namespace.
 */
function target(steady: Tally & { writes: number }, scaled: Tally & { writes: number }): string {
  const ns = steady.byVerb['list deployments'] ?? 0;
  const least = 2 + 4 * ns;
  // From one replica to two the PodDisruptionBudget changes too (docs/workloads.md): what changed, and only that.
  const deployments = scaled.byVerb['patch deployments'] ?? 0;
  const pdbs = scaled.byVerb['patch poddisruptionbudgets'] ?? 0;
  const scaledMet = deployments === 1 && pdbs <= 1 && scaled.writes === deployments + pdbs;
  const met = steady.writes === 0 && steady.calls === least && scaledMet;
  return [
    `Target: a steady pass writes nothing and reads 2 + 4 × namespaces (the namespaces and llmcap's Nodes once each, the Nodes for what each instance type really has room for; then Deployments, Services, PodDisruptionBudgets and pods per namespace: the reconciler's role is namespaced, so one labelled list per kind and namespace is the least; a page per 500 objects); a model scaled writes its Deployment, and its PodDisruptionBudget when it leaves or reaches one replica, nothing else.`,
    `Measured: the steady pass made ${steady.writes} writes and ${steady.calls} reads (2 + 4 × ${ns} = ${least}); one model scaled 1 → 2 made ${scaled.writes} write${scaled.writes === 1 ? '' : 's'} (${deployments} Deployment, ${pdbs} PodDisruptionBudget): ${met ? 'met' : 'NOT met'}. The reads grow with owner scopes, not with models or computes.`,
  ].join(' ');
}

export async function benchReconcileWorkloads(
  opts: { computes?: number; models?: number } = {},
): Promise<{ rows: unknown; markdown: string }> {
  const nComputes = opts.computes ?? Number(process.env.BENCH_COMPUTES ?? 40);
  const nModels = opts.models ?? Number(process.env.BENCH_MODELS ?? 2_000);
  const cp = await startControlPlane({
    port: 0,
    simPort: 0,
    simTimeScale: 0.0001,
    reconcileSeconds: 0,
    table: 'bench-workloads',
  });
  try {
    if (!cp.sim.kubernetes) throw new Error('the cloud simulator started without its Kubernetes API');
    const k8s = counter(cp.sim.kubernetes);
    // Every compute gets its node group and its nodes, as when this section was first measured: the cluster's
    // quota of managed node groups (AWS's default 30) and the account's vCPUs per instance class are raised here.
    cp.sim.admin.setQuotas({ 'L-6D54EA21': nComputes + 50 });
    raiseInstanceQuotas(cp.sim);
    const { projects } = await loadBenchWorld(nComputes, nModels);
    const pass = async (what: string) => {
      k8s.reset();
      const shakes = cp.sim.kubernetes!.handshakes();
      const t0 = performance.now();
      const s = await benchPass();
      const ms = Math.round(performance.now() - t0);
      const tally = k8s.take();
      return {
        pass: what,
        ms,
        ...tally,
        handshakes: cp.sim.kubernetes!.handshakes() - shakes,
        applied: s.workloads?.applied.length ?? 0,
        removed: s.workloads?.removed.length ?? 0,
        running: s.workloads?.running ?? 0,
        // The catalog's shared models (config/catalog.yaml) run beside the bench's, in a namespace of their own.
        sharedApplied: (s.workloads?.applied ?? []).filter((a) =>
          a.startsWith(`Deployment/${namespaceFor(config().stage, undefined)}/`),
        ).length,
        storeWrites: s.workloads?.storeWrites ?? 0,
        errors: s.errors.length,
      };
    };

    const first = await pass('first');
    // The node groups come up, their nodes join and the pods start: a pass then reads what changed.
    await cp.sfn.waitForIdle(300_000);
    const second = await pass('second');
    const steady = await pass('steady');
    const model = 'm0';
    const r = await fetch(`${cp.apiUrl}/v1/models/${model}/scaling`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ min: 2, max: 3 }),
    });
    if (r.status !== 200) throw new Error(`scaling ${model} answered ${r.status}: ${await r.text()}`);
    const scaled = await pass('one model scaled 1 → 2');
    const passes = [first, second, steady, scaled];
    // loadBenchWorld deals the models out to the projects in turn: a small world leaves some projects empty.
    const namespaces = Math.min(nModels, projects.length);
    const rows = { computes: nComputes, models: nModels, namespaces, passes };
    const fmt = (byVerb: Record<string, number>) =>
      Object.entries(byVerb)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ');
    const markdown = [
      `${nComputes} computes, ${nModels} models (1 replica each, a Deployment, a Service and a PodDisruptionBudget per model) owned by ${namespaces} projects, and the catalog's ${first.sharedApplied} shared models (config/catalog.yaml) in a namespace of their own, so ${namespaces + 1} namespaces and ${nModels + first.sharedApplied} running pods once all run; cloud simulator at 1/10,000 of EKS's durations. The calls are the simulated API server's audit events (one per request the reconciler's EKS identity made); "server" is the time the simulator spent answering them, "with the cluster" the first request to the last answer.`,
      '',
      '| pass | time | with the cluster | server | Kubernetes calls | TLS handshakes | writes | applied / removed | running pods | by verb and resource |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
      ...passes.map(
        (p) =>
          `| ${p.pass} | ${p.ms} ms | ${p.spanMs} ms | ${p.serverMs} ms | ${p.calls} | ${p.handshakes} | ${p.writes} | ${p.applied} / ${p.removed} | ${p.running} | ${fmt(p.byVerb)} |`,
      ),
      '',
      target(steady, scaled),
    ].join('\n');
    return { rows, markdown };
  } finally {
    await cp.stop();
  }
}

if (require.main === module) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
  benchReconcileWorkloads().then((r) => {
    console.log(JSON.stringify(r.rows, null, 2));
    console.log(r.markdown);
  });
}
