import {
  type CloudWatchClient,
  DeleteAlarmsCommand,
  type MetricAlarm,
  PutMetricAlarmCommand,
} from '@aws-sdk/client-cloudwatch';
import {
  type AlarmDefinition,
  alarmPrefix,
  capacityAtLimitAlarm,
  computeDescriptionBase,
  nodegroupFailedAlarm,
  scopeDescriptionBase,
} from '../domain/alarms';
import type { ReconcileSummary } from '../domain/reconcile-pass';
import { cloudWatchClient } from '../shared/clients';
import { config } from '../shared/config';
import { alarmsNamed } from './alarm-states';

/**
 * One CloudWatch alarm per scope (CapacityAtLimit) and per compute (NodegroupFailed), created, updated and deleted
 * by the reconciler as scopes and computes come and go, so that each notification names its scope or compute.
 * The client finds CloudWatch as every SDK client does (locally AWS_ENDPOINT_URL_CLOUDWATCH points it at the
 * cloud simulator); without LLMCAP_ALARM_TOPIC_ARN there is nowhere to page, and nothing is kept.
 */
type Summary = Pick<ReconcileSummary, 'scopes' | 'computes' | 'atLimit'>;

/** What a scope at its limit looks like, for the alarm's description: the numbers on-call needs first. */
export function describeScope(s: ReconcileSummary['scopes'][number]): string {
  const over = (Object.keys(s.limit) as (keyof typeof s.limit)[])
    .filter((r) => s.limit[r] !== undefined && s.usage[r] >= (s.limit[r] ?? Number.POSITIVE_INFINITY))
    .map((r) => `${r} ${s.usage[r]} of ${s.limit[r]}`);
  const pending = Object.entries(s.pending)
    .filter(([, n]) => (n ?? 0) > 0)
    .map(([reason, n]) => `${n} pending ${reason}`);
  return (
    [...(over.length ? [`at its limit: ${over.join(', ')}`] : []), ...pending].join('; ') ||
    'within its limits'
  );
}

export interface WantedAlarm {
  definition: AlarmDefinition;
  /**
   * Set when nothing new was seen (the scope is within its limits, the node group healthy): a stored description
   * that starts with this is kept, so the last failure stays in it and no call is spent on the change.
   */
  descriptionBase?: string;
}

export function wantedAlarms(s: Summary, stage: string, rateMinutes: number): WantedAlarm[] {
  const atLimit = new Set(s.atLimit);
  return [
    ...s.scopes.map((x) =>
      atLimit.has(x.scope)
        ? { definition: capacityAtLimitAlarm(stage, x.scope, rateMinutes, describeScope(x)) }
        : {
            definition: capacityAtLimitAlarm(stage, x.scope, rateMinutes),
            descriptionBase: scopeDescriptionBase(x.scope, rateMinutes),
          },
    ),
    ...s.computes.map((x) =>
      x.failed
        ? {
            definition: nodegroupFailedAlarm(
              stage,
              x.compute,
              rateMinutes,
              `${x.status}: ${x.statusMessage ?? 'no health issue reported'}`,
            ),
          }
        : {
            definition: nodegroupFailedAlarm(stage, x.compute, rateMinutes),
            descriptionBase: computeDescriptionBase(x.compute),
          },
    ),
  ];
}

const sameList = (a: readonly string[] | undefined, b: readonly string[] | undefined) =>
  JSON.stringify([...(a ?? [])].sort()) === JSON.stringify([...(b ?? [])].sort());

/** Whether the stored alarm differs from what llmcap wants (an upgrade changed a setting, or the topic moved). */
export function alarmDiffers(have: MetricAlarm, want: WantedAlarm, topic: string): boolean {
  const d = want.definition;
  const description = want.descriptionBase
    ? (have.AlarmDescription ?? '').startsWith(want.descriptionBase)
    : have.AlarmDescription === d.AlarmDescription;
  const dims = (x: { Name?: string; Value?: string }[] | undefined) =>
    (x ?? []).map((y) => `${y.Name}=${y.Value}`);
  return !(
    description &&
    have.Namespace === d.Namespace &&
    have.MetricName === d.MetricName &&
    have.Statistic === d.Statistic &&
    have.Period === d.Period &&
    have.EvaluationPeriods === d.EvaluationPeriods &&
    (have.DatapointsToAlarm ?? have.EvaluationPeriods) === d.DatapointsToAlarm &&
    have.Threshold === d.Threshold &&
    have.ComparisonOperator === d.ComparisonOperator &&
    (have.TreatMissingData ?? 'missing') === d.TreatMissingData &&
    sameList(dims(have.Dimensions), dims(d.Dimensions)) &&
    sameList(have.AlarmActions, [topic]) &&
    sameList(have.OKActions, [topic])
  );
}

/** Creates or replaces one alarm with its actions on the on-call topic (ALARM and the return to OK). */
export async function putAlarm(
  definition: AlarmDefinition,
  topic: string,
  c: CloudWatchClient = cloudWatchClient(),
): Promise<void> {
  await c.send(new PutMetricAlarmCommand({ ...definition, AlarmActions: [topic], OKActions: [topic] }));
}

async function existing(prefix: string): Promise<Map<string, MetricAlarm>> {
  return new Map((await alarmsNamed(prefix)).map((a) => [a.AlarmName!, a]));
}

export async function syncAlarms(s: Summary): Promise<{ created: number; updated: number; deleted: number }> {
  const { stage, reconcileRateMinutes, alarmTopicArn: topic } = config();
  if (!topic) return { created: 0, updated: 0, deleted: 0 };
  const prefix = alarmPrefix(stage);
  const have = await existing(prefix);
  const want = wantedAlarms(s, stage, reconcileRateMinutes);
  const wanted = new Set(want.map((w) => w.definition.AlarmName));
  let created = 0;
  let updated = 0;
  // PutMetricAlarm is limited to a few calls a second: only what is missing or differs is written.
  for (const w of want) {
    const old = have.get(w.definition.AlarmName);
    if (old && !alarmDiffers(old, w, topic)) continue;
    const definition =
      old && w.descriptionBase && old.AlarmDescription?.startsWith(w.descriptionBase)
        ? { ...w.definition, AlarmDescription: old.AlarmDescription }
        : w.definition;
    await putAlarm(definition, topic);
    if (old) updated++;
    else created++;
  }
  const stale = [...have.keys()].filter(
    (n) =>
      !wanted.has(n) &&
      (n.startsWith(`${prefix}CapacityAtLimit-`) || n.startsWith(`${prefix}NodegroupFailed-`)),
  );
  for (let i = 0; i < stale.length; i += 100) {
    await cloudWatchClient().send(new DeleteAlarmsCommand({ AlarmNames: stale.slice(i, i + 100) }));
  }
  return { created, updated, deleted: stale.length };
}
