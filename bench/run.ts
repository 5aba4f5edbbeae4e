import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';

/**
 * `npm run bench`: runs every benchmark, writes bench/results.json and the tables of BENCHMARKS.md. A section
 * whose module is missing is reported as such rather than silently dropped. `npm run bench -- write` runs the
 * sections whose title contains a word given and keeps the others as the last full run wrote them.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.AWS_REGION ??= 'us-east-1';
process.env.AWS_ACCESS_KEY_ID ??= 'bench';
process.env.AWS_SECRET_ACCESS_KEY ??= 'bench';

type BenchModule = Record<string, () => Promise<{ rows: unknown; markdown: string }>>;

/** Loads a bench module by name, so that one not yet written fails its own section only. */
async function load(name: string, fn: string): Promise<{ rows: unknown; markdown: string }> {
  const mod = (await import(`./${name}`)) as BenchModule;
  const run = mod[fn];
  if (!run) throw new Error(`bench/${name}.ts does not export ${fn}`);
  return run();
}

interface Section {
  title: string;
  intro: string;
  run: () => Promise<{ rows: unknown; markdown: string }>;
}

const sections: Section[] = [
  {
    title: 'API Lambda',
    intro:
      'Bundle, cold start and route latency, measured against DynamoDB Local through the local HTTP server.',
    run: () => load('api', 'benchApi'),
  },
  {
    title: 'Placement',
    intro: 'Packing realistic replica mixes onto the computes: nodes against the lower bound, and speed.',
    run: () => load('placement', 'benchPlacement'),
  },
  {
    title: 'Placement against the optimum',
    intro:
      "llmcap's plan (planPlacement, as reconcile and the capacity view compute it) against the cheapest placement there is, on small mixes where it can be proven (issue 34). The optimum is a mixed-integer program over the same replicas, computes and eligibility: a binary per possible node of each kind (nodes of a kind open in order), an integer count per group of identical replicas on each node, every replica placed, every node within its allocatable GPUs, millicores and MiB, the sum of the open nodes' prices per hour minimised; HiGHS solves it, started from llmcap's plan, and its answer is checked replica by replica before it counts. What the figure cannot see: maxNodes (100 here, never binding), admission's order and take-backs, the cool-down and the cost of moving what already runs, prices other than on-demand, and mixes larger than HiGHS can close.",
    run: () => load('optimum', 'benchOptimum'),
  },
  {
    title: 'Autoscaling over a day',
    intro:
      "GPU node-hours and cost of four autoscaled models over a 24-hour diurnal trace against static provisioning at each model's peak and against the same policy without quotas (issue 33); waiting, wake and stop times.",
    run: () => load('autoscaling', 'benchAutoscaling'),
  },
  {
    title: 'Consolidation',
    intro:
      'Consolidation (issue 34 §3, lambdas/domain/consolidation.ts) after churn: passes until what is admitted costs within 3% of the optimum, with no Ready replica lost and no move from a plan whose saving is below its threshold.',
    run: () => load('consolidation', 'benchConsolidation'),
  },
  {
    title: 'Reconcile',
    intro:
      'One reconcile pass at scale against DynamoDB Local, the local Step Functions and the cloud simulator.',
    run: () => load('reconcile', 'benchReconcile'),
  },
  {
    title: 'Reconcile with workloads',
    intro:
      "One reconcile pass with the model servers (issue 20 §6): the Reconcile section's world, with the workloads step applying Deployments, Services and PodDisruptionBudgets to the simulated cluster over HTTPS, as the Lambda does. At 40 computes and 2,000 models by default, so that the section takes minutes: the simulated API server runs in the bench's process and its writes cost a few ms each (managed fields, its controllers), and the issue's 200 / 10,000 has not been measured since the simulator's controller stopped re-syncing waiting Deployments; BENCH_COMPUTES and BENCH_MODELS set the size. The calls per pass do not depend on it.",
    run: () => load('reconcile-workloads', 'benchReconcileWorkloads'),
  },
  {
    title: 'Admission',
    intro: 'One decision pass over many models, replicas and scopes.',
    run: () => load('admission', 'benchAdmission'),
  },
  {
    title: 'Write path',
    intro:
      'PUT /v1/models/{name}/scaling against its ceiling: raw conditional writes on the same DynamoDB Local in a process of their own, alternating with the real handler in process and over the local HTTP server, round after round (issues 19 §7 and 31).',
    run: () => load('write-path', 'benchWritePath'),
  },
  {
    title: 'Admission latency',
    intro:
      "From a write's answer (stored as intent, reason Queued) to its decision visible in GET, with the admitter driven by the table's stream as npm start drives it (issue 31). What the figure cannot see: Lambda's own stream polling (about four reads a second per shard) and cold starts, which a deployed stage adds.",
    run: () => load('admission-latency', 'benchAdmissionLatency'),
  },
];

const BENCHMARKS = join(__dirname, '..', 'BENCHMARKS.md');
const RESULTS = join(__dirname, 'results.json');

/** The sections of the BENCHMARKS.md a previous run wrote, by title, for a filtered run to keep. */
function previousSections(): Map<string, string> {
  const out = new Map<string, string>();
  if (!existsSync(BENCHMARKS)) return out;
  for (const part of readFileSync(BENCHMARKS, 'utf8')
    .split(/^(?=## )/m)
    .slice(1)) {
    const title = /^## (.*)$/m.exec(part)?.[1];
    if (title) out.set(title, part.trimEnd() + '\n');
  }
  return out;
}

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const before = previousSections();
  const kept = (
    only.length && existsSync(RESULTS) ? JSON.parse(readFileSync(RESULTS, 'utf8')) : {}
  ) as Record<string, unknown>;
  const results: Record<string, unknown> = {
    ...kept,
    measuredAt: new Date().toISOString(),
    machine: {
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memoryGb: Math.round(totalmem() / 2 ** 30),
    },
  };
  const md: string[] = [];
  for (const s of sections) {
    if (only.length && !only.some((o) => s.title.toLowerCase().includes(o.toLowerCase()))) {
      const last = before.get(s.title);
      if (last) md.push(last);
      continue;
    }
    console.log(`== ${s.title}`);
    // Each section starts from the same environment: a control plane one section starts sets endpoints and
    // LLMCAP_WORKLOADS, which otherwise changed what a later section measured (or pointed it at a stopped simulator).
    const env = { ...process.env };
    try {
      const r = await s.run();
      results[s.title] = r.rows;
      md.push(`## ${s.title}\n\n${s.intro}\n\n${r.markdown}\n`);
      console.log(r.markdown);
    } catch (e) {
      console.error(`${s.title}: ${(e as Error).message}`);
      md.push(`## ${s.title}\n\nnot measured: ${(e as Error).message}\n`);
    } finally {
      for (const k of Object.keys(process.env)) if (!(k in env)) delete process.env[k];
      Object.assign(process.env, env);
    }
  }
  // Figures measured by other runs (workflow transitions, npm run soak) are kept as those runs wrote them.
  const extras = [join(__dirname, 'workflows.md'), join(__dirname, '..', 'soak', 'RESULTS.md')]
    .filter((f) => existsSync(f))
    .map((f) => readFileSync(f, 'utf8'));
  // So are sections no run writes (the supply chaos figures, measured by a soak suite and described by hand):
  // a bench run rewrites its own sections and drops nobody else's.
  const written = new Set(
    [...md, ...extras].flatMap((part) => [...part.matchAll(/^## (.*)$/gm)].map((m) => m[1]!)),
  );
  for (const [title, part] of before) if (!written.has(title)) md.push(part);
  md.push(...extras);
  writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
  const m = results.machine as Record<string, unknown>;
  writeFileSync(
    BENCHMARKS,
    `# Benchmarks\n\nWritten by \`npm run bench\` (bench/run.ts); raw figures in bench/results.json.\n` +
      `Last run ${results.measuredAt}${only.length ? ` (${only.join(', ')} only; the other sections as an earlier run wrote them)` : ''} on Node ${m.node}, ${m.cpus} × ${m.cpuModel}, ${m.memoryGb} GiB.\n\n${md.join('\n')}`,
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
