import {
  CloudWatchClient,
  DeleteAlarmsCommand,
  DescribeAlarmsCommand,
  GetMetricDataCommand,
  InvalidParameterValueException,
  ListMetricsCommand,
  PutMetricAlarmCommand,
  type PutMetricAlarmCommandInput,
  ResourceNotFound,
  SetAlarmStateCommand,
} from '@aws-sdk/client-cloudwatch';
import {
  CreateTopicCommand,
  ListSubscriptionsByTopicCommand,
  SNSClient,
  SubscribeCommand,
} from '@aws-sdk/client-sns';
import { putAlarm } from '../../../lambdas/aws/alarms';
import { nodegroupFailedAlarm } from '../../../lambdas/domain/alarms';
import { publishMetrics } from '../../../lambdas/reconcile/handler';
import { resetConfig } from '../../../lambdas/shared/config';
import { type CloudSim, DrivenClock, startCloudSim } from '../../../local/cloud-sim';
import { printedLines } from '../../helpers/stdout';
import { type Subscriber, startSubscriber } from '../../helpers/subscriber';
import { computeReport, passSummary, prodStageAlarms, scopeReport } from '../../helpers/summary';

/**
 * The simulated CloudWatch and SNS through the real @aws-sdk/client-cloudwatch and @aws-sdk/client-sns, on a
 * driven clock: metrics from EMF as CloudWatch Logs extracts them, alarms evaluated every minute with
 * CloudWatch's rules, notifications as an HTTPS subscriber receives them.
 */

const MIN = 60_000;
let clock: DrivenClock;
let sim: CloudSim;
let cw: CloudWatchClient;
let sns: SNSClient;
let sub: Subscriber;
let topic: string;

beforeAll(() => {
  process.env.LLMCAP_STAGE = 'prod';
  resetConfig();
});
afterAll(() => {
  delete process.env.LLMCAP_STAGE;
  resetConfig();
});

beforeEach(async () => {
  // Hours in the past, so that the 4 simulated hours below stay within what Powertools accepts (2 h ahead).
  clock = new DrivenClock(Math.floor(Date.now() / MIN) * MIN - 5 * 60 * MIN);
  sim = await startCloudSim({ port: 0, clock, seed: 1, accountId: '123456789012' });
  const cfg = { endpoint: sim.endpoint, region: 'us-east-1', maxAttempts: 1 };
  cw = new CloudWatchClient(cfg);
  sns = new SNSClient(cfg);
  sub = await startSubscriber();
  topic = (await sns.send(new CreateTopicCommand({ Name: 'oncall' }))).TopicArn!;
  await sns.send(new SubscribeCommand({ TopicArn: topic, Protocol: 'http', Endpoint: sub.url }));
  await sim.sns.drain();
});
afterEach(async () => {
  cw.destroy();
  sns.destroy();
  await sim.stop();
  await sub.close();
});

/** One reconcile pass as CloudWatch sees it: the EMF the real publishMetrics prints, then a minute on. */
async function pass(summary: ReturnType<typeof passSummary>): Promise<void> {
  const lines = printedLines(() => publishMetrics(summary, new Date(clock.now())));
  sim.cloudwatch.putLogEvents(lines.map((message) => ({ timestamp: clock.now(), message })));
  await minutes(1);
}

async function minutes(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    clock.advance(MIN);
    sim.cloudwatch.catchUp();
  }
  await sim.sns.drain();
}

const states = (name: string) => sub.alarms(name).map((a) => a.NewStateValue);
const state = async (name: string) =>
  (await cw.send(new DescribeAlarmsCommand({ AlarmNames: [name] }))).MetricAlarms?.[0]?.StateValue;

describe('the CloudWatch API', () => {
  it('keeps alarms and answers DescribeAlarms, ListMetrics and GetMetricData as CloudWatch does', async () => {
    const def = nodegroupFailedAlarm('prod', 'gpu-l4-1x', 1);
    await putAlarm(def, topic, cw);
    const [a] = (await cw.send(new DescribeAlarmsCommand({ AlarmNamePrefix: 'llmcap-prod-' }))).MetricAlarms!;
    expect(a).toMatchObject({
      AlarmName: def.AlarmName,
      AlarmArn: `arn:aws:cloudwatch:us-east-1:123456789012:alarm:${def.AlarmName}`,
      StateValue: 'INSUFFICIENT_DATA',
      Dimensions: def.Dimensions,
      EvaluationPeriods: 45,
      AlarmActions: [topic],
    });
    expect(a!.StateUpdatedTimestamp).toBeInstanceOf(Date);

    await pass(
      passSummary({ computes: [computeReport('gpu-l4-1x', true), computeReport('cpu-small', false)] }),
    );
    const listed = await cw.send(
      new ListMetricsCommand({
        Namespace: 'llmcap',
        MetricName: 'NodegroupFailed',
        Dimensions: [{ Name: 'Compute' }],
      }),
    );
    expect(listed.Metrics?.map((m) => m.Dimensions?.find((d) => d.Name === 'Compute')?.Value).sort()).toEqual(
      ['cpu-small', 'gpu-l4-1x'],
    );
    const data = await cw.send(
      new GetMetricDataCommand({
        StartTime: new Date(clock.now() - 5 * MIN),
        EndTime: new Date(clock.now()),
        MetricDataQueries: [
          {
            Id: 'failed',
            MetricStat: {
              Metric: { Namespace: 'llmcap', MetricName: 'NodegroupFailed', Dimensions: def.Dimensions },
              Period: 60,
              Stat: 'Maximum',
            },
          },
          { Id: 'filled', Expression: 'FILL(failed, 0) * 2' },
        ],
      }),
    );
    expect(data.MetricDataResults?.[0]).toMatchObject({ Id: 'failed', Values: [1], StatusCode: 'Complete' });
    expect(data.MetricDataResults?.[1]?.Values).toEqual([2, 0, 0, 0, 0]);

    await cw.send(new DeleteAlarmsCommand({ AlarmNames: [def.AlarmName] }));
    expect((await cw.send(new DescribeAlarmsCommand({}))).MetricAlarms).toEqual([]);
  });

  it('refuses what CloudWatch refuses, with its error codes', async () => {
    const bad: PutMetricAlarmCommandInput = {
      ...nodegroupFailedAlarm('prod', 'x', 1),
      EvaluationPeriods: 2,
      DatapointsToAlarm: 3,
    };
    const e = await cw.send(new PutMetricAlarmCommand(bad)).catch((x) => x);
    expect(e).toBeInstanceOf(InvalidParameterValueException);
    expect(e.Code).toBe('InvalidParameterValue');
    expect(e.message).toMatch(/DatapointsToAlarm must be less than or equal to EvaluationPeriods/);
    const gone = await cw
      .send(new SetAlarmStateCommand({ AlarmName: 'nope', StateValue: 'ALARM', StateReason: 'x' }))
      .catch((x) => x);
    expect(gone).toBeInstanceOf(ResourceNotFound);
    const math = await cw
      .send(
        new PutMetricAlarmCommand({
          AlarmName: 'm',
          EvaluationPeriods: 1,
          Threshold: 1,
          ComparisonOperator: 'GreaterThanThreshold',
          Metrics: [{ Id: 'e', Expression: 'ANOMALY_DETECTION_BAND(x)', ReturnData: true }],
        }),
      )
      .catch((x) => x);
    expect(math.message).toMatch(/ANOMALY_DETECTION_BAND is not simulated/);
  });
});

describe('alarms that page', () => {
  it('never pages with notBreaching on a metric nobody publishes: the old alarms against the old EMF', async () => {
    // The previous release's alarm: {service, stage, Scope}, 1 of 1, missing data notBreaching.
    const name = 'llmcap-prod-CapacityAtLimit-team:ml';
    await cw.send(
      new PutMetricAlarmCommand({
        AlarmName: name,
        Namespace: 'llmcap',
        MetricName: 'CapacityAtLimit',
        Dimensions: [
          { Name: 'service', Value: 'llmcap' },
          { Name: 'stage', Value: 'prod' },
          { Name: 'Scope', Value: 'team:ml' },
        ],
        Statistic: 'Maximum',
        Period: 60,
        EvaluationPeriods: 1,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
        AlarmActions: [topic],
      }),
    );
    // What the previous publishMetrics printed for CapacityAtLimit: singleMetric() had dropped the Scope.
    const oldLine = (t: number) =>
      JSON.stringify({
        _aws: {
          Timestamp: t,
          CloudWatchMetrics: [
            {
              Namespace: 'llmcap',
              Dimensions: [['service', 'stage']],
              Metrics: [{ Name: 'CapacityAtLimit', Unit: 'Count' }],
            },
          ],
        },
        service: 'llmcap',
        stage: 'prod',
        CapacityAtLimit: 1,
      });
    for (let i = 0; i < 10; i++) {
      sim.cloudwatch.putLogEvents([{ timestamp: clock.now(), message: oldLine(clock.now()) }]);
      await minutes(1);
    }
    expect(await state(name)).toBe('OK');
    expect(states(name)).toEqual([]);
    // The same alarm sees the scope at its limit once the EMF carries Scope.
    await pass(passSummary({ scopes: [scopeReport('team:ml', 4, 4)], atLimit: ['team:ml'] }));
    await minutes(1);
    expect(await state(name)).toBe('ALARM');
    expect(states(name)).toEqual(['ALARM']);
  });

  it('stays in ALARM while a node group keeps failing its re-creation, and pages once', async () => {
    const def = nodegroupFailedAlarm('prod', 'gpu-l4-1x', 1);
    await putAlarm(def, topic, cw);
    // As the previous release set it up, on the fixed metrics: 1 of 1, notBreaching.
    const flappy = {
      ...def,
      AlarmName: 'flappy',
      EvaluationPeriods: 1,
      DatapointsToAlarm: 1,
      TreatMissingData: 'notBreaching' as const,
    };
    await putAlarm(flappy, topic, cw);
    // A create that cannot launch is CREATE_FAILED once every ~40 minutes (35 to fail, 5 to delete): 3 hours of it.
    for (let minute = 0; minute < 180; minute++) {
      await pass(passSummary({ computes: [computeReport('gpu-l4-1x', minute % 40 === 0)] }));
    }
    expect(states(def.AlarmName)).toEqual(['ALARM']);
    expect(states('flappy').filter((s) => s === 'ALARM')).toHaveLength(5);
    // Fixed: OK 45 minutes after the last failed pass, once.
    for (let minute = 0; minute < 50; minute++)
      await pass(passSummary({ computes: [computeReport('gpu-l4-1x', false)] }));
    expect(states(def.AlarmName)).toEqual(['ALARM', 'OK']);
  });

  it('notifies as CloudWatch does, in the envelope an HTTPS subscriber receives', async () => {
    const def = nodegroupFailedAlarm(
      'prod',
      'gpu-l4-1x',
      1,
      'CREATE_FAILED: AsgInstanceLaunchFailures: no capacity',
    );
    await putAlarm(def, topic, cw);
    await pass(passSummary({ computes: [computeReport('gpu-l4-1x', true)] }));
    const got = sub.received.find((r) => r.alarm?.NewStateValue === 'ALARM')!;
    expect(got.headers).toMatchObject({
      'x-amz-sns-message-type': 'Notification',
      'x-amz-sns-topic-arn': topic,
      'content-type': 'text/plain; charset=UTF-8',
    });
    expect(got.envelope).toMatchObject({
      Type: 'Notification',
      TopicArn: topic,
      Subject: `ALARM: "${def.AlarmName}" in US East (N. Virginia)`,
      SignatureVersion: '1',
    });
    expect(got.envelope.MessageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(got.envelope.UnsubscribeURL).toContain('Action=Unsubscribe');
    expect(got.alarm).toMatchObject({
      AlarmName: def.AlarmName,
      AlarmDescription: def.AlarmDescription,
      AWSAccountId: '123456789012',
      NewStateValue: 'ALARM',
      OldStateValue: 'INSUFFICIENT_DATA',
      Region: 'US East (N. Virginia)',
      AlarmArn: `arn:aws:cloudwatch:us-east-1:123456789012:alarm:${def.AlarmName}`,
      Trigger: {
        MetricName: 'NodegroupFailed',
        Namespace: 'llmcap',
        StatisticType: 'Statistic',
        Statistic: 'MAXIMUM',
        Unit: null,
        Dimensions: [
          { value: 'llmcap', name: 'service' },
          { value: 'prod', name: 'stage' },
          { value: 'gpu-l4-1x', name: 'Compute' },
        ],
        Period: 60,
        EvaluationPeriods: 45,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        Threshold: 1,
        TreatMissingData: 'ignore',
      },
    });
    expect(got.alarm!.NewStateReason).toMatch(
      /^Threshold Crossed: 1 out of the last 45 datapoints \[1\.0 \(\d\d\/\d\d\/\d\d \d\d:\d\d:00\)\] was greater than or equal to the threshold \(1\.0\)/,
    );
    expect(got.alarm!.StateChangeTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0000$/);
  });

  it('delivers nothing to a subscription that never confirmed', async () => {
    const silent = await startSubscriber({ confirm: false });
    try {
      await sns.send(new SubscribeCommand({ TopicArn: topic, Protocol: 'http', Endpoint: silent.url }));
      await sim.sns.drain();
      const subs = (await sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topic }))).Subscriptions!;
      expect(subs.find((s) => s.Endpoint === silent.url)?.SubscriptionArn).toBe('PendingConfirmation');
      await cw.send(
        new PutMetricAlarmCommand({ ...nodegroupFailedAlarm('prod', 'c', 1), AlarmActions: [topic] }),
      );
      await cw.send(
        new SetAlarmStateCommand({
          AlarmName: 'llmcap-prod-NodegroupFailed-c',
          StateValue: 'ALARM',
          StateReason: 'test',
        }),
      );
      await sim.sns.drain();
      expect(silent.received.map((r) => r.envelope.Type)).toEqual(['SubscriptionConfirmation']);
      expect(sub.alarms('llmcap-prod-NodegroupFailed-c')).toHaveLength(1);
    } finally {
      await silent.close();
    }
  });

  it('lets SetAlarmState page on demand, and puts the real state back at the next evaluation', async () => {
    const def = nodegroupFailedAlarm('prod', 'gpu-l4-1x', 1);
    await putAlarm(def, topic, cw);
    await pass(passSummary({ computes: [computeReport('gpu-l4-1x', false)] }));
    expect(await state(def.AlarmName)).toBe('OK');
    await cw.send(
      new SetAlarmStateCommand({
        AlarmName: def.AlarmName,
        StateValue: 'ALARM',
        StateReason: 'testing on-call',
      }),
    );
    await sim.sns.drain();
    expect(sub.alarms(def.AlarmName).at(-1)).toMatchObject({
      NewStateValue: 'ALARM',
      NewStateReason: 'testing on-call',
    });
    await pass(passSummary({ computes: [computeReport('gpu-l4-1x', false)] }));
    expect(states(def.AlarmName)).toEqual(['OK', 'ALARM', 'OK']);
  });

  it("counts the reconciler's reported errors, the Lambda's Errors and Throttles together (metric math)", async () => {
    const def = prodStageAlarms().find((a) => a.AlarmName === 'llmcap-prod-ReconcileErrors')!;
    await putAlarm(def, topic, cw);
    const fn = [{ Name: 'FunctionName', Value: 'llmcap-prod-reconcile' }];
    // One reported error, one crash, one throttle, in three different minutes: 3 of 5.
    await pass(passSummary({ errors: ['observing: AccessDenied'] }));
    sim.cloudwatch.putDatapoint('AWS/Lambda', 'Errors', fn, clock.now(), [1], 'Count');
    await minutes(1);
    await pass(passSummary({}));
    sim.cloudwatch.putDatapoint('AWS/Lambda', 'Throttles', fn, clock.now(), [1], 'Count');
    await minutes(1);
    expect(states(def.AlarmName)).toEqual(['OK', 'ALARM']);
    expect(sub.alarms(def.AlarmName).at(-1)!.Trigger.Metrics[0]).toMatchObject({
      Id: 'failing',
      Expression: 'FILL(errs, 0) + FILL(fails, 0) + FILL(throttles, 0)',
    });
  });
});
