import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { invokeAdmitter } from '../lambdas/aws/lambda';
import { resetQuotaCache } from '../lambdas/aws/quotas';
import { ComputeSpecSchema } from '../lambdas/domain/compute';
import type { AdmitterSummary } from '../lambdas/service/admitter';
import { createReconciler, type ReconcileSummary } from '../lambdas/service/reconcile';
import { documentClient } from '../lambdas/shared/clients';
import { keys } from '../lambdas/store/keys';
import { type CloudSim, startCloudSim } from '../local/cloud-sim';
import { startControlPlane } from '../local/control-plane';
import { countDynamoDb, tallyText } from './dynamo-calls';

/**
 * One reconcile at scale (issue 8): 200 computes, 10,000 models over 111 scopes, loaded straight into the
 * table, then a first pass (admits everything, creates node groups) and a steady pass (observes them).
 */

const SHAPES = [
  {
    node: {
      instanceType: 'g6.12xlarge',
      cpu: 48,
      memoryGb: 192,
      gpu: { type: 'L4', count: 4, memoryGb: 24 },
    },
    cost: 4.6,
  },
  {
    node: {
      instanceType: 'g5.12xlarge',
      cpu: 48,
      memoryGb: 192,
      gpu: { type: 'A10G', count: 4, memoryGb: 24 },
    },
    cost: 5.67,
  },
  { node: { instanceType: 'm7i.4xlarge', cpu: 16, memoryGb: 64 }, cost: 0.8064 },
];

async function batchPut(items: Record<string, unknown>[]): Promise<void> {
  const table = process.env.LLMCAP_TABLE!;
  for (let i = 0; i < items.length; i += 25) {
    let req: Record<string, unknown>[] | undefined = items
      .slice(i, i + 25)
      .map((Item) => ({ PutRequest: { Item } }));
    while (req?.length) {
      const out = await documentClient().send(
        new BatchWriteCommand({ RequestItems: { [table]: req as never } }),
      );
      req = out.UnprocessedItems?.[table] as Record<string, unknown>[] | undefined;
    }
  }
}

/**
 * The bench's world, loaded straight into the table: computes of three shapes, 111 scopes (an org, 10 teams,
 * 100 projects with quotas) and models of one replica each, spread over the projects and computes.
 */
export async function loadBenchWorld(nComputes: number, nModels: number) {
  const now = new Date().toISOString();
  const meta = { version: 1, createdAt: now, createdBy: 'bench', updatedAt: now, updatedBy: 'bench' };
  const computes = Array.from({ length: nComputes }, (_, i) => {
    const s = SHAPES[i % SHAPES.length]!;
    const spec = ComputeSpecSchema.parse({
      node: s.node,
      nodeGroup: { maxNodes: 100 },
      cost: { perHour: s.cost },
    });
    return {
      ...keys.compute(`pool-${i}`),
      name: `pool-${i}`,
      builtin: false,
      spec,
      ...meta,
      status: { nodegroupStatus: 'ABSENT', desiredNodes: 0, readyNodes: 0 },
      generation: 0,
    };
  });
  const scopes = [{ name: 'org:bench' }];
  for (let t = 0; t < 10; t++) {
    scopes.push({ name: `team:t${t}`, parent: 'org:bench' } as never);
    for (let p = 0; p < 10; p++) scopes.push({ name: `project:t${t}-p${p}`, parent: `team:t${t}` } as never);
  }
  const projects = scopes.filter((s) => s.name.startsWith('project:'));
  const quotas = projects.map((s) => ({
    ...keys.quota(s.name),
    scope: s.name,
    guarantee: { gpus: 40 },
    limit: { gpus: 80 },
    ...meta,
  }));
  const models = Array.from({ length: nModels }, (_, i) => {
    const shape = i % 3;
    const pool = `pool-${(i * 7) % nComputes}`;
    const poolShape = SHAPES[((i * 7) % nComputes) % SHAPES.length]!;
    const gpuType = poolShape.node.gpu?.type;
    const profile =
      gpuType && shape !== 2
        ? { name: 'gpu', gpus: 1, gpuType, cpuCores: 4, minMemoryGb: 16, compute: pool }
        : { name: 'cpu', gpus: 0, cpuCores: 2, minMemoryGb: 4, compute: gpuType ? 'pool-2' : pool };
    return {
      ...keys.model(`m${i}`),
      name: `m${i}`,
      owner: projects[i % projects.length]!.name,
      spec: {
        source: `s3://bench-weights/m${i}`,
        engine: 'vllm',
        profiles: [profile],
        scaling: { min: 1, max: 3, target: 1 },
      },
      ...meta,
    };
  });
  const t0 = performance.now();
  await batchPut([
    ...computes,
    ...scopes.map((s) => ({ ...keys.scope(s.name), ...s, members: {}, ...meta })),
    ...quotas,
    ...models,
  ]);
  return { scopes, projects, loadMs: performance.now() - t0 };
}

/**
 * One pass in this process, as the reconcile function runs it: admission is the control plane's admitter function,
 * invoked through the local Lambda (reserved concurrency 1, the one its stream mapping drives). Not the tests'
 * runReconcile: that starts an admitter of its own on the table's stream, a second writer of admissions beside
 * the control plane's, which nothing here stopped: it kept polling the stopped DynamoDB Local and the bench never
 * exited. `admitMs` is the pass's admission step: waiting while the stream's runs hold the function (429), then
 * its own run.
 */
export async function benchPass(): Promise<ReconcileSummary & { admitMs: number }> {
  const fn = process.env.LLMCAP_ADMITTER_FUNCTION;
  if (!fn) throw new Error('no admitter function: start the control plane before a pass');
  let admitMs = 0;
  const s = await createReconciler({
    admit: async () => {
      const t0 = performance.now();
      try {
        return await invokeAdmitter<AdmitterSummary>(fn);
      } finally {
        admitMs += performance.now() - t0;
      }
    },
  }).run();
  if (s.errors.length) console.error(`pass errors: ${s.errors.slice(0, 3).join('; ')}`);
  return { ...s, admitMs: Math.round(admitMs) };
}

const EKS_QUOTAS = ['L-6D54EA21', 'L-BD136A63'];

/**
 * The account's vCPUs per instance class set out of the way (100,000 each): a deployment of the benches' size has
 * raised them, and at AWS's defaults most GPU computes would get no node (held back by their pending reason).
 */
export function raiseInstanceQuotas(sim: CloudSim): void {
  sim.admin.setQuotas(
    Object.fromEntries(
      Object.keys(sim.admin.getQuotas())
        .filter((c) => !EKS_QUOTAS.includes(c))
        .map((c) => [c, 100_000]),
    ),
  );
  resetQuotaCache();
}

/** Computes whose nodes an AWS quota holds back this pass (their pendingReason), by quota code. */
function heldByQuota(s: ReconcileSummary): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of s.computes) {
    const code = c.pendingReason?.match(/\((L-[0-9A-F]+)\)/)?.[1];
    if (code) out[code] = (out[code] ?? 0) + 1;
  }
  return out;
}

/** What a pass started, by workflow kind, and what AWS quotas held back: the honest "what it did". */
function whatItStarted(s: ReconcileSummary): string {
  const kinds = new Map<string, number>();
  for (const w of s.workflows) kinds.set(w.kind, (kinds.get(w.kind) ?? 0) + 1);
  const started = s.workflows.length
    ? `started ${s.workflows.length} workflows (${[...kinds].map(([k, n]) => `${n} ${k}`).join(', ')})`
    : 'started no workflow';
  const held = Object.entries(heldByQuota(s)).map(([code, n]) => `${n} computes held by quota ${code}`);
  return [started, ...held, ...s.errors.map((e) => `error: ${e}`)].join('; ');
}

/**
 * What the pass's admission step did: its own run's figures, or (Lambda answering 429 past invokeAdmitter's wait
 * while the stream's runs held the function) that it placed what those runs had admitted.
 */
function whatItAdmitted(s: ReconcileSummary): string {
  const refused = s.errors.some((e) => e.startsWith('admission:'));
  const pending = `${s.admission.pendingReplicas} replicas pending after it`;
  return refused
    ? `its admitter invocation was refused (429) past its wait while the stream's runs held the function, so it placed what those runs had admitted (${pending})`
    : `its admitter run admitted ${s.admission.admitted} units in ${s.admission.commits} commits (the stream's runs had decided the rest; ${pending})`;
}

export async function benchReconcile(opts: { computes?: number; models?: number } = {}) {
  const nComputes = opts.computes ?? 200;
  const nModels = opts.models ?? 10_000;
  // EKS allows 30 managed node groups per cluster unless the quota is raised: a deployment of 200 computes has
  // raised it, or most of them would fail their create on every pass and no pass would be steady.
  const sim = await startCloudSim({
    port: 0,
    timeScale: 0.0001,
    clusterName: 'llmcap-local',
    kubernetes: false,
    limits: { nodegroupsPerCluster: nComputes + 10 },
  });
  const cp = await startControlPlane({
    port: 0,
    sim,
    simTimeScale: 0.0001,
    reconcileSeconds: 0,
    table: 'bench-reconcile',
    // The model servers have their own section (reconcile-workloads.ts): this one measures the AWS side.
    workloads: false,
  });
  try {
    // The account's vCPUs are set out of the way, as the node groups per cluster are above: a deployment of this
    // size has raised them, and the section measures a pass that AWS lets run (docs/operations.md, the quotas).
    raiseInstanceQuotas(cp.sim);
    const { scopes, projects, loadMs } = await loadBenchWorld(nComputes, nModels);
    // The DynamoDB calls of each pass, counted beside its AWS calls (the control plane built this client).
    const dynamo = countDynamoDb();
    dynamo.take();
    const first = await benchPass();
    const firstDb = dynamo.take();
    await cp.sfn.waitForIdle(120_000);
    dynamo.take();
    const second = await benchPass();
    const secondDb = dynamo.take();
    // The second pass's workflows end, a pass records what they made, and the next has nothing new to see.
    await cp.sfn.waitForIdle(120_000);
    await benchPass();
    dynamo.take();
    const third = await benchPass();
    const steadyDb = dynamo.take();
    dynamo.stop();
    const rows = {
      computes: nComputes,
      models: nModels,
      scopes: scopes.length,
      loadMs: Math.round(loadMs),
      firstPassMs: first.durationMs,
      firstPassAdmitMs: first.admitMs,
      firstPassPendingReplicas: first.admission.pendingReplicas,
      firstPassAdmitted: first.admission.admitted,
      firstPassCommits: first.admission.commits,
      firstPassWorkflows: first.workflows.length,
      secondPassWorkflows: second.workflows.length,
      steadyPassWorkflows: third.workflows.length,
      steadyPassHeldByQuota: heldByQuota(third),
      firstPassAwsCalls: first.awsCalls,
      steadyPassMs: third.durationMs,
      steadyPassAwsCalls: third.awsCalls,
      firstPassDynamoDbCalls: firstDb,
      secondPassDynamoDbCalls: secondDb,
      steadyPassDynamoDbCalls: steadyDb,
      secondPassMs: second.durationMs,
      secondPassAdmitMs: second.admitMs,
      steadyPassAdmitMs: third.admitMs,
      errors: [...first.errors, ...second.errors, ...third.errors].length,
    };
    const markdown = [
      `${nComputes} computes, ${nModels} models (1 replica each) owned by ${projects.length} projects in ${scopes.length} scopes; cloud simulator at 1/10,000 of EKS's durations, answering Service Quotas with managed node groups per cluster (L-6D54EA21) raised to ${nComputes + 10} and 100,000 vCPUs per instance class.`,
      '',
      '| pass | time | of which admission | AWS calls | DynamoDB calls | what it did |',
      '|---|---|---|---|---|---|',
      `| first | ${rows.firstPassMs} ms | ${first.admitMs} ms | ${rows.firstPassAwsCalls} | ${tallyText(firstDb)} | ${whatItAdmitted(first)}, ${whatItStarted(first)} |`,
      `| second | ${rows.secondPassMs} ms | ${second.admitMs} ms | ${second.awsCalls} | ${tallyText(secondDb)} | observed the new node groups, ${whatItStarted(second)} |`,
      `| steady | ${rows.steadyPassMs} ms | ${third.admitMs} ms | ${rows.steadyPassAwsCalls} | ${tallyText(steadyDb)} | observed every node group (DescribeNodegroup + DescribeAutoScalingGroups), ${whatItStarted(third)} |`,
      '',
      "EKS's quota of managed node groups per cluster is raised to fit the computes (AWS: 30 unless raised; below it llmcap holds the rest back with a pending reason and starts no workflow for them, test/integration/local/aws-quotas.test.ts). DynamoDB calls are the document client's, counted in process (the passes run in this process, and so does the admitter the table's stream drives: the models loaded just before the first pass are mostly admitted by its runs, whose calls and events land in the first pass's column); AWS calls are EKS, Auto Scaling and Step Functions. Of which admission is the pass's admitter invocation: waiting while the stream's runs hold the function (reserved concurrency 1 answers 429), then its own run. A steady pass writes a compute only when its observed status or sizing changed.",
    ].join('\n');
    return { rows, markdown };
  } finally {
    await cp.stop();
    await sim.stop();
  }
}

if (require.main === module) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
  const n = Number(process.argv[2] ?? 10_000);
  benchReconcile({ models: n }).then((r) => {
    console.log(JSON.stringify(r.rows));
    console.log(r.markdown);
  });
}
