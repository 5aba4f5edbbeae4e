import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { parseStageConfig } from '../../infra/stage-config';
import { stageAlarms } from '../../lambdas/domain/alarms';
import { devStack } from '../helpers/cfn';

// The stack as `cdk synth` builds it (cdk.json's flags, cdk-nag), without bundling the Lambdas.
const { app, stack } = devStack();
const template = Template.fromStack(stack);

describe('stage config', () => {
  it('fails as docs/operations.md shows, every problem of the example named', () => {
    const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'operations.md'), 'utf8');
    const section = doc.slice(doc.indexOf('### 2. Write the stage config'), doc.indexOf('### 3.'));
    const [json, output] = [...section.matchAll(/```(?:json)?\n([\s\S]*?)```/g)].map((m) => m[1] as string);
    expect(() => parseStageConfig(JSON.parse(json!), 'config/stages/prod.json')).toThrow(output!.trim());
  });

  it('names every invalid field of a stage config', () => {
    expect(() =>
      parseStageConfig(
        { stage: 'Prod!', account: '12', region: 'us-east-1', subnetIds: [], admins: [] },
        'x.json',
      ),
    ).toThrow(/stage:[\s\S]*account:[\s\S]*clusterName:[\s\S]*subnetIds:[\s\S]*admins:/);
  });
});

describe('the table', () => {
  it('keeps data safe: PITR, deletion protection, encryption, RETAIN', () => {
    template.hasResource('AWS::DynamoDB::GlobalTable', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: Match.objectLike({
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        SSESpecification: { SSEEnabled: true, SSEType: 'KMS' },
        Replicas: [
          Match.objectLike({
            DeletionProtectionEnabled: true,
            PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
          }),
        ],
      }),
    });
  });
});

describe('the API', () => {
  it('authorizes every route with IAM and throttles the stage', () => {
    const routes = template.findResources('AWS::ApiGatewayV2::Route');
    expect(Object.keys(routes).length).toBeGreaterThan(0);
    for (const r of Object.values(routes)) expect(r.Properties.AuthorizationType).toBe('AWS_IAM');
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
      AccessLogSettings: Match.objectLike({ Format: Match.stringLikeRegexp('principal') }),
    });
  });

  it('runs the api function on arm64 and Node 22 or newer, with the stage config in its environment', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Architectures: ['arm64'],
      Runtime: Match.stringLikeRegexp('^nodejs(2[2-9]|[3-9]\\d)\\.x$'),
      TracingConfig: { Mode: 'Active' },
      Environment: {
        Variables: Match.objectLike({
          LLMCAP_STAGE: 'dev',
          LLMCAP_ADMINS: 'arn:aws:iam::123456789012:role/PlatformAdmin',
          LLMCAP_CLUSTER: 'ml-platform',
        }),
      },
    });
  });

  it('grants the api function the table and nothing else of DynamoDB', () => {
    const policies = template.findResources('AWS::IAM::Policy');
    const statements = Object.values(policies).flatMap((p: any) => p.Properties.PolicyDocument.Statement);
    const dynamo = statements.filter((s: any) =>
      [s.Action].flat().some((a: string) => a.startsWith('dynamodb:')),
    );
    expect(dynamo.length).toBeGreaterThan(0);
    for (const s of dynamo) expect(JSON.stringify(s.Resource)).toMatch(/Table/);
  });
});

describe('the reconciler and on-call', () => {
  it('runs the reconcile Lambda on the stage rate through EventBridge Scheduler', () => {
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 minute)',
      // The scheduled time reaches the handler, which stamps the pass's metrics with it.
      Target: Match.objectLike({
        Input: Match.serializedJson(Match.objectLike({ scheduledTime: '<aws.scheduler.scheduled-time>' })),
      }),
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      ReservedConcurrentExecutions: 1,
      Environment: {
        Variables: Match.objectLike({
          LLMCAP_ALARM_TOPIC_ARN: Match.anyValue(),
          LLMCAP_RECONCILE_RATE_MINUTES: '1',
        }),
      },
    });
  });

  it('sends EC2 Spot Instance Interruption Warnings to the reconciler (issue 32 §4), undeliverable ones to its queue', () => {
    const rules = Object.values(template.findResources('AWS::Events::Rule')) as any[];
    const spot = rules.filter((r) =>
      r.Properties.EventPattern?.['detail-type']?.includes('EC2 Spot Instance Interruption Warning'),
    );
    expect(spot).toHaveLength(1);
    const rule = spot[0].Properties;
    expect(rule.EventPattern).toEqual({
      source: ['aws.ec2'],
      'detail-type': ['EC2 Spot Instance Interruption Warning'],
    });
    const reconciler = Object.entries(template.findResources('AWS::Lambda::Function')).find(
      ([, f]: [string, any]) =>
        f.Properties.ReservedConcurrentExecutions === 1 &&
        f.Properties.Environment?.Variables?.LLMCAP_RECONCILE_RATE_MINUTES,
    )![0];
    expect(rule.Targets).toEqual([
      expect.objectContaining({
        Arn: { 'Fn::GetAtt': [reconciler, 'Arn'] },
        RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 120 },
        DeadLetterConfig: { Arn: { 'Fn::GetAtt': [expect.stringMatching(/^ReconcileFailures/), 'Arn'] } },
      }),
    ]);
    // EventBridge may invoke the reconciler, from this rule only.
    const permissions = Object.values(template.findResources('AWS::Lambda::Permission')) as any[];
    expect(permissions.filter((p) => p.Properties.Principal === 'events.amazonaws.com')).toEqual([
      {
        Type: 'AWS::Lambda::Permission',
        Properties: {
          Action: 'lambda:InvokeFunction',
          Principal: 'events.amazonaws.com',
          FunctionName: { 'Fn::GetAtt': [reconciler, 'Arn'] },
          SourceArn: { 'Fn::GetAtt': [expect.stringMatching(/^SpotInterruptionWarnings/), 'Arn'] },
        },
      },
    ]);
  });

  it('routes every alarm to one on-call topic with the stage config subscriptions, over TLS only', () => {
    template.resourceCountIs('AWS::SNS::Topic', 1);
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
    });
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as any[];
    const names = alarms.map((a) => a.Properties.AlarmName).sort();
    expect(names).toEqual([
      'llmcap-dev-AdmitterErrors',
      'llmcap-dev-ReconcileErrors',
      'llmcap-dev-ReconcileFailures',
      'llmcap-dev-ReconcileStale',
      'llmcap-dev-ReplicasUnscheduled',
      'llmcap-dev-WorkflowFailed-delete',
      'llmcap-dev-WorkflowFailed-provision',
      'llmcap-dev-WorkflowFailed-scale',
    ]);
    for (const a of alarms) {
      expect(a.Properties.AlarmActions).toHaveLength(1);
      expect(a.Properties.OKActions).toHaveLength(1);
    }
    const policy = Object.values(template.findResources('AWS::SNS::TopicPolicy'))[0] as any;
    expect(JSON.stringify(policy.Properties.PolicyDocument)).toMatch(/aws:SecureTransport/);
  });

  it('deploys the stage alarms exactly as lambdas/domain/alarms.ts defines them (the ones the local control plane runs)', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as any[];
    const byName = new Map(alarms.map((a) => [a.Properties.AlarmName, a.Properties]));
    // Built from the stack's own names (tokens), resolved as CloudFormation receives them.
    const defs = stack.resolve(
      stageAlarms({
        stage: 'dev',
        rateMinutes: 1,
        reconcileFunctionName: stack.reconcileFunction.functionName,
        admitterFunctionName: stack.admitterFunction.functionName,
        stateMachineArns: {
          provision: stack.workflows.provision.stateMachineArn,
          scale: stack.workflows.scale.stateMachineArn,
          delete: stack.workflows.delete.stateMachineArn,
        },
        reconcileFailuresQueueName: stack.reconcileFailures.queueName,
      }),
    ) as ReturnType<typeof stageAlarms>;
    for (const d of defs) {
      const p = byName.get(d.AlarmName);
      expect({
        name: d.AlarmName,
        description: p.AlarmDescription,
        metric: p.MetricName,
        statistic: p.Statistic,
        period: p.Period,
        n: p.EvaluationPeriods,
        m: p.DatapointsToAlarm,
        threshold: p.Threshold,
        op: p.ComparisonOperator,
        missing: p.TreatMissingData,
        dimensions: p.Dimensions,
        queries: p.Metrics,
      }).toEqual({
        name: d.AlarmName,
        description: d.AlarmDescription,
        metric: d.MetricName,
        statistic: d.Statistic,
        period: d.Period,
        n: d.EvaluationPeriods,
        m: d.DatapointsToAlarm,
        threshold: d.Threshold,
        op: d.ComparisonOperator,
        missing: d.TreatMissingData,
        dimensions: d.Dimensions,
        queries: d.Metrics,
      });
    }
    // The Lambda's own metrics are those of the deployed reconcile function.
    const errors = byName.get('llmcap-dev-ReconcileErrors');
    const fails = errors.Metrics.find((q: any) => q.Id === 'fails').MetricStat.Metric;
    expect(fails).toMatchObject({ Namespace: 'AWS/Lambda', MetricName: 'Errors' });
    expect(fails.Dimensions[0]).toMatchObject({
      Name: 'FunctionName',
      Value: { Ref: expect.stringMatching(/^ReconcileFunction/) },
    });
  });

  it("lets the reconciler describe only this stage's node groups and manage only its own alarms", () => {
    const statements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
      (p: any) => p.Properties.PolicyDocument.Statement,
    );
    const describe = statements.find((s: any) => s.Action === 'eks:DescribeNodegroup');
    expect(JSON.stringify(describe.Resource)).toContain('nodegroup/ml-platform/llmcap-dev-*/*');
    const alarms = statements.find((s: any) =>
      JSON.stringify(s.Action).includes('cloudwatch:PutMetricAlarm'),
    );
    expect(JSON.stringify(alarms.Resource)).toContain('alarm:llmcap-dev-*');
  });

  it('invokes the reconciler asynchronously, without retries, and keeps what failed in an encrypted queue that pages', () => {
    const queues = template.findResources('AWS::SQS::Queue');
    expect(Object.keys(queues)).toHaveLength(1);
    const [queueId, queue] = Object.entries(queues)[0] as [string, any];
    expect(queue.Properties).toMatchObject({
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 14 * 86_400,
    });
    const queuePolicy = Object.values(template.findResources('AWS::SQS::QueuePolicy'))[0] as any;
    expect(JSON.stringify(queuePolicy.Properties.PolicyDocument)).toMatch(/aws:SecureTransport/);
    const queueArn = { 'Fn::GetAtt': [queueId, 'Arn'] };
    // Lambda's async config: the next scheduled pass is the retry; six minutes covers one full pass ahead.
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      MaximumRetryAttempts: 0,
      MaximumEventAgeInSeconds: 360,
      Qualifier: '$LATEST',
      DestinationConfig: { OnFailure: { Destination: queueArn } },
    });
    // The schedule: delivery retried within one interval, then into the same queue; its input names the execution.
    const schedule = Object.values(template.findResources('AWS::Scheduler::Schedule'))[0] as any;
    expect(schedule.Properties.Target).toMatchObject({
      RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 60 },
      DeadLetterConfig: { Arn: queueArn },
    });
    expect(JSON.parse(schedule.Properties.Target.Input)).toEqual({
      source: 'llmcap.schedule',
      scheduledTime: '<aws.scheduler.scheduled-time>',
      executionId: '<aws.scheduler.execution-id>',
    });
    const alarm = (Object.values(template.findResources('AWS::CloudWatch::Alarm')) as any[]).find(
      (a) => a.Properties.AlarmName === 'llmcap-dev-ReconcileFailures',
    );
    expect(alarm.Properties).toMatchObject({
      Threshold: 1,
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
      AlarmActions: [{ Ref: expect.stringMatching(/^OnCall/) }],
    });
    expect(JSON.stringify(alarm.Properties.Metrics)).toContain('ApproximateNumberOfMessagesNotVisible');
    expect(JSON.stringify(alarm.Properties.AlarmDescription)).toContain(
      'docs/operations.md#reconcilefailures',
    );
  });

  it('lets the API invoke only the unqualified reconcile function, and the reconciler send only to its queue', () => {
    const policies = Object.entries(template.findResources('AWS::IAM::Policy')) as [string, any][];
    const apiPolicy = policies.find(([id]) => id.startsWith('ApiFunctionServiceRoleDefaultPolicy'))![1];
    const invoke = apiPolicy.Properties.PolicyDocument.Statement.filter((s: any) =>
      JSON.stringify(s.Action).includes('lambda:'),
    );
    expect(invoke).toEqual([
      {
        Action: 'lambda:InvokeFunction',
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [expect.stringMatching(/^ReconcileFunction/), 'Arn'] },
      },
    ]);
    const reconcilePolicy = policies.find(([id]) =>
      id.startsWith('ReconcileFunctionServiceRoleDefaultPolicy'),
    )![1];
    const sqs = reconcilePolicy.Properties.PolicyDocument.Statement.filter((s: any) =>
      JSON.stringify(s.Action).includes('sqs:'),
    );
    expect(sqs).toHaveLength(1);
    expect(sqs[0].Action).toEqual(expect.arrayContaining(['sqs:SendMessage']));
    expect(sqs[0].Resource).toEqual({ 'Fn::GetAtt': [expect.stringMatching(/^ReconcileFailures/), 'Arn'] });
  });

  it('draws a dashboard of capacity per scope and node groups', () => {
    const dash = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as any;
    const body = JSON.stringify(dash.Properties.DashboardBody);
    for (const m of ['Usage_gpus', 'Borrowed_gpus', 'CapacityAtLimit', 'ReadyNodes', 'NodegroupFailed'])
      expect(body).toContain(m);
  });
});

describe('cdk-nag', () => {
  it('reports no unacknowledged AwsSolutions finding', () => {
    expect(() => app.synth()).not.toThrow();
  });
});
