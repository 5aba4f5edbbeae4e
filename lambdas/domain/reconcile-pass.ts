import * as z from 'zod';
import type { Action, WorkflowKind } from './actions';
import type { NodegroupStatus } from './compute';
import type { DrainReport } from './drain';
import type { ScopeSummary } from './quota';
import type { WorkloadsReport } from './workloads';

/**
 * A reconcile pass as a person follows it: requested (POST /v1/reconcile) or scheduled, QUEUED until the
 * reconcile Lambda starts it, RUNNING, then SUCCEEDED with its summary or FAILED with the reason. The Lambda
 * runs asynchronously and can die without a word (timeout, out of memory, an event Lambda discarded), so a
 * pass that outlives its deadline is reported FAILED on read instead of waiting forever.
 */

export const PASS_STATES = ['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED'] as const;
export type PassState = (typeof PASS_STATES)[number];

/**
 * How the reconcile Lambda's asynchronous invocations are configured (infra/stacks/llmcap-stack.ts and the
 * local Lambda simulator read these). No retry: the next scheduled pass is the retry, and running a failed
 * pass again at once only doubles the load on whatever failed. An event may wait six minutes: long enough to
 * queue behind one pass running to the 5-minute timeout (reserved concurrency is 1), after which it is
 * several passes late and its record in the on-failure queue tells on-call the reconciler cannot keep up.
 */
export const RECONCILE_ASYNC = { retryAttempts: 0, maxEventAgeSeconds: 360 } as const;
/** The reconcile Lambda's timeout, in the stack and locally. */
export const RECONCILE_TIMEOUT_SECONDS = 300;
/** Pass records expire (DynamoDB TTL) after a week: enough to look back over a weekend's on-call. */
export const PASS_RETENTION_DAYS = 7;
/** Slack past a deadline before a silent pass is presumed lost (clock skew, a slow last write). */
export const DEADLINE_GRACE_MS = 60_000;

/**
 * Pass ids sort by time (the list is newest first by key): `20260105T101502123Z-` then 8 hex digits, random for
 * a requested pass and derived from the schedule's execution id for a scheduled one (a redelivered event
 * then finds its pass already there).
 */
export const PASS_ID_PATTERN = /^\d{8}T\d{9}Z-[0-9a-f]{8}$/;

export function passId(at: Date, suffix: string): string {
  return `${at.toISOString().replace(/[-:.]/g, '')}-${suffix}`;
}

/** What a finished pass reports in a list, without its whole summary. */
export interface PassDigest {
  durationMs: number;
  workflows: number;
  errors: number;
  admitted: number;
  pendingReplicas: number;
  atLimit: number;
}

export interface PassRecord {
  id: string;
  /** What asked for it: a POST /v1/reconcile or the schedule. */
  trigger: 'api' | 'schedule';
  state: PassState;
  /** The principal whose POST queued it. */
  requestedBy?: string;
  /** How many POSTs this pass answers (coalesced while it was queued). */
  requests?: number;
  queuedAt?: string;
  scheduledTime?: string;
  startedAt?: string;
  finishedAt?: string;
  /** Epoch ms after which a QUEUED or RUNNING pass is presumed lost. */
  deadline?: number;
  error?: string;
  summary?: unknown;
  /** Why the summary was not kept (larger than an item can hold). */
  summaryNote?: string;
  digest?: PassDigest;
}

export interface PassView extends Omit<PassRecord, 'deadline'> {
  durationMs?: number;
}

/** A record as the API shows it: a pass that missed its deadline is FAILED, with what probably happened. */
export function passView(r: PassRecord, now: number): PassView {
  const { deadline, ...rest } = r;
  const view: PassView = { ...rest };
  if (r.startedAt && r.finishedAt) view.durationMs = Date.parse(r.finishedAt) - Date.parse(r.startedAt);
  if (deadline !== undefined && now > deadline && (r.state === 'QUEUED' || r.state === 'RUNNING')) {
    view.state = 'FAILED';
    view.error =
      r.state === 'QUEUED'
        ? `no reconcile pass started within ${RECONCILE_ASYNC.maxEventAgeSeconds / 60} minutes of this request: ` +
          'Lambda discarded the event (see the on-failure queue) or the reconciler is not running; request another pass'
        : 'the pass stopped without recording an outcome (the Lambda timed out or crashed); ' +
          'the reconcile log group says why, and the next pass starts over';
  }
  return view;
}

/** The event POST /v1/reconcile sends the reconcile Lambda: which queued pass it asked for. */
export const ApiReconcileEventSchema = z.strictObject({
  source: z.literal('llmcap.api'),
  passId: z.string().regex(PASS_ID_PATTERN, 'a pass id such as 20260105T101502123Z-0a1b2c3d'),
});

/**
 * The schedule's event (EventBridge Scheduler's input with its context attributes). Anything without a
 * passId is a pass of its own, so `aws lambda invoke` with `{}` runs one too.
 */
export const ScheduledReconcileEventSchema = z.looseObject({
  source: z.literal('llmcap.schedule').optional(),
  scheduledTime: z.iso.datetime({ offset: true }).optional(),
  executionId: z.string().min(1).max(256).optional(),
});

export type ReconcileEvent =
  | ({ kind: 'api' } & z.output<typeof ApiReconcileEventSchema>)
  | ({ kind: 'schedule' } & z.output<typeof ScheduledReconcileEventSchema>);

export function parseReconcileEvent(event: unknown): ReconcileEvent {
  const api = event !== null && typeof event === 'object' && 'passId' in event;
  const r = (api ? ApiReconcileEventSchema : ScheduledReconcileEventSchema).safeParse(event ?? {});
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.join('.') || '(event)'}: ${i.message}`).join('; ');
    throw new Error(
      `the reconcile Lambda was invoked with an event it does not understand (${issues}); ` +
        'send {"source":"llmcap.api","passId":...} as POST /v1/reconcile does, or {} for a pass of its own',
    );
  }
  return api
    ? { kind: 'api', ...(r.data as z.output<typeof ApiReconcileEventSchema>) }
    : { kind: 'schedule', ...(r.data as z.output<typeof ScheduledReconcileEventSchema>) };
}

/** What one pass did to one compute, in its summary and its metrics. */
export interface ComputeReport {
  compute: string;
  status: NodegroupStatus;
  desiredNodes: number;
  readyNodes: number;
  neededNodes: number;
  lowerBoundNodes: number;
  costPerHour: number;
  failed: boolean;
  statusMessage?: string;
  /** While creates keep failing: when the next one may start (domain/create-retry.ts). */
  nextCreateAttemptAt?: string;
  action: Action['kind'];
  actionNote?: string;
  /** Nodes needed that an AWS quota keeps from being asked for: the quota, its value, how to raise it. */
  pendingReason?: string;
  /** Launches fail for lack of EC2 capacity since then (domain/supply.ts); the compute's status says more. */
  shortOfCapacitySince?: string;
  /**
   * Nodes asked for beyond what its replicas need now: replicas of a compute short of capacity move here when its
   * grace ends, and these boot meanwhile (domain/supply.ts nodesAhead).
   */
  aheadNodes?: number;
}

/** A pass's summary: what it saw, decided and started; stored with the pass and published as metrics. */
export interface ReconcileSummary {
  startedAt: string;
  durationMs: number;
  computes: ComputeReport[];
  scopes: (ScopeSummary & { pendingReplicas: number })[];
  atLimit: string[];
  admission: {
    admitted: number;
    released: number;
    victims: number;
    pendingReplicas: number;
    commits: number;
    /** Consolidation's moves the admitter started, finished and gave up this pass (domain/consolidation.ts). */
    moves?: { started: number; finished: number; abandoned: number };
  };
  workflows: { compute: string; kind: WorkflowKind; outcome: string; executionName?: string }[];
  awsCalls: number;
  /** The model servers (issue 20): absent when LLMCAP_WORKLOADS is off or the cluster could not be reached. */
  workloads?: WorkloadsReport;
  /** Scale-downs in progress: the nodes llmcap chose, cordoned, drained and removed (issue 20 §3). */
  drains?: DrainReport[];
  errors: string[];
}

/** The admitter Lambda's timeout (infra, local/admitter-function.ts): one run decides the whole world, seconds at most. */
export const ADMITTER_TIMEOUT_SECONDS = 60;
