import { DescribeAlarmsCommand, type MetricAlarm } from '@aws-sdk/client-cloudwatch';
import { alarmPrefix } from '../domain/alarms';
import { cloudWatchClient } from '../shared/clients';
import { config } from '../shared/config';

/**
 * Reading alarms, apart from changing them (alarms.ts), so that the API's bundle, which only reads them
 * (GET /v1/alarms), carries no command its role may not call.
 */

/** Every metric alarm whose name starts with `prefix`, page by page. */
export async function alarmsNamed(prefix: string): Promise<MetricAlarm[]> {
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

/** The stage's alarms as CloudWatch has them, with their state (GET /v1/alarms). */
export const stageAlarms = (): Promise<MetricAlarm[]> => alarmsNamed(alarmPrefix(config().stage));
