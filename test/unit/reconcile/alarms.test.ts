import {
  CloudWatchClient,
  DeleteAlarmsCommand,
  DescribeAlarmsCommand,
  PutMetricAlarmCommand,
} from '@aws-sdk/client-cloudwatch';
import { mockClient } from 'aws-sdk-client-mock';
import { AlarmEvaluator, alarmStates } from '../../../lambdas/reconcile/alarms';
import { setCloudWatchClient, syncAlarms } from '../../../lambdas/reconcile/cloudwatch-alarms';
import { resetConfig } from '../../../lambdas/shared/config';

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

describe('alarm rules', () => {
  it('names the scope and says why CapacityAtLimit fires, and reports OK once it clears', () => {
    const ev = new AlarmEvaluator();
    const first = ev.evaluate(
      alarmStates({
        scopes: [scope('team:ml', 3, 3), scope('team:b', 1, 4)],
        computes: [],
        atLimit: ['team:ml'],
      }),
      't1',
    );
    expect(first).toEqual([
      expect.objectContaining({
        kind: 'CapacityAtLimit',
        subject: 'team:ml',
        alarm: true,
        reason: 'at its limit: gpus 3 of 3',
      }),
    ]);
    expect(
      ev.evaluate(
        alarmStates({ scopes: [scope('team:ml', 3, 3)], computes: [], atLimit: ['team:ml'] }),
        't2',
      ),
    ).toEqual([]);
    const cleared = ev.evaluate(
      alarmStates({ scopes: [scope('team:ml', 2, 3)], computes: [], atLimit: [] }),
      't3',
    );
    expect(cleared).toEqual([expect.objectContaining({ subject: 'team:ml', alarm: false })]);
  });

  it('fires NodegroupFailed with the health issue, and clears when the compute goes away', () => {
    const ev = new AlarmEvaluator();
    const t = ev.evaluate(
      alarmStates({ scopes: [], computes: [compute('gpu-l4', 'CREATE_FAILED', true)], atLimit: [] }),
      't1',
    );
    expect(t[0]).toMatchObject({ kind: 'NodegroupFailed', subject: 'gpu-l4', alarm: true });
    expect(t[0]!.reason).toBe('node group CREATE_FAILED: AsgInstanceLaunchFailures: no capacity');
    const gone = ev.evaluate(alarmStates({ scopes: [], computes: [], atLimit: [] }), 't2');
    expect(gone).toEqual([
      expect.objectContaining({ key: 'NodegroupFailed:gpu-l4', alarm: false, reason: 'no longer exists' }),
    ]);
  });
});

describe('CloudWatch alarms kept by the reconciler (adapter)', () => {
  const cw = mockClient(CloudWatchClient);
  beforeEach(() => {
    cw.reset();
    process.env.LLMCAP_STAGE = 'prod';
    resetConfig();
    setCloudWatchClient(new CloudWatchClient({ region: 'us-east-1' }));
  });
  afterEach(() => {
    delete process.env.LLMCAP_ALARM_TOPIC_ARN;
    setCloudWatchClient(undefined);
  });

  it('does nothing without an on-call topic (the local control plane)', async () => {
    expect(await syncAlarms({ scopes: [scope('team:ml', 1)], computes: [] })).toEqual({
      created: 0,
      deleted: 0,
    });
    expect(cw.calls()).toHaveLength(0);
  });

  it('creates a missing alarm per scope and compute, naming it, and deletes those of vanished ones', async () => {
    process.env.LLMCAP_ALARM_TOPIC_ARN = 'arn:aws:sns:us-east-1:123456789012:oncall';
    cw.on(DescribeAlarmsCommand).resolves({
      MetricAlarms: [
        { AlarmName: 'llmcap-prod-CapacityAtLimit-team:ml' },
        { AlarmName: 'llmcap-prod-CapacityAtLimit-team:gone' },
        { AlarmName: 'llmcap-prod-ReconcileErrors' },
      ],
    });
    cw.on(PutMetricAlarmCommand).resolves({});
    cw.on(DeleteAlarmsCommand).resolves({});
    const r = await syncAlarms({
      scopes: [scope('team:ml', 1), scope('team:new', 1)],
      computes: [compute('gpu-l4', 'ACTIVE', false)],
    });
    expect(r).toEqual({ created: 2, deleted: 1 });
    const puts = cw.commandCalls(PutMetricAlarmCommand).map((c) => c.args[0].input);
    expect(puts.map((p) => p.AlarmName).sort()).toEqual([
      'llmcap-prod-CapacityAtLimit-team:new',
      'llmcap-prod-NodegroupFailed-gpu-l4',
    ]);
    const team = puts.find((p) => p.AlarmName?.includes('team:new'))!;
    expect(team.AlarmDescription).toMatch(/Scope team:new/);
    expect(team.Dimensions).toContainEqual({ Name: 'Scope', Value: 'team:new' });
    expect(team.AlarmActions).toEqual(['arn:aws:sns:us-east-1:123456789012:oncall']);
    expect(cw.commandCalls(DeleteAlarmsCommand)[0]!.args[0].input.AlarmNames).toEqual([
      'llmcap-prod-CapacityAtLimit-team:gone',
    ]);
  });
});
