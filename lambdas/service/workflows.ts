import type * as stepFunctions from '../aws/workflows';
import type { WorkflowKind } from '../domain/actions';
import { type Compute, labels, taint } from '../domain/compute';
import {
  clientRequestToken,
  executionName,
  ISSUE_DEFAULTS,
  incarnation,
  type NodegroupOwner,
  nodegroupNameOf,
  nodegroupTags,
  ownerOf,
  TAG_COMPUTE,
  TAG_COMPUTE_ID,
  TAG_STAGE,
} from '../domain/nodegroup';
import { config } from '../shared/config';
import type * as ComputeStoreModule from '../store/computes';
import { attributeKey, keys } from '../store/keys';

type ComputeStore = typeof ComputeStoreModule;

/**
 * Starts the node group workflows (statemachines/*.asl.json) for a compute. A compute is claimed first with a
 * conditional write (generation + 1, workflow RUNNING), then the execution is started under a name derived
 * from compute, kind, generation and the compute's incarnation id: two reconcilers can race, but only one
 * claim wins, repeating the same claim and start is a no-op, and a compute deleted and created again never
 * meets the names Step Functions keeps for 90 days. Step Functions is aws/workflows.ts, the claim the compute
 * store's.
 */

export type { WorkflowKind };

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
  /** What the node group's tags must say for the workflow to adopt a group that already holds the name. */
  owner: NodegroupOwner;
  /** EKS's idempotency token for this work (incarnation, kind, generation), not the execution name. */
  clientRequestToken: string;
  /** Seconds between two DescribeNodegroup polls. */
  pollSeconds: number;
  /** How long the workflow polls before it records a timeout and stops (reconcile keeps observing). */
  waitSeconds: number;
  /** The end of that wait (ISO 8601): the poll's Choice compares the describe's time with it. */
  waitUntil: string;
  /**
   * What the ASL reads in place of members EKS may leave out (an issue's code and message, our tag keys on a
   * group someone else made), merged under the real ones so that no path points at a missing field.
   */
  absent: {
    tags: Record<string, string>;
    issue: { Code: string; Message: string };
  };
}

/**
 * Poll budgets per kind: a create may take 35+ minutes to fail for lack of capacity, an update about 30
 * seconds, a delete about 5 minutes (docs/reference/eks-nodegroup.md §1.4).
 */
export const POLL_DEFAULTS: Record<WorkflowKind, { pollSeconds: number; maxPolls: number }> = {
  provision: { pollSeconds: 30, maxPolls: 90 },
  scale: { pollSeconds: 15, maxPolls: 40 },
  delete: { pollSeconds: 30, maxPolls: 60 },
};

export type WorkflowCompute = Pick<
  Compute,
  'name' | 'spec' | 'generation' | 'workflow' | 'createdAt' | 'uid'
>;

export interface BuildInputOptions {
  kind: WorkflowKind;
  /** The generation the execution will own (the compute's current generation + 1). */
  generation: number;
  desiredNodes: number;
  stage?: string;
  subnetIds?: string[];
  pollSeconds?: number;
  /** The wait budget in polls: the workflow waits pollSeconds × maxPolls. */
  maxPolls?: number;
  /** When the work was claimed (ISO 8601); the wait ends pollSeconds × maxPolls after it. Default now. */
  claimedAt?: string;
}

export function buildWorkflowInput(
  compute: Pick<Compute, 'name' | 'spec' | 'createdAt' | 'uid'>,
  o: BuildInputOptions,
): WorkflowInput {
  const stage = o.stage ?? config().stage;
  const { node, nodeGroup } = compute.spec;
  const t = taint(compute.name, compute.spec);
  const max = nodeGroup.maxNodes;
  const owner = ownerOf(stage, compute);
  const pollSeconds = o.pollSeconds ?? POLL_DEFAULTS[o.kind].pollSeconds;
  const waitSeconds = pollSeconds * (o.maxPolls ?? POLL_DEFAULTS[o.kind].maxPolls);
  const claimed = o.claimedAt ? Date.parse(o.claimedAt) : Date.now();
  return {
    key: attributeKey(keys.compute(compute.name)),
    computeName: compute.name,
    nodegroupName: nodegroupNameOf(stage, compute),
    generation: o.generation,
    nodegroup: {
      instanceTypes: [node.instanceType],
      amiType: node.amiType,
      capacityType: node.capacityType,
      diskSize: node.diskSizeGb,
      subnets: nodeGroup.subnetIds ?? o.subnetIds ?? config().subnetIds,
      labels: labels(compute.name),
      taints: [{ Key: t.key, Value: t.value, Effect: t.effect }],
      tags: nodegroupTags(owner),
      scalingConfig: {
        MinSize: 0,
        MaxSize: max,
        DesiredSize: o.kind === 'delete' ? 0 : Math.min(Math.max(Math.floor(o.desiredNodes), 0), max),
      },
    },
    owner,
    clientRequestToken: clientRequestToken(owner.computeId, o.kind, o.generation),
    pollSeconds,
    waitSeconds,
    waitUntil: new Date(claimed + waitSeconds * 1000).toISOString(),
    absent: {
      tags: { [TAG_STAGE]: '', [TAG_COMPUTE]: '', [TAG_COMPUTE_ID]: '' },
      issue: { Code: ISSUE_DEFAULTS.code, Message: ISSUE_DEFAULTS.message },
    },
  };
}

/** The execution name of a compute's work: see executionName in domain/nodegroup.ts. */
export function executionNameOf(
  compute: Pick<Compute, 'name' | 'createdAt' | 'uid'>,
  kind: WorkflowKind,
  generation: number,
): string {
  return executionName(compute.name, kind, generation, incarnation(compute).id);
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

/** What starting and settling workflows depends on: the compute store's claim, and Step Functions. */
export interface WorkflowDependencies {
  clock: () => Date;
  computes: Pick<ComputeStore, 'claimWorkflow' | 'releaseWorkflowClaim' | 'getCompute'>;
  stepFunctions: typeof stepFunctions;
}

export function workflowService(deps: WorkflowDependencies) {
  const sfn = deps.stepFunctions;
  const now = () => deps.clock().toISOString();
  const release = (computeName: string, generation: number, name: string, message: string) =>
    deps.computes.releaseWorkflowClaim(computeName, generation, name, message, now());

  /**
   * StartExecution found an execution of this name. On a repeat of a claim it is that claim's own (the name is
   * its incarnation, kind and generation), running or finished since. On a fresh claim it cannot be this work:
   * Step Functions answers so only for a closed execution or another input, and keeps closed names for 90
   * days. The claim is then released with the reason, so the compute never waits on an execution that will not
   * record for it.
   */
  async function alreadyStarted(
    computeName: string,
    existing: { status?: string },
    claim: { arn: string; name: string; generation: number; repeat: boolean },
  ): Promise<StartWorkflowResult> {
    const { arn, name, generation } = claim;
    if (claim.repeat)
      return { outcome: 'already-started', executionArn: arn, executionName: name, generation };
    const message =
      existing.status === 'RUNNING'
        ? `execution ${name} is already running with another input`
        : `execution ${name} already ran (${existing.status}) and Step Functions keeps its name for 90 days`;
    await release(computeName, generation, name, `could not start workflow ${name}: ${message}`);
    return { outcome: 'refused', reason: 'NameTaken', message };
  }

  return {
    /**
     * Claims the compute and starts the workflow. Returns `refused` (never throws) when a workflow is running,
     * the caller's view is stale, or the compute is gone; throws only when AWS itself fails, after releasing the
     * claim so that the compute is not left looking busy.
     */
    async start(req: StartWorkflowRequest): Promise<StartWorkflowResult> {
      const { compute, kind } = req;
      const generation = compute.generation + 1;
      const name = executionNameOf(compute, kind, generation);
      const claimedAt = now();
      let input = buildWorkflowInput(compute, { ...req, generation, claimedAt });
      if (kind !== 'delete' && input.nodegroup.subnets.length === 0) {
        return {
          outcome: 'refused',
          reason: 'NoSubnets',
          message: `compute ${compute.name} names no subnets and the stage config has none (LLMCAP_SUBNETS)`,
        };
      }
      const smArn = sfn.stateMachineArn(kind);
      let repeat = false;
      const claimed = await deps.computes.claimWorkflow(compute.name, compute.generation, {
        executionName: name,
        kind,
        state: 'RUNNING',
        startedAt: claimedAt,
      });
      if (!claimed) {
        const current = await deps.computes.getCompute(compute.name);
        if (!current)
          return {
            outcome: 'refused',
            reason: 'NotFound',
            message: `compute ${compute.name} does not exist`,
          };
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
        // The same claim was made before (a retried reconcile): make sure its execution exists, once, with the
        // input that claim gave it (its wait ends where the first attempt's did).
        const first = current.workflow?.startedAt;
        if (first) input = buildWorkflowInput(compute, { ...req, generation, claimedAt: first });
      }

      const body = JSON.stringify(input);
      const arn = sfn.executionArnOf(smArn, name);
      if (repeat) {
        const existing = await sfn.describeExecution(arn);
        if (existing) return alreadyStarted(compute.name, existing, { arn, name, generation, repeat });
      }
      try {
        const executionArn = await sfn.startExecution(smArn, name, body);
        return {
          outcome: 'started',
          executionArn: executionArn ?? sfn.executionArnOf(smArn, name),
          executionName: name,
          generation,
        };
      } catch (e) {
        if ((e as Error).name === 'ExecutionAlreadyExists') {
          const existing = await sfn.describeExecution(arn);
          if (!existing) throw e;
          return alreadyStarted(compute.name, existing, { arn, name, generation, repeat });
        }
        await release(
          compute.name,
          generation,
          name,
          `could not start workflow ${name}: ${(e as Error).message}`,
        );
        throw e;
      }
    },

    /**
     * For a compute whose record says a workflow is RUNNING, asks Step Functions; an execution that ended
     * without recording (aborted, timed out, or its status write failed) is marked FAILED so the compute does
     * not stay busy forever. Returns the execution's status.
     */
    async settle(compute: WorkflowCompute): Promise<string | undefined> {
      const wf = compute.workflow;
      if (wf?.state !== 'RUNNING') return wf?.state;
      const arn = sfn.executionArnOf(sfn.stateMachineArn(wf.kind as WorkflowKind), wf.executionName);
      const out = await sfn.describeExecution(arn);
      const status = out?.status ?? 'MISSING';
      const detail = out?.error ? ` (${out.error}: ${out.cause ?? ''})` : '';
      if (status !== 'RUNNING') {
        await release(
          compute.name,
          compute.generation,
          wf.executionName,
          `workflow ${wf.executionName} ended ${status} without recording an outcome${detail}`,
        );
      }
      return status;
    },
  };
}

export type WorkflowService = ReturnType<typeof workflowService>;
