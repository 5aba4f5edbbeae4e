import { METRICS_NAMESPACE, SERVICE_NAME } from './telemetry';

/**
 * Every llmcap alarm, as plain PutMetricAlarm input: the per-scope and per-compute alarms the reconciler keeps,
 * and the stage alarms the stack deploys. The CDK stack, the reconciler and the local control plane all build
 * them here, so the alarms that run against the local simulator are the ones AWS runs. No AWS SDK import: the
 * CDK app reads this too.
 *
 * The settings, and why:
 * - CapacityAtLimit (per scope): 3 of the last 5 passes. A scope briefly touching its limit while replicas move is
 *   not worth a page; one that stays there is. Clears after 3 passes within its limits.
 * - NodegroupFailed (per compute): any failed pass in the last 45 minutes. A compute whose creates keep failing
 *   counts as failed in every pass from its first CREATE_FAILED until a create succeeds or nothing needs it
 *   (domain/create-retry.ts), also while the failed group is deleted, the back-off waits and the next create
 *   runs, so a persisting fault is one ALARM, not one per retry. The 45 minutes keep a DEGRADED or DELETE_FAILED
 *   group seen once from clearing at once; it clears 45 minutes after the last failed pass.
 * - Both treat missing data as `ignore`: every pass publishes them, so missing data means no pass ran, which
 *   ReconcileStale reports; the last known state is kept instead of turning OK (what notBreaching would do).
 * - ReconcileStale: ReconcilePasses (1 per pass) below 1, 1 of 1, missing data breaching. CloudWatch fills in
 *   missing datapoints only when its evaluation range (N + 2 periods, 3 here) holds fewer than N real ones, so this
 *   fires when none of the last 3 periods had a pass, and never while the first passes of a new stage come in
 *   (1 of 3 would page then: with one datapoint it fills two breaching ones).
 * - ReconcileErrors: errors a pass reported, the Lambda's Errors (crash, timeout) and Throttles, in 3 of the last
 *   5 periods. FILL makes a period without any of them count as 0; a dead reconciler is ReconcileStale's page.
 * - WorkflowFailed (per state machine): a failed execution in the last 45 minutes, for the same retry cycle.
 * - ReplicasUnscheduled: admitted replicas whose pods the scheduler cannot place (UnscheduledReplicas, each pass
 *   with workloads deployed) in every pass of the last UNSCHEDULED_MINUTES. A pod waits a few minutes while its
 *   node boots, which is not worth a page; one that waits longer is stuck on capacity llmcap cannot add (maxNodes,
 *   a quota, nodes that take no pods). Missing data is `ignore`, as for the per-scope alarms.
 * - ReconcileFailures: a record in the reconciler's failure queue (Lambda's on-failure destination and the
 *   schedule's dead-letter queue), visible or in flight, in the last minute. Reading a record to investigate it
 *   does not clear the alarm; deleting (or purging) does. An empty queue nobody touches stops reporting, so
 *   missing data is the quiet state (notBreaching).
 */

export const RUNBOOK = 'docs/operations.md';
export const FAILURE_WINDOW_MINUTES = 45;
/** How long admitted replicas may stay unscheduled before ReplicasUnscheduled pages (node boot is ~2-3 min). */
export const UNSCHEDULED_MINUTES = 10;

export type ComparisonOperator =
  | 'GreaterThanOrEqualToThreshold'
  | 'GreaterThanThreshold'
  | 'LessThanThreshold'
  | 'LessThanOrEqualToThreshold';
export type TreatMissingData = 'missing' | 'notBreaching' | 'breaching' | 'ignore';
export type Statistic = 'SampleCount' | 'Average' | 'Sum' | 'Minimum' | 'Maximum';

export interface AlarmDimension {
  Name: string;
  Value: string;
}

export interface AlarmQuery {
  Id: string;
  Expression?: string;
  Label?: string;
  ReturnData: boolean;
  Period?: number;
  MetricStat?: {
    Metric: { Namespace: string; MetricName: string; Dimensions: AlarmDimension[] };
    Period: number;
    Stat: Statistic;
  };
}

/** PutMetricAlarm input without the actions, which the caller adds (the stack's topic, or the local one). */
export interface AlarmDefinition {
  AlarmName: string;
  AlarmDescription: string;
  Namespace?: string;
  MetricName?: string;
  Dimensions?: AlarmDimension[];
  Statistic?: Statistic;
  Period?: number;
  Metrics?: AlarmQuery[];
  EvaluationPeriods: number;
  DatapointsToAlarm: number;
  Threshold: number;
  ComparisonOperator: ComparisonOperator;
  TreatMissingData: TreatMissingData;
}

export const alarmPrefix = (stage: string) => `llmcap-${stage}-`;

export function alarmName(stage: string, kind: string, subject?: string): string {
  // Alarm names allow any ASCII; keep the scope readable (team:ml) and within CloudWatch's 255.
  return `${alarmPrefix(stage)}${kind}${subject ? `-${subject}` : ''}`.slice(0, 255);
}

const runbook = (anchor: string) => `Runbook: ${RUNBOOK}#${anchor}`;
const llmcapDims = (stage: string, extra: AlarmDimension[] = []): AlarmDimension[] => [
  { Name: 'service', Value: SERVICE_NAME },
  { Name: 'stage', Value: stage },
  ...extra,
];

/** The description without what was last seen; a stored description starting with it is up to date. */
export function scopeDescriptionBase(scope: string, rateMinutes: number): string {
  return `Scope ${scope} was at one of its quota limits, or had a replica refused for LimitExceeded or Headroom, in at least 3 of the last 5 reconcile passes (${5 * rateMinutes} min). Check: llmcap capacity ${scope}. ${runbook('capacityatlimit')}.`;
}

export function capacityAtLimitAlarm(
  stage: string,
  scope: string,
  rateMinutes: number,
  seen?: string,
): AlarmDefinition {
  return {
    AlarmName: alarmName(stage, 'CapacityAtLimit', scope),
    AlarmDescription: describe(scopeDescriptionBase(scope, rateMinutes), seen),
    Namespace: METRICS_NAMESPACE,
    MetricName: 'CapacityAtLimit',
    Dimensions: llmcapDims(stage, [{ Name: 'Scope', Value: scope }]),
    Statistic: 'Maximum',
    Period: 60 * rateMinutes,
    EvaluationPeriods: 5,
    DatapointsToAlarm: 3,
    Threshold: 1,
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    TreatMissingData: 'ignore',
  };
}

export function computeDescriptionBase(compute: string): string {
  return `The node group of compute ${compute} was CREATE_FAILED, DELETE_FAILED or DEGRADED, or its creates kept failing, in a reconcile pass of the last ${FAILURE_WINDOW_MINUTES} minutes; it clears ${FAILURE_WINDOW_MINUTES} minutes after the last failed pass (a failing create counts until one succeeds or the compute's models are scaled to 0). Check: llmcap describe compute ${compute}. ${runbook('nodegroupfailed')}.`;
}

export function nodegroupFailedAlarm(
  stage: string,
  compute: string,
  rateMinutes: number,
  seen?: string,
): AlarmDefinition {
  return {
    AlarmName: alarmName(stage, 'NodegroupFailed', compute),
    AlarmDescription: describe(computeDescriptionBase(compute), seen),
    Namespace: METRICS_NAMESPACE,
    MetricName: 'NodegroupFailed',
    Dimensions: llmcapDims(stage, [{ Name: 'Compute', Value: compute }]),
    Statistic: 'Maximum',
    Period: 60 * rateMinutes,
    EvaluationPeriods: Math.ceil(FAILURE_WINDOW_MINUTES / rateMinutes),
    DatapointsToAlarm: 1,
    Threshold: 1,
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    TreatMissingData: 'ignore',
  };
}

/** Room for what was last seen within CloudWatch's 1024 characters of description. */
function describe(base: string, seen: string | undefined): string {
  if (!seen) return base;
  return `${base} Last seen: ${seen}`.slice(0, 1024);
}

export interface StageAlarmInput {
  stage: string;
  rateMinutes: number;
  /** The reconcile Lambda's FunctionName dimension (a CDK token in the stack). */
  reconcileFunctionName: string;
  /** The admitter Lambda's FunctionName dimension. */
  admitterFunctionName: string;
  /** StateMachineArn of each node group workflow (CDK tokens in the stack). */
  stateMachineArns: Record<'provision' | 'scale' | 'delete', string>;
  /** The QueueName dimension of the reconciler's failure queue (a CDK token in the stack). */
  reconcileFailuresQueueName: string;
}

export function stageAlarms(i: StageAlarmInput): AlarmDefinition[] {
  const period = 60 * i.rateMinutes;
  const stat = (
    id: string,
    namespace: string,
    name: string,
    dims: AlarmDimension[],
    s: Statistic = 'Sum',
    p = period,
  ): AlarmQuery => ({
    Id: id,
    ReturnData: false,
    MetricStat: {
      Metric: { Namespace: namespace, MetricName: name, Dimensions: dims },
      Period: p,
      Stat: s,
    },
  });
  const queue = [{ Name: 'QueueName', Value: i.reconcileFailuresQueueName }];
  const fn = [{ Name: 'FunctionName', Value: i.reconcileFunctionName }];
  return [
    {
      AlarmName: alarmName(i.stage, 'ReconcileStale'),
      AlarmDescription: `No reconcile pass reported in the last 3 periods (${3 * i.rateMinutes} min): node groups no longer follow what is admitted, and the CapacityAtLimit and NodegroupFailed alarms keep their last state. ${runbook('reconcilestale')}.`,
      Namespace: METRICS_NAMESPACE,
      MetricName: 'ReconcilePasses',
      Dimensions: llmcapDims(i.stage),
      Statistic: 'Sum',
      Period: period,
      EvaluationPeriods: 1,
      DatapointsToAlarm: 1,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
    },
    {
      AlarmName: alarmName(i.stage, 'ReconcileErrors'),
      AlarmDescription: `The reconciler reported errors, failed (Lambda Errors: crash or timeout) or was throttled in at least 3 of the last 5 periods (${5 * i.rateMinutes} min). ${runbook('reconcileerrors')}.`,
      Metrics: [
        {
          Id: 'failing',
          Expression: 'FILL(errs, 0) + FILL(fails, 0) + FILL(throttles, 0)',
          Label: 'reconcile errors, Lambda errors and throttles',
          ReturnData: true,
        },
        stat('errs', METRICS_NAMESPACE, 'ReconcileErrors', llmcapDims(i.stage)),
        stat('fails', 'AWS/Lambda', 'Errors', fn),
        stat('throttles', 'AWS/Lambda', 'Throttles', fn),
      ],
      EvaluationPeriods: 5,
      DatapointsToAlarm: 3,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    },
    {
      AlarmName: alarmName(i.stage, 'AdmitterErrors'),
      AlarmDescription: `The admitter failed (Lambda Errors: a crash, a timeout or a commit it could not make) in at least 3 of the last 5 periods (${5 * i.rateMinutes} min): writes answered Queued may wait for their decision. ${runbook('admittererrors')}.`,
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: i.admitterFunctionName }],
      Statistic: 'Sum',
      Period: period,
      EvaluationPeriods: 5,
      DatapointsToAlarm: 3,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    },
    {
      AlarmName: alarmName(i.stage, 'ReplicasUnscheduled'),
      AlarmDescription: `Admitted replicas stayed unscheduled (their pods Pending, Unschedulable) in every reconcile pass of the last ${UNSCHEDULED_MINUTES} minutes: they hold quota and serve nothing. Check: llmcap get pods --ready false -o wide, and llmcap get computes. ${runbook('replicasunscheduled')}.`,
      Namespace: METRICS_NAMESPACE,
      MetricName: 'UnscheduledReplicas',
      Dimensions: llmcapDims(i.stage),
      Statistic: 'Minimum',
      Period: period,
      EvaluationPeriods: Math.max(1, Math.ceil(UNSCHEDULED_MINUTES / i.rateMinutes)),
      DatapointsToAlarm: Math.max(1, Math.ceil(UNSCHEDULED_MINUTES / i.rateMinutes)),
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'ignore',
    },
    ...(['provision', 'scale', 'delete'] as const).map(
      (kind): AlarmDefinition => ({
        AlarmName: alarmName(i.stage, 'WorkflowFailed', kind),
        AlarmDescription: `An execution of the ${kind} node group workflow failed in the last ${FAILURE_WINDOW_MINUTES} minutes; the compute's statusMessage says why, and the execution name says which compute. ${runbook('workflowfailed')}.`,
        Namespace: 'AWS/States',
        MetricName: 'ExecutionsFailed',
        Dimensions: [{ Name: 'StateMachineArn', Value: i.stateMachineArns[kind] }],
        Statistic: 'Sum',
        Period: 300,
        EvaluationPeriods: FAILURE_WINDOW_MINUTES / 5,
        DatapointsToAlarm: 1,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
      }),
    ),
    {
      AlarmName: alarmName(i.stage, 'ReconcileFailures'),
      AlarmDescription: `Reconcile invocations failed, timed out or expired unrun; their records wait in the queue ${i.reconcileFailuresQueueName}. ${runbook('reconcilefailures')}.`,
      Metrics: [
        {
          Id: 'waiting',
          Expression: 'FILL(visible, 0) + FILL(inflight, 0)',
          Label: 'failed reconcile invocations waiting',
          ReturnData: true,
        },
        // SQS reports queue depth once a minute, whatever the reconcile rate.
        stat('visible', 'AWS/SQS', 'ApproximateNumberOfMessagesVisible', queue, 'Maximum', 60),
        stat('inflight', 'AWS/SQS', 'ApproximateNumberOfMessagesNotVisible', queue, 'Maximum', 60),
      ],
      EvaluationPeriods: 1,
      DatapointsToAlarm: 1,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    },
  ];
}
