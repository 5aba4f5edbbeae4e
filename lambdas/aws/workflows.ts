import { DescribeExecutionCommand, StartExecutionCommand } from '@aws-sdk/client-sfn';
import type { WorkflowKind } from '../domain/actions';
import { sfnClient } from '../shared/clients';
import { config } from '../shared/config';

/**
 * Step Functions, as the node group workflows need it: the state machine of each kind (from the stage's
 * config), StartExecution and DescribeExecution. Locally LLMCAP_SFN_ENDPOINT points the client at the local
 * Step Functions (local/sfn), which runs the same ASL files.
 */

export function stateMachineArn(kind: WorkflowKind): string {
  const arn = config().stateMachines[kind];
  if (!arn) {
    throw new Error(
      `LLMCAP_${kind.toUpperCase()}_SM_ARN is not set, so the ${kind} workflow cannot be started: only the reconcile Lambda starts workflows, and the stack sets it there`,
    );
  }
  return arn;
}

export function executionArnOf(smArn: string, name: string): string {
  return `${smArn.replace(':stateMachine:', ':execution:')}:${name}`;
}

export interface ExecutionView {
  status?: string;
  error?: string;
  cause?: string;
}

/** Starts an execution; `ExecutionAlreadyExists` (a name Step Functions keeps) is the caller's to read. */
export async function startExecution(
  stateMachine: string,
  name: string,
  input: string,
): Promise<string | undefined> {
  const out = await sfnClient().send(
    new StartExecutionCommand({ stateMachineArn: stateMachine, name, input }),
  );
  return out.executionArn;
}

/** The execution's status, or undefined when Step Functions does not know it. */
export async function describeExecution(arn: string): Promise<ExecutionView | undefined> {
  try {
    return await sfnClient().send(new DescribeExecutionCommand({ executionArn: arn }));
  } catch (e) {
    if ((e as Error).name === 'ExecutionDoesNotExist') return undefined;
    throw e;
  }
}
