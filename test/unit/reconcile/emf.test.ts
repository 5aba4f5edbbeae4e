import { capacityAtLimitAlarm, nodegroupFailedAlarm } from '../../../lambdas/domain/alarms';
import { publishMetrics } from '../../../lambdas/reconcile/handler';
import { resetConfig } from '../../../lambdas/shared/config';
import { extractEmf } from '../../../local/cloud-sim/emf';
import { printedLines } from '../../helpers/stdout';
import { computeReport, passSummary, prodStageAlarms, scopeReport } from '../../helpers/summary';

/**
 * The metrics CloudWatch will have: the EMF lines the reconcile code prints to stdout, read the way CloudWatch Logs
 * reads them (one metric per name and inner Dimensions array), not the objects the code meant to emit.
 */

const summary = {
  ...passSummary({
    scopes: [scopeReport('team:ml', 4, 4), scopeReport('org:acme', 4)],
    computes: [computeReport('gpu-l4-1x', true), computeReport('cpu-small', false)],
    atLimit: ['team:ml'],
    errors: ['observing: boom'],
  }),
  // A pass that runs the pods: two admitted replicas the scheduler cannot place.
  workloads: {
    applied: [],
    removed: [],
    repaired: [],
    calls: 3,
    running: 1,
    notRunning: [],
    unscheduled: 2,
    storeWrites: 0,
  },
};

const at = new Date();

function identities() {
  process.env.LLMCAP_STAGE = 'prod';
  resetConfig();
  const lines = printedLines(() => publishMetrics(summary, at));
  return lines.flatMap((l) => extractEmf(l, Date.now()).metrics);
}

const dims = (m: { dimensions: { Name: string; Value: string }[] }) =>
  Object.fromEntries(m.dimensions.map((d) => [d.Name, d.Value]));

describe('the EMF the reconciler prints', () => {
  afterAll(() => {
    delete process.env.LLMCAP_STAGE;
    resetConfig();
  });

  it('gives every per-scope metric {service, stage, Scope}, once per scope', () => {
    const ms = identities();
    const names = [
      'Usage_gpus',
      'Guarantee_gpus',
      'Borrowed_gpus',
      'Usage_cores',
      'PendingReplicas',
      'CapacityAtLimit',
    ];
    for (const sc of ['team:ml', 'org:acme']) {
      for (const name of names) {
        const found = ms.filter((m) => m.name === name && dims(m).Scope === sc);
        expect({ name, sc, sets: found.map(dims) }).toEqual({
          name,
          sc,
          sets: [{ service: 'llmcap', stage: 'prod', Scope: sc }],
        });
      }
    }
    // Nothing of a scope leaks out without its Scope.
    expect(ms.filter((m) => names.includes(m.name) && !dims(m).Scope)).toEqual([]);
    const atLimit = ms.find((m) => m.name === 'CapacityAtLimit' && dims(m).Scope === 'team:ml')!;
    expect(atLimit.values).toEqual([1]);
    expect(atLimit.timestamp).toBe(at.getTime());
  });

  it('gives every per-compute metric {service, stage, Compute}', () => {
    const ms = identities();
    for (const c of ['gpu-l4-1x', 'cpu-small']) {
      for (const name of ['DesiredNodes', 'ReadyNodes', 'NeededNodes', 'NodegroupFailed']) {
        expect(ms.filter((m) => m.name === name && dims(m).Compute === c).map(dims)).toEqual([
          { service: 'llmcap', stage: 'prod', Compute: c },
        ]);
      }
    }
    expect(ms.find((m) => m.name === 'NodegroupFailed' && dims(m).Compute === 'gpu-l4-1x')!.values).toEqual([
      1,
    ]);
  });

  it('publishes one pass heartbeat and the error count under {service, stage}', () => {
    const ms = identities();
    for (const name of ['ReconcilePasses', 'ReconcileErrors', 'ReconcileDuration', 'UnscheduledReplicas'])
      expect(ms.filter((m) => m.name === name).map(dims)).toEqual([{ service: 'llmcap', stage: 'prod' }]);
    expect(ms.find((m) => m.name === 'UnscheduledReplicas')!.values).toEqual([2]);
    expect(ms.find((m) => m.name === 'ReconcilePasses')!.values).toEqual([1]);
    expect(ms.find((m) => m.name === 'ReconcileErrors')!.values).toEqual([1]);
  });

  it('publishes under exactly the identities the alarms watch', () => {
    const ms = identities();
    const key = (
      ns: string | undefined,
      name: string | undefined,
      d: { Name: string; Value: string }[] = [],
    ) => JSON.stringify([ns, name, [...d].sort((a, b) => a.Name.localeCompare(b.Name))]);
    const published = new Set(ms.map((m) => key(m.namespace, m.name, m.dimensions)));
    const watched = [
      capacityAtLimitAlarm('prod', 'team:ml', 1),
      capacityAtLimitAlarm('prod', 'org:acme', 1),
      nodegroupFailedAlarm('prod', 'gpu-l4-1x', 1),
      nodegroupFailedAlarm('prod', 'cpu-small', 1),
      ...prodStageAlarms(),
    ].flatMap((a) =>
      a.Metrics
        ? a.Metrics.filter((q) => q.MetricStat?.Metric.Namespace === 'llmcap').map((q) =>
            key(
              q.MetricStat!.Metric.Namespace,
              q.MetricStat!.Metric.MetricName,
              q.MetricStat!.Metric.Dimensions,
            ),
          )
        : a.Namespace === 'llmcap'
          ? [key(a.Namespace, a.MetricName, a.Dimensions)]
          : [],
    );
    expect(watched.filter((w) => !published.has(w))).toEqual([]);
  });
});
