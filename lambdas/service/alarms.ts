import type { MetricAlarm } from '@aws-sdk/client-cloudwatch';
import type { Caller } from '../domain/access';
import { alarmPrefix } from '../domain/alarms';
import type { Dependencies } from '.';

/**
 * The stage's alarms and their state (GET /v1/alarms), as a person who may see what each is about sees them:
 * a scope's CapacityAtLimit to those who may read the scope, a compute's NodegroupFailed to those who may see
 * the compute, the stage-wide ones (reconcile, workflows) to platform admins.
 */

export interface AlarmView {
  name: string;
  kind: string;
  /** The scope or compute it is about; the stage for stage-wide alarms. */
  subject: string;
  state: string;
  reason?: string;
  updatedAt?: string;
  description?: string;
}

export function alarmService(deps: Dependencies) {
  return {
    async list(caller: Caller): Promise<AlarmView[]> {
      const stage = deps.config().stage;
      const [alarms, computes] = await Promise.all([deps.stageAlarms(), deps.store.computes.listComputes()]);
      const owners = new Map(computes.map((c) => [c.name, c.owner]));
      const out: AlarmView[] = [];
      for (const a of alarms) {
        const v = viewOf(a, stage);
        const dim = a.Dimensions?.find((d) => d.Name === 'Scope' || d.Name === 'Compute');
        const visible =
          dim?.Name === 'Scope'
            ? caller.can('read', dim.Value)
            : dim?.Name === 'Compute'
              ? owners.has(dim.Value!) && caller.canSee(owners.get(dim.Value!))
              : caller.isPlatformAdmin;
        if (visible) out.push(v);
      }
      return out.sort((x, y) => x.name.localeCompare(y.name));
    },
  };
}

function viewOf(a: MetricAlarm, stage: string): AlarmView {
  const dim = a.Dimensions?.find((d) => d.Name === 'Scope' || d.Name === 'Compute');
  const name = a.AlarmName ?? '';
  const rest = name.startsWith(alarmPrefix(stage)) ? name.slice(alarmPrefix(stage).length) : name;
  const [head, ...tail] = rest.split('-');
  return {
    name,
    kind: dim ? (a.MetricName ?? head ?? rest) : (head ?? rest),
    subject: dim?.Value ?? (tail.join('-') || stage),
    state: a.StateValue ?? 'INSUFFICIENT_DATA',
    ...(a.StateReason ? { reason: a.StateReason } : {}),
    ...(a.StateUpdatedTimestamp ? { updatedAt: new Date(a.StateUpdatedTimestamp).toISOString() } : {}),
    ...(a.AlarmDescription ? { description: a.AlarmDescription } : {}),
  };
}
