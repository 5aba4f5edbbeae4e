import {
  CloudWatchClient,
  DeleteAlarmsCommand,
  DescribeAlarmsCommand,
  PutMetricAlarmCommand,
} from '@aws-sdk/client-cloudwatch';
import { config } from '../shared/config';
import type { ReconcileSummary } from './reconcile';

/**
 * One CloudWatch alarm per scope (CapacityAtLimit) and per compute (NodegroupFailed), created and deleted by
 * the reconciler as scopes and computes come and go, so that each notification names its scope or compute.
 * Without LLMCAP_ALARM_TOPIC_ARN (the local control plane) it does nothing: the local evaluator stands in.
 */
let cw: CloudWatchClient | undefined;

export function setCloudWatchClient(c: CloudWatchClient | undefined): void {
  cw = c;
}

function client(): CloudWatchClient {
  cw ??= new CloudWatchClient({ maxAttempts: 6, retryMode: 'adaptive' });
  return cw;
}

export function alarmName(kind: 'CapacityAtLimit' | 'NodegroupFailed', subject: string): string {
  // Alarm names allow most characters; keep the scope readable (team:ml) and bounded.
  return `llmcap-${config().stage}-${kind}-${subject}`.slice(0, 255);
}

export interface WantedAlarm {
  name: string;
  kind: 'CapacityAtLimit' | 'NodegroupFailed';
  subject: string;
}

export function wantedAlarms(s: Pick<ReconcileSummary, 'scopes' | 'computes'>): WantedAlarm[] {
  return [
    ...s.scopes.map((x) => ({
      name: alarmName('CapacityAtLimit', x.scope),
      kind: 'CapacityAtLimit' as const,
      subject: x.scope,
    })),
    ...s.computes.map((x) => ({
      name: alarmName('NodegroupFailed', x.compute),
      kind: 'NodegroupFailed' as const,
      subject: x.compute,
    })),
  ];
}

async function existing(prefix: string): Promise<Set<string>> {
  const names = new Set<string>();
  let token: string | undefined;
  do {
    const out = await client().send(
      new DescribeAlarmsCommand({ AlarmNamePrefix: prefix, NextToken: token, MaxRecords: 100 }),
    );
    for (const a of out.MetricAlarms ?? []) if (a.AlarmName) names.add(a.AlarmName);
    token = out.NextToken;
  } while (token);
  return names;
}

export async function syncAlarms(
  s: Pick<ReconcileSummary, 'scopes' | 'computes'>,
): Promise<{ created: number; deleted: number }> {
  const topic = process.env.LLMCAP_ALARM_TOPIC_ARN;
  if (!topic) return { created: 0, deleted: 0 };
  const stage = config().stage;
  const prefix = `llmcap-${stage}-`;
  const have = await existing(prefix);
  const want = wantedAlarms(s);
  const wanted = new Set(want.map((w) => w.name));
  let created = 0;
  for (const w of want) {
    if (have.has(w.name)) continue;
    const scope = w.kind === 'CapacityAtLimit';
    await client().send(
      new PutMetricAlarmCommand({
        AlarmName: w.name,
        AlarmDescription: scope
          ? `Scope ${w.subject} is at its quota limit or has requests refused for LimitExceeded or Headroom. Runbook: docs/operations.md#capacityatlimit`
          : `The node group of compute ${w.subject} failed (CREATE_FAILED, DELETE_FAILED or DEGRADED); see its statusMessage. Runbook: docs/operations.md#nodegroupfailed`,
        Namespace: 'llmcap',
        MetricName: w.kind,
        Dimensions: [
          { Name: 'service', Value: 'llmcap' },
          { Name: 'stage', Value: stage },
          { Name: scope ? 'Scope' : 'Compute', Value: w.subject },
        ],
        Statistic: 'Maximum',
        Period: 60,
        // One breaching minute is enough: a CREATE_FAILED group is deleted (to be re-created) by the next pass,
        // so the failed state may be reported only once.
        EvaluationPeriods: 1,
        DatapointsToAlarm: 1,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
        AlarmActions: [topic],
        OKActions: [topic],
      }),
    );
    created++;
  }
  const stale = [...have].filter(
    (n) =>
      !wanted.has(n) &&
      (n.startsWith(`${prefix}CapacityAtLimit-`) || n.startsWith(`${prefix}NodegroupFailed-`)),
  );
  for (let i = 0; i < stale.length; i += 100) {
    await client().send(new DeleteAlarmsCommand({ AlarmNames: stale.slice(i, i + 100) }));
  }
  return { created, deleted: stale.length };
}
