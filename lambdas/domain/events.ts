import { createHash } from 'node:crypto';
import { heldReplicas } from './admission-world';
import type { ModelAdmission } from './quota';
import { type ComputeReport, PASS_RETENTION_DAYS, type ReconcileSummary } from './reconcile-pass';
import type { DriftRepaired } from './workloads';

/**
 * Events of a resource, as `kubectl describe` lists them: what llmcap decided or did about a model or a compute
 * and when (admission decisions, take-backs, drift repaired, failures). Written where those decisions are made
 * (the API's catalog changes and the reconcile pass), kept for a week like the passes that made them, and read
 * through the resource's own route, so a caller sees the events of what it may read and nothing else. Pure.
 */

/** Events expire (DynamoDB TTL) with the passes: a week of history for an on-call weekend. */
export const EVENT_RETENTION_DAYS = PASS_RETENTION_DAYS;
/** How many events describe shows per resource, newest first. */
export const EVENTS_SHOWN = 20;

export type EventKind = 'model' | 'compute';

export interface ResourceEvent {
  kind: EventKind;
  /** The resource's key (domain/names.ts). */
  key: string;
  /**
   * When the resource was created: a resource deleted and created again under its key, perhaps by another
   * owner, does not inherit the events of the one before (readers keep those of the resource as it is).
   */
  of: string;
  type: 'Normal' | 'Warning';
  /** One word, as kubectl's: Admitted, Released, Pending reasons (Queued, OverQuota, ...), TakenBack, ... */
  reason: string;
  message: string;
  /** Who decided: a write through the API, or a reconcile pass. */
  source: 'api' | 'reconcile' | 'admitter';
  at: string;
}

/** An event as stored and read: the same event seen again is counted, as kubectl counts repeats. */
export interface StoredEvent {
  of: string;
  type: ResourceEvent['type'];
  reason: string;
  message: string;
  source: ResourceEvent['source'];
  firstAt: string;
  lastAt: string;
  count: number;
}

/** One stored item per resource, reason and message: a repeat (a failure every pass) counts, not floods. */
export function eventId(e: Pick<ResourceEvent, 'of' | 'reason' | 'message'>): string {
  return createHash('sha256').update(`${e.of}\n${e.reason}\n${e.message}`).digest('hex').slice(0, 16);
}

const replicas = (n: number) => `${n} replica${n === 1 ? '' : 's'}`;

/**
 * What an admission decision changed for each model, as events: replicas admitted or released, a new reason
 * to wait, replicas taken back. An event is stored as made and read by whoever may read the model, so it names
 * reasons and counts only, never the other models and scopes a decision's messages may name: the model's
 * status tells each reader those, as far as that reader may see them. `before` and `after` are the models' admissions either side of the decision;
 * a model missing from `after` was not decided on (or was removed, which says nothing more of it). `createdAt`
 * tells when each model was created; a model it does not know of gets no events.
 */
export function admissionEvents(
  before: readonly ModelAdmission[],
  after: readonly ModelAdmission[],
  createdAt: (model: string) => string | undefined,
  at: string,
  source: ResourceEvent['source'],
): ResourceEvent[] {
  const was = new Map(before.map((a) => [a.model, a]));
  const out: ResourceEvent[] = [];
  for (const a of after) {
    const b = was.get(a.model);
    const of = createdAt(a.model);
    if (of === undefined) continue;
    const base = { kind: 'model' as const, key: a.model, of, source, at };
    const [held, had] = [heldReplicas(a), heldReplicas(b)];
    if (held !== had)
      out.push({
        ...base,
        type: 'Normal',
        reason: held > had ? 'Admitted' : 'Released',
        message: `${replicas(held)} admitted (was ${had})`,
      });
    const waited = new Set((b?.pending ?? []).map((p) => `${p.reason}\n${p.replicas}`));
    for (const p of a.pending) {
      if (waited.has(`${p.reason}\n${p.replicas}`)) continue;
      out.push({
        ...base,
        type: 'Warning',
        reason: p.reason,
        message: `${replicas(p.replicas)} pending (${p.reason})`,
      });
    }
    const taken = new Set((b?.takenBack ?? []).map((t) => `${t.at}\n${t.by.unitId}`));
    for (const t of a.takenBack ?? []) {
      if (taken.has(`${t.at}\n${t.by.unitId}`)) continue;
      out.push({
        ...base,
        type: 'Warning',
        reason: 'TakenBack',
        message: `${replicas(t.replicas)} taken back (${t.reason})`,
      });
    }
  }
  return out;
}

const WORKFLOW_WORDS: Record<string, string> = {
  provision: 'creating its node group',
  scale: 'resizing its node group',
  delete: 'deleting its node group',
};

/**
 * What a pass did to each compute, as events: a workflow started or refused, and a node group that failed (the
 * same failure pass after pass is one event counted, not one per pass).
 */
export function computeEvents(
  computes: readonly { name: string; createdAt: string }[],
  reports: readonly ComputeReport[],
  workflows: ReconcileSummary['workflows'],
  at: string,
): ResourceEvent[] {
  const created = new Map(computes.map((c) => [c.name, c.createdAt]));
  const out: ResourceEvent[] = [];
  const push = (key: string, type: ResourceEvent['type'], reason: string, message: string) => {
    const of = created.get(key);
    if (of !== undefined)
      out.push({ kind: 'compute', key, of, type, reason, message, source: 'reconcile', at });
  };
  const desired = new Map(reports.map((r) => [r.compute, r]));
  for (const w of workflows) {
    const r = desired.get(w.compute);
    const size = r && w.kind !== 'delete' ? ` to ${r.neededNodes} node(s)` : '';
    if (w.outcome === 'refused')
      push(
        w.compute,
        'Warning',
        'WorkflowRefused',
        `${WORKFLOW_WORDS[w.kind] ?? w.kind}${size} was refused: ${r?.actionNote ?? 'see the pass'}`,
      );
    else if (w.outcome === 'started')
      push(w.compute, 'Normal', 'WorkflowStarted', `${WORKFLOW_WORDS[w.kind] ?? w.kind}${size}`);
  }
  for (const r of reports)
    if (r.failed)
      push(
        r.compute,
        'Warning',
        'Failed',
        `node group ${r.status}: ${r.statusMessage ?? 'no message from EKS'}`,
      );
  return out;
}

/** A compute's failure to act this pass (a workflow that could not be started), as its event. */
export function computeFailure(
  c: { name: string; createdAt: string },
  message: string,
  at: string,
): ResourceEvent {
  return {
    kind: 'compute',
    key: c.name,
    of: c.createdAt,
    type: 'Warning',
    reason: 'Failed',
    message,
    source: 'reconcile',
    at,
  };
}

/** Objects of a model that someone else had changed and the pass set back, as the model's events. */
export function driftEvents(
  repaired: readonly DriftRepaired[],
  models: readonly { name: string; createdAt: string }[],
  at: string,
): ResourceEvent[] {
  const created = new Map(models.map((m) => [m.name, m.createdAt]));
  return repaired.flatMap((d) => {
    const of = d.model === undefined ? undefined : created.get(d.model);
    if (of === undefined || d.model === undefined) return [];
    return [
      {
        kind: 'model' as const,
        key: d.model,
        of,
        type: 'Normal' as const,
        reason: 'DriftRepaired',
        message: `${d.object} had been changed by ${d.by}; set back to what llmcap runs`,
        source: 'reconcile' as const,
        at,
      },
    ];
  });
}

/** The events of the resource created at `of`, newest first, at most `max`. */
export function recentEvents(events: readonly StoredEvent[], of: string, max = EVENTS_SHOWN): StoredEvent[] {
  return events
    .filter((e) => e.of === of)
    .sort((a, b) => b.lastAt.localeCompare(a.lastAt))
    .slice(0, max);
}

/** Events as the API answers them: without the creation time they are matched by. */
export function eventsView(events: readonly StoredEvent[]): Omit<StoredEvent, 'of'>[] {
  return events.map(({ of: _of, ...e }) => e);
}
