import { DescribeExecutionCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type Compute, labels, nodegroupName, taint } from '../domain/compute';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { attributeKey, keys } from '../store/keys';

/**
 * Starts the node group workflows (statemachines/*.asl.json) for a compute. A compute is claimed first with a
 * conditional write (generation + 1, workflow RUNNING), then the execution is started under a name derived
 * from compute, kind and generation: two reconcilers can race, but only one claim wins, and repeating the
 * same claim and start is a no-op. Endpoints and ARNs come from the environment, so the same code runs
 * against AWS and against the local Step Functions (local/sfn).
 */

export type WorkflowKind = 'provision' | 'scale' | 'delete';

/** CreateNodegroup / UpdateNodegroupConfig parameters, in the shape the ASL passes on (taints PascalCase). */
export interface NodegroupParameters {
  instanceTypes: string[];
  amiType: string;
  capacityType: string;
  diskSize: number;
  subnets: string[];
  labels: Record<string, string>;
  taints: { Key: string; Value: string; Effect: 'NO_SCHEDULE' | 'NO_EXECUTE' | 'PREFER_NO_SCHEDULE' }[];
  tags: Record<string, string>;
  /** MinSize is always 0 so that a compute can scale to zero without deleting its node group. */
  scalingConfig: { MinSize: 0; MaxSize: number; DesiredSize: number };
}

/**
 * The input of all three workflows. Fields stay at the top level where the ASL reads them by path
 * (`$.pollSeconds` drives every Wait; the local runner shortens it by the same path).
 */
export interface WorkflowInput {
  /** The compute item's key in DynamoDB JSON: the ASL writes status there and never builds keys itself. */
  key: { pk: { S: string }; sk: { S: string } };
  computeName: string;
  nodegroupName: string;
  /** The generation this execution owns; every status write is conditional on it. */
  generation: number;
  nodegroup: NodegroupParameters;
  /** Seconds between two DescribeNodegroup polls. */
  pollSeconds: number;
  /** Polls before the workflow records a timeout and stops waiting (reconcile keeps observing). */
  maxPolls: number;
}

/**
 * Poll budgets per kind: a create may take 35+ minutes to fail for lack of capacity, an update about 30
 * seconds, a delete about 5 minutes (reference/eks-nodegroup.md §1.4).
 */
export const POLL_DEFAULTS: Record<WorkflowKind, { pollSeconds: number; maxPolls: number }> = {
  provision: { pollSeconds: 30, maxPolls: 90 },
  scale: { pollSeconds: 15, maxPolls: 40 },
  delete: { pollSeconds: 30, maxPolls: 60 },
};

export type WorkflowCompute = Pick<Compute, 'name' | 'spec' | 'generation' | 'workflow'>;

export interface BuildInputOptions {
  kind: WorkflowKind;
  /** The generation the execution will own (the compute's current generation + 1). */
  generation: number;
  desiredNodes: number;
  stage?: string;
  subnetIds?: string[];
  pollSeconds?: number;
  maxPolls?: number;
}

export function buildWorkflowInput(
  compute: Pick<Compute, 'name' | 'spec'>,
  o: BuildInputOptions,
): WorkflowInput {
  const stage = o.stage ?? config().stage;
  const { node, nodeGroup } = compute.spec;
  const t = taint(compute.name, compute.spec);
  const max = nodeGroup.maxNodes;
  return {
    key: attributeKey(keys.compute(compute.name)),
    computeName: compute.name,
    nodegroupName: nodegroupName(stage, compute.name),
    generation: o.generation,
    nodegroup: {
      instanceTypes: [node.instanceType],
      amiType: node.amiType,
      capacityType: node.capacityType,
      diskSize: node.diskSizeGb,
      subnets: nodeGroup.subnetIds ?? o.subnetIds ?? config().subnetIds,
      labels: labels(compute.name),
      taints: [{ Key: t.key, Value: t.value, Effect: t.effect }],
      tags: { 'llmcap:stage': stage, 'llmcap:compute': compute.name },
      scalingConfig: {
        MinSize: 0,
        MaxSize: max,
        DesiredSize: o.kind === 'delete' ? 0 : Math.min(Math.max(Math.floor(o.desiredNodes), 0), max),
      },
    },
    pollSeconds: o.pollSeconds ?? POLL_DEFAULTS[o.kind].pollSeconds,
    maxPolls: o.maxPolls ?? POLL_DEFAULTS[o.kind].maxPolls,
  };
}

/** `<compute>-<kind>-g<generation>`: valid Step Functions name characters, at most 80. */
export function executionName(computeName: string, kind: WorkflowKind, generation: number): string {
  const suffix = `-${kind}-g${generation}`;
  const base = computeName.replace(/[^A-Za-z0-9_-]+/g, '-').slice(0, 80 - suffix.length);
  return `${base}${suffix}`;
}

export function stateMachineArn(kind: WorkflowKind, env: NodeJS.ProcessEnv = process.env): string {
  const name = {
    provision: 'LLMCAP_PROVISION_SM_ARN',
    scale: 'LLMCAP_SCALE_SM_ARN',
    delete: 'LLMCAP_DELETE_SM_ARN',
  }[kind];
  const arn = env[name];
  if (!arn) throw new Error(`${name} is not set: the ${kind} workflow cannot be started`);
  return arn;
}

export function executionArnOf(smArn: string, name: string): string {
  return `${smArn.replace(':stateMachine:', ':execution:')}:${name}`;
}

let sfn: SFNClient | undefined;
function sfnClient(): SFNClient {
  sfn ??= new SFNClient({ endpoint: process.env.LLMCAP_SFN_ENDPOINT || undefined, maxAttempts: 5 });
  return sfn;
}

/** For tests and the local control plane, which point at a fresh endpoint after start. */
export function resetWorkflowClients(): void {
  sfn?.destroy();
  sfn = undefined;
}

export type StartWorkflowResult =
  | {
      outcome: 'started' | 'already-started';
      executionArn: string;
      executionName: string;
      generation: number;
    }
  | {
      outcome: 'refused';
      reason: 'WorkflowRunning' | 'StaleGeneration' | 'NotFound' | 'NoSubnets' | 'NameTaken';
      message: string;
      workflow?: Compute['workflow'];
    };

export interface StartWorkflowRequest extends Omit<BuildInputOptions, 'generation'> {
  /** The compute as the caller read it: its generation is the one the claim expects. */
  compute: WorkflowCompute;
}

const isConditionFailure = (e: unknown) => (e as Error).name === 'ConditionalCheckFailedException';
const table = () => config().table;

/**
 * Claims the compute and starts the workflow. Returns `refused` (never throws) when a workflow is running,
 * the caller's view is stale, or the compute is gone; throws only when AWS itself fails, after releasing the
 * claim so that the compute is not left looking busy.
 */
export async function startWorkflow(req: StartWorkflowRequest): Promise<StartWorkflowResult> {
  const { compute, kind } = req;
  const generation = compute.generation + 1;
  const name = executionName(compute.name, kind, generation);
  const input = buildWorkflowInput(compute, { ...req, generation });
  if (kind !== 'delete' && input.nodegroup.subnets.length === 0) {
    return {
      outcome: 'refused',
      reason: 'NoSubnets',
      message: `compute ${compute.name} names no subnets and the stage config has none (LLMCAP_SUBNETS)`,
    };
  }
  const smArn = stateMachineArn(kind);
  const now = new Date().toISOString();
  let repeat = false;
  try {
    await documentClient().send(
      new UpdateCommand({
        TableName: table(),
        Key: keys.compute(compute.name),
        UpdateExpression: 'SET #generation = :next, #workflow = :workflow',
        ConditionExpression:
          'attribute_exists(pk) AND #generation = :expected AND (attribute_not_exists(#workflow) OR #workflow.#state <> :running)',
        ExpressionAttributeNames: { '#generation': 'generation', '#workflow': 'workflow', '#state': 'state' },
        ExpressionAttributeValues: {
          ':next': generation,
          ':expected': compute.generation,
          ':running': 'RUNNING',
          ':workflow': { executionName: name, kind, state: 'RUNNING', startedAt: now },
        },
      }),
    );
  } catch (e) {
    if (!isConditionFailure(e)) throw e;
    const current = await readCompute(compute.name);
    if (!current)
      return { outcome: 'refused', reason: 'NotFound', message: `compute ${compute.name} does not exist` };
    repeat = current.generation === generation && current.workflow?.executionName === name;
    if (!repeat) {
      if (current.workflow?.state === 'RUNNING') {
        return {
          outcome: 'refused',
          reason: 'WorkflowRunning',
          message: `compute ${compute.name} is busy: workflow ${current.workflow.executionName} (${current.workflow.kind}) is still running`,
          workflow: current.workflow,
        };
      }
      return {
        outcome: 'refused',
        reason: 'StaleGeneration',
        message: `compute ${compute.name} is at generation ${current.generation}, not ${compute.generation}: read it again`,
      };
    }
    // The same claim was made before (a retried reconcile): make sure its execution exists, once.
  }

  const body = JSON.stringify(input);
  const arn = executionArnOf(smArn, name);
  if (repeat) {
    const existing = await describeExecution(arn);
    if (existing) return alreadyStarted(existing.input, body, arn, name, generation);
  }
  try {
    const out = await sfnClient().send(
      new StartExecutionCommand({ stateMachineArn: smArn, name, input: body }),
    );
    return {
      outcome: 'started',
      executionArn: out.executionArn ?? executionArnOf(smArn, name),
      executionName: name,
      generation,
    };
  } catch (e) {
    if ((e as Error).name === 'ExecutionAlreadyExists') {
      const existing = await sfnClient().send(new DescribeExecutionCommand({ executionArn: arn }));
      return alreadyStarted(existing.input, body, arn, name, generation);
    }
    await releaseClaim(
      compute.name,
      generation,
      name,
      `could not start workflow ${name}: ${(e as Error).message}`,
    );
    throw e;
  }
}

async function describeExecution(arn: string) {
  try {
    return await sfnClient().send(new DescribeExecutionCommand({ executionArn: arn }));
  } catch (e) {
    if ((e as Error).name === 'ExecutionDoesNotExist') return undefined;
    throw e;
  }
}

function alreadyStarted(
  existingInput: string | undefined,
  body: string,
  executionArn: string,
  name: string,
  generation: number,
): StartWorkflowResult {
  if (sameJson(existingInput, body))
    return { outcome: 'already-started', executionArn, executionName: name, generation };
  return {
    outcome: 'refused',
    reason: 'NameTaken',
    message: `execution ${name} already exists with a different input (the compute changed since it started)`,
  };
}

function sameJson(a: string | undefined, b: string): boolean {
  try {
    return a !== undefined && JSON.stringify(JSON.parse(a)) === JSON.stringify(JSON.parse(b));
  } catch {
    return false;
  }
}

async function readCompute(name: string): Promise<WorkflowCompute | undefined> {
  const out = await documentClient().send(
    new GetCommand({ TableName: table(), Key: keys.compute(name), ConsistentRead: true }),
  );
  return out.Item as WorkflowCompute | undefined;
}

/** Marks a claimed workflow FAILED with a reason, if this claim still owns the compute. */
async function releaseClaim(
  computeName: string,
  generation: number,
  name: string,
  message: string,
): Promise<void> {
  try {
    await documentClient().send(
      new UpdateCommand({
        TableName: table(),
        Key: keys.compute(computeName),
        UpdateExpression:
          'SET #workflow.#state = :failed, #workflow.finishedAt = :now, #status.statusMessage = :msg',
        ConditionExpression:
          '#generation = :generation AND #workflow.executionName = :name AND #workflow.#state = :running',
        ExpressionAttributeNames: {
          '#workflow': 'workflow',
          '#state': 'state',
          '#status': 'status',
          '#generation': 'generation',
        },
        ExpressionAttributeValues: {
          ':failed': 'FAILED',
          ':running': 'RUNNING',
          ':now': new Date().toISOString(),
          ':msg': message,
          ':generation': generation,
          ':name': name,
        },
      }),
    );
  } catch (e) {
    if (!isConditionFailure(e)) throw e;
  }
}

/**
 * For a compute whose record says a workflow is RUNNING, asks Step Functions; an execution that ended
 * without recording (aborted, timed out, or its status write failed) is marked FAILED so the compute does
 * not stay busy forever. Returns the execution's status.
 */
export async function settleWorkflow(compute: WorkflowCompute): Promise<string | undefined> {
  const wf = compute.workflow;
  if (wf?.state !== 'RUNNING') return wf?.state;
  const arn = executionArnOf(stateMachineArn(wf.kind as WorkflowKind), wf.executionName);
  const out = await describeExecution(arn);
  const status = out?.status ?? 'MISSING';
  const detail = out?.error ? ` (${out.error}: ${out.cause ?? ''})` : '';
  if (status !== 'RUNNING') {
    await releaseClaim(
      compute.name,
      compute.generation,
      wf.executionName,
      `workflow ${wf.executionName} ended ${status} without recording an outcome${detail}`,
    );
  }
  return status;
}
