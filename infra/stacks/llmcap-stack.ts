import { join, resolve } from 'node:path';
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { type CfnStage, HttpApi, HttpMethod, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { CfnAlarm, Dashboard, GraphWidget, MathExpression } from 'aws-cdk-lib/aws-cloudwatch';
import { AttributeType, Billing, StreamViewType, TableEncryptionV2, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { DynamoEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import {
  ContextAttribute,
  Schedule,
  ScheduleExpression,
  ScheduleTargetInput,
} from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription, UrlSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { type AlarmDefinition, alarmPrefix, stageAlarms } from '../../lambdas/domain/alarms';
import { ALL_AWS_QUOTAS } from '../../lambdas/domain/aws-quotas';
import {
  ADMITTER_TIMEOUT_SECONDS,
  RECONCILE_ASYNC,
  RECONCILE_TIMEOUT_SECONDS,
} from '../../lambdas/domain/reconcile-pass';
import { SPOT_WARNING_PATTERN } from '../../lambdas/domain/supply';
import { METRICS_NAMESPACE } from '../../lambdas/domain/telemetry';
import { inlinedConfig } from '../../lambdas/shared/builtin-config';
import { API_TIMEOUT_SECONDS } from '../../lambdas/shared/config';
import { ADMISSION_INPUTS } from '../../lambdas/store/table';
import { ReconcilerClusterAccess } from '../constructs/cluster-access';
import { LlmcapFunction, ROOT } from '../constructs/llmcap-function';
import { arnWildcardAcks } from '../constructs/nag';
import { NodegroupWorkflows } from '../constructs/nodegroup-workflows';
import { allowServiceToPublish } from '../constructs/on-call';
import type { StageConfig } from '../stage-config';

export interface LlmcapStackProps extends StackProps {
  config: StageConfig;
}

/**
 * The item operations lambdas/store sends (a TransactWriteItems is authorized item by item, as Put, Update,
 * Delete and ConditionCheck; store/batch-get.ts reads point items in batches); no Scan, batch write, stream or
 * table-level action.
 */
const TABLE_ITEM_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:ConditionCheckItem',
  'dynamodb:Query',
];

/** The write methods of the API, throttled per route tighter than reads (stage config `api.writes`). */
const WRITE_METHODS = [HttpMethod.POST, HttpMethod.PUT, HttpMethod.PATCH, HttpMethod.DELETE];

/**
 * The access log line, one JSON object per request, in HTTP API's $context variables: who called (source IP
 * and the signer's ARN), what (route and path), the outcome and, when API Gateway or the Lambda failed, why.
 */
export const ACCESS_LOG_FORMAT = {
  requestId: '$context.requestId',
  time: '$context.requestTime',
  sourceIp: '$context.identity.sourceIp',
  userAgent: '$context.identity.userAgent',
  principal: '$context.identity.userArn',
  accountId: '$context.identity.accountId',
  routeKey: '$context.routeKey',
  method: '$context.httpMethod',
  path: '$context.path',
  status: '$context.status',
  responseLength: '$context.responseLength',
  latencyMs: '$context.responseLatency',
  // The quoted form, written unquoted below: a message with a quote in it still makes valid JSON.
  error: '$context.error.messageString',
  errorType: '$context.error.responseType',
  authorizerError: '$context.authorizer.error',
  integrationStatus: '$context.integrationStatus',
  integrationError: '$context.integrationErrorMessage',
};

/**
 * One stack per stage: the table, the HTTP API with IAM auth and its Lambda. Everything a stage differs in
 * comes from the zod-checked stage config.
 */
export class LlmcapStack extends Stack {
  readonly table: TableV2;
  readonly api: HttpApi;
  readonly apiFunction: LlmcapFunction;
  readonly reconcileFunction: LlmcapFunction;
  readonly admitterFunction: LlmcapFunction;
  readonly workflows: NodegroupWorkflows;
  readonly onCall: Topic;
  readonly onCallKey: Key;
  /** Every alarm of this stage, kept by the stack or by the reconciler, is named llmcap-<stage>-*. */
  readonly alarmArns: string;
  /** Reconcile invocations that failed or expired (Lambda's on-failure destination and the schedule's DLQ). */
  readonly reconcileFailures: Queue;

  constructor(scope: Construct, id: string, props: LlmcapStackProps) {
    super(scope, id, props);
    const cfg = props.config;
    // Validated here, so a bad config file fails `cdk synth` instead of a Lambda at run time.
    const catalogInline = inlinedConfig(
      cfg.catalog === 'config/catalog.yaml'
        ? undefined
        : { path: resolve(ROOT, cfg.catalog), shown: cfg.catalog },
    );
    // The stage config accepts only the periods CloudWatch Logs does (LOG_RETENTION_DAYS), the enum's values.
    const logRetention = cfg.logRetentionDays as RetentionDays;
    this.alarmArns = `arn:${this.partition}:cloudwatch:${this.region}:${this.account}:alarm:llmcap-${cfg.stage}-*`;

    this.table = new TableV2(this, 'Table', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      sortKey: { name: 'sk', type: AttributeType.STRING },
      billing: Billing.onDemand(),
      encryption: TableEncryptionV2.awsManagedKey(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      timeToLiveAttribute: 'ttl',
      // The admitter's trigger: keys only, since each run decides the whole world (lambdas/admitter/handler.ts).
      dynamoStream: StreamViewType.KEYS_ONLY,
      // The table holds every decision llmcap made: it outlives the stack.
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // What every function of the stage reads first (lambdas/shared/config.ts).
    const stageEnv = {
      LLMCAP_STAGE: cfg.stage,
      LLMCAP_TABLE: this.table.tableName,
      LLMCAP_ADMINS: cfg.admins.join(','),
      LLMCAP_CLUSTER: cfg.clusterName,
      LLMCAP_SUBNETS: cfg.subnetIds.join(','),
    };

    this.apiFunction = new LlmcapFunction(this, 'ApiFunction', {
      entry: join(ROOT, 'lambdas', 'api', 'handler.ts'),
      description: 'llmcap HTTP API',
      logRetention,
      environment: {
        ...stageEnv,
        LLMCAP_COOLDOWN_SECONDS: String(cfg.scaleDownCooldown * 60),
        LLMCAP_CONSOLIDATION: JSON.stringify(cfg.consolidation),
        LLMCAP_WRITE_SNAPSHOT_MS: String(cfg.api.writeSnapshotMs),
      },
      // Validated here, so a bad config file fails `cdk synth` instead of a Lambda at run time.
      inline: catalogInline,
      // Compute writes are resolved against EC2's instance types and the Price List (lambdas/aws/hardware.ts);
      // GET /v1/alarms reads the stage's alarms (DescribeAlarms has no resource-level permissions).
      // A quota with no applied value is read as AWS's default (GetAWSDefaultServiceQuota has no resource type).
      anyResourceActions: [
        'cloudwatch:DescribeAlarms',
        'ec2:DescribeInstanceTypes',
        'pricing:GetProducts',
        'servicequotas:GetAWSDefaultServiceQuota',
      ],
    });
    this.table.grant(this.apiFunction, ...TABLE_ITEM_ACTIONS);
    // A compute write is checked against the cluster's quotas (Service Quotas, lambdas/aws/quotas.ts).
    this.apiFunction.addToRolePolicy(this.readQuotas());
    // A compute's subnets must be the cluster's when the stage config lists none (DescribeCluster, reads only).
    this.apiFunction.addToRolePolicy(
      new PolicyStatement({
        actions: ['eks:DescribeCluster'],
        resources: [`arn:${this.partition}:eks:${this.region}:${this.account}:cluster/${cfg.clusterName}`],
      }),
    );

    const accessLogs = new LogGroup(this, 'ApiAccessLogs', { retention: logRetention });
    this.api = new HttpApi(this, 'HttpApi', {
      description: `llmcap ${cfg.stage} control plane API`,
      createDefaultStage: false,
      defaultAuthorizer: new HttpIamAuthorizer(),
    });
    const stage = this.api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      // Reads: the default route settings, which every route without its own settings takes.
      throttle: { rateLimit: cfg.api.reads.ratePerSecond, burstLimit: cfg.api.reads.burst },
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify(ACCESS_LOG_FORMAT).replace(
            '"$context.error.messageString"',
            '$context.error.messageString',
          ),
        ),
      },
    });
    const integration = new HttpLambdaIntegration('ApiIntegration', this.apiFunction, {
      timeout: Duration.seconds(API_TIMEOUT_SECONDS),
    });
    // The Lambda's router answers every path (404 and 405 as problem+json); API Gateway's routes tell reads
    // from writes only, so that each can have its throttle.
    this.api.addRoutes({ path: '/{proxy+}', methods: [HttpMethod.ANY], integration });
    const writes = this.api.addRoutes({ path: '/{proxy+}', methods: WRITE_METHODS, integration });
    const cfnStage = stage.node.defaultChild as CfnStage;
    cfnStage.routeSettings = Object.fromEntries(
      WRITE_METHODS.map((m) => [
        `${m} /{proxy+}`,
        { ThrottlingRateLimit: cfg.api.writes.ratePerSecond, ThrottlingBurstLimit: cfg.api.writes.burst },
      ]),
    );
    // Route settings name routes by key: CloudFormation refuses the stage if they do not exist yet.
    for (const route of writes) cfnStage.node.addDependency(route);

    // --- Node group workflows and the reconciler -------------------------------------------------------
    this.workflows = new NodegroupWorkflows(this, 'Workflows', {
      table: this.table,
      clusterName: cfg.clusterName,
      stage: cfg.stage,
      logRetention,
      ...(cfg.nodeRoleArn ? { nodeRoleArn: cfg.nodeRoleArn } : {}),
    });

    // One on-call topic for every alarm; encrypted with a key of its own, TLS only, subscriptions from the
    // stage config. CloudWatch publishes as its service principal, so the topic and the key policy must both
    // let it, for this stage's alarms only (infra/constructs/on-call.ts says how to add another publisher).
    this.onCallKey = new Key(this, 'OnCallKey', {
      description: `llmcap ${cfg.stage} on-call topic`,
      enableKeyRotation: true,
      // The key protects messages in flight only; nothing outlives the topic that needs it.
      removalPolicy: RemovalPolicy.DESTROY,
      pendingWindow: Duration.days(7),
    });
    this.onCall = new Topic(this, 'OnCall', {
      displayName: `llmcap ${cfg.stage} on-call`,
      enforceSSL: true,
      masterKey: this.onCallKey,
    });
    allowServiceToPublish(this.onCall, this.onCallKey, {
      service: 'cloudwatch.amazonaws.com',
      sourceArns: [this.alarmArns],
      keyPolicySourceConditions: true,
    });
    for (const email of cfg.onCall.emails) this.onCall.addSubscription(new EmailSubscription(email));
    for (const url of cfg.onCall.httpsEndpoints) this.onCall.addSubscription(new UrlSubscription(url));

    this.reconcileFunction = new LlmcapFunction(this, 'ReconcileFunction', {
      entry: join(ROOT, 'lambdas', 'reconcile', 'handler.ts'),
      description: 'llmcap reconcile: observe node groups, admit, place, start workflows, report',
      logRetention,
      memorySize: 1024,
      timeout: Duration.seconds(RECONCILE_TIMEOUT_SECONDS),
      environment: {
        ...stageEnv,
        LLMCAP_COOLDOWN_SECONDS: String(cfg.scaleDownCooldown * 60),
        LLMCAP_CONSOLIDATION: JSON.stringify(cfg.consolidation),
        LLMCAP_PROVISION_SM_ARN: this.workflows.provision.stateMachineArn,
        LLMCAP_SCALE_SM_ARN: this.workflows.scale.stateMachineArn,
        LLMCAP_DELETE_SM_ARN: this.workflows.delete.stateMachineArn,
        LLMCAP_ALARM_TOPIC_ARN: this.onCall.topicArn,
        // The period of the per-scope and per-compute alarms the reconciler keeps: one pass per period.
        LLMCAP_RECONCILE_RATE_MINUTES: String(cfg.reconcileRate),
        LLMCAP_WORKLOADS: cfg.deployWorkloads ? 'deploy' : 'off',
      },
      inline: catalogInline,
      // Each pass loads the built-ins resolved against EC2's instance types and the Price List (hardware.ts).
      anyResourceActions: [
        'autoscaling:DescribeAutoScalingGroups',
        // A group short of instances: its newest launch, and EC2's reason when it failed (issue 32 §3).
        'autoscaling:DescribeScalingActivities',
        'cloudwatch:DescribeAlarms',
        'ec2:DescribeInstanceTypes',
        // The zones of a compute's subnets before its node group exists (issue 32 §3); no resource-level scoping.
        'ec2:DescribeSubnets',
        'pricing:GetProducts',
        'servicequotas:GetAWSDefaultServiceQuota',
      ],
      // Passes are safe to overlap, but one at a time is all a schedule needs and keeps AWS calls predictable.
      extra: { reservedConcurrentExecutions: 1 },
    });
    this.table.grant(this.reconcileFunction, ...TABLE_ITEM_ACTIONS);
    this.reconcileFunction.addToRolePolicy(this.readQuotas());

    // The admitter (issue 31): the only writer of admissions, so one at a time (reserved concurrency 1). The
    // table's stream runs it on each write admission reads (the filter: ADMISSION_INPUTS, never its own
    // writes), and each reconcile pass runs it synchronously before placing.
    this.admitterFunction = new LlmcapFunction(this, 'AdmitterFunction', {
      entry: join(ROOT, 'lambdas', 'admitter', 'handler.ts'),
      description: 'llmcap admitter: decides admission for every model, the only writer of admissions',
      logRetention,
      memorySize: 1024,
      timeout: Duration.seconds(ADMITTER_TIMEOUT_SECONDS),
      environment: {
        ...stageEnv,
        // It takes consolidation's steps (domain/consolidation.ts consolidateDecision) with the stage's policy.
        LLMCAP_CONSOLIDATION: JSON.stringify(cfg.consolidation),
      },
      inline: catalogInline,
      // The catalog it decides over includes the built-ins, resolved against EC2 and the Price List (hardware.ts).
      anyResourceActions: ['ec2:DescribeInstanceTypes', 'pricing:GetProducts'],
      extra: { reservedConcurrentExecutions: 1 },
    });
    this.table.grant(this.admitterFunction, ...TABLE_ITEM_ACTIONS);
    this.admitterFunction.addEventSource(
      new DynamoEventSource(this.table, {
        startingPosition: StartingPosition.LATEST,
        batchSize: 100,
        // A record only says something changed: a run that fails is retried, and the next pass decides anyway.
        retryAttempts: 3,
        filters: [
          FilterCriteria.filter({ dynamodb: { Keys: { pk: { S: FilterRule.or(...ADMISSION_INPUTS) } } } }),
        ],
      }),
    );
    // Only the unqualified function: a pass runs the admitter as deployed, never a version of it.
    this.reconcileFunction.addToRolePolicy(
      new PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [this.admitterFunction.functionArn],
      }),
    );
    this.reconcileFunction.addEnvironment('LLMCAP_ADMITTER_FUNCTION', this.admitterFunction.functionName);
    this.workflows.grantStartWorkflows(this.reconcileFunction);
    // Issue 20: the model servers. The reconciler's role reaches the cluster's API through an access entry.
    if (cfg.deployWorkloads)
      new ReconcilerClusterAccess(this, 'ReconcilerClusterAccess', {
        clusterName: cfg.clusterName,
        stage: cfg.stage,
        role: this.reconcileFunction.role!,
      });
    const nodegroups = `arn:${this.partition}:eks:${this.region}:${this.account}:nodegroup/${cfg.clusterName}/llmcap-${cfg.stage}-*/*`;
    this.reconcileFunction.addToRolePolicy(
      new PolicyStatement({ actions: ['eks:DescribeNodegroup'], resources: [nodegroups] }),
    );
    this.reconcileFunction.addToRolePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['cloudwatch:PutMetricAlarm', 'cloudwatch:DeleteAlarms'],
        resources: [this.alarmArns],
      }),
    );
    Validations.of(this.reconcileFunction.role!.node.findChild('DefaultPolicy')).acknowledge(
      ...arnWildcardAcks(
        `eks:${this.region}:${this.account}:nodegroup/${cfg.clusterName}/llmcap-${cfg.stage}-*/*`,
        "Node group ARNs end in an id EKS assigns; the prefix is this cluster's llmcap-<stage>- names (reads only).",
      ),
      ...arnWildcardAcks(
        `cloudwatch:${this.region}:${this.account}:alarm:llmcap-${cfg.stage}-*`,
        'The reconciler keeps one alarm per scope and compute, all named llmcap-<stage>-*.',
      ),
      ...['provision', 'scale', 'delete'].flatMap((kind) =>
        arnWildcardAcks(
          `states:${this.region}:${this.account}:execution:llmcap-${cfg.stage}-${kind}-nodegroup:*`,
          'The reconciler describes executions of its own state machines; their names are chosen per compute at run time.',
        ),
      ),
    );
    // The scheduler target's grant also covers the function's versions and aliases (<arn>:*).
    const invokeVersions = {
      id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${this.getLogicalId(this.reconcileFunction.node.defaultChild as never)}.Arn>:*]`,
      reason:
        'Scheduler invokes the reconcile function; the grant covers its versions and aliases (<arn>:*) and no other function.',
    };

    // Failed and expired reconcile invocations land in one queue, whichever part gave up on them: Lambda's
    // on-failure destination (the pass failed, timed out, or waited past its maximum age) and the schedule's
    // dead-letter queue (Scheduler could not invoke the function at all). A queue rather than the on-call
    // topic: its records keep for 14 days for whoever investigates (and can be read again), and one alarm on
    // its depth pages once instead of an email per failed minute.
    this.reconcileFailures = new Queue(this, 'ReconcileFailures', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.reconcileFailures).acknowledge({
      id: 'AwsSolutions::AwsSolutions-SQS3',
      reason:
        'This queue is the dead-letter queue (on-failure destination and Scheduler DLQ) of the reconciler; nothing consumes it to need one of its own.',
    });
    this.reconcileFunction.configureAsyncInvoke({
      retryAttempts: RECONCILE_ASYNC.retryAttempts,
      maxEventAge: Duration.seconds(RECONCILE_ASYNC.maxEventAgeSeconds),
      onFailure: new SqsDestination(this.reconcileFailures),
    });

    new Schedule(this, 'ReconcileSchedule', {
      description: `llmcap ${cfg.stage}: reconcile every ${cfg.reconcileRate} minute(s)`,
      schedule: ScheduleExpression.rate(Duration.minutes(cfg.reconcileRate)),
      // Scheduler invokes asynchronously, so its retries cover only failing to hand the event to Lambda: retried
      // within one interval, after which the next scheduled pass replaces it; given up, into the same queue.
      target: new LambdaInvoke(this.reconcileFunction, {
        retryAttempts: 2,
        maxEventAge: Duration.minutes(cfg.reconcileRate),
        deadLetterQueue: this.reconcileFailures,
        // The pass's metrics are stamped with the time it was scheduled for (one datapoint per alarm period),
        // and the pass is recorded under an id derived from the execution, so a redelivered event is not run twice.
        input: ScheduleTargetInput.fromObject({
          source: 'llmcap.schedule',
          scheduledTime: ContextAttribute.scheduledTime,
          executionId: ContextAttribute.executionId,
        }),
      }),
    });

    // EC2's two-minute Spot warnings (issue 32 §4) go to the reconciler, which counts them on the compute, marks
    // the node and runs a pass at once, so the replicas on it are placed elsewhere when the group cannot replace it.
    // Warnings for instances that are not llmcap's nodes only cost a pass. Undeliverable ones join the same queue.
    new Rule(this, 'SpotInterruptionWarnings', {
      description: `llmcap ${cfg.stage}: EC2 Spot Instance Interruption Warnings to the reconciler`,
      eventPattern: {
        source: [...SPOT_WARNING_PATTERN.source],
        detailType: [...SPOT_WARNING_PATTERN['detail-type']],
      },
      targets: [
        new LambdaFunction(this.reconcileFunction, {
          retryAttempts: 2,
          // Past two minutes the instance is gone and the next scheduled pass sees that anyway.
          maxEventAge: Duration.minutes(2),
          deadLetterQueue: this.reconcileFailures,
        }),
      ],
    });

    // POST /v1/reconcile queues a pass and invokes the reconciler asynchronously (InvocationType Event, still
    // lambda:InvokeFunction), which holds the EKS and Step Functions permissions; only the unqualified function.
    this.apiFunction.addEnvironment('LLMCAP_RECONCILE_FUNCTION', this.reconcileFunction.functionName);
    // A model's status shows its pods (status.running) only where llmcap runs them.
    this.apiFunction.addEnvironment('LLMCAP_WORKLOADS', cfg.deployWorkloads ? 'deploy' : 'off');
    this.apiFunction.addToRolePolicy(
      new PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [this.reconcileFunction.functionArn],
      }),
    );
    // The scheduler target's role is created at stack level by aws-scheduler-targets.
    for (const child of this.node.children.filter((c) => c.node.id.startsWith('SchedulerRoleForTarget'))) {
      Validations.of(child).acknowledge(invokeVersions);
    }

    // --- Stage alarms (per-scope and per-compute alarms are kept by the reconciler) -----------------------
    // Defined in lambdas/domain/alarms.ts, which the local control plane creates too. Each L1 sits
    // where the L2 Alarm kept its resource (<id>/Resource), so logical ids, and the alarms, survive upgrades.
    const alarmIds: Record<string, string> = {
      ReconcileStale: 'ReconcileStaleAlarm',
      ReconcileErrors: 'ReconcileErrorsAlarm',
      'WorkflowFailed-provision': 'WorkflowFailedprovision',
      'WorkflowFailed-scale': 'WorkflowFailedscale',
      'WorkflowFailed-delete': 'WorkflowFaileddelete',
      ReconcileFailures: 'ReconcileFailuresAlarm',
    };
    const definitions = stageAlarms({
      stage: cfg.stage,
      rateMinutes: cfg.reconcileRate,
      reconcileFunctionName: this.reconcileFunction.functionName,
      admitterFunctionName: this.admitterFunction.functionName,
      stateMachineArns: {
        provision: this.workflows.provision.stateMachineArn,
        scale: this.workflows.scale.stateMachineArn,
        delete: this.workflows.delete.stateMachineArn,
      },
      reconcileFailuresQueueName: this.reconcileFailures.queueName,
    });
    for (const d of definitions) {
      const key = d.AlarmName.slice(alarmPrefix(cfg.stage).length);
      cfnAlarm(new Construct(this, alarmIds[key] ?? key), d, this.onCall.topicArn);
    }

    // --- Dashboard: capacity per scope and node groups ----------------------------------------------------
    const search = (metric: string, dim: 'Scope' | 'Compute', label: string) =>
      new MathExpression({
        expression: `SEARCH('{${METRICS_NAMESPACE},service,stage,${dim}} MetricName="${metric}" stage="${cfg.stage}"', 'Maximum', 60)`,
        label,
        period: Duration.minutes(1),
      });
    new Dashboard(this, 'Dashboard', {
      dashboardName: `llmcap-${cfg.stage}`,
      widgets: [
        [
          new GraphWidget({
            title: 'GPU usage per scope',
            left: [search('Usage_gpus', 'Scope', 'usage')],
            width: 12,
          }),
          new GraphWidget({
            title: 'GPUs borrowed per scope',
            left: [search('Borrowed_gpus', 'Scope', 'borrowed')],
            width: 12,
          }),
        ],
        [
          new GraphWidget({
            title: 'CapacityAtLimit per scope',
            left: [search('CapacityAtLimit', 'Scope', 'at limit')],
            width: 12,
          }),
          new GraphWidget({
            title: 'Pending replicas per scope',
            left: [search('PendingReplicas', 'Scope', 'pending')],
            width: 12,
          }),
        ],
        [
          new GraphWidget({
            title: 'Ready vs needed nodes per compute',
            left: [search('ReadyNodes', 'Compute', 'ready'), search('NeededNodes', 'Compute', 'needed')],
            width: 12,
          }),
          new GraphWidget({
            title: 'NodegroupFailed per compute',
            left: [search('NodegroupFailed', 'Compute', 'failed')],
            width: 12,
          }),
        ],
      ],
    });

    new CfnOutput(this, 'OnCallTopic', { value: this.onCall.topicArn });
    new CfnOutput(this, 'ApiUrl', {
      value: this.api.apiEndpoint,
      description: 'llmcap API (LLMCAP_ENDPOINT)',
    });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
  }

  /** GetServiceQuota on exactly the quotas llmcap reads (domain/aws-quotas.ts), in this account and region. */
  private readQuotas(): PolicyStatement {
    return new PolicyStatement({
      actions: ['servicequotas:GetServiceQuota'],
      resources: ALL_AWS_QUOTAS.map(
        (q) =>
          `arn:${this.partition}:servicequotas:${this.region}:${this.account}:${q.serviceCode}/${q.code}`,
      ),
    });
  }
}

/** An alarm definition as CloudFormation takes it, notifying the on-call topic on ALARM and on the return to OK. */
function cfnAlarm(scope: Construct, d: AlarmDefinition, topicArn: string): CfnAlarm {
  const dims = (x: { Name: string; Value: string }[] | undefined) =>
    x?.map((y) => ({ name: y.Name, value: y.Value }));
  return new CfnAlarm(scope, 'Resource', {
    alarmName: d.AlarmName,
    alarmDescription: d.AlarmDescription,
    namespace: d.Namespace,
    metricName: d.MetricName,
    dimensions: dims(d.Dimensions),
    statistic: d.Statistic,
    period: d.Period,
    metrics: d.Metrics?.map((q) => ({
      id: q.Id,
      expression: q.Expression,
      label: q.Label,
      returnData: q.ReturnData,
      period: q.Period,
      metricStat: q.MetricStat && {
        metric: {
          namespace: q.MetricStat.Metric.Namespace,
          metricName: q.MetricStat.Metric.MetricName,
          dimensions: dims(q.MetricStat.Metric.Dimensions),
        },
        period: q.MetricStat.Period,
        stat: q.MetricStat.Stat,
      },
    })),
    evaluationPeriods: d.EvaluationPeriods,
    datapointsToAlarm: d.DatapointsToAlarm,
    threshold: d.Threshold,
    comparisonOperator: d.ComparisonOperator,
    treatMissingData: d.TreatMissingData,
    alarmActions: [topicArn],
    okActions: [topicArn],
  });
}
