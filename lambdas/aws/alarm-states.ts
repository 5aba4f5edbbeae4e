import type { MetricAlarm } from '@aws-sdk/client-cloudwatch';
import { alarmPrefix } from '../domain/alarms';
import { cloudWatchClient } from '../shared/clients';
import { config } from '../shared/config';

/**
 * Reading alarms, apart from changing them (alarms.ts), so that the API's bundle, which only reads them
 * (GET /v1/alarms), carries no command its role may not call.
 */

/** Every metric alarm whose name starts with `prefix`, page by page. */
export async function alarmsNamed(prefix: string): Promise<MetricAlarm[]> {
  // Loaded here, not with the module: the API's cold start would otherwise pay ~17 ms for the CloudWatch SDK
  // that only GET /v1/alarms needs. A require, as clients.ts loads the client: the SDK is CommonJS.
  const { DescribeAlarmsCommand } =
    require('@aws-sdk/client-cloudwatch') as typeof import('@aws-sdk/client-cloudwatch');
  const alarms: MetricAlarm[] = [];
  let token: string | undefined;
  do {
    const out = await cloudWatchClient().send(
      new DescribeAlarmsCommand({ AlarmNamePrefix: prefix, NextToken: token, MaxRecords: 100 }),
    );
    alarms.push(...(out.MetricAlarms ?? []).filter((a) => a.AlarmName));
    token = out.NextToken;
  } while (token);
  return alarms;
}

/** An alarm as the service reads it: no SDK type past this adapter. */
export interface StageAlarm {
  name: string;
  metricName?: string;
  /** The Scope or Compute dimension of a per-scope or per-compute alarm. */
  about?: { dimension: 'Scope' | 'Compute'; value: string };
  state: string;
  reason?: string;
  updatedAt?: string;
  description?: string;
}

/** The stage's alarms as CloudWatch has them, with their state (GET /v1/alarms). */
export async function stageAlarms(): Promise<StageAlarm[]> {
  return (await alarmsNamed(alarmPrefix(config().stage))).map((a) => {
    const dim = a.Dimensions?.find((d) => (d.Name === 'Scope' || d.Name === 'Compute') && d.Value);
    return {
      name: a.AlarmName!,
      ...(a.MetricName ? { metricName: a.MetricName } : {}),
      ...(dim ? { about: { dimension: dim.Name as 'Scope' | 'Compute', value: dim.Value! } } : {}),
      state: a.StateValue ?? 'INSUFFICIENT_DATA',
      ...(a.StateReason ? { reason: a.StateReason } : {}),
      ...(a.StateUpdatedTimestamp ? { updatedAt: new Date(a.StateUpdatedTimestamp).toISOString() } : {}),
      ...(a.AlarmDescription ? { description: a.AlarmDescription } : {}),
    };
  });
}
