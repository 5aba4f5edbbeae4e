import { EKSClient } from '@aws-sdk/client-eks';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Compute, ComputeSpec } from '../../../lambdas/domain/compute';
import { newComputeId } from '../../../lambdas/domain/nodegroup';
import type { StartWorkflowResult, WorkflowKind } from '../../../lambdas/service/workflows';
import { documentClient, resetClients } from '../../../lambdas/shared/clients';
import { resetConfig } from '../../../lambdas/shared/config';
import { type CloudSim, type Durations, startCloudSim } from '../../../local/cloud-sim';
import {
  type LocalExecutionRecord,
  type LocalStepFunctions,
  startLocalStepFunctions,
  workflowEnv,
} from '../../../local/sfn';
import { startWorkflow } from '../../helpers/services';
import { freshTable } from '../../helpers/table';

/**
 * One cloud simulator, one local Step Functions and one table per test file. Simulated time and the
 * workflows' waits are scaled alike (SCALE), so a 30-second poll against a 2-minute create keeps its
 * proportions while the whole create takes a quarter of a second.
 */

export const SCALE = 0.002;
export const SUBNETS = ['subnet-0a1b2c3d4e5f60001', 'subnet-0a1b2c3d4e5f60002'];
/** Fault draws are seeded: with this seed and a 50% throttle rate, the first requests are throttled and no
 * run of throttles ever exceeds 4 in the first 300 requests, so retries are certain and always enough. */
export const STORM_SEED = 215;

export interface Harness {
  sim: CloudSim;
  sfn: LocalStepFunctions;
  eks: EKSClient;
  table: string;
  close(): Promise<void>;
}

export async function harness(
  opts: { durations?: Partial<Durations>; retryScale?: number } = {},
): Promise<Harness> {
  const table = await freshTable('wf');
  const sim = await startCloudSim({ port: 0, timeScale: SCALE, seed: STORM_SEED, durations: opts.durations });
  const sfn = await startLocalStepFunctions({
    eksEndpoint: sim.endpoint,
    dynamodbEndpoint: process.env.LLMCAP_DYNAMODB_ENDPOINT,
    tableName: table,
    clusterName: sim.clusterName,
    namePrefix: 'llmcap-test',
    timing: { waitScale: SCALE, retryScale: opts.retryScale },
  });
  Object.assign(process.env, { LLMCAP_STAGE: 'test', ...workflowEnv(sfn) });
  resetConfig();
  resetClients();
  const eks = new EKSClient({ endpoint: sim.endpoint, maxAttempts: 1 });
  return {
    sim,
    sfn,
    eks,
    table,
    async close() {
      eks.destroy();
      resetClients();
      await sfn.stop();
      await sim.stop();
    },
  };
}

export function cpuSpec(maxNodes = 4): ComputeSpec {
  return {
    node: {
      instanceType: 'm7i.xlarge',
      cpu: 4,
      memoryGb: 16,
      diskSizeGb: 100,
      capacityType: 'ON_DEMAND',
      amiType: 'AL2023_x86_64_STANDARD',
    },
    nodeGroup: { maxNodes, subnetIds: SUBNETS },
    cost: { perHour: 0.2016, currency: 'USD' },
  };
}

export function gpuSpec(instanceType = 'g6.2xlarge'): ComputeSpec {
  return {
    node: {
      instanceType,
      cpu: 8,
      memoryGb: 32,
      gpu: { type: 'L4', count: 1, memoryGb: 24, resource: 'nvidia.com/gpu' },
      diskSizeGb: 100,
      capacityType: 'ON_DEMAND',
      amiType: 'AL2023_x86_64_NVIDIA',
    },
    nodeGroup: { maxNodes: 4, subnetIds: SUBNETS },
    cost: { perHour: 0.9776, currency: 'USD' },
  };
}

export type StoredCompute = Compute & { pk: string; sk: string };

/**
 * Puts a compute item as the store lays it out: status ABSENT, generation 0, version 1, a fresh incarnation
 * id (`legacy: true` leaves it out, as items stored before ids existed have none).
 */
export async function putCompute(
  h: Harness,
  name: string,
  spec: ComputeSpec,
  extra: Partial<Pick<Compute, 'status' | 'generation' | 'workflow' | 'uid'>> & { legacy?: boolean } = {},
): Promise<StoredCompute> {
  const { legacy, ...rest } = extra;
  const now = new Date().toISOString();
  const item: StoredCompute = {
    pk: 'COMPUTE',
    sk: name,
    name,
    builtin: false,
    spec,
    version: 1,
    createdAt: now,
    createdBy: 'test',
    updatedAt: now,
    updatedBy: 'test',
    status: { nodegroupStatus: 'ABSENT', desiredNodes: 0, readyNodes: 0 },
    generation: 0,
    uid: newComputeId(),
    ...rest,
  };
  if (legacy) delete item.uid;
  await documentClient().send(new PutCommand({ TableName: h.table, Item: item }));
  return item;
}

export async function getCompute(h: Harness, name: string): Promise<StoredCompute> {
  const out = await documentClient().send(
    new GetCommand({ TableName: h.table, Key: { pk: 'COMPUTE', sk: name }, ConsistentRead: true }),
  );
  if (!out.Item) throw new Error(`compute ${name} is gone`);
  return out.Item as StoredCompute;
}

export async function bumpGeneration(h: Harness, name: string): Promise<void> {
  await documentClient().send(
    new UpdateCommand({
      TableName: h.table,
      Key: { pk: 'COMPUTE', sk: name },
      UpdateExpression: 'SET generation = generation + :one',
      ExpressionAttributeValues: { ':one': 1 },
    }),
  );
}

export interface Run {
  start: StartWorkflowResult;
  execution: LocalExecutionRecord;
  /** Every distinct (nodegroupStatus, statusMessage) the compute went through while the execution ran. */
  seen: { nodegroupStatus: string; statusMessage?: string }[];
  compute: StoredCompute;
}

/** Starts a workflow through the real starter and SFN API, watches the compute, and waits for the end. */
export async function run(
  h: Harness,
  name: string,
  kind: WorkflowKind,
  opts: { desiredNodes?: number; pollSeconds?: number; maxPolls?: number; during?: () => Promise<void> } = {},
): Promise<Run> {
  const compute = await getCompute(h, name);
  const start = await startWorkflow({
    compute,
    kind,
    desiredNodes: opts.desiredNodes ?? 0,
    pollSeconds: opts.pollSeconds,
    maxPolls: opts.maxPolls,
  });
  if (start.outcome !== 'started') throw new Error(`not started: ${JSON.stringify(start)}`);
  const execution = h.sfn.execution(start.executionArn)!;
  // The claim does not touch status, so the status read before the start is where the story begins.
  const seen: Run['seen'] = [
    { nodegroupStatus: compute.status.nodegroupStatus, statusMessage: compute.status.statusMessage },
  ];
  let finished = false;
  const watch = (async () => {
    while (!finished) {
      const c = await getCompute(h, name);
      const last = seen[seen.length - 1];
      if (
        !last ||
        last.nodegroupStatus !== c.status.nodegroupStatus ||
        last.statusMessage !== c.status.statusMessage
      ) {
        seen.push({ nodegroupStatus: c.status.nodegroupStatus, statusMessage: c.status.statusMessage });
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  await opts.during?.();
  await execution.done;
  finished = true;
  await watch;
  const final = await getCompute(h, name);
  const last = seen[seen.length - 1];
  if (
    !last ||
    last.nodegroupStatus !== final.status.nodegroupStatus ||
    last.statusMessage !== final.status.statusMessage
  ) {
    seen.push({ nodegroupStatus: final.status.nodegroupStatus, statusMessage: final.status.statusMessage });
  }
  return { start, execution, seen, compute: final };
}

export const statuses = (r: Run) => r.seen.map((s) => s.nodegroupStatus);
export const statesEntered = (r: Run) =>
  r.execution.events.filter((e) => e.type === 'StateEntered').map((e) => (e.state as { name: string }).name);
export const retries = (r: Run, state: string) =>
  r.execution.events.filter((e) => e.type === 'StateRetried' && (e.state as { name: string }).name === state)
    .length;
export const simGroup = (h: Harness, ngName: string) =>
  h.sim.admin.state().nodegroups.find((n) => n.name === ngName);
