import { API_TIMEOUT_SECONDS } from '../../../lambdas/shared/config';
import { claimKey, IN_PROGRESS_MARGIN_SECONDS, requestFingerprint } from '../../../lambdas/store/idempotency';
import { ADMIN_SESSION, type TestApi, testApi } from '../../helpers/api';

/**
 * An Idempotency-Key whose first request never answered (its Lambda crashed or timed out) blocks the key only
 * as long as that request could still be running; a completed request is replayed for a day. The clock is
 * driven (Date.now), not waited on.
 */

let api: TestApi;
beforeAll(async () => {
  api = await testApi();
});

let now = Date.now();
beforeEach(() => {
  now = Date.now();
  jest.spyOn(Date, 'now').mockImplementation(() => now);
});
afterEach(() => jest.restoreAllMocks());
const advance = (seconds: number) => {
  now += seconds * 1000;
};

const post = (name: string, key: string) =>
  api.call('POST', '/v1/scopes', { name }, { headers: { 'idempotency-key': key } });

describe('an Idempotency-Key left in progress by a crash', () => {
  it('expires after the function timeout plus a margin, not after a day', async () => {
    // The first request claimed the key, then its Lambda died before it could answer or release it.
    await claimKey(ADMIN_SESSION, 'crashed', requestFingerprint('POST', '/v1/scopes', { name: 'org:crash' }));

    const blocked = await post('org:crash', 'crashed');
    expect(blocked.status).toBe(409);
    expect(blocked.body.reason).toBe('IdempotencyKeyInProgress');
    const wait = Number(blocked.headers['retry-after']);
    expect(wait).toBeGreaterThan(API_TIMEOUT_SECONDS);
    expect(wait).toBeLessThanOrEqual(API_TIMEOUT_SECONDS + IN_PROGRESS_MARGIN_SECONDS + 1);

    // While the first request could still be running, the key stays taken.
    advance(API_TIMEOUT_SECONDS);
    expect((await post('org:crash', 'crashed')).status).toBe(409);

    advance(IN_PROGRESS_MARGIN_SECONDS + 1);
    const retried = await post('org:crash', 'crashed');
    expect(retried.status).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect((await api.call('GET', '/v1/scopes/org%3Acrash')).status).toBe(200);
  });

  it('still refuses the key for another request while it is in progress', async () => {
    await claimKey(ADMIN_SESSION, 'other', requestFingerprint('POST', '/v1/scopes', { name: 'org:a' }));
    const r = await post('org:b', 'other');
    expect(r.status).toBe(409);
    expect(r.body.reason).toBe('IdempotencyKeyReused');
  });
});

describe('a completed request', () => {
  it('is replayed for a day after it answered, long after an in-progress claim would expire', async () => {
    const first = await post('org:done', 'done');
    expect(first.status).toBe(201);
    advance(23 * 3600);
    const again = await post('org:done', 'done');
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
  });

  it('keeps its day from when it answered, however long it ran', async () => {
    await claimKey(ADMIN_SESSION, 'slow', requestFingerprint('POST', '/v1/scopes', { name: 'org:slow' }));
    // The claim expired, so this request takes the key over and completes it.
    advance(API_TIMEOUT_SECONDS + IN_PROGRESS_MARGIN_SECONDS + 1);
    expect((await post('org:slow', 'slow')).status).toBe(201);
    advance(20 * 3600);
    expect((await post('org:slow', 'slow')).headers['idempotent-replayed']).toBe('true');
    advance(5 * 3600);
    // A day after it answered, the key is free again: the scope exists, so the request is answered afresh.
    const late = await post('org:slow', 'slow');
    expect(late.status).toBe(409);
    expect(late.headers['idempotent-replayed']).toBeUndefined();
  });
});
