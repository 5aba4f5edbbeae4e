import { ConfigError, NetworkError } from '../client';
import { type Command, EXIT, positionals, str, UsageError } from '../command';

/**
 * `alarm test`: sets a stage alarm to ALARM with CloudWatch SetAlarmState, so that its actions run and on-call
 * is notified exactly as for a real alarm; CloudWatch puts the real state back at its next evaluation. Against
 * AWS with the caller's credentials; locally against the cloud simulator of `npm start`.
 */

const STATES = ['ALARM', 'OK', 'INSUFFICIENT_DATA'] as const;

interface Target {
  local: boolean;
  stage: string;
  region: string;
  endpoint?: string;
}

function target(values: Record<string, unknown>): Target {
  const endpoint = str(values as never, 'endpoint') ?? process.env.LLMCAP_ENDPOINT;
  const stack = str(values as never, 'stack') ?? process.env.LLMCAP_STACK;
  const local =
    !stack &&
    (endpoint === undefined || /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/|$)/.test(endpoint));
  const fromStack = stack ? /^llmcap-([a-z][a-z0-9-]{0,15})$/.exec(stack)?.[1] : undefined;
  const stage =
    str(values as never, 'stage') ?? fromStack ?? (local ? (process.env.LLMCAP_STAGE ?? 'local') : undefined);
  if (!stage)
    throw new UsageError(
      `cannot tell the stage${stack ? ` from the stack name ${stack}` : ''}; pass --stage STAGE (the stage config's "stage")`,
    );
  if (local) {
    return {
      local,
      stage,
      region: str(values as never, 'region') ?? process.env.AWS_REGION ?? 'us-east-1',
      // The SDK honours AWS_ENDPOINT_URL_CLOUDWATCH by itself; without it, the simulator of `npm start`.
      endpoint:
        process.env.AWS_ENDPOINT_URL_CLOUDWATCH ?? `http://127.0.0.1:${process.env.LLMCAP_SIM_PORT ?? 4510}`,
    };
  }
  const region = str(values as never, 'region') ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  if (!region)
    throw new ConfigError('cannot tell the AWS region of the stage; pass --region or set AWS_REGION');
  return { local, stage, region };
}

export const alarmTest: Command = {
  name: 'alarm test',
  summary: 'Set a stage alarm to ALARM so that on-call receives a test notification',
  usage: ['alarm test [ALARM_NAME] [--stage STAGE] [--state ALARM|OK|INSUFFICIENT_DATA] [--reason TEXT]'],
  help: `Calls CloudWatch SetAlarmState on one of the stage's alarms (default llmcap-<stage>-ReconcileErrors).
CloudWatch then runs the alarm's actions as for a real state change: the on-call topic receives
'ALARM: "<name>" in <region>', and each subscription (mail, HTTPS endpoint) gets it. At its next
evaluation, within a minute, CloudWatch sets the state the data says again, which notifies OK.

Against AWS it uses your credentials (the default chain) and needs cloudwatch:SetAlarmState on the alarm
and cloudwatch:DescribeAlarms. Without --endpoint, --stack or LLMCAP_ENDPOINT it talks to the
cloud simulator of the local control plane (AWS_ENDPOINT_URL_CLOUDWATCH, else 127.0.0.1:$LLMCAP_SIM_PORT).

Options:
  --stage STAGE      the stage (default: from --stack llmcap-<stage>, or local)
  --state STATE      ALARM (default), OK or INSUFFICIENT_DATA
  --reason TEXT      the StateReason on-call reads (default: says it is a test and who sent it)

Examples:
  llmcap --stack llmcap-prod alarm test
  llmcap alarm test llmcap-local-ReconcileStale`,
  options: { stage: { type: 'string' }, state: { type: 'string' }, reason: { type: 'string' } },
  async run(ctx) {
    const [given] = positionals(ctx.args, 0, 1, 'alarm name');
    const t = target(ctx.args.values);
    const state = (str(ctx.args.values, 'state') ?? 'ALARM').toUpperCase();
    if (!(STATES as readonly string[]).includes(state))
      throw new UsageError(`--state must be one of ${STATES.join(', ')}, not ${state}`);
    const name = given ?? `llmcap-${t.stage}-ReconcileErrors`;
    const who = process.env.USER ?? process.env.USERNAME ?? 'someone';
    const reason =
      str(ctx.args.values, 'reason') ??
      `llmcap alarm test by ${who}: checking that this alarm reaches on-call; nothing is wrong. CloudWatch sets the real state again at its next evaluation.`;

    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const { CloudWatchClient, DescribeAlarmsCommand, SetAlarmStateCommand } = await import(
      '@aws-sdk/client-cloudwatch'
    );
    const cw = new CloudWatchClient({
      region: t.region,
      ...(t.endpoint ? { endpoint: t.endpoint } : {}),
      ...(t.local && !process.env.AWS_ACCESS_KEY_ID
        ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
        : {}),
    });
    try {
      const found = (await cw.send(new DescribeAlarmsCommand({ AlarmNames: [name] }))).MetricAlarms?.[0];
      if (!found) {
        const others = await cw.send(
          new DescribeAlarmsCommand({ AlarmNamePrefix: `llmcap-${t.stage}-`, MaxRecords: 100 }),
        );
        const names = (others.MetricAlarms ?? []).map((a) => a.AlarmName ?? '');
        const per = names.filter((n) => /-(CapacityAtLimit|NodegroupFailed)-/.test(n));
        const stage = names.filter((n) => !per.includes(n));
        ctx.err(
          `error: no alarm ${name} in ${t.local ? 'the local cloud simulator' : t.region}; ${
            names.length
              ? `the stage's alarms: ${stage.join(', ')}, and ${per.length} per scope or compute`
              : 'is the stage deployed (or npm start running)?'
          }`,
        );
        return EXIT.notFound;
      }
      await cw.send(
        new SetAlarmStateCommand({ AlarmName: name, StateValue: state as never, StateReason: reason }),
      );
      const actions =
        state === 'ALARM'
          ? found.AlarmActions
          : state === 'OK'
            ? found.OKActions
            : found.InsufficientDataActions;
      ctx.out(`${name}: ${found.StateValue} -> ${state}`);
      if (found.StateValue === state) {
        ctx.out(
          `It was ${state} already: CloudWatch notifies only on a change, so nothing was sent. Try --state OK first.`,
        );
        return EXIT.ok;
      }
      ctx.out(
        actions?.length
          ? `CloudWatch notifies ${actions.join(', ')} now; on-call should receive '${state}: "${name}"'.`
          : `The alarm has no ${state} action: nobody is notified.`,
      );
      ctx.out(
        'At its next evaluation (within a minute) CloudWatch sets the state the data says, and notifies that too.',
      );
      return EXIT.ok;
    } catch (e) {
      const err = e as Error & { $metadata?: { httpStatusCode?: number } };
      if (err.$metadata?.httpStatusCode) {
        ctx.err(`error: CloudWatch refused: ${err.name}: ${err.message}`);
        return err.$metadata.httpStatusCode >= 500 ? EXIT.server : EXIT.refused;
      }
      if (/credential/i.test(err.message)) throw new ConfigError(err.message);
      throw new NetworkError(
        `cannot reach CloudWatch${t.endpoint ? ` at ${t.endpoint}` : ''}: ${err.message}${t.local ? '; is the local control plane running (npm start)?' : ''}`,
      );
    } finally {
      cw.destroy();
    }
  },
};

export const ALARM_COMMANDS: Command[] = [alarmTest];
