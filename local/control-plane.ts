import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { resetApp } from '../lambdas/api/app';
import { handler } from '../lambdas/api/handler';
import { RECONCILE_ASYNC, RECONCILE_TIMEOUT_SECONDS } from '../lambdas/domain/reconcile-pass';
import { AlarmEvaluator, alarmStates, type Transition } from '../lambdas/reconcile/alarms';
import { handler as reconcileHandler } from '../lambdas/reconcile/handler';
import { passesSettled } from '../lambdas/reconcile/pass';
import type { ReconcileSummary } from '../lambdas/reconcile/reconcile';
import { resetWorkflowClients } from '../lambdas/reconcile/workflows';
import { resetAwsClients } from '../lambdas/shared/aws';
import { dynamoClient, resetClients } from '../lambdas/shared/clients';
import { loadConfig, resetConfig } from '../lambdas/shared/config';
import { resetLambdaClient } from '../lambdas/shared/lambda';
import { ensureTable } from '../lambdas/store/table';
import { startApiServer } from './api-server';
import { type CloudSim, startCloudSim } from './cloud-sim';
import { type DynamoDbLocal, startDynamoDbLocal } from './dynamodb-local';
import { LOCAL_ADMIN } from './identity';
import { writeLocalKubeconfig } from './k8s-sim/local';
import { type LocalLambda, startLocalLambda } from './lambda';
import { type LocalStepFunctions, startLocalStepFunctions, workflowEnv } from './sfn';

/**
 * The local control plane: the same Lambda code with DynamoDB Local as the store, the cloud simulator in place
 * of EKS, the ASL files run by the local Step Functions, a reconcile schedule and an alarm evaluator, served on
 * 127.0.0.1. `npm start` and the end-to-end tests use this one wiring.
 */

export interface ControlPlaneOptions {
  port?: number;
  persist?: boolean;
  dataDir?: string;
  /** An already running DynamoDB (the tests share one); otherwise one is started. */
  dynamodbEndpoint?: string;
  table?: string;
  admins?: string[];
  /** Cloud simulator port (0 = free); default LLMCAP_SIM_PORT or 4510. */
  simPort?: number;
  /** Multiplies the simulator's EKS durations and the workflows' waits; default LLMCAP_SIM_TIME_SCALE or 0.1. */
  simTimeScale?: number;
  /** Seconds between scheduled reconciles; 0 turns the schedule off (tests drive reconcile themselves). */
  reconcileSeconds?: number;
  /** Scale-down cool-down in seconds (LLMCAP_COOLDOWN_SECONDS); default 600. */
  cooldownSeconds?: number;
  /** Where ALARM / OK transitions are posted as JSON (LLMCAP_ALERT_WEBHOOK). */
  alertWebhook?: string;
  /** The reconcile Lambda's timeout in the local Lambda; default 300 s, as in the stack. */
  reconcileTimeoutSeconds?: number;
  /** Where to write a kubeconfig for the simulated cluster (docs/k8s-sim.md); none by default. */
  kubeconfigPath?: string;
  log?: (line: string) => void;
}

export interface ControlPlane {
  apiUrl: string;
  dynamodbEndpoint: string;
  table: string;
  sim: CloudSim;
  sfn: LocalStepFunctions;
  /** The local Lambda that runs the reconcile function (`reconcileFunction`), as POST /v1/reconcile invokes it. */
  lambda: LocalLambda;
  reconcileFunction: string;
  /** Where the reconcile function's failed and expired events go (the stack's on-failure queue). */
  reconcileFailureDestination: string;
  /** Queues a scheduled pass (as the schedule does), waits for it, and evaluates the alarms on it. */
  reconcile(): Promise<ReconcileSummary>;
  /** Every alarm transition so far, oldest first. */
  transitions: Transition[];
  stop(): Promise<void>;
}

export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = opts.log ?? (() => undefined);
  const admins = (opts.admins ?? [LOCAL_ADMIN]).join(',');
  // Before anything starts: a mistyped admin stops the start with its reason, as it would fail the Lambda.
  loadConfig({ LLMCAP_ADMINS: admins });
  let ddb: DynamoDbLocal | undefined;
  let endpoint = opts.dynamodbEndpoint;
  if (!endpoint) {
    const persistDir = opts.persist
      ? (opts.dataDir ?? join(process.cwd(), '.llmcap', 'dynamodb'))
      : undefined;
    ddb = await startDynamoDbLocal({ persistDir });
    endpoint = ddb.endpoint;
    log(
      `DynamoDB Local   ${endpoint} (${persistDir ? `data in ${persistDir}` : 'in memory'}, pid ${ddb.pid})`,
    );
  }
  const table = opts.table ?? 'llmcap-local';
  const timeScale = opts.simTimeScale ?? Number(process.env.LLMCAP_SIM_TIME_SCALE ?? 0.1);
  const sim = await startCloudSim({
    port: opts.simPort ?? Number(process.env.LLMCAP_SIM_PORT ?? 4510),
    timeScale,
    clusterName: 'llmcap-local',
  });
  log(
    `cloud simulator  ${sim.endpoint} (EKS cluster llmcap-local and Auto Scaling; time scale ${timeScale})`,
  );
  // k8s-sim (issue 20): the cluster's Kubernetes API runs inside the simulator; kubectl gets a kubeconfig.
  const kubeconfigLine = opts.kubeconfigPath ? writeLocalKubeconfig(sim, opts.kubeconfigPath) : undefined;
  if (kubeconfigLine) log(kubeconfigLine);
  const sfn = await startLocalStepFunctions({
    port: 0,
    eksEndpoint: sim.endpoint,
    autoscalingEndpoint: sim.endpoint,
    dynamodbEndpoint: endpoint,
    tableName: table,
    clusterName: 'llmcap-local',
    namePrefix: 'llmcap-local',
    // Waits shrink with the simulator's clock, so a poll loop takes as many polls as it would in AWS.
    timing: { waitScale: timeScale, maxWaitSeconds: 30 * timeScale },
  });
  log(`Step Functions   ${sfn.endpoint} (provision, scale, delete node group from statemachines/)`);
  Object.assign(process.env, {
    LLMCAP_DYNAMODB_ENDPOINT: endpoint,
    LLMCAP_TABLE: table,
    LLMCAP_STAGE: process.env.LLMCAP_STAGE ?? 'local',
    LLMCAP_ADMINS: admins,
    LLMCAP_EKS_ENDPOINT: sim.endpoint,
    LLMCAP_CLUSTER: 'llmcap-local',
    LLMCAP_SUBNETS: process.env.LLMCAP_SUBNETS ?? 'subnet-0aaaaaaaaaaaaaaa1,subnet-0aaaaaaaaaaaaaaa2',
    LLMCAP_COOLDOWN_SECONDS: String(opts.cooldownSeconds ?? process.env.LLMCAP_COOLDOWN_SECONDS ?? 600),
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
    ...workflowEnv(sfn),
  });
  resetConfig();
  resetClients();
  resetAwsClients();
  resetWorkflowClients();
  resetApp();
  const client = dynamoClient(endpoint);
  await ensureTable(client, table);
  client.destroy();

  const evaluator = new AlarmEvaluator();
  const transitions: Transition[] = [];
  const webhook = opts.alertWebhook ?? process.env.LLMCAP_ALERT_WEBHOOK;
  const report = (summary: ReconcileSummary) => {
    for (const t of evaluator.evaluate(alarmStates(summary), summary.startedAt)) {
      transitions.push(t);
      log(`${t.alarm ? 'ALARM' : 'OK   '} ${t.kind} ${t.subject}: ${t.reason}`);
      if (webhook) {
        fetch(webhook, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(t),
        }).catch((e) => log(`alert webhook ${webhook} failed: ${(e as Error).message}`));
      }
    }
    for (const w of summary.workflows)
      log(`workflow ${w.kind} ${w.compute}: ${w.outcome}${w.executionName ? ` (${w.executionName})` : ''}`);
    for (const e of summary.errors) log(`reconcile error: ${e}`);
  };

  // The reconcile function runs in the local Lambda with the stack's settings: reserved concurrency 1 (passes
  // never overlap), its timeout, no retries, and an on-failure destination; POST /v1/reconcile reaches it
  // through @aws-sdk/client-lambda like in AWS.
  const reconcileFunction = `${table}-reconcile`;
  const region = process.env.AWS_REGION ?? 'us-east-1';
  const failures = `arn:aws:sqs:${region}:000000000000:${reconcileFunction}-failures`;
  const lambda = await startLocalLambda({
    region,
    functions: {
      [reconcileFunction]: {
        handler: async (event, context) => {
          const out = await reconcileHandler(event, context);
          if (out && typeof out === 'object' && 'computes' in out) report(out as ReconcileSummary);
          return out;
        },
        reservedConcurrency: 1,
        timeoutSeconds: opts.reconcileTimeoutSeconds ?? RECONCILE_TIMEOUT_SECONDS,
        memoryMb: 1024,
        async: {
          maximumRetryAttempts: RECONCILE_ASYNC.retryAttempts,
          maximumEventAgeSeconds: RECONCILE_ASYNC.maxEventAgeSeconds,
          onFailure: failures,
        },
      },
    },
    onDestination: (_arn, r) =>
      log(
        `reconcile pass failed (${r.requestContext.condition}${r.responsePayload ? `: ${r.responsePayload.errorMessage}` : ''}); its event is in the on-failure queue ${failures}`,
      ),
  });
  log(`Lambda           ${lambda.endpoint} (${reconcileFunction}: reserved concurrency 1, on-failure queue)`);
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_LAMBDA: lambda.endpoint,
    LLMCAP_RECONCILE_FUNCTION: reconcileFunction,
  });
  resetConfig();
  resetLambdaClient();

  // As EventBridge Scheduler sends it (the stack's schedule input), so the pass gets an id of its own.
  const reconcile = async (): Promise<ReconcileSummary> =>
    (await lambda.enqueue(reconcileFunction, {
      source: 'llmcap.schedule',
      scheduledTime: new Date().toISOString(),
      executionId: randomUUID(),
    })) as ReconcileSummary;

  const api = await startApiServer({ handler, port: opts.port ?? 3000 });
  log(`API              ${api.url}/v1 (caller: x-llmcap-principal header, default ${LOCAL_ADMIN})`);

  const every = opts.reconcileSeconds ?? Number(process.env.LLMCAP_RECONCILE_SECONDS ?? 10);
  let timer: NodeJS.Timeout | undefined;
  if (every > 0) {
    const tick = () => {
      reconcile()
        .catch((e) => log(`reconcile failed: ${(e as Error).message}`))
        .finally(() => {
          if (timer) timer = setTimeout(tick, every * 1000);
        });
    };
    timer = setTimeout(tick, 500);
    log(
      `reconcile        every ${every} s (LLMCAP_RECONCILE_SECONDS); alarms print here${webhook ? ` and post to ${webhook}` : ''}`,
    );
  }

  return {
    apiUrl: api.url,
    dynamodbEndpoint: endpoint,
    table,
    sim,
    sfn,
    lambda,
    reconcileFunction,
    reconcileFailureDestination: failures,
    reconcile,
    transitions,
    stop: async () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      await lambda.stop();
      await passesSettled();
      await api.close();
      await sfn.stop();
      await sim.stop();
      await ddb?.stop();
    },
  };
}
