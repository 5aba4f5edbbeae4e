import type { ReconcileSummary } from './reconcile';

/**
 * The alarm rules, in one place for AWS and the local evaluator: CapacityAtLimit per scope (usage at a limit,
 * or a request refused for LimitExceeded or Headroom in this pass) and NodegroupFailed per compute.
 */
export type AlarmKind = 'CapacityAtLimit' | 'NodegroupFailed';

export interface AlarmState {
  key: string;
  kind: AlarmKind;
  /** The scope or compute the alarm is about: the notification names it. */
  subject: string;
  alarm: boolean;
  reason: string;
}

function describeScope(s: ReconcileSummary['scopes'][number]): string {
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

export function alarmStates(
  summary: Pick<ReconcileSummary, 'scopes' | 'computes' | 'atLimit'>,
): AlarmState[] {
  const atLimit = new Set(summary.atLimit);
  const scopes = summary.scopes.map((s) => ({
    key: `CapacityAtLimit:${s.scope}`,
    kind: 'CapacityAtLimit' as const,
    subject: s.scope,
    alarm: atLimit.has(s.scope),
    reason: describeScope(s),
  }));
  const computes = summary.computes.map((c) => ({
    key: `NodegroupFailed:${c.compute}`,
    kind: 'NodegroupFailed' as const,
    subject: c.compute,
    alarm: c.failed,
    reason: c.failed
      ? `node group ${c.status}: ${c.statusMessage ?? 'no health issue reported'}`
      : `node group ${c.status}`,
  }));
  return [...scopes, ...computes];
}

export interface Transition extends AlarmState {
  at: string;
}

/** Remembers the last state of each alarm and returns what changed, the way CloudWatch notifies on changes. */
export class AlarmEvaluator {
  private readonly last = new Map<string, boolean>();

  evaluate(states: AlarmState[], at: string): Transition[] {
    const out: Transition[] = [];
    const seen = new Set<string>();
    for (const s of states) {
      seen.add(s.key);
      const was = this.last.get(s.key) ?? false;
      if (was !== s.alarm) out.push({ ...s, at });
      this.last.set(s.key, s.alarm);
    }
    // A scope or compute that disappeared while in ALARM goes back to OK.
    for (const [key, was] of this.last) {
      if (!seen.has(key) && was) {
        const [kind, subject] = key.split(/:(.*)/s) as [AlarmKind, string];
        out.push({ key, kind, subject, alarm: false, reason: 'no longer exists', at });
        this.last.delete(key);
      }
    }
    return out;
  }
}
