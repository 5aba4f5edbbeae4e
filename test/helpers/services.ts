import { createServices } from '../../lambdas/service';
import type { InvocationContext } from '../../lambdas/service/passes';
import { createReconciler, type ReconcileSummary } from '../../lambdas/service/reconcile';
import type { StartWorkflowRequest, WorkflowCompute } from '../../lambdas/service/workflows';
import { startTestAdmitter } from './admitter';

/**
 * The use cases as the deployed Lambdas wire them (service/index.ts defaultDependencies), one call each, for
 * tests that drive a single use case against DynamoDB Local and the cloud simulator.
 */

/**
 * A pass as the reconcile Lambda runs it, its admitter the one the table's stream drives in this process (the
 * Lambda invokes the admitter function instead: aws/lambda.ts invokeAdmitter). Not beside a control plane, which
 * has its admitter already: this starts a second one on the stream, which only the jest hook stops
 * (stop-admitter.ts); there, `createReconciler().run()` invokes the control plane's, as bench/reconcile.ts does.
 */
export const runReconcile = async (opts?: { now?: Date }) => {
  const admitter = await startTestAdmitter(process.env.LLMCAP_TABLE!);
  return createReconciler({ admit: () => admitter.run() }).run(opts);
};

const reconciler = () => createReconciler({ admit: () => Promise.reject(new Error('no admitter here')) });

export const startWorkflow = (r: StartWorkflowRequest) => reconciler().workflows.start(r);

export const settleWorkflow = (c: WorkflowCompute) => reconciler().workflows.settle(c);

export const recordedPass = (
  event: unknown,
  context: InvocationContext,
  run: (at: Date) => Promise<ReconcileSummary>,
) => createServices().passes.recorded(event, context, run);
