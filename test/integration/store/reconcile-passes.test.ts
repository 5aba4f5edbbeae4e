import { passView } from '../../../lambdas/domain/reconcile-pass';
import { passesSettled } from '../../../lambdas/service/passes';
import type { ReconcileSummary } from '../../../lambdas/service/reconcile';
import { claimQueuedPass, getPass, listPasses, requestPass } from '../../../lambdas/store/reconcile-passes';
import { until } from '../../helpers/passes';
import { recordedPass } from '../../helpers/services';
import { freshTable } from '../../helpers/table';

/**
 * Pass records against DynamoDB Local: the queue that requests join, the claim that exactly one invocation
 * wins, and the pass service (lambdas/service/passes.ts) recording how a pass ended, whatever ends it.
 */

beforeAll(async () => {
  await freshTable('passes');
});

const summary = (extra: Partial<ReconcileSummary> = {}): ReconcileSummary => ({
  startedAt: new Date().toISOString(),
  durationMs: 12,
  computes: [],
  scopes: [],
  atLimit: [],
  admission: { admitted: 1, released: 0, victims: 0, pendingReplicas: 2, commits: 1 },
  workflows: [],
  awsCalls: 0,
  errors: [],
  ...extra,
});
const ctx = (ms: number) => ({ getRemainingTimeInMillis: () => ms });
const start = () => ({ now: new Date(), deadline: Date.now() + 60_000 });
/** Takes whatever is queued off the queue, so that each test starts with none. */
const drain = () => claimQueuedPass(start());

describe('the queue', () => {
  beforeEach(drain);

  it('gives concurrent requests one pass between them, counting each', async () => {
    const all = await Promise.all(Array.from({ length: 8 }, (_, i) => requestPass(`p${i}`)));
    expect(new Set(all.map((r) => r.pass.id)).size).toBe(1);
    expect(all.filter((r) => !r.coalesced)).toHaveLength(1);
    expect((await getPass(all[0]!.pass.id))?.requests).toBe(8);
  });

  it('lets exactly one of two racing invocations claim the queued pass', async () => {
    const { pass } = await requestPass('a');
    const claims = await Promise.all([claimQueuedPass(start()), claimQueuedPass(start())]);
    expect(claims.filter(Boolean)).toEqual([pass.id]);
    expect((await getPass(pass.id))?.state).toBe('RUNNING');
    // Claimed, it is no longer queued: the next request queues a new pass.
    expect((await requestPass('b')).coalesced).toBe(false);
  });

  it('queues a new pass past one that never started, which reads FAILED', async () => {
    const old = await requestPass('a', new Date(Date.now() - 10 * 60_000));
    const fresh = await requestPass('b');
    expect(fresh).toMatchObject({ coalesced: false });
    expect(fresh.pass.id).not.toBe(old.pass.id);
    const stale = passView((await getPass(old.pass.id))!, Date.now());
    expect(stale).toMatchObject({
      state: 'FAILED',
      error: expect.stringMatching(/no reconcile pass started/),
    });
  });
});

describe('a recorded pass', () => {
  beforeEach(drain);

  it('records a failure with its error and rethrows it, so Lambda counts it', async () => {
    const { pass } = await requestPass('a');
    await expect(
      recordedPass({ source: 'llmcap.api', passId: pass.id }, ctx(60_000), async () => {
        throw new Error('DescribeNodegroup: AccessDeniedException');
      }),
    ).rejects.toThrow('AccessDeniedException');
    expect(await getPass(pass.id)).toMatchObject({
      state: 'FAILED',
      error: 'Error: DescribeNodegroup: AccessDeniedException',
      finishedAt: expect.any(String),
    });
  });

  it("stamps a pass with the schedule's time, even when it claims a requested pass, and a request with its start", async () => {
    const seen: Date[] = [];
    const run = async (at: Date) => {
      seen.push(at);
      return summary();
    };
    const scheduledTime = '2026-01-05T10:16:00Z';
    const { pass } = await requestPass('a');
    // The schedule's invocation claims the queued request; its metrics still belong in the scheduled minute.
    await recordedPass({ source: 'llmcap.schedule', scheduledTime, executionId: 'e-at' }, ctx(60_000), run);
    expect((await getPass(pass.id))?.state).toBe('SUCCEEDED');
    const before = Date.now();
    const { pass: requested } = await requestPass('b');
    await recordedPass({ source: 'llmcap.api', passId: requested.id }, ctx(60_000), run);
    expect(seen[0]!.toISOString()).toBe('2026-01-05T10:16:00.000Z');
    expect(seen[1]!.getTime()).toBeGreaterThanOrEqual(before);
    expect(seen[1]!.getTime()).toBeLessThanOrEqual(Date.now());
  });

  it('skips an event whose pass an earlier invocation started, and a scheduled event delivered twice', async () => {
    const { pass } = await requestPass('a');
    const ran: string[] = [];
    const run = async () => {
      ran.push('pass');
      return summary();
    };
    // The schedule's invocation came first and covered the request.
    await recordedPass({ source: 'llmcap.schedule' }, ctx(60_000), run);
    expect(await recordedPass({ source: 'llmcap.api', passId: pass.id }, ctx(60_000), run)).toMatchObject({
      skipped: expect.any(String),
      passId: pass.id,
    });
    const event = { source: 'llmcap.schedule', scheduledTime: '2026-01-05T10:15:00Z', executionId: 'e-1' };
    await recordedPass(event, ctx(60_000), run);
    expect(await recordedPass(event, ctx(60_000), run)).toMatchObject({ skipped: expect.any(String) });
    expect(ran).toEqual(['pass', 'pass']);
    const mine = (await listPasses(100)).find((p) => p.scheduledTime === '2026-01-05T10:15:00Z');
    expect(mine).toMatchObject({ id: expect.stringMatching(/^20260105T101500000Z-/), trigger: 'schedule' });
    expect((await getPass(pass.id))?.state).toBe('SUCCEEDED');
  });

  it('refuses an event it does not understand, naming what it expects', async () => {
    await expect(
      recordedPass({ source: 'llmcap.api', passId: 'latest' }, ctx(60_000), async () => summary()),
    ).rejects.toThrow(/passId: a pass id such as/);
  });

  it('records its own timeout just before Lambda ends it, and a late finish does not undo that', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const { pass } = await requestPass('a');
    // 400 ms left: the pass records the timeout at 300 ms and is still running at 400 ms.
    const t0 = Date.now(); // the pass takes its clock before its first await
    const running = recordedPass({ source: 'llmcap.api', passId: pass.id }, ctx(400), async () => {
      await gate;
      return summary();
    });
    const failed = await until(
      async () => (await getPass(pass.id))!,
      (p) => p.state === 'FAILED',
    );
    expect(failed.error).toMatch(/did not finish within the reconcile Lambda's 1 s timeout/);
    await until(
      async () => Date.now(),
      (now) => now > t0 + 410,
    );
    open();
    await running;
    await passesSettled();
    expect((await getPass(pass.id))?.state).toBe('FAILED');
  });

  it('keeps a large summary, compressed, and reads it back whole', async () => {
    const { pass } = await requestPass('a');
    const big = summary({
      errors: Array.from({ length: 3000 }, (_, i) => `compute c-${i}: throttled`.repeat(3)),
    });
    await recordedPass({ source: 'llmcap.api', passId: pass.id }, ctx(60_000), async () => big);
    const stored = await getPass(pass.id);
    expect(stored?.summary).toEqual(big);
    expect(stored?.digest).toMatchObject({ errors: 3000, admitted: 1, pendingReplicas: 2 });
  });
});
