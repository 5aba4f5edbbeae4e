import { type AlarmState, evaluateAlarm, evaluationRange, type TreatMissingData } from './alarm-eval';
import type { Clock } from './clock';
import { type Dimension, extractEmf, METRIC_UNITS, metricKey } from './emf';
import { evaluateExpression, MathError, parseExpression, references, type Series } from './metric-math';

/**
 * CloudWatch as llmcap uses it: metrics (from EMF log events and from what the simulated Lambda and Step Functions
 * report), metric alarms evaluated every minute on the simulator's clock with CloudWatch's rules, and alarm actions
 * published to the simulated SNS. Served over the protocol the installed @aws-sdk/client-cloudwatch speaks:
 * AWS JSON 1.0 with query compatibility (X-Amz-Target GraniteServiceVersion20100801.<Operation>).
 */

export const CLOUDWATCH_TARGET = 'GraniteServiceVersion20100801.';

export class CloudWatchError extends Error {
  constructor(
    /** The awsQuery error code, sent in x-amzn-query-error (what the SDK shows as error.Code). */
    readonly code: string,
    /** The Smithy shape name, sent as __type (what the SDK turns into the exception class). */
    readonly shape: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

const invalid = (message: string) =>
  new CloudWatchError('InvalidParameterValue', 'InvalidParameterValueException', message);
const missing = (name: string) =>
  new CloudWatchError(
    'MissingParameter',
    'MissingRequiredParameterException',
    `The parameter ${name} is required.`,
  );
const combination = (message: string) =>
  new CloudWatchError('InvalidParameterCombination', 'InvalidParameterCombinationException', message);
const notFound = (message: string) =>
  new CloudWatchError('ResourceNotFound', 'ResourceNotFound', message, 404);

interface Datapoint {
  t: number;
  values: number[];
  unit: string;
}

interface AlarmHistoryItem {
  AlarmName: string;
  AlarmType: 'MetricAlarm';
  /** Epoch milliseconds here; seconds on the wire. */
  Timestamp: number;
  HistoryItemType: 'ConfigurationUpdate' | 'StateUpdate' | 'Action';
  HistorySummary: string;
  HistoryData: string;
}

interface StoredMetric {
  namespace: string;
  name: string;
  dimensions: Dimension[];
  points: Datapoint[];
}

export type Statistic = 'SampleCount' | 'Average' | 'Sum' | 'Minimum' | 'Maximum';
const STATISTICS: Statistic[] = ['SampleCount', 'Average', 'Sum', 'Minimum', 'Maximum'];
const OPERATORS = {
  GreaterThanOrEqualToThreshold: {
    test: (v: number, t: number) => v >= t,
    words: 'greater than or equal to',
  },
  GreaterThanThreshold: { test: (v: number, t: number) => v > t, words: 'greater than' },
  LessThanThreshold: { test: (v: number, t: number) => v < t, words: 'less than' },
  LessThanOrEqualToThreshold: { test: (v: number, t: number) => v <= t, words: 'less than or equal to' },
} as const;
type Operator = keyof typeof OPERATORS;
const TREATMENTS: TreatMissingData[] = ['missing', 'notBreaching', 'breaching', 'ignore'];

export interface MetricStatInput {
  Metric: { Namespace?: string; MetricName?: string; Dimensions?: Dimension[] };
  Period: number;
  Stat: string;
  Unit?: string;
}

export interface MetricDataQueryInput {
  Id: string;
  MetricStat?: MetricStatInput;
  Expression?: string;
  Label?: string;
  ReturnData?: boolean;
  Period?: number;
}

/** A metric alarm as DescribeAlarms returns it (timestamps in ms here, epoch seconds on the wire). */
export interface SimAlarm {
  AlarmName: string;
  AlarmArn: string;
  AlarmDescription?: string;
  AlarmConfigurationUpdatedTimestamp: number;
  ActionsEnabled: boolean;
  OKActions: string[];
  AlarmActions: string[];
  InsufficientDataActions: string[];
  StateValue: AlarmState;
  StateReason: string;
  StateReasonData?: string;
  StateUpdatedTimestamp: number;
  StateTransitionedTimestamp: number;
  MetricName?: string;
  Namespace?: string;
  Statistic?: Statistic;
  Dimensions?: Dimension[];
  Period?: number;
  Unit?: string;
  EvaluationPeriods: number;
  DatapointsToAlarm?: number;
  Threshold: number;
  ComparisonOperator: Operator;
  TreatMissingData?: TreatMissingData;
  Metrics?: MetricDataQueryInput[];
  /** Not on the wire: when the simulator first evaluates it (the minute after it was created). */
  createdAt: number;
}

export interface AlarmStateChange {
  alarm: SimAlarm;
  oldState: AlarmState;
  newState: AlarmState;
  reason: string;
  /** ms on the simulator's clock. */
  at: number;
  /** The notification CloudWatch publishes to SNS for this change (also when the alarm has no action). */
  notification: Record<string, unknown>;
}

export interface AlarmActionSink {
  /** CloudWatch publishing to a topic; false when no such topic exists (the action is dropped, as in AWS). */
  publishAlarm(topicArn: string, subject: string, message: string): boolean;
}

export interface CloudWatchOptions {
  clock: Clock;
  region: string;
  accountId: string;
  actions: AlarmActionSink;
  log?: (line: string) => void;
}

const MINUTE = 60_000;
/** CloudWatch keeps standard-resolution data for 15 months; two weeks is all an alarm or this simulator needs. */
const RETENTION_MS = 15 * 24 * 3600_000;

export class CloudWatchService {
  private readonly metrics = new Map<string, StoredMetric>();
  private readonly alarms = new Map<string, SimAlarm>();
  private readonly listeners = new Set<(c: AlarmStateChange) => void>();
  /** DescribeAlarmHistory's items, oldest first; kept after the alarm is deleted, as CloudWatch does. */
  private readonly history: AlarmHistoryItem[] = [];
  /** The last minute boundary at which every alarm was evaluated. */
  private evaluatedUpTo: number;
  readonly emfErrors: string[] = [];

  constructor(readonly opts: CloudWatchOptions) {
    this.evaluatedUpTo = Math.floor(opts.clock.now() / MINUTE) * MINUTE;
  }

  onStateChange(listener: (c: AlarmStateChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  listAlarms(): SimAlarm[] {
    return [...this.alarms.values()].sort((a, b) => cmp(a.AlarmName, b.AlarmName));
  }

  alarm(name: string): SimAlarm | undefined {
    return this.alarms.get(name);
  }

  // --- data in -----------------------------------------------------------------------------------------------

  putDatapoint(
    namespace: string,
    name: string,
    dimensions: Dimension[],
    t: number,
    values: number[],
    unit = 'None',
  ): void {
    const key = metricKey(namespace, name, dimensions);
    let m = this.metrics.get(key);
    if (!m) {
      m = { namespace, name, dimensions: [...dimensions], points: [] };
      this.metrics.set(key, m);
    }
    const p = { t, values: [...values], unit };
    // Usually appended in time order; a late datapoint is inserted where it belongs.
    let i = m.points.length;
    while (i > 0 && (m.points[i - 1] as Datapoint).t > t) i--;
    m.points.splice(i, 0, p);
  }

  /**
   * What CloudWatch Logs does with the events of a log group: every EMF document becomes metrics, everything else
   * is only a log line. Evaluations due before the events arrived run first, so they cannot see them.
   */
  putLogEvents(events: { timestamp: number; message: string }[]): { metrics: number; errors: string[] } {
    this.catchUp();
    let count = 0;
    const errors: string[] = [];
    for (const e of events) {
      const x = extractEmf(e.message, this.opts.clock.now());
      for (const m of x.metrics) {
        this.putDatapoint(m.namespace, m.name, m.dimensions, m.timestamp, m.values, m.unit);
        count++;
      }
      errors.push(...x.errors);
    }
    if (errors.length) {
      this.emfErrors.push(...errors);
      this.emfErrors.splice(0, Math.max(0, this.emfErrors.length - 100));
    }
    return { metrics: count, errors };
  }

  // --- time --------------------------------------------------------------------------------------------------

  /** Runs every evaluation due by the clock: each alarm once a minute, at the minute boundary. */
  catchUp(): void {
    const now = this.opts.clock.now();
    while (this.evaluatedUpTo + MINUTE <= now) {
      this.evaluatedUpTo += MINUTE;
      for (const a of this.listAlarms())
        if (a.createdAt < this.evaluatedUpTo) this.evaluate(a, this.evaluatedUpTo);
    }
    this.prune(now);
  }

  private prune(now: number): void {
    for (const m of this.metrics.values()) {
      const first = m.points.findIndex((p) => p.t >= now - RETENTION_MS);
      if (first > 0) m.points.splice(0, first);
    }
  }

  // --- statistics --------------------------------------------------------------------------------------------

  private matching(namespace: string, name: string, dimensions: Dimension[]): StoredMetric | undefined {
    return this.metrics.get(metricKey(namespace, name, dimensions));
  }

  /** One statistic of one metric over [start, end); undefined when no datapoint fell in it. */
  statistic(
    m: StoredMetric | undefined,
    stat: Statistic,
    start: number,
    end: number,
    unit?: string,
  ): { value: number; samples: number } | undefined {
    if (!m) return undefined;
    const values: number[] = [];
    for (const p of m.points) {
      if (p.t < start) continue;
      if (p.t >= end) break;
      if (unit !== undefined && p.unit !== unit) continue;
      values.push(...p.values);
    }
    if (values.length === 0) return undefined;
    const sum = values.reduce((a, b) => a + b, 0);
    const value = {
      SampleCount: values.length,
      Sum: sum,
      Average: sum / values.length,
      Minimum: Math.min(...values),
      Maximum: Math.max(...values),
    }[stat];
    return { value, samples: values.length };
  }

  /** Values of a MetricStat or expression query over consecutive periods starting at `starts`. */
  private series(queries: MetricDataQueryInput[], id: string, starts: number[]): Series {
    const byId = new Map(queries.map((q) => [q.Id, q]));
    const cache = new Map<string, Series>();
    const resolve = (qid: string): Series => {
      const hit = cache.get(qid);
      if (hit) return hit;
      const q = byId.get(qid);
      if (!q) return Array.from({ length: starts.length }, () => undefined);
      let out: Series;
      if (q.MetricStat) {
        const s = q.MetricStat;
        const metric = this.matching(
          s.Metric.Namespace ?? '',
          s.Metric.MetricName ?? '',
          s.Metric.Dimensions ?? [],
        );
        out = starts.map(
          (t) => this.statistic(metric, s.Stat as Statistic, t, t + s.Period * 1000, s.Unit)?.value,
        );
      } else {
        out = evaluateExpression(parseExpression(q.Expression ?? ''), resolve, starts.length);
      }
      cache.set(qid, out);
      return out;
    };
    return resolve(id);
  }

  // --- alarm evaluation --------------------------------------------------------------------------------------

  private periodOf(a: SimAlarm): number {
    if (a.Period) return a.Period;
    const ret = a.Metrics?.find((q) => q.ReturnData !== false);
    return (
      ret?.Period ?? ret?.MetricStat?.Period ?? a.Metrics?.find((q) => q.MetricStat)?.MetricStat?.Period ?? 60
    );
  }

  /** The aggregated value of each period of the alarm's evaluation range ending at `at`, oldest first. */
  private rangeValues(a: SimAlarm, at: number): { starts: number[]; values: (number | undefined)[] } {
    const p = this.periodOf(a) * 1000;
    const end = Math.floor(at / p) * p;
    const r = evaluationRange(a.EvaluationPeriods);
    const starts = Array.from({ length: r }, (_, i) => end - (r - i) * p);
    if (a.Metrics) {
      const ret = a.Metrics.find((q) => q.ReturnData !== false) as MetricDataQueryInput;
      return { starts, values: this.series(a.Metrics, ret.Id, starts) };
    }
    const metric = this.matching(a.Namespace ?? '', a.MetricName ?? '', a.Dimensions ?? []);
    const values = starts.map(
      (t) => this.statistic(metric, a.Statistic as Statistic, t, t + p, a.Unit)?.value,
    );
    return { starts, values };
  }

  private evaluate(a: SimAlarm, at: number): void {
    const { starts, values } = this.rangeValues(a, at);
    const op = OPERATORS[a.ComparisonOperator];
    const breaches = (v: number) => op.test(v, a.Threshold);
    const n = a.EvaluationPeriods;
    const m = a.DatapointsToAlarm ?? n;
    const treat = a.TreatMissingData ?? 'missing';
    const e = evaluateAlarm({ points: values, n, m, treat, breaches });
    if (e.state === undefined || e.state === a.StateValue) return;
    const to = e.state;
    const from = a.StateValue;
    const shown = (want: boolean) =>
      e.evaluated
        .filter((i) => breaches(values[i] as number) === want)
        .map((i) => datum(values[i], starts[i]));
    let reason: string;
    if (to === 'INSUFFICIENT_DATA') {
      const unknown = values.filter((v) => v === undefined).length;
      reason = `Insufficient Data: ${unknown} datapoint${s(unknown)} ${unknown === 1 ? 'was' : 'were'} unknown.`;
    } else if (e.allMissing) {
      reason = `Threshold Crossed: no datapoints were received for ${n} period${s(n)} and ${n} missing datapoint${s(n)} ${n === 1 ? 'was' : 'were'} treated as [${treat === 'breaching' ? 'Breaching' : 'NonBreaching'}].`;
    } else {
      const alarm = to === 'ALARM';
      const count = alarm
        ? e.breachingReal + (treat === 'breaching' ? e.filled : 0)
        : n - e.breachingReal - (treat === 'breaching' ? e.filled : 0);
      const list = shown(alarm);
      const fill =
        e.filled > 0
          ? ` and ${e.filled} missing datapoint${s(e.filled)} ${e.filled === 1 ? 'was' : 'were'} treated as [${treat === 'breaching' ? 'Breaching' : 'NonBreaching'}]`
          : '';
      reason =
        `Threshold Crossed: ${count} out of the last ${n} datapoint${s(n)} [${list.join(', ')}]${fill} ` +
        `${count === 1 && !fill ? 'was' : 'were'} ${alarm ? '' : 'not '}${op.words} the threshold (${javaDouble(a.Threshold)}) ` +
        `(minimum ${m} datapoint${s(m)} for ${from === 'ALARM' ? 'ALARM' : 'OK'} -> ${alarm ? 'ALARM' : 'OK'} transition).`;
    }
    const reasonData = JSON.stringify({
      version: '1.0',
      queryDate: stamp(at),
      startDate: stamp(starts[0] as number),
      ...(a.Statistic ? { statistic: a.Statistic } : {}),
      period: this.periodOf(a),
      recentDatapoints: e.evaluated.map((i) => values[i]),
      threshold: a.Threshold,
      evaluatedDatapoints: e.evaluated.map((i) => ({
        timestamp: stamp(starts[i] as number),
        value: values[i],
      })),
    });
    this.transition(a, to, reason, reasonData, at);
  }

  private transition(
    a: SimAlarm,
    to: AlarmState,
    reason: string,
    reasonData: string | undefined,
    at: number,
  ): void {
    const from = a.StateValue;
    a.StateValue = to;
    a.StateReason = reason;
    a.StateReasonData = reasonData;
    a.StateUpdatedTimestamp = at;
    a.StateTransitionedTimestamp = at;
    const notification = this.notification(a, from, at);
    const change: AlarmStateChange = { alarm: a, oldState: from, newState: to, reason, at, notification };
    this.opts.log?.(`CloudWatch ${a.AlarmName}: ${from} -> ${to}`);
    this.record(a, 'StateUpdate', `Alarm updated from ${from} to ${to}`, at, {
      version: '1.0',
      oldState: { stateValue: from },
      newState: {
        stateValue: to,
        stateReason: reason,
        ...(reasonData ? { stateReasonData: reasonData } : {}),
      },
    });
    if (a.ActionsEnabled) {
      const arns = to === 'ALARM' ? a.AlarmActions : to === 'OK' ? a.OKActions : a.InsufficientDataActions;
      const subject = `${to}: "${a.AlarmName}" in ${regionName(this.opts.region)}`.slice(0, 100);
      for (const arn of arns) {
        const ok = this.opts.actions.publishAlarm(arn, subject, JSON.stringify(notification));
        if (!ok) this.opts.log?.(`CloudWatch ${a.AlarmName}: action ${arn} dropped (no such topic)`);
        // What the on-call runbook reads when nothing arrived: the action's outcome, SNS's answer on failure.
        this.record(
          a,
          'Action',
          ok
            ? `Successfully executed action ${arn}`
            : `Failed to execute action ${arn}. Received error: "Topic does not exist"`,
          at,
          ok
            ? {
                actionState: 'Succeeded',
                stateUpdateTimestamp: at,
                notificationResource: arn,
                publishedMessage: notification,
              }
            : {
                actionState: 'Failed',
                stateUpdateTimestamp: at,
                notificationResource: arn,
                error: 'Topic does not exist',
              },
        );
      }
    }
    for (const l of this.listeners) l(change);
  }

  /** The JSON CloudWatch publishes to SNS on a state change (the Message of the SNS notification). */
  private notification(a: SimAlarm, from: AlarmState, at: number): Record<string, unknown> {
    const evaluation = {
      Period: this.periodOf(a),
      EvaluationPeriods: a.EvaluationPeriods,
      DatapointsToAlarm: a.DatapointsToAlarm ?? a.EvaluationPeriods,
      ComparisonOperator: a.ComparisonOperator,
      Threshold: a.Threshold,
      TreatMissingData: a.TreatMissingData ?? 'missing',
      EvaluateLowSampleCountPercentile: '',
    };
    const dims = (d: Dimension[] | undefined) => (d ?? []).map((x) => ({ value: x.Value, name: x.Name }));
    const trigger: Record<string, unknown> = a.Metrics
      ? {
          ...evaluation,
          Metrics: a.Metrics.map((q) => ({
            Id: q.Id,
            ...(q.Expression ? { Expression: q.Expression } : {}),
            ...(q.Label ? { Label: q.Label } : {}),
            ...(q.MetricStat
              ? {
                  MetricStat: {
                    Metric: {
                      Dimensions: dims(q.MetricStat.Metric.Dimensions),
                      MetricName: q.MetricStat.Metric.MetricName,
                      Namespace: q.MetricStat.Metric.Namespace,
                    },
                    Period: q.MetricStat.Period,
                    Stat: q.MetricStat.Stat,
                  },
                }
              : {}),
            ReturnData: q.ReturnData !== false,
          })),
        }
      : {
          MetricName: a.MetricName,
          Namespace: a.Namespace,
          StatisticType: 'Statistic',
          Statistic: (a.Statistic ?? '').replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase(),
          Unit: a.Unit ?? null,
          Dimensions: dims(a.Dimensions),
          ...evaluation,
        };
    return {
      AlarmName: a.AlarmName,
      AlarmDescription: a.AlarmDescription ?? null,
      AWSAccountId: this.opts.accountId,
      AlarmConfigurationUpdatedTimestamp: stamp(a.AlarmConfigurationUpdatedTimestamp),
      NewStateValue: a.StateValue,
      NewStateReason: a.StateReason,
      StateChangeTime: stamp(at),
      Region: regionName(this.opts.region),
      AlarmArn: a.AlarmArn,
      OldStateValue: from,
      OKActions: a.OKActions,
      AlarmActions: a.AlarmActions,
      InsufficientDataActions: a.InsufficientDataActions,
      Trigger: trigger,
    };
  }

  private record(
    a: SimAlarm,
    type: AlarmHistoryItem['HistoryItemType'],
    summary: string,
    at: number,
    data: Record<string, unknown>,
  ): void {
    this.history.push({
      AlarmName: a.AlarmName,
      AlarmType: 'MetricAlarm',
      Timestamp: at,
      HistoryItemType: type,
      HistorySummary: summary,
      HistoryData: JSON.stringify(data),
    });
  }

  // --- the API -----------------------------------------------------------------------------------------------

  handle(operation: string, body: Record<string, unknown>): Record<string, unknown> {
    this.catchUp();
    switch (operation) {
      case 'PutMetricAlarm':
        this.putMetricAlarm(body);
        return {};
      case 'DescribeAlarms':
        return this.describeAlarms(body);
      case 'DeleteAlarms':
        this.deleteAlarms(body);
        return {};
      case 'SetAlarmState':
        this.setAlarmState(body);
        return {};
      case 'ListMetrics':
        return this.listMetrics(body);
      case 'GetMetricData':
        return this.getMetricData(body);
      case 'GetMetricStatistics':
        return this.getMetricStatistics(body);
      case 'DescribeAlarmHistory':
        return this.describeAlarmHistory(body);
      default:
        throw new CloudWatchError(
          'InvalidAction',
          'UnknownOperationException',
          `The cloud simulator does not serve CloudWatch ${operation}; it serves PutMetricAlarm, DescribeAlarms, DescribeAlarmHistory, DeleteAlarms, SetAlarmState, ListMetrics, GetMetricData and GetMetricStatistics.`,
        );
    }
  }

  private putMetricAlarm(b: Record<string, unknown>): void {
    const name = reqString(b, 'AlarmName', 1, 255);
    if (!/^[\x20-\x7e]+$/.test(name))
      throw invalid('The parameter AlarmName must contain only ASCII characters.');
    const description = optString(b, 'AlarmDescription', 0, 1024);
    const n = reqInt(b, 'EvaluationPeriods', 1);
    const m = b.DatapointsToAlarm === undefined ? undefined : reqInt(b, 'DatapointsToAlarm', 1);
    if (m !== undefined && m > n)
      throw invalid('DatapointsToAlarm must be less than or equal to EvaluationPeriods.');
    if (typeof b.Threshold !== 'number') {
      if (b.ThresholdMetricId !== undefined)
        throw invalid('The cloud simulator does not evaluate anomaly detection alarms (ThresholdMetricId).');
      throw missing('Threshold');
    }
    const op = reqString(b, 'ComparisonOperator', 1, 64);
    if (!(op in OPERATORS))
      throw invalid(
        `The parameter ComparisonOperator must be one of ${Object.keys(OPERATORS).join(', ')} (the simulator does not evaluate anomaly detection operators).`,
      );
    const treat = optString(b, 'TreatMissingData', 1, 255) as TreatMissingData | undefined;
    if (treat !== undefined && !TREATMENTS.includes(treat))
      throw invalid(`The parameter TreatMissingData must be one of ${TREATMENTS.join(', ')}.`);
    const actions = (k: string) => {
      const v = b[k];
      if (v === undefined) return [];
      if (!Array.isArray(v) || v.some((x) => typeof x !== 'string'))
        throw invalid(`The parameter ${k} must be a list of ARNs.`);
      if (v.length > 5) throw invalid(`The collection ${k} must not have a size greater than 5.`);
      for (const arn of v as string[])
        if (!/^arn:aws[a-z-]*:[a-z0-9-]+:/.test(arn)) throw invalid(`Invalid arn syntax: ${arn}`);
      return [...(v as string[])];
    };
    const hasMetric = b.MetricName !== undefined;
    const hasMath = b.Metrics !== undefined;
    if (hasMetric === hasMath) throw combination('Exactly one of MetricName and Metrics must be specified.');
    let single: Pick<SimAlarm, 'MetricName' | 'Namespace' | 'Statistic' | 'Dimensions' | 'Period' | 'Unit'> =
      {};
    let math: MetricDataQueryInput[] | undefined;
    let period: number;
    if (hasMetric) {
      const stat = b.Statistic;
      if (b.ExtendedStatistic !== undefined)
        throw invalid(
          'The cloud simulator does not evaluate percentile statistics (ExtendedStatistic); use Statistic.',
        );
      if (stat === undefined) throw missing('Statistic');
      if (!STATISTICS.includes(stat as Statistic))
        throw invalid(`The parameter Statistic must be one of ${STATISTICS.join(', ')}.`);
      period = checkPeriod(b.Period, 'Period');
      single = {
        MetricName: reqString(b, 'MetricName', 1, 255),
        Namespace: reqString(b, 'Namespace', 1, 255),
        Statistic: stat as Statistic,
        Dimensions: dimensions(b.Dimensions, 'Dimensions'),
        Period: period,
        ...(b.Unit !== undefined ? { Unit: unit(b.Unit) } : {}),
      };
    } else {
      if (
        b.Namespace !== undefined ||
        b.Statistic !== undefined ||
        b.Dimensions !== undefined ||
        b.Period !== undefined
      )
        throw combination('Metrics cannot be combined with Namespace, Statistic, Dimensions or Period.');
      math = queries(b.Metrics, 'Metrics');
      const returned = math.filter((q) => q.ReturnData !== false);
      if (returned.length !== 1) throw invalid('Exactly one element of the Metrics list must return data.');
      const periods = new Set(math.flatMap((q) => (q.MetricStat ? [q.MetricStat.Period] : [])));
      if (periods.size > 1) throw invalid('All metrics of an alarm must use the same period.');
      period = (returned[0]?.Period ?? [...periods][0]) as number;
      if (period === undefined) throw missing('Metrics.member.N.MetricStat.Period');
    }
    if (n * period > (period >= 3600 ? 7 * 86400 : 86400))
      throw invalid(
        'The evaluation period (EvaluationPeriods x Period) must not exceed one day (seven days for periods of an hour or more).',
      );
    const now = this.opts.clock.now();
    const old = this.alarms.get(name);
    const alarm: SimAlarm = {
      AlarmName: name,
      AlarmArn: `arn:aws:cloudwatch:${this.opts.region}:${this.opts.accountId}:alarm:${name}`,
      ...(description !== undefined ? { AlarmDescription: description } : {}),
      AlarmConfigurationUpdatedTimestamp: now,
      ActionsEnabled: b.ActionsEnabled === undefined ? true : b.ActionsEnabled === true,
      OKActions: actions('OKActions'),
      AlarmActions: actions('AlarmActions'),
      InsufficientDataActions: actions('InsufficientDataActions'),
      // A new alarm starts INSUFFICIENT_DATA; an update keeps the state it had (and replaces everything else).
      StateValue: old?.StateValue ?? 'INSUFFICIENT_DATA',
      StateReason: old?.StateReason ?? 'Unchecked: Initial alarm creation',
      ...(old?.StateReasonData ? { StateReasonData: old.StateReasonData } : {}),
      StateUpdatedTimestamp: old?.StateUpdatedTimestamp ?? now,
      StateTransitionedTimestamp: old?.StateTransitionedTimestamp ?? now,
      ...single,
      EvaluationPeriods: n,
      ...(m !== undefined ? { DatapointsToAlarm: m } : {}),
      Threshold: b.Threshold,
      ComparisonOperator: op as Operator,
      ...(treat !== undefined ? { TreatMissingData: treat } : {}),
      ...(math ? { Metrics: math } : {}),
      createdAt: old?.createdAt ?? now,
    };
    this.alarms.set(name, alarm);
    this.record(alarm, 'ConfigurationUpdate', `Alarm "${name}" ${old ? 'updated' : 'created'}`, now, {
      version: '1.0',
      type: old ? 'Update' : 'Create',
    });
  }

  private describeAlarms(b: Record<string, unknown>): Record<string, unknown> {
    const names = b.AlarmNames === undefined ? undefined : stringList(b.AlarmNames, 'AlarmNames', 100);
    const prefix = optString(b, 'AlarmNamePrefix', 1, 255);
    if (names && prefix !== undefined)
      throw combination('AlarmNames and AlarmNamePrefix cannot be used together.');
    const state = optString(b, 'StateValue', 1, 32);
    const actionPrefix = optString(b, 'ActionPrefix', 1, 1024);
    const max = b.MaxRecords === undefined ? 50 : reqInt(b, 'MaxRecords', 1);
    if (max > 100) throw invalid('The parameter MaxRecords must be less than or equal to 100.');
    const types = b.AlarmTypes === undefined ? ['MetricAlarm'] : stringList(b.AlarmTypes, 'AlarmTypes', 2);
    let list = types.includes('MetricAlarm') ? this.listAlarms() : [];
    if (names) list = list.filter((a) => names.includes(a.AlarmName));
    if (prefix !== undefined) list = list.filter((a) => a.AlarmName.startsWith(prefix));
    if (state !== undefined) list = list.filter((a) => a.StateValue === state);
    if (actionPrefix !== undefined)
      list = list.filter((a) =>
        [...a.AlarmActions, ...a.OKActions, ...a.InsufficientDataActions].some((x) =>
          x.startsWith(actionPrefix),
        ),
      );
    const token = optString(b, 'NextToken', 1, 1024);
    if (token !== undefined) {
      const after = decodeToken(token, 'alarm');
      list = list.filter((a) => a.AlarmName > after);
    }
    const page = list.slice(0, max);
    const last = page.at(-1);
    return {
      MetricAlarms: page.map(wireAlarm),
      CompositeAlarms: [],
      ...(list.length > max && last ? { NextToken: encodeToken('alarm', last.AlarmName) } : {}),
    };
  }

  private deleteAlarms(b: Record<string, unknown>): void {
    const names = stringList(b.AlarmNames, 'AlarmNames', 100);
    const unknown = names.filter((n) => !this.alarms.has(n));
    // Assumed: AWS documents ResourceNotFound for DeleteAlarms; the simulator refuses the whole call.
    if (unknown.length) throw notFound(`Alarm(s) not found: ${unknown.join(', ')}`);
    for (const n of names) this.alarms.delete(n);
  }

  private setAlarmState(b: Record<string, unknown>): void {
    const name = reqString(b, 'AlarmName', 1, 255);
    const state = reqString(b, 'StateValue', 1, 32) as AlarmState;
    if (!['OK', 'ALARM', 'INSUFFICIENT_DATA'].includes(state))
      throw invalid('The parameter StateValue must be one of OK, ALARM, INSUFFICIENT_DATA.');
    const reason = reqString(b, 'StateReason', 0, 1023);
    const data = optString(b, 'StateReasonData', 0, 4000);
    if (data !== undefined) {
      try {
        JSON.parse(data);
      } catch {
        throw invalid('The parameter StateReasonData must be valid JSON.');
      }
    }
    const a = this.alarms.get(name);
    if (!a) throw notFound(`Alarm ${name} not found`);
    // The state lasts until the next evaluation, which sets what the data says (and notifies again if that differs).
    if (a.StateValue !== state) this.transition(a, state, reason, data, this.opts.clock.now());
    else {
      a.StateReason = reason;
      a.StateUpdatedTimestamp = this.opts.clock.now();
    }
  }

  private listMetrics(b: Record<string, unknown>): Record<string, unknown> {
    const ns = optString(b, 'Namespace', 1, 255);
    const name = optString(b, 'MetricName', 1, 255);
    const filters = b.Dimensions === undefined ? [] : (b.Dimensions as { Name: string; Value?: string }[]);
    if (!Array.isArray(filters) || filters.length > 10)
      throw invalid('The parameter Dimensions must list at most 10 filters.');
    const now = this.opts.clock.now();
    let list = [...this.metrics.values()].filter(
      (m) =>
        m.points.length > 0 &&
        (m.points.at(-1) as Datapoint).t >= now - 14 * 24 * 3600_000 &&
        (ns === undefined || m.namespace === ns) &&
        (name === undefined || m.name === name) &&
        // A filter matches every metric that has the dimension (and the value, when given), whatever else it has.
        filters.every((f) =>
          m.dimensions.some((d) => d.Name === f.Name && (f.Value === undefined || d.Value === f.Value)),
        ),
    );
    list.sort((x, y) =>
      cmp(metricKey(x.namespace, x.name, x.dimensions), metricKey(y.namespace, y.name, y.dimensions)),
    );
    const token = optString(b, 'NextToken', 1, 4096);
    if (token !== undefined) {
      const after = decodeToken(token, 'metric');
      list = list.filter((m) => metricKey(m.namespace, m.name, m.dimensions) > after);
    }
    const page = list.slice(0, 500);
    const last = page.at(-1);
    return {
      Metrics: page.map((m) => ({ Namespace: m.namespace, MetricName: m.name, Dimensions: m.dimensions })),
      ...(list.length > 500 && last
        ? { NextToken: encodeToken('metric', metricKey(last.namespace, last.name, last.dimensions)) }
        : {}),
    };
  }

  /**
   * GetMetricStatistics: the statistics of one metric per period, only the periods that have data, oldest
   * first as CloudWatch returns them; the Unit is the datapoints' (None when they gave none).
   */
  private getMetricStatistics(b: Record<string, unknown>): Record<string, unknown> {
    const namespace = reqString(b, 'Namespace', 1, 255);
    const name = reqString(b, 'MetricName', 1, 255);
    const dims = dimensions(b.Dimensions, 'Dimensions');
    const start = timestamp(b.StartTime, 'StartTime');
    const end = timestamp(b.EndTime, 'EndTime');
    if (start >= end) throw invalid('The parameter StartTime must be less than the parameter EndTime.');
    const period = reqInt(b, 'Period', 1);
    if (period < 60 ? ![1, 5, 10, 30].includes(period) : period % 60 !== 0)
      throw invalid('The parameter Period must be 1, 5, 10, 30 or a multiple of 60.');
    const stats = b.Statistics === undefined ? [] : stringList(b.Statistics, 'Statistics', 5);
    for (const st of stats)
      if (!STATISTICS.includes(st as Statistic))
        throw invalid(`The parameter Statistics must be among ${STATISTICS.join(', ')}.`);
    if (stats.length === 0 && b.ExtendedStatistics === undefined) throw missing('Statistics');
    if (b.ExtendedStatistics !== undefined)
      throw invalid('The cloud simulator does not compute ExtendedStatistics (percentiles); use Statistics.');
    const unit = optString(b, 'Unit', 1, 64);
    const metric = this.matching(namespace, name, dims);
    const p = period * 1000;
    const points: Record<string, unknown>[] = [];
    for (let t = Math.floor(start / p) * p; t < end; t += p) {
      const from = Math.max(t, start);
      const to = Math.min(t + p, end);
      if (this.statistic(metric, 'SampleCount', from, to, unit) === undefined) continue;
      const units = metric!.points.filter((x) => x.t >= from && x.t < to).map((x) => x.unit);
      const point: Record<string, unknown> = { Timestamp: t / 1000, Unit: unit ?? units[0] ?? 'None' };
      for (const st of stats) point[st] = this.statistic(metric, st as Statistic, from, to, unit)!.value;
      points.push(point);
    }
    return { Label: name, Datapoints: points };
  }

  /** DescribeAlarmHistory: state changes, actions and configuration updates, newest first by default. */
  private describeAlarmHistory(b: Record<string, unknown>): Record<string, unknown> {
    const name = optString(b, 'AlarmName', 1, 255);
    const type = optString(b, 'HistoryItemType', 1, 64);
    const types = [
      'ConfigurationUpdate',
      'StateUpdate',
      'Action',
      'AlarmContributorStateUpdate',
      'AlarmContributorAction',
    ];
    if (type !== undefined && !types.includes(type))
      throw invalid(`The parameter HistoryItemType must be one of ${types.join(', ')}.`);
    const alarmTypes =
      b.AlarmTypes === undefined ? ['MetricAlarm'] : stringList(b.AlarmTypes, 'AlarmTypes', 2);
    const start = b.StartDate === undefined ? -Infinity : timestamp(b.StartDate, 'StartDate');
    const end = b.EndDate === undefined ? Infinity : timestamp(b.EndDate, 'EndDate');
    const max = b.MaxRecords === undefined ? 100 : reqInt(b, 'MaxRecords', 1);
    if (max > 100) throw invalid('The parameter MaxRecords must be less than or equal to 100.');
    const scanBy = optString(b, 'ScanBy', 1, 32) ?? 'TimestampDescending';
    if (!['TimestampDescending', 'TimestampAscending'].includes(scanBy))
      throw invalid('The parameter ScanBy must be TimestampDescending or TimestampAscending.');
    let items = this.history
      .map((item, seq) => ({ item, seq }))
      .filter(
        ({ item }) =>
          (name === undefined || item.AlarmName === name) &&
          (type === undefined || item.HistoryItemType === type) &&
          alarmTypes.includes(item.AlarmType) &&
          item.Timestamp >= start &&
          item.Timestamp <= end,
      );
    if (scanBy === 'TimestampDescending') items.reverse();
    const token = optString(b, 'NextToken', 1, 1024);
    if (token !== undefined) {
      const after = Number(decodeToken(token, 'history'));
      items = items.filter(({ seq }) => (scanBy === 'TimestampDescending' ? seq < after : seq > after));
    }
    const page = items.slice(0, max);
    const last = page.at(-1);
    return {
      AlarmHistoryItems: page.map(({ item }) => ({ ...item, Timestamp: item.Timestamp / 1000 })),
      ...(items.length > max && last ? { NextToken: encodeToken('history', String(last.seq)) } : {}),
    };
  }

  private getMetricData(b: Record<string, unknown>): Record<string, unknown> {
    const qs = queries(b.MetricDataQueries, 'MetricDataQueries');
    if (qs.length > 500)
      throw invalid('The collection MetricDataQueries must not have a size greater than 500.');
    const start = timestamp(b.StartTime, 'StartTime');
    const end = timestamp(b.EndTime, 'EndTime');
    if (start >= end) throw invalid('The parameter StartTime must be less than the parameter EndTime.');
    const ascending = b.ScanBy === 'TimestampAscending';
    const results = qs
      .filter((q) => q.ReturnData !== false)
      .map((q) => {
        const period =
          q.Period ?? q.MetricStat?.Period ?? qs.find((x) => x.MetricStat)?.MetricStat?.Period ?? 60;
        const p = period * 1000;
        const first = Math.floor(start / p) * p;
        const starts: number[] = [];
        for (let t = first; t < end; t += p) starts.push(t);
        const values = this.series(qs, q.Id, starts);
        const points = starts.map((t, i) => [t, values[i]] as const).filter(([, v]) => v !== undefined);
        if (!ascending) points.reverse();
        return {
          Id: q.Id,
          Label: q.Label ?? q.MetricStat?.Metric.MetricName ?? q.Id,
          Timestamps: points.map(([t]) => t / 1000),
          Values: points.map(([, v]) => v),
          StatusCode: 'Complete',
        };
      });
    return { MetricDataResults: results, Messages: [] };
  }
}

// --- helpers ---------------------------------------------------------------------------------------------------

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const s = (n: number) => (n === 1 ? '' : 's');

/** How the Java SDK behind CloudWatch prints doubles in reasons: 1.0, 0.5, 12.25. */
export function javaDouble(v: number): string {
  return Number.isInteger(v) ? v.toFixed(1) : String(v);
}

function datum(v: number | undefined, t: number | undefined): string {
  const d = new Date(t ?? 0);
  const p = (x: number) => String(x).padStart(2, '0');
  const when = `${p(d.getUTCDate())}/${p(d.getUTCMonth() + 1)}/${p(d.getUTCFullYear() % 100)} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}`;
  return `${javaDouble(v ?? 0)} (${when})`;
}

/** CloudWatch's notification timestamps: 2026-01-01T00:01:00.000+0000. */
export function stamp(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '+0000');
}

const REGION_NAMES: Record<string, string> = {
  'us-east-1': 'US East (N. Virginia)',
  'us-east-2': 'US East (Ohio)',
  'us-west-1': 'US West (N. California)',
  'us-west-2': 'US West (Oregon)',
  'eu-west-1': 'EU (Ireland)',
  'eu-west-2': 'EU (London)',
  'eu-west-3': 'EU (Paris)',
  'eu-central-1': 'EU (Frankfurt)',
  'eu-north-1': 'EU (Stockholm)',
  'ap-northeast-1': 'Asia Pacific (Tokyo)',
  'ap-southeast-1': 'Asia Pacific (Singapore)',
  'ap-southeast-2': 'Asia Pacific (Sydney)',
  'ap-south-1': 'Asia Pacific (Mumbai)',
};

export function regionName(region: string): string {
  return REGION_NAMES[region] ?? region;
}

function wireAlarm(a: SimAlarm): Record<string, unknown> {
  const { createdAt: _, ...rest } = a;
  return {
    ...rest,
    AlarmConfigurationUpdatedTimestamp: a.AlarmConfigurationUpdatedTimestamp / 1000,
    StateUpdatedTimestamp: a.StateUpdatedTimestamp / 1000,
    StateTransitionedTimestamp: a.StateTransitionedTimestamp / 1000,
    TreatMissingData: a.TreatMissingData,
  };
}

function encodeToken(kind: string, after: string): string {
  return Buffer.from(JSON.stringify([kind, after])).toString('base64url');
}

function decodeToken(token: string, kind: string): string {
  try {
    const [k, after] = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (k === kind && typeof after === 'string') return after;
  } catch {
    // fall through
  }
  throw new CloudWatchError(
    'InvalidNextToken',
    'InvalidNextToken',
    'The service returned an invalid NextToken.',
  );
}

function reqString(b: Record<string, unknown>, k: string, min: number, max: number): string {
  const v = b[k];
  if (v === undefined || v === null) throw missing(k);
  if (typeof v !== 'string' || v.length < min || v.length > max)
    throw invalid(`The parameter ${k} must be a string of ${min} to ${max} characters.`);
  return v;
}

function optString(b: Record<string, unknown>, k: string, min: number, max: number): string | undefined {
  return b[k] === undefined ? undefined : reqString(b, k, min, max);
}

function reqInt(b: Record<string, unknown>, k: string, min: number): number {
  const v = b[k];
  if (v === undefined) throw missing(k);
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min)
    throw invalid(`The parameter ${k} must be an integer of at least ${min}.`);
  return v;
}

function stringList(v: unknown, k: string, max: number): string[] {
  if (v === undefined) throw missing(k);
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string'))
    throw invalid(`The parameter ${k} must be a list of strings.`);
  if (v.length > max) throw invalid(`The collection ${k} must not have a size greater than ${max}.`);
  return v as string[];
}

function checkPeriod(v: unknown, k: string): number {
  if (v === undefined) throw missing(k);
  if (
    typeof v !== 'number' ||
    !Number.isInteger(v) ||
    !(v === 10 || v === 20 || v === 30 || (v >= 60 && v % 60 === 0))
  )
    throw invalid(`The parameter ${k} must be 10, 20, 30 or a multiple of 60.`);
  return v;
}

function unit(v: unknown): string {
  if (typeof v !== 'string' || !(METRIC_UNITS as readonly string[]).includes(v))
    throw invalid(`The parameter Unit must be one of ${METRIC_UNITS.join(', ')}.`);
  return v;
}

function timestamp(v: unknown, k: string): number {
  if (v === undefined) throw missing(k);
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalid(`The parameter ${k} must be a timestamp.`);
  return v * 1000;
}

function dimensions(v: unknown, k: string): Dimension[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw invalid(`The parameter ${k} must be a list.`);
  if (v.length > 30) throw invalid(`The collection ${k} must not have a size greater than 30.`);
  const out: Dimension[] = [];
  for (const d of v) {
    if (typeof d?.Name !== 'string' || typeof d?.Value !== 'string' || !d.Name || !d.Value)
      throw invalid(`Every member of ${k} needs a Name and a Value.`);
    out.push({ Name: d.Name, Value: d.Value });
  }
  if (new Set(out.map((d) => d.Name)).size !== out.length)
    throw invalid(`The dimension names of ${k} must be unique.`);
  return out;
}

function queries(v: unknown, k: string): MetricDataQueryInput[] {
  if (v === undefined) throw missing(k);
  if (!Array.isArray(v) || v.length === 0) throw invalid(`The parameter ${k} must be a non-empty list.`);
  const ids = new Set<string>();
  const out = v.map((q: Record<string, unknown>, i) => {
    const where = `${k}.member.${i + 1}`;
    const id = q?.Id;
    if (typeof id !== 'string' || !/^[a-z][a-zA-Z0-9_]*$/.test(id))
      throw invalid(`${where}.Id must start with a lowercase letter and hold only letters, digits and _.`);
    if (ids.has(id)) throw invalid(`${where}.Id ${id} is used twice.`);
    ids.add(id);
    const hasStat = q.MetricStat !== undefined;
    const hasExpr = q.Expression !== undefined;
    if (hasStat === hasExpr) throw combination(`${where} needs exactly one of MetricStat and Expression.`);
    const out: MetricDataQueryInput = { Id: id };
    if (typeof q.Label === 'string') out.Label = q.Label;
    if (q.ReturnData !== undefined) out.ReturnData = q.ReturnData === true;
    if (q.Period !== undefined) out.Period = checkPeriod(q.Period, `${where}.Period`);
    if (hasStat) {
      const ms = q.MetricStat as Record<string, any>;
      const metric = ms?.Metric ?? {};
      if (!STATISTICS.includes(ms?.Stat))
        throw invalid(
          `${where}.MetricStat.Stat must be one of ${STATISTICS.join(', ')} (the simulator computes no percentiles).`,
        );
      out.MetricStat = {
        Metric: {
          Namespace: reqString(metric, 'Namespace', 1, 255),
          MetricName: reqString(metric, 'MetricName', 1, 255),
          Dimensions: dimensions(metric.Dimensions, `${where}.MetricStat.Metric.Dimensions`),
        },
        Period: checkPeriod(ms.Period, `${where}.MetricStat.Period`),
        Stat: ms.Stat,
        ...(ms.Unit !== undefined ? { Unit: unit(ms.Unit) } : {}),
      };
    } else {
      out.Expression = reqString(q, 'Expression', 1, 2048);
    }
    return out;
  });
  // Refuses at once what the simulator cannot evaluate, and ids that name no query.
  for (const q of out) {
    if (q.Expression === undefined) continue;
    try {
      for (const ref of references(parseExpression(q.Expression)))
        if (!ids.has(ref))
          throw invalid(`The expression of ${q.Id} refers to ${ref}, which is not the Id of a query.`);
    } catch (e) {
      if (e instanceof MathError) throw invalid(e.message);
      throw e;
    }
  }
  return out;
}
