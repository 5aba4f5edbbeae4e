import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import { resetApp } from '../lambdas/api/app';
import { handler } from '../lambdas/api/handler';
import { putAlarm } from '../lambdas/aws/alarms';
import { resetHardwareFacts } from '../lambdas/aws/hardware';
import { resetClusterClient } from '../lambdas/aws/kubernetes';
import { resetQuotaCache } from '../lambdas/aws/quotas';
import { alarmPrefix, stageAlarms } from '../lambdas/domain/alarms';
import type { ConsolidationPolicy } from '../lambdas/domain/consolidation';
import { spotWarning } from '../lambdas/domain/supply';
import { createServices } from '../lambdas/service';
import { passesSettled } from '../lambdas/service/passes';
import type { ReconcileSummary } from '../lambdas/service/reconcile';
import { dynamoClient, resetClients } from '../lambdas/shared/clients';
import { loadConfig, resetConfig } from '../lambdas/shared/config';
import { ensureTable } from '../lambdas/store/table';
import { admitterFunction as admitterFunctionConfig, startAdmitterSource } from './admitter-function';
import { startApiServer } from './api-server';
import {
  type AlarmStateChange,
  type Clock,
  type CloudSim,
  DrivenClock,
  type Durations,
  startCloudSim,
} from './cloud-sim';
import { type DynamoDbLocal, startDynamoDbLocal } from './dynamodb-local';
import { LOCAL_ADMIN } from './identity';
import { grantReconcilerAccess, writeLocalKubeconfig } from './k8s-sim/local';
import { type Invocation, type LocalLambda, startLocalLambda } from './lambda';
import { checkPortsFree, explainPortError, type PortName, resolvePorts } from './ports';
import { reconcileFunction as reconcileFunctionConfig, shownLine } from './reconcile-function';
import { type LocalStepFunctions, startLocalStepFunctions, workflowEnv } from './sfn';

/**
 * The local control plane: the same Lambda code with DynamoDB Local as the store, the cloud simulator in place
 * of EKS, CloudWatch and SNS, the ASL files run by the local Step Functions, and the reconcile function in the
 * local Lambda (invoked by a local schedule and by POST /v1/reconcile through @aws-sdk/client-lambda), served on
 * 127.0.0.1. Alarms are the same definitions as in AWS, evaluated by the simulated CloudWatch from the metrics
 * the handler prints. `npm start` and the end-to-end tests use this one wiring.
 */

/** An alarm's state change in the simulated CloudWatch, as the control plane prints and tests read it. */
export interface AlarmTransition {
  alarmName: string;
  /** Same as alarmName: one key per alarm. */
  key: string;
  /**
   * CapacityAtLimit, NodegroupFailed, ReconcileStale, ReconcileErrors, ReconcileFailures, ReplicasUnscheduled, AdmitterErrors,
   * WorkflowFailed.
   */
  kind: string;
  /** The scope, compute or workflow kind the alarm is about; the stage for stage-wide alarms. */
  subject: string;
  from: string;
  to: string;
  /** to === 'ALARM'. */
  alarm: boolean;
  reason: string;
  description: string;
  /** The simulator's clock, ISO 8601. */
  at: string;
}

/** The schedule's period in AWS (reconcileRate 1); a driven clock moves this far per scheduled pass. */
const SCHEDULE_MS = 60_000;
const MINUTE = 60_000;

export interface ControlPlaneOptions {
  /** API port (0 = free); default LLMCAP_PORT or 3000. */
  port?: number;
  persist?: boolean;
  dataDir?: string;
  /** An already running DynamoDB (the tests share one); otherwise one is started. */
  dynamodbEndpoint?: string;
  table?: string;
  admins?: string[];
  /** Cloud simulator port (0 = free); default LLMCAP_SIM_PORT or 4510. */
  simPort?: number;
  /** Any port of local/ports.ts by name (0 = free); default its variable, else its default. */
  ports?: Partial<Record<PortName, number>>;
  /** Multiplies the simulator's EKS durations and the workflows' waits; default LLMCAP_SIM_TIME_SCALE or 0.1. */
  simTimeScale?: number;
  /** Lifecycle durations of the simulator other than its defaults (before the time scale), e.g. spotReclaimMs. */
  simDurations?: Partial<Durations>;
  /** Seconds between scheduled reconciles; 0 turns the schedule off (tests drive reconcile themselves). */
  reconcileSeconds?: number;
  /** Scale-down cool-down in seconds (LLMCAP_COOLDOWN_SECONDS); default 600. */
  cooldownSeconds?: number;
  /**
   * The consolidation policy (LLMCAP_CONSOLIDATION, the stage config's `consolidation`; domain/consolidation.ts),
   * each field absent taking its default; default LLMCAP_CONSOLIDATION as set, else the defaults (off).
   */
  consolidation?: Partial<ConsolidationPolicy>;
  /**
   * The first wait before a failed node group create is retried (LLMCAP_CREATE_RETRY_SECONDS); default 300 s
   * times the simulator's time scale, so the back-off keeps its proportion to the simulated EKS durations.
   */
  createRetrySeconds?: number;
  /**
   * How long a node may be NotReady before llmcap stops counting on it (LLMCAP_SUPPLY_GRACE_SECONDS); default
   * 300 s times the simulator's time scale.
   */
  supplyGraceSeconds?: number;
  /**
   * How long admission counts on nodes a node group failed to launch for lack of capacity
   * (LLMCAP_CAPACITY_GRACE_SECONDS); default 60 s times the simulator's time scale.
   */
  capacityGraceSeconds?: number;
  /**
   * The share of their time the AWS SDK's retry backoff and adaptive rate limiter wait in llmcap's clients
   * (LLMCAP_SDK_RETRY_TIME_SCALE); default 1, the SDK's own. A test of throttling can set the simulator's time
   * scale here, so that each retry waits as long, relative to the simulated EKS, as it would in AWS.
   */
  sdkRetryTimeScale?: number;
  /**
   * An HTTP(S) URL subscribed to the on-call topic (LLMCAP_ALERT_WEBHOOK): it receives SNS's
   * SubscriptionConfirmation first, then every alarm notification, as an HTTPS subscription does in AWS.
   */
  alertWebhook?: string;
  /** The reconcile Lambda's timeout in the local Lambda; default 300 s, as in the stack. */
  reconcileTimeoutSeconds?: number;
  /**
   * The clock of the simulated CloudWatch and SNS and of the schedule's scheduledTime. Default: the wall clock.
   * With a DrivenClock, each scheduled pass (cp.reconcile()) is stamped with the clock's time and then moves it
   * one schedule period (60 s) on, so that alarm periods pass without waiting.
   */
  clock?: Clock;
  /** false: the reconciler leaves the cluster's pods alone (LLMCAP_WORKLOADS=off); default it deploys them. */
  workloads?: boolean;
  /**
   * A cloud simulator already running (AWS and the cluster outlive llmcap's control plane): a restart keeps
   * the node groups, nodes and pods as they are. It is not stopped with the control plane. Default: a new one.
   */
  sim?: CloudSim;
  /** Where to write a kubeconfig for the simulated cluster (docs/k8s-sim.md); none by default. */
  kubeconfigPath?: string;
  log?: (line: string) => void;
}

export interface ControlPlane {
  apiUrl: string;
  dynamodbEndpoint: string;
  /** The DynamoDB Local process this control plane started (none when given an endpoint). */
  dynamodbPid?: number;
  table: string;
  sim: CloudSim;
  sfn: LocalStepFunctions;
  /** The clock CloudWatch and SNS run on (a DrivenClock in tests). */
  clock: Clock;
  /** The simulated on-call topic every alarm notifies (LLMCAP_ALARM_TOPIC_ARN of the reconciler). */
  alarmTopicArn: string;
  /** The local Lambda that runs the reconcile function (`reconcileFunction`), as POST /v1/reconcile invokes it. */
  lambda: LocalLambda;
  reconcileFunction: string;
  /** The admitter function (local/admitter-function.ts) in `lambda`, which every pass invokes before placing. */
  admitterFunction: string;
  /** Resolves once every write made before the call has reached the admitter through the stream and it returned. */
  admitterSettled(timeoutMs?: number): Promise<void>;
  /** Disables or enables the admitter's event source mapping (records wait in the stream meanwhile). */
  admitterMapping(enabled: boolean): void;
  /** Where the reconcile function's failed and expired events go (the stack's on-failure queue). */
  reconcileFailureDestination: string;
  /**
   * Runs one scheduled pass: the schedule's event queued for the reconcile function (as EventBridge Scheduler
   * sends it), then (on a driven clock) one schedule period on, with the alarms evaluated and their
   * notifications delivered. Throws if the invocation failed.
   */
  reconcile(): Promise<ReconcileSummary>;
  /** Queues any event for the reconcile function (as an `Event` invoke does) and resolves with its last attempt. */
  invokeReconcile(event?: unknown): Promise<Invocation<ReconcileSummary>>;
  /** Moves a driven clock on, evaluates the alarms due and waits for their notifications. */
  advance(ms: number): Promise<void>;
  /** Every alarm state change in the simulated CloudWatch so far, oldest first. */
  transitions: AlarmTransition[];
  stop(): Promise<void>;
}

export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  // The web console is npm start's (local/start.ts), not the control plane's: its port is none of this one's.
  const ports = resolvePorts({ api: opts.port, sim: opts.simPort, ...opts.ports, console: 0 });
  // A start that fails half way stops what it had started (a test goes on, a start is retried), and a port
  // taken since checkPortsFree is reported as it reports one.
  const undo: (() => Promise<unknown>)[] = [];
  try {
    return await start(opts, ports, undo);
  } catch (e) {
    for (const u of undo.reverse()) await u().catch(() => undefined);
    throw explainPortError(e, ports);
  }
}

async function start(
  opts: ControlPlaneOptions,
  ports: Record<PortName, number>,
  undo: (() => Promise<unknown>)[],
): Promise<ControlPlane> {
  const log = opts.log ?? (() => undefined);
  const admins = (opts.admins ?? [LOCAL_ADMIN]).join(',');
  // Before anything starts: a mistyped admin stops the start with its reason, as it would fail the Lambda,
  // and so does a taken port, naming its variable.
  loadConfig({ LLMCAP_ADMINS: admins });
  await checkPortsFree(opts.dynamodbEndpoint ? { ...ports, dynamodb: 0 } : ports);
  let ddb: DynamoDbLocal | undefined;
  let endpoint = opts.dynamodbEndpoint;
  if (!endpoint) {
    const persistDir = opts.persist
      ? (opts.dataDir ?? join(process.cwd(), '.llmcap', 'dynamodb'))
      : undefined;
    const db = await startDynamoDbLocal({ persistDir, ...(ports.dynamodb ? { port: ports.dynamodb } : {}) });
    undo.push(() => db.stop());
    ddb = db;
    endpoint = db.endpoint;
    log(
      `DynamoDB Local   ${endpoint} (${persistDir ? `data in ${persistDir}` : 'in memory'}, pid ${ddb.pid})`,
    );
  }
  const table = opts.table ?? 'llmcap-local';
  const timeScale = opts.simTimeScale ?? Number(process.env.LLMCAP_SIM_TIME_SCALE ?? 0.1);
  const sim =
    opts.sim ??
    (await startCloudSim({
      port: ports.sim,
      timeScale,
      ...(opts.simDurations ? { durations: opts.simDurations } : {}),
      clusterName: 'llmcap-local',
      kubernetes: { port: ports.kube },
      ...(opts.clock ? { metricsClock: opts.clock } : {}),
    }));
  const stopSim = opts.sim ? async () => undefined : () => sim.stop();
  undo.push(stopSim);
  log(
    `cloud simulator  ${sim.endpoint} (EKS cluster llmcap-local, Auto Scaling, CloudWatch, SNS; time scale ${timeScale})`,
  );
  // k8s-sim (issue 20): the cluster's Kubernetes API runs inside the simulator; kubectl gets a kubeconfig.
  const kubeconfigLine = opts.kubeconfigPath ? writeLocalKubeconfig(sim, opts.kubeconfigPath) : undefined;
  if (kubeconfigLine) log(kubeconfigLine);
  const sfn = await startLocalStepFunctions({
    port: ports.sfn,
    eksEndpoint: sim.endpoint,
    autoscalingEndpoint: sim.endpoint,
    dynamodbEndpoint: endpoint,
    tableName: table,
    clusterName: 'llmcap-local',
    namePrefix: 'llmcap-local',
    // Waits shrink with the simulator's clock, so a poll loop takes as many polls as it would in AWS.
    timing: { waitScale: timeScale, maxWaitSeconds: 30 * timeScale },
  });
  undo.push(() => sfn.stop());
  log(`Step Functions   ${sfn.endpoint} (provision, scale, delete node group from statemachines/)`);
  const stage = process.env.LLMCAP_STAGE ?? 'local';
  const region = process.env.AWS_REGION ?? 'us-east-1';
  const alarmTopicArn = `arn:aws:sns:${sim.region}:000000000000:llmcap-${stage}-OnCall`;
  const reconcileFunction = `${table}-reconcile`;
  const admitterFunction = `${table}-admitter`;
  Object.assign(process.env, {
    LLMCAP_DYNAMODB_ENDPOINT: endpoint,
    LLMCAP_TABLE: table,
    LLMCAP_STAGE: stage,
    LLMCAP_ADMINS: admins,
    LLMCAP_EKS_ENDPOINT: sim.endpoint,
    // Instance types and prices: the SDK's own endpoint variables, so the adapter has no local knowledge.
    AWS_ENDPOINT_URL_EC2: sim.endpoint,
    AWS_ENDPOINT_URL_PRICING: sim.endpoint,
    AWS_ENDPOINT_URL_SERVICE_QUOTAS: sim.endpoint,
    LLMCAP_CLUSTER: 'llmcap-local',
    LLMCAP_SUBNETS: process.env.LLMCAP_SUBNETS ?? 'subnet-0aaaaaaaaaaaaaaa1,subnet-0aaaaaaaaaaaaaaa2',
    LLMCAP_COOLDOWN_SECONDS: String(opts.cooldownSeconds ?? process.env.LLMCAP_COOLDOWN_SECONDS ?? 600),
    ...(opts.consolidation ? { LLMCAP_CONSOLIDATION: JSON.stringify(opts.consolidation) } : {}),
    LLMCAP_CREATE_RETRY_SECONDS: String(
      opts.createRetrySeconds ?? process.env.LLMCAP_CREATE_RETRY_SECONDS ?? 300 * timeScale,
    ),
    LLMCAP_SUPPLY_GRACE_SECONDS: String(
      opts.supplyGraceSeconds ?? process.env.LLMCAP_SUPPLY_GRACE_SECONDS ?? 300 * timeScale,
    ),
    LLMCAP_CAPACITY_GRACE_SECONDS: String(
      opts.capacityGraceSeconds ?? process.env.LLMCAP_CAPACITY_GRACE_SECONDS ?? 60 * timeScale,
    ),
    LLMCAP_SDK_RETRY_TIME_SCALE: String(
      opts.sdkRetryTimeScale ?? process.env.LLMCAP_SDK_RETRY_TIME_SCALE ?? 1,
    ),
    AWS_REGION: region,
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
    // The SDK's own endpoint settings: the Lambda code finds the simulated CloudWatch and SNS as it finds AWS.
    AWS_ENDPOINT_URL_CLOUDWATCH: sim.endpoint,
    AWS_ENDPOINT_URL_SNS: sim.endpoint,
    LLMCAP_ALARM_TOPIC_ARN: alarmTopicArn,
    LLMCAP_RECONCILE_RATE_MINUTES: '1',
    LLMCAP_RECONCILE_FUNCTION: reconcileFunction,
    LLMCAP_ADMITTER_FUNCTION: admitterFunction,
    ...workflowEnv(sfn),
  });
  // Issue 20: the reconciler deploys the model servers, with the access the stack gives it in AWS.
  if (opts.workloads !== false && sim.kubernetes) {
    process.env.LLMCAP_WORKLOADS = 'deploy';
    await grantReconcilerAccess(sim, {
      stage,
      accessKeyId: process.env.AWS_ACCESS_KEY_ID!,
      secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY!,
    });
  } else process.env.LLMCAP_WORKLOADS = 'off';
  resetConfig();
  resetClients();
  resetClusterClient();
  resetHardwareFacts();
  resetQuotaCache();
  resetApp();
  const client = dynamoClient(endpoint);
  await ensureTable(client, table);
  client.destroy();
  // The built-ins are loaded now, resolved against the simulator's DescribeInstanceTypes as in AWS, so that a
  // config/computes.yaml that disagrees with EC2 stops `npm start` with its error, not a later request.
  await createServices().computes.seedBuiltins();

  const clock = sim.metricsClock;
  const driven = clock instanceof DrivenClock ? clock : undefined;
  const webhook = opts.alertWebhook ?? process.env.LLMCAP_ALERT_WEBHOOK;
  const aws = { endpoint: sim.endpoint, region: sim.region };
  const sns = new SNSClient(aws);
  const cw = new CloudWatchClient(aws);
  await sns.send(new CreateTopicCommand({ Name: alarmTopicArn.split(':').pop() }));
  if (webhook) {
    await sns.send(
      new SubscribeCommand({
        TopicArn: alarmTopicArn,
        Protocol: webhook.startsWith('https:') ? 'https' : 'http',
        Endpoint: webhook,
      }),
    );
  }

  const transitions: AlarmTransition[] = [];
  const offChanges = sim.cloudwatch.onStateChange((c) => {
    const t = transitionOf(c, stage);
    transitions.push(t);
    // A new alarm's first OK is not news; entering ALARM and leaving it are.
    if (t.to === 'ALARM' || (t.to === 'OK' && t.from === 'ALARM')) {
      log(`${t.to.padEnd(5)} ${t.kind} ${t.subject} (${t.alarmName}): ${t.reason}`);
      const seen = /Last seen: (.*)$/s.exec(t.description)?.[1];
      if (seen && t.to === 'ALARM') log(`      last seen: ${seen}`);
    }
  });

  // Step Functions publishes AWS/States metrics when an execution ends; the WorkflowFailed alarms watch them.
  const tracked = new Set<string>();
  const trackExecutions = () => {
    for (const [arn, e] of sfn.executions) {
      if (tracked.has(arn)) continue;
      tracked.add(arn);
      e.done.then(() => {
        const metric = {
          FAILED: 'ExecutionsFailed',
          SUCCEEDED: 'ExecutionsSucceeded',
          TIMED_OUT: 'ExecutionsTimedOut',
          ABORTED: 'ExecutionsAborted',
          RUNNING: undefined,
        }[e.status];
        if (metric)
          sim.cloudwatch.putDatapoint(
            'AWS/States',
            metric,
            [{ Name: 'StateMachineArn', Value: e.stateMachineArn }],
            clock.now(),
            [1],
            'Count',
          );
      });
    }
  };
  const report = (summary: ReconcileSummary) => {
    for (const w of summary.workflows)
      log(`workflow ${w.kind} ${w.compute}: ${w.outcome}${w.executionName ? ` (${w.executionName})` : ''}`);
    for (const e of summary.errors) log(`reconcile error: ${e}`);
  };

  // The failure queue's depth as SQS reports it (AWS/SQS, once a minute), for the ReconcileFailures alarm. The
  // local queue is the Lambda's record of on-failure deliveries: nothing consumes it, so it empties on restart.
  const failuresQueue = `${reconcileFunction}-failures`;
  const failures = `arn:aws:sqs:${region}:000000000000:${failuresQueue}`;
  let failed = 0;
  const publishQueueDepth = (at: number) => {
    if (failed)
      sim.cloudwatch.putDatapoint(
        'AWS/SQS',
        'ApproximateNumberOfMessagesVisible',
        [{ Name: 'QueueName', Value: failuresQueue }],
        at,
        [failed],
        'Count',
      );
  };

  // The reconcile function runs in the local Lambda with the stack's settings (local/reconcile-function.ts);
  // each attempt's stdout goes to the simulated CloudWatch Logs, where its EMF becomes metrics, and the
  // runtime's AWS/Lambda metrics to the simulated CloudWatch.
  const fn = await startLocalLambda({
    port: ports.lambda,
    region,
    clock,
    functions: {
      [reconcileFunction]: reconcileFunctionConfig({
        onFailure: failures,
        ...(opts.reconcileTimeoutSeconds ? { timeoutSeconds: opts.reconcileTimeoutSeconds } : {}),
      }),
      [admitterFunction]: admitterFunctionConfig(),
    },
    onLog: (_fn, events) => {
      sim.cloudwatch.putLogEvents(events);
      for (const e of events) {
        const shown = shownLine(e.message);
        if (shown) log(shown);
      }
    },
    onMetric: (d) =>
      sim.cloudwatch.putDatapoint(d.namespace, d.name, d.dimensions, d.timestamp, [d.value], d.unit),
    onInvocation: (_fn, _event, inv) => {
      trackExecutions();
      const out = inv.result;
      if (out && typeof out === 'object' && 'computes' in out) report(out as ReconcileSummary);
    },
    onDestination: (_arn, r) => {
      failed++;
      publishQueueDepth(clock.now());
      log(
        `reconcile pass failed (${r.requestContext.condition}${r.responsePayload ? `: ${r.responsePayload.errorMessage}` : ''}); its event is in the on-failure queue ${failures}`,
      );
    },
  });
  undo.push(() => fn.stop());
  log(`Lambda           ${fn.endpoint} (${reconcileFunction}: reserved concurrency 1, on-failure queue)`);
  process.env.AWS_ENDPOINT_URL_LAMBDA = fn.endpoint;
  resetConfig();
  resetClients();
  // The admitter's event source mapping on the table's stream, invoking the function as Lambda's poller does:
  // synchronously, the batch sent again while the function is busy (429) or failed.
  const admitterClient = new LambdaClient({ endpoint: fn.endpoint, region });
  const admitterSource = await startAdmitterSource({
    endpoint,
    table,
    invoke: async (event) => {
      const out = await admitterClient.send(
        new InvokeCommand({
          FunctionName: admitterFunction,
          InvocationType: 'RequestResponse',
          Payload: Buffer.from(JSON.stringify(event)),
        }),
      );
      if (out.FunctionError) {
        const text = out.Payload ? Buffer.from(out.Payload).toString('utf8') : '';
        log(`admitter failed on a stream batch (sent again): ${text.slice(0, 300)}`);
        throw new Error(text);
      }
    },
  });
  undo.push(() => admitterSource.stop());
  log(`admitter         ${admitterFunction}: reserved concurrency 1, on the table's stream and each pass`);
  // On the wall clock the depth is reported each half minute; a driven clock reports it for each minute it moves.
  const depthTimer = driven ? undefined : setInterval(() => publishQueueDepth(clock.now()), MINUTE / 2);
  depthTimer?.unref();

  const settle = async () => {
    sim.cloudwatch.catchUp();
    await sim.sns.drain();
  };
  const advance = async (ms: number) => {
    if (!driven)
      throw new Error('advance() needs the control plane started with a DrivenClock (clock option)');
    const from = driven.now();
    for (let t = from; t < from + ms; t += MINUTE) publishQueueDepth(t);
    driven.advance(ms);
    await settle();
  };
  let stageAlarmsPut: Promise<void> | undefined;
  const putStageAlarms = () => {
    stageAlarmsPut ??= (async () => {
      for (const d of stageAlarms({
        stage,
        rateMinutes: 1,
        reconcileFunctionName: reconcileFunction,
        admitterFunctionName: admitterFunction,
        stateMachineArns: sfn.stateMachineArns,
        reconcileFailuresQueueName: failuresQueue,
      }))
        await putAlarm(d, alarmTopicArn, cw);
    })();
    return stageAlarmsPut;
  };
  const invokeReconcile = (event: unknown = {}) =>
    fn.enqueue(reconcileFunction, event) as Promise<Invocation<ReconcileSummary>>;
  // The stack's Spot rule (infra, SPOT_WARNING_PATTERN): EventBridge sends EC2's Spot warnings to the reconciler.
  const offEvents = sim.onEvent((e) => {
    if (!spotWarning(e)) return;
    invokeReconcile(e).catch((err) => log(`Spot warning not delivered: ${(err as Error).message}`));
  });
  undo.push(async () => offEvents());
  const reconcile = async (): Promise<ReconcileSummary> => {
    // As EventBridge Scheduler sends it (the stack's schedule input), so the pass gets an id of its own.
    const inv = await invokeReconcile({
      source: 'llmcap.schedule',
      scheduledTime: new Date(clock.now()).toISOString(),
      executionId: randomUUID(),
    });
    if (driven) await advance(SCHEDULE_MS);
    if (inv.error) throw new Error(`reconcile failed: ${inv.error.errorType}: ${inv.error.errorMessage}`);
    return inv.result as ReconcileSummary;
  };

  const api = await startApiServer({ handler, port: ports.api });
  undo.push(() => api.close());
  log(`API              ${api.url}/v1 (caller: x-llmcap-principal header, default ${LOCAL_ADMIN})`);

  const every = opts.reconcileSeconds ?? Number(process.env.LLMCAP_RECONCILE_SECONDS ?? 10);
  let timer: NodeJS.Timeout | undefined;
  if (every > 0) {
    const tick = () => {
      reconcile()
        .catch((e) => log((e as Error).message))
        // The stage alarms come after the first pass, as the first scheduled pass follows a deploy within a
        // minute: put before it, ReconcileStale could see a minute without a pass and page at start.
        .then(() => putStageAlarms())
        .catch((e) => log(`stage alarms: ${(e as Error).message}`))
        .finally(() => {
          if (timer) timer = setTimeout(tick, every * 1000);
        });
    };
    timer = setTimeout(tick, 500);
  } else {
    await putStageAlarms();
  }
  log(
    `alarms           CloudWatch alarms on ${alarmTopicArn}; ALARM and OK print here${webhook ? ` and SNS posts them to ${webhook} (after it confirms the subscription)` : ''}`,
  );
  if (every > 0)
    log(`reconcile        every ${every} s (LLMCAP_RECONCILE_SECONDS), function ${reconcileFunction}`);

  return {
    apiUrl: api.url,
    dynamodbEndpoint: endpoint,
    ...(ddb ? { dynamodbPid: ddb.pid } : {}),
    table,
    sim,
    sfn,
    clock,
    alarmTopicArn,
    lambda: fn,
    reconcileFunction,
    admitterFunction,
    admitterSettled: (timeoutMs = 20_000) => admitterSource.drained(timeoutMs),
    admitterMapping: (enabled) => admitterSource.setEnabled(enabled),
    reconcileFailureDestination: failures,
    reconcile,
    invokeReconcile,
    advance,
    transitions,
    stop: async () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      if (depthTimer) clearInterval(depthTimer);
      await admitterSource.stop();
      admitterClient.destroy();
      await fn.stop();
      await passesSettled();
      offChanges();
      sns.destroy();
      cw.destroy();
      await api.close();
      await sfn.stop();
      await stopSim();
      await ddb?.stop();
    },
  };
}

function transitionOf(c: AlarmStateChange, stage: string): AlarmTransition {
  const a = c.alarm;
  const dim = a.Dimensions?.find((d) => d.Name === 'Scope' || d.Name === 'Compute');
  const rest = a.AlarmName.startsWith(alarmPrefix(stage))
    ? a.AlarmName.slice(alarmPrefix(stage).length)
    : a.AlarmName;
  const [head, ...tail] = rest.split('-');
  return {
    alarmName: a.AlarmName,
    key: a.AlarmName,
    kind: dim ? (a.MetricName ?? head ?? rest) : (head ?? rest),
    subject: dim ? dim.Value : tail.join('-') || stage,
    from: c.oldState,
    to: c.newState,
    alarm: c.newState === 'ALARM',
    reason: c.reason,
    description: a.AlarmDescription ?? '',
    at: new Date(c.at).toISOString(),
  };
}
