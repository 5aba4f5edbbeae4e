import { createServices } from '../../lambdas/service';
import type { InvocationContext } from '../../lambdas/service/passes';
import { createReconciler, type ReconcileSummary } from '../../lambdas/service/reconcile';
import type { StartWorkflowRequest, WorkflowCompute } from '../../lambdas/service/workflows';

/**
 * The use cases as the deployed Lambdas wire them (service/index.ts defaultDependencies), one call each, for
 * tests that drive a single use case against DynamoDB Local and the cloud simulator.
 */

export const runReconcile = (opts?: { now?: Date }) => createReconciler().run(opts);

export const startWorkflow = (r: StartWorkflowRequest) => createReconciler().workflows.start(r);

export const settleWorkflow = (c: WorkflowCompute) => createReconciler().workflows.settle(c);

export const recordedPass = (
  event: unknown,
  context: InvocationContext,
  run: (at: Date) => Promise<ReconcileSummary>,
) => createServices().passes.recorded(event, context, run);
