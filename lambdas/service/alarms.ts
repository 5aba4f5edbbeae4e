import type { StageAlarm } from '../aws/alarm-states';
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
      const visible = (a: StageAlarm) =>
        a.about?.dimension === 'Scope'
          ? caller.can('read', a.about.value)
          : a.about?.dimension === 'Compute'
            ? owners.has(a.about.value) && caller.canSee(owners.get(a.about.value))
            : caller.isPlatformAdmin;
      return alarms
        .filter(visible)
        .map((a) => viewOf(a, stage))
        .sort((x, y) => x.name.localeCompare(y.name));
    },
  };
}

/** Kind and subject from the alarm's metric and dimension, else from its name (llmcap-<stage>-<kind>-<subject>). */
function viewOf(a: StageAlarm, stage: string): AlarmView {
  const { about, metricName, name, ...rest } = a;
  const tail = name.startsWith(alarmPrefix(stage)) ? name.slice(alarmPrefix(stage).length) : name;
  const [head, ...more] = tail.split('-');
  return {
    name,
    kind: about ? (metricName ?? head ?? tail) : (head ?? tail),
    subject: about?.value ?? (more.join('-') || stage),
    ...rest,
  };
}
