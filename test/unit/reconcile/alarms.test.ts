import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CloudWatchClient,
  DeleteAlarmsCommand,
  DescribeAlarmsCommand,
  PutMetricAlarmCommand,
} from '@aws-sdk/client-cloudwatch';
import { mockClient } from 'aws-sdk-client-mock';
import { describeScope, syncAlarms } from '../../../lambdas/aws/alarms';
import { capacityAtLimitAlarm, nodegroupFailedAlarm, RUNBOOK } from '../../../lambdas/domain/alarms';
import { resetClients } from '../../../lambdas/shared/clients';
import { resetConfig } from '../../../lambdas/shared/config';
import { prodStageAlarms } from '../../helpers/summary';

const scope = (name: string, usage: number, limit?: number, pending = {}) =>
  ({
    scope: name,
    hasQuota: true,
    guarantee: { gpus: 2, cores: 0, memoryGb: 0 },
    limit: limit === undefined ? {} : { gpus: limit },
    usage: { gpus: usage, cores: 0, memoryGb: 0 },
    borrowed: { gpus: Math.max(0, usage - 2), cores: 0, memoryGb: 0 },
    atLimit: limit !== undefined && usage >= limit,
    overLimit: false,
    pending,
    pendingReplicas: 0,
  }) as never;

const compute = (name: string, status: string, failed: boolean) =>
  ({
    compute: name,
    status,
    failed,
    statusMessage: failed ? 'AsgInstanceLaunchFailures: no capacity' : undefined,
  }) as never;

describe('what an alarm says', () => {
  it('names the numbers of a scope at its limit and what waits', () => {
    expect(describeScope(scope('team:ml', 3, 3, { LimitExceeded: 2 }))).toBe(
      'at its limit: gpus 3 of 3; 2 pending LimitExceeded',
    );
    expect(describeScope(scope('team:b', 1, 4))).toBe('within its limits');
  });

  it('names the scope or compute, the command to run and the runbook in every per-scope and per-compute alarm', () => {
    const a = capacityAtLimitAlarm('prod', 'team:ml', 1, 'at its limit: gpus 3 of 3');
    expect(a.AlarmName).toBe('llmcap-prod-CapacityAtLimit-team:ml');
    expect(a.AlarmDescription).toMatch(
      /^Scope team:ml .*llmcap capacity team:ml.*#capacityatlimit\. Last seen: at its limit: gpus 3 of 3$/,
    );
    const n = nodegroupFailedAlarm('prod', 'gpu-l4-1x', 1);
    expect(n.AlarmDescription).toMatch(/compute gpu-l4-1x.*llmcap describe compute gpu-l4-1x/);
  });

  it('links only runbook anchors that docs/operations.md has', () => {
    const doc = readFileSync(join(__dirname, '..', '..', '..', RUNBOOK), 'utf8');
    // GitHub's anchors: headings lowercased, punctuation dropped, spaces as hyphens.
    const anchors = new Set(
      [...doc.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) =>
        (m[1] as string)
          .trim()
          .toLowerCase()
          .replace(/[^\w\- ]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    const all = [
      capacityAtLimitAlarm('prod', 'team:ml', 1),
      nodegroupFailedAlarm('prod', 'gpu-l4-1x', 1),
      ...prodStageAlarms(),
    ];
    const linked = all.map((a) => {
      const m = /Runbook: docs\/operations\.md#([\w-]+)/.exec(a.AlarmDescription);
      expect(m).not.toBeNull();
      return m![1] as string;
    });
    expect(linked.filter((x) => !anchors.has(x))).toEqual([]);
    expect(new Set(linked)).toEqual(
      new Set([
        'admittererrors',
        'capacityatlimit',
        'nodegroupfailed',
        'reconcilestale',
        'reconcileerrors',
        'reconcilefailures',
        'replicasunscheduled',
        'workflowfailed',
      ]),
    );
  });
});

describe('CloudWatch alarms kept by the reconciler (adapter)', () => {
  const cw = mockClient(CloudWatchClient);
  const topic = 'arn:aws:sns:us-east-1:123456789012:oncall';
  beforeEach(() => {
    cw.reset();
    process.env.LLMCAP_STAGE = 'prod';
    resetConfig();
    resetClients();
  });
  afterEach(() => {
    delete process.env.LLMCAP_ALARM_TOPIC_ARN;
    resetConfig();
    resetClients();
  });
  const withTopic = () => {
    process.env.LLMCAP_ALARM_TOPIC_ARN = topic;
    resetConfig();
  };

  it('does nothing without an on-call topic', async () => {
    expect(await syncAlarms({ scopes: [scope('team:ml', 1)], computes: [], atLimit: [] })).toEqual({
      created: 0,
      updated: 0,
      deleted: 0,
    });
    expect(cw.calls()).toHaveLength(0);
  });

  it('creates a missing alarm per scope and compute, and deletes those of vanished ones', async () => {
    withTopic();
    const current = {
      ...capacityAtLimitAlarm('prod', 'team:ml', 1),
      AlarmActions: [topic],
      OKActions: [topic],
    };
    cw.on(DescribeAlarmsCommand).resolves({
      MetricAlarms: [
        current,
        { AlarmName: 'llmcap-prod-CapacityAtLimit-team:gone' },
        { AlarmName: 'llmcap-prod-ReconcileErrors' },
      ],
    });
    cw.on(PutMetricAlarmCommand).resolves({});
    cw.on(DeleteAlarmsCommand).resolves({});
    const r = await syncAlarms({
      scopes: [scope('team:ml', 1), scope('team:new', 1)],
      computes: [compute('gpu-l4', 'ACTIVE', false)],
      atLimit: [],
    });
    expect(r).toEqual({ created: 2, updated: 0, deleted: 1 });
    const puts = cw.commandCalls(PutMetricAlarmCommand).map((c) => c.args[0].input);
    expect(puts.map((p) => p.AlarmName).sort()).toEqual([
      'llmcap-prod-CapacityAtLimit-team:new',
      'llmcap-prod-NodegroupFailed-gpu-l4',
    ]);
    const team = puts.find((p) => p.AlarmName?.includes('team:new'))!;
    expect(team.Dimensions).toEqual([
      { Name: 'service', Value: 'llmcap' },
      { Name: 'stage', Value: 'prod' },
      { Name: 'Scope', Value: 'team:new' },
    ]);
    expect(team).toMatchObject({ AlarmActions: [topic], OKActions: [topic], TreatMissingData: 'ignore' });
    expect(cw.commandCalls(DeleteAlarmsCommand)[0]!.args[0].input.AlarmNames).toEqual([
      'llmcap-prod-CapacityAtLimit-team:gone',
    ]);
  });

  it('replaces an alarm an older version left with other settings (they never paged)', async () => {
    withTopic();
    // As the previous release created them: 1 of 1, notBreaching.
    const old = {
      ...capacityAtLimitAlarm('prod', 'team:ml', 1),
      EvaluationPeriods: 1,
      DatapointsToAlarm: 1,
      TreatMissingData: 'notBreaching',
      AlarmActions: [topic],
      OKActions: [topic],
    };
    cw.on(DescribeAlarmsCommand).resolves({ MetricAlarms: [old] });
    cw.on(PutMetricAlarmCommand).resolves({});
    const r = await syncAlarms({ scopes: [scope('team:ml', 1)], computes: [], atLimit: [] });
    expect(r).toMatchObject({ created: 0, updated: 1 });
    expect(cw.commandCalls(PutMetricAlarmCommand)[0]!.args[0].input).toMatchObject({
      EvaluationPeriods: 5,
      DatapointsToAlarm: 3,
      TreatMissingData: 'ignore',
    });
  });

  it('writes what was last seen into the description of a scope at its limit, and keeps it once it clears', async () => {
    withTopic();
    const seen = {
      ...capacityAtLimitAlarm('prod', 'team:ml', 1, 'at its limit: gpus 3 of 3'),
      AlarmActions: [topic],
      OKActions: [topic],
    };
    cw.on(DescribeAlarmsCommand).resolves({ MetricAlarms: [seen] });
    cw.on(PutMetricAlarmCommand).resolves({});
    // Within its limits now: the stored description (with the last numbers) is left as it is.
    expect(await syncAlarms({ scopes: [scope('team:ml', 2, 3)], computes: [], atLimit: [] })).toMatchObject({
      updated: 0,
    });
    // At another limit: the description follows, so the next notification carries the new numbers.
    await syncAlarms({ scopes: [scope('team:ml', 4, 4)], computes: [], atLimit: ['team:ml'] });
    expect(cw.commandCalls(PutMetricAlarmCommand)[0]!.args[0].input.AlarmDescription).toMatch(
      /Last seen: at its limit: gpus 4 of 4$/,
    );
  });
});
