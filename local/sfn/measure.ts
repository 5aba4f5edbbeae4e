import './polyfill';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ComputeSpec } from '../../lambdas/domain/compute';
import { newComputeId } from '../../lambdas/domain/nodegroup';
import {
  buildWorkflowInput,
  executionNameOf,
  POLL_DEFAULTS,
  type WorkflowKind,
} from '../../lambdas/service/workflows';
import { ensureTable } from '../../lambdas/store/table';
import { startCloudSim } from '../cloud-sim';
import { startDynamoDbLocal } from '../dynamodb-local';
import { startLocalStepFunctions } from './server';

/**
 * Counts the billable state transitions of typical workflow executions: the real ASL, the default poll
 * budgets of lambdas/service/workflows.ts and the simulator's p50 durations (docs/reference/eks-nodegroup.md),
 * in scaled time. `npx tsx local/sfn/measure.ts [--write]` prints (and writes bench/workflows.md).
 */

const PRICE_PER_1000 = 0.025;
const FREE_PER_MONTH = 4000;

export interface Measurement {
  scenario: string;
  kind: WorkflowKind;
  status: string;
  transitions: number;
  polls: number;
  simulatedSeconds: number;
}

const spec: ComputeSpec = {
  node: {
    instanceType: 'g6.2xlarge',
    cpu: 8,
    memoryGb: 32,
    gpu: { type: 'L4', count: 1, memoryGb: 24, resource: 'nvidia.com/gpu' },
    diskSizeGb: 100,
    capacityType: 'ON_DEMAND',
    amiType: 'AL2023_x86_64_NVIDIA',
  },
  nodeGroup: { maxNodes: 4, subnetIds: ['subnet-0a1b2c3d4e5f60001'] },
  cost: { perHour: 0.9776, currency: 'USD' },
};

export async function measureWorkflowTransitions(scale = 0.005): Promise<Measurement[]> {
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  process.env.AWS_REGION ??= 'us-east-1';
  const ddb = await startDynamoDbLocal();
  // Seed 215 throttles the first requests of a storm but never more than 4 in a row (see the tests).
  const sim = await startCloudSim({ port: 0, timeScale: scale, seed: 215 });
  const client = new DynamoDBClient({ endpoint: ddb.endpoint });
  await ensureTable(client, 'bench');
  const doc = DynamoDBDocumentClient.from(client);
  const sfn = await startLocalStepFunctions({
    eksEndpoint: sim.endpoint,
    dynamodbEndpoint: ddb.endpoint,
    tableName: 'bench',
    clusterName: sim.clusterName,
    timing: { waitScale: scale },
  });
  const results: Measurement[] = [];
  let generation = 0;
  const ids = new Map<string, string>();
  const runOne = async (scenario: string, name: string, kind: WorkflowKind, desiredNodes: number) => {
    generation++;
    if (!ids.has(name)) ids.set(name, newComputeId());
    const compute = { name, spec, createdAt: '2026-01-01T00:00:00.000Z', uid: ids.get(name)! };
    const executionName = executionNameOf(compute, kind, generation);
    await doc.send(
      new PutCommand({
        TableName: 'bench',
        Item: {
          pk: 'COMPUTE',
          sk: name,
          ...compute,
          version: 1,
          generation,
          status: { nodegroupStatus: 'ABSENT', desiredNodes: 0, readyNodes: 0 },
          workflow: {
            executionName,
            kind,
            state: 'RUNNING',
            startedAt: new Date().toISOString(),
          },
        },
      }),
    );
    const input = buildWorkflowInput(compute, { kind, generation, desiredNodes, stage: 'bench' });
    const started = Date.now();
    const arn = {
      provision: sfn.stateMachineArns.provision,
      scale: sfn.stateMachineArns.scale,
      delete: sfn.stateMachineArns.delete,
    }[kind];
    const res = await fetch(sfn.endpoint, {
      method: 'POST',
      headers: {
        'x-amz-target': 'AWSStepFunctions.StartExecution',
        'content-type': 'application/x-amz-json-1.0',
      },
      body: JSON.stringify({
        stateMachineArn: arn,
        name: executionName,
        input: JSON.stringify(input),
      }),
    });
    const { executionArn } = (await res.json()) as { executionArn: string };
    const rec = sfn.execution(executionArn)!;
    await rec.done;
    results.push({
      scenario,
      kind,
      status: rec.status === 'FAILED' ? `FAILED (${rec.error})` : rec.status,
      transitions: rec.transitions,
      polls: rec.events.filter(
        (e) => e.type === 'StateEntered' && (e.state as { name: string }).name === 'DescribeNodegroup',
      ).length,
      simulatedSeconds: Math.round((Date.now() - started) / scale / 1000),
    });
  };
  try {
    await runOne('create, 2 nodes (p50 2 min)', 'gpu-a', 'provision', 2);
    await runOne('scale 2 → 4 (about 30 s)', 'gpu-a', 'scale', 4);
    await runOne('delete (p50 5 min)', 'gpu-a', 'delete', 0);
    sim.admin.setFaults({ throttleRate: 0.5 });
    await runOne('create with half of EKS requests throttled', 'gpu-b', 'provision', 2);
    sim.admin.setFaults({ unavailableInstanceTypes: ['g6.2xlarge'] });
    await runOne('create without capacity (CREATE_FAILED after ~35 min)', 'gpu-c', 'provision', 1);
  } finally {
    await sfn.stop();
    await sim.stop();
    client.destroy();
    await ddb.stop();
  }
  return results;
}

export function workflowsMarkdown(ms: Measurement[]): string {
  const byKind = (k: WorkflowKind) => ms.find((m) => m.kind === k)?.transitions ?? 0;
  const create = byKind('provision');
  const scale = byKind('scale');
  const del = byKind('delete');
  const failed = ms.find((m) => m.scenario.startsWith('create without capacity'))?.transitions ?? 0;
  const month = [
    { what: 'creates', n: 60, t: create },
    { what: 'scales (reconcile resizing, ~50 a day)', n: 1500, t: scale },
    { what: 'deletes', n: 60, t: del },
    { what: 'creates that fail for lack of capacity', n: 10, t: failed },
  ];
  const total = month.reduce((s, r) => s + r.n * r.t, 0);
  const cost = (t: number) => `$${((t * PRICE_PER_1000) / 1000).toFixed(4)}`;
  const lines = [
    '## Node group workflows: state transitions',
    '',
    `Measured by \`npx tsx local/sfn/measure.ts --write\`: the ASL files run by the local runner against the cloud simulator (p50 durations of docs/reference/eks-nodegroup.md §1.4) with the default poll budgets (provision ${POLL_DEFAULTS.provision.pollSeconds} s, scale ${POLL_DEFAULTS.scale.pollSeconds} s, delete ${POLL_DEFAULTS.delete.pollSeconds} s between polls). Transitions are states entered (Map iterations included) plus retries, as Standard workflows bill them.`,
    '',
    '| execution | outcome | polls | transitions | ≈ simulated time | cost each |',
    '|---|---|---:|---:|---:|---:|',
    ...ms.map(
      (m) =>
        `| ${m.scenario} | ${m.status} | ${m.polls} | ${m.transitions} | ${m.simulatedSeconds} s | ${cost(m.transitions)} |`,
    ),
    '',
    'One poll is Wait → DescribeNodegroup → Choice: 3 transitions (the wait ends at a deadline in the input, so no counter state). The fixed part is 6 (mark, EKS call, outcome, record, finish, end); a health-issue path adds 4 plus one per issue.',
    '',
    `### A month (us-east-1, $${PRICE_PER_1000} per 1,000 transitions, first ${FREE_PER_MONTH.toLocaleString('en-US')} free)`,
    '',
    '| executions | count | transitions each | transitions |',
    '|---|---:|---:|---:|',
    ...month.map((r) => `| ${r.what} | ${r.n} | ${r.t} | ${(r.n * r.t).toLocaleString('en-US')} |`),
    `| **total** | | | **${total.toLocaleString('en-US')}** |`,
    '',
    `That is ${cost(total)} before the free tier and ${cost(Math.max(0, total - FREE_PER_MONTH))} after it: the workflows cost nothing worth tuning. A failing create is the expensive case (about ${failed} transitions), still under a cent; \`createNodegroup.sync\` would save its polls but gives up the recorded CREATING status and the bounded wait.`,
    '',
  ];
  return lines.join('\n');
}

if (require.main === module) {
  measureWorkflowTransitions(Number(process.env.LLMCAP_BENCH_SCALE ?? 0.005))
    .then((ms) => {
      const md = workflowsMarkdown(ms);
      console.log(md);
      if (process.argv.includes('--write'))
        writeFileSync(join(__dirname, '..', '..', 'bench', 'workflows.md'), md);
    })
    .catch((e) => {
      console.error(e);
      process.exit(1);
    });
}
