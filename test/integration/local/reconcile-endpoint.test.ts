import type { ControlPlane } from '../../../local/control-plane';
import { LOCAL_ADMIN } from '../../../local/identity';
import { testControlPlane } from '../../helpers/control-plane';
import { holdAdmitter, until } from '../../helpers/passes';

/**
 * POST /v1/reconcile on the local control plane, through the same path as in AWS: the API Lambda invokes the
 * reconcile Lambda asynchronously (@aws-sdk/client-lambda → the local Lambda, reserved concurrency 1), and the
 * real reconcile handler records the pass in DynamoDB Local. A pass is held RUNNING by holding the admitter
 * busy, which its admission waits for, as a long admitter run would.
 */

let cp: ControlPlane;
beforeAll(async () => {
  cp = await testControlPlane('rcp');
});
afterAll(() => cp.stop());

const call = async (method: string, path: string, principal?: string) => {
  const r = await fetch(`${cp.apiUrl}${path}`, {
    method,
    headers: principal ? { 'x-llmcap-principal': principal } : {},
  });
  const text = await r.text();
  return { status: r.status, headers: r.headers, body: text ? (JSON.parse(text) as any) : undefined };
};
const pass = async (id: string) => (await call('GET', `/v1/reconcile/${id}`)).body;
const state = (s: string) => (p: any) => p.state === s;

describe('POST /v1/reconcile', () => {
  it('answers 202 with the pass id while the pass is still running; the pass is read afterwards with its summary', async () => {
    const hold = await holdAdmitter(cp);
    let r: Awaited<ReturnType<typeof call>> | undefined;
    try {
      // The bound only keeps this test from hanging where POST waits for the pass (which waits for the admitter).
      let bound: NodeJS.Timeout | undefined;
      r = await Promise.race([
        call('POST', '/v1/reconcile'),
        new Promise<undefined>((res) => {
          bound = setTimeout(() => res(undefined), 20_000);
        }),
      ]);
      clearTimeout(bound);
      expect(r?.status).toBe(202);
      expect(r!.body).toMatchObject({
        state: 'QUEUED',
        trigger: 'api',
        requestedBy: LOCAL_ADMIN,
        coalesced: false,
      });
      expect(r!.headers.get('location')).toBe(`/v1/reconcile/${r!.body.id}`);
      // Answered, and the pass it started has not finished: it is waiting for the admitter.
      expect((await until(() => pass(r!.body.id), state('RUNNING'))).finishedAt).toBeUndefined();
    } finally {
      await hold.release();
    }
    const done = await until(
      () => pass(r!.body.id),
      (p) => p.state !== 'RUNNING',
    );
    expect(done).toMatchObject({
      id: r!.body.id,
      state: 'SUCCEEDED',
      trigger: 'api',
      summary: { admission: expect.any(Object), computes: expect.any(Array), errors: [] },
    });
    expect(done.durationMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(done.finishedAt)).toBeGreaterThanOrEqual(Date.parse(done.startedAt));
    const list = (await call('GET', '/v1/reconcile?limit=5')).body.items;
    expect(list[0]).toMatchObject({ id: r!.body.id, state: 'SUCCEEDED', digest: { errors: 0 } });
    expect(list[0].summary).toBeUndefined();
  });

  it('queues the next pass when one is running, and joins that one while it waits', async () => {
    const hold = await holdAdmitter(cp);
    let first: any;
    let second: any;
    try {
      first = (await call('POST', '/v1/reconcile')).body;
      await until(() => pass(first.id), state('RUNNING'));
      // The running pass may have read the state before this request: a new pass is queued for it.
      second = (await call('POST', '/v1/reconcile')).body;
      expect(second).toMatchObject({ state: 'QUEUED', coalesced: false });
      expect(second.id).not.toBe(first.id);
      // That one has not started, so it covers a third request too.
      const third = (await call('POST', '/v1/reconcile')).body;
      expect(third).toMatchObject({ id: second.id, state: 'QUEUED', coalesced: true, requests: 2 });
    } finally {
      await hold.release();
    }
    const [a, b]: any[] = await Promise.all(
      [first.id, second.id].map((id) => until(() => pass(id), state('SUCCEEDED'))),
    );
    // One at a time (reserved concurrency 1): the queued pass started after the running one ended.
    expect(Date.parse(b.startedAt)).toBeGreaterThanOrEqual(Date.parse(a.finishedAt));
    expect(b.requests).toBe(2);
  });

  it('lets the next pass to start cover a queued request, whatever started it', async () => {
    const hold = await holdAdmitter(cp);
    let scheduled: Promise<unknown>[] = [];
    let requested: any;
    try {
      // A scheduled pass runs (held) and the next one waits in the Lambda's queue ahead of the request's event.
      scheduled = [cp.reconcile(), cp.reconcile()];
      // Scheduled pass ids carry the schedule's time (here the driven CloudWatch clock), so look past the first.
      await until(
        () => call('GET', '/v1/reconcile?limit=10'),
        (r) => r.body.items.some((p: any) => p.trigger === 'schedule' && p.state === 'RUNNING'),
      );
      requested = (await call('POST', '/v1/reconcile')).body;
    } finally {
      await hold.release();
    }
    await Promise.all(scheduled);
    await cp.lambda.waitForIdle(30_000);
    // The second scheduled invocation claimed the queued pass; the request's own event then found it covered.
    const done = await pass(requested.id);
    expect(done).toMatchObject({ state: 'SUCCEEDED', trigger: 'api' });
    const items = (await call('GET', '/v1/reconcile?limit=10')).body.items as any[];
    const since = items.filter((p) => Date.parse(p.startedAt) >= Date.parse(done.startedAt));
    expect(since.map((p) => p.id)).toEqual([requested.id]);
    expect(cp.lambda.destinations.get(cp.reconcileFailureDestination) ?? []).toEqual([]);
  });

  it('refuses anyone but a platform admin, reading or requesting', async () => {
    const someone = 'arn:aws:iam::111111111111:role/someone';
    for (const [m, p] of [
      ['POST', '/v1/reconcile'],
      ['GET', '/v1/reconcile'],
      ['GET', '/v1/reconcile/20260105T101502123Z-0a1b2c3d'],
    ] as const) {
      const r = await call(m, p, someone);
      expect([m, p, r.status, r.body.detail]).toEqual([m, p, 403, expect.stringMatching(/platform admins/)]);
    }
  });

  it('says what is wrong with a bad pass id or list limit, and that an unknown pass does not exist', async () => {
    const bad = await call('GET', '/v1/reconcile/latest');
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ path: 'id', message: expect.stringMatching(/pass id such as/) }]);
    const limit = await call('GET', '/v1/reconcile?limit=0&order=asc');
    expect(limit.status).toBe(400);
    expect(limit.body.errors).toEqual([
      { path: 'limit', message: expect.stringMatching(/>=1/) },
      { path: '(query)', message: "unknown parameter(s) 'order'" },
    ]);
    const missing = await call('GET', '/v1/reconcile/20200105T101502123Z-0a1b2c3d');
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toMatch(/does not exist/);
  });
});

describe('a pass that fails', () => {
  let short: ControlPlane;
  beforeAll(async () => {
    // Its own control plane, with a reconcile Lambda whose timeout a held pass outlives.
    short = await testControlPlane('rcf', { reconcileTimeoutSeconds: 2 });
  });
  afterAll(() => short.stop());

  it('is recorded FAILED, and its event reaches the on-failure destination', async () => {
    const hold = await holdAdmitter(short);
    let id = '';
    try {
      const r = await fetch(`${short.apiUrl}/v1/reconcile`, { method: 'POST' });
      id = ((await r.json()) as any).id;
      const read = async () => (await (await fetch(`${short.apiUrl}/v1/reconcile/${id}`)).json()) as any;
      const failed = await until(read, state('FAILED'));
      expect(failed.error).toMatch(/did not finish within the reconcile Lambda's 2 s timeout/);
      const records = await until(
        async () => short.lambda.destinations.get(short.reconcileFailureDestination) ?? [],
        (l) => l.length > 0,
      );
      expect(records).toEqual([
        expect.objectContaining({
          requestContext: expect.objectContaining({
            condition: 'RetriesExhausted',
            approximateInvokeCount: 1,
            functionArn: expect.stringMatching(/:function:rcf-.*-reconcile:\$LATEST$/),
          }),
          requestPayload: { source: 'llmcap.api', passId: id },
          // middy ends the handler 5 ms before Lambda's own timeout; on a loaded machine (and in AWS) Lambda's
          // can still come first, so either error is the failure a destination gets.
          responseContext: expect.objectContaining({ functionError: 'Unhandled' }),
          responsePayload: expect.objectContaining({
            errorType: expect.stringMatching(/^(TimeoutError|Sandbox\.Timedout)$/),
          }),
        }),
      ]);
      // The record waits in the queue, whose depth pages on-call through the stage's ReconcileFailures alarm.
      await short.advance(60_000);
      expect(short.transitions).toContainEqual(
        expect.objectContaining({ alarmName: 'llmcap-local-ReconcileFailures', to: 'ALARM' }),
      );
    } finally {
      await hold.release();
    }
  });
});
