import { admissionEvents, recentEvents, type StoredEvent } from '../../../lambdas/domain/events';
import type { ModelAdmission } from '../../../lambdas/domain/quota';
import { driftedBy } from '../../../lambdas/domain/workloads';

/** Events of a decision, and drift told apart from llmcap's own changes. */

const unit = (replicas: number) =>
  ({
    id: 'm#min',
    kind: 'min',
    replicas,
    profile: 'l4',
    resources: {},
    placements: [],
    admittedAt: 't',
  }) as never;
const adm = (over: Partial<ModelAdmission>): ModelAdmission => ({
  model: 'm',
  units: [],
  pending: [],
  ...over,
});
const created = () => '2026-01-01T00:00:00Z';

describe('admissionEvents', () => {
  it('tells replicas admitted, a new reason to wait and a take-back, naming no other model or scope', () => {
    const before = [adm({ units: [unit(2)] })];
    const after = [
      adm({
        units: [unit(1)],
        pending: [
          { reason: 'TakenBackForScope', message: 'taken back for team:other', replicas: 1, since: 't' },
        ],
        takenBack: [
          {
            reason: 'TakenBackForScope',
            message: 'taken back for chat of team:other',
            replicas: 1,
            by: { model: 'chat', unitId: 'chat#min', scope: 'team:other', class: 'production' },
            at: 't2',
          },
        ] as never,
      }),
    ];
    const ev = admissionEvents(before, after, created, 't2', 'reconcile');
    expect(ev.map((e) => [e.type, e.reason, e.message])).toEqual([
      ['Normal', 'Released', '1 replica admitted (was 2)'],
      ['Warning', 'TakenBackForScope', '1 replica pending (TakenBackForScope)'],
      ['Warning', 'TakenBack', '1 replica taken back (TakenBackForScope)'],
    ]);
    for (const e of ev) expect(e.message).not.toMatch(/team:other|chat/);
  });

  it('tells nothing of a decision that changed nothing, or of a model it does not know', () => {
    const same = [adm({ units: [unit(1)] })];
    expect(admissionEvents(same, same, created, 't', 'api')).toEqual([]);
    expect(admissionEvents([], [adm({ units: [unit(1)] })], () => undefined, 't', 'api')).toEqual([]);
  });
});

describe('recentEvents', () => {
  it('keeps the events of the resource as it is, newest first, not those of one before it of its name', () => {
    const e = (of: string, lastAt: string): StoredEvent => ({
      of,
      type: 'Normal',
      reason: 'Admitted',
      message: lastAt,
      source: 'api',
      firstAt: lastAt,
      lastAt,
      count: 1,
    });
    const got = recentEvents([e('old', '3'), e('new', '1'), e('new', '2')], 'new');
    expect(got.map((x) => x.lastAt)).toEqual(['2', '1']);
  });
});

describe('driftedBy', () => {
  const want = { spec: { replicas: 2, template: { spec: { containers: [{ name: 'server' }] } } } };
  const live = (managedFields: unknown[]) => ({ metadata: { managedFields } });
  const ours = ['llmcap', 'llmcap-drain'];

  it('names another manager that owns a field llmcap sets (kubectl scale, kubectl edit)', () => {
    const scaled = live([
      { manager: 'llmcap', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:template': {} } } },
      {
        manager: 'kubectl',
        operation: 'Update',
        subresource: 'scale',
        fieldsV1: { 'f:spec': { 'f:replicas': {} } },
      },
    ]);
    expect(driftedBy(want, scaled, ours)).toBe('kubectl');
  });

  it('is nobody when only llmcap, a status writer or a manager of fields llmcap does not set wrote', () => {
    const fine = live([
      { manager: 'llmcap', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
      {
        manager: 'kube-controller-manager',
        operation: 'Update',
        subresource: 'status',
        fieldsV1: { 'f:status': {} },
      },
      {
        manager: 'kube-controller-manager',
        operation: 'Update',
        fieldsV1: { 'f:metadata': { 'f:annotations': { 'f:deployment.kubernetes.io/revision': {} } } },
      },
      { manager: 'llmcap-drain', operation: 'Update', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
    ]);
    expect(driftedBy(want, fine, ours)).toBeUndefined();
  });
});
