import {
  PASS_ID_PATTERN,
  parseReconcileEvent,
  passId,
  passView,
} from '../../../lambdas/domain/reconcile-pass';

describe('reconcile pass ids', () => {
  it('start with the time, so that they sort as the passes were asked for', () => {
    const a = passId(new Date('2026-01-05T10:15:02.123Z'), '0a1b2c3d');
    const b = passId(new Date('2026-01-05T10:15:02.124Z'), '00000000');
    expect(a).toBe('20260105T101502123Z-0a1b2c3d');
    expect(a).toMatch(PASS_ID_PATTERN);
    expect([b, a].sort()).toEqual([a, b]);
  });
});

describe('a pass as the API shows it', () => {
  const base = { id: '20260105T101502123Z-0a1b2c3d', trigger: 'api' as const };
  const now = Date.parse('2026-01-05T10:30:00Z');

  it('reports a pass that missed its deadline as FAILED, saying what probably happened', () => {
    expect(passView({ ...base, state: 'QUEUED', deadline: now - 1 }, now)).toMatchObject({
      state: 'FAILED',
      error: expect.stringMatching(/no reconcile pass started within 6 minutes/),
    });
    expect(passView({ ...base, state: 'RUNNING', deadline: now - 1 }, now)).toMatchObject({
      state: 'FAILED',
      error: expect.stringMatching(/timed out or crashed/),
    });
  });

  it('leaves a pass within its deadline, or one that ended, as recorded, without the deadline', () => {
    const running = passView({ ...base, state: 'RUNNING', deadline: now + 1 }, now);
    expect(running).toEqual({ ...base, state: 'RUNNING' });
    const done = passView(
      {
        ...base,
        state: 'SUCCEEDED',
        startedAt: '2026-01-05T10:15:03.000Z',
        finishedAt: '2026-01-05T10:15:05.500Z',
      },
      now,
    );
    expect(done).toMatchObject({ state: 'SUCCEEDED', durationMs: 2500 });
  });
});

describe('the reconcile Lambda event', () => {
  it("tells the API's event, naming its pass, from the schedule's or an empty one", () => {
    expect(parseReconcileEvent({ source: 'llmcap.api', passId: '20260105T101502123Z-0a1b2c3d' })).toEqual({
      kind: 'api',
      source: 'llmcap.api',
      passId: '20260105T101502123Z-0a1b2c3d',
    });
    expect(
      parseReconcileEvent({
        source: 'llmcap.schedule',
        scheduledTime: '2026-01-05T10:15:00Z',
        executionId: 'x',
      }),
    ).toMatchObject({ kind: 'schedule', scheduledTime: '2026-01-05T10:15:00Z' });
    expect(parseReconcileEvent({})).toEqual({ kind: 'schedule' });
    expect(parseReconcileEvent(undefined)).toEqual({ kind: 'schedule' });
  });

  it('refuses a malformed event with every issue and what to send instead', () => {
    expect(() => parseReconcileEvent({ source: 'llmcap.api', passId: 'x', extra: 1 })).toThrow(
      /passId: a pass id such as .*; \(event\): Unrecognized key: "extra".*send \{"source":"llmcap.api"/,
    );
    expect(() => parseReconcileEvent({ scheduledTime: 'yesterday' })).toThrow(/scheduledTime: /);
  });
});
