import type { Event, Result } from '../../../lambdas/api/http';
import { type ApiResult, apiEvent, type TestApi, testApi } from '../../helpers/api';
import { l4Model, l4Pool, scale } from '../../helpers/l4-pool';

/**
 * Two API Lambda containers (two copies of the API's modules, each with its own clients and shared reads) on one
 * table. Their writes race only on the conditions of what each read (store/commit.ts), and the admitter alone
 * decides admission: no limit is exceeded and no acknowledged write is lost.
 */

type Handle = (event: Event) => Promise<Result>;

function container(): Handle {
  let handle: Handle | undefined;
  jest.isolateModules(() => {
    handle = require('../../../lambdas/api/app').handle;
  });
  return handle!;
}

async function send(handle: Handle, method: string, path: string, body?: unknown): Promise<ApiResult> {
  const res = await handle(apiEvent(method, path, body));
  const text = typeof res.body === 'string' ? res.body : '';
  return { status: res.statusCode ?? 200, headers: {}, body: text ? JSON.parse(text) : undefined };
}

const model = (name: string, min: number, max = min) =>
  l4Model('l4-big', name, 'project:two', scale(min, max));

let api: TestApi;
let a: Handle;
let b: Handle;
beforeAll(async () => {
  api = await testApi();
  expect((await api.call('POST', '/v1/computes', l4Pool('l4-big'))).status).toBe(201);
  expect((await api.call('POST', '/v1/scopes', { name: 'org:two' })).status).toBe(201);
  expect((await api.call('POST', '/v1/scopes', { name: 'project:two', parent: 'org:two' })).status).toBe(201);
  const quota = { guarantee: { gpus: 6 }, limit: { gpus: 6 } };
  expect((await api.call('PUT', '/v1/quotas/project:two', quota)).status).toBe(200);
  [a, b] = [container(), container()];
  expect((await send(a, 'POST', '/v1/models', model('warm-a', 0, 1))).status).toBe(201);
  expect((await send(b, 'POST', '/v1/models', model('warm-b', 0, 1))).status).toBe(201);
});

const usage = async () =>
  (await api.call('GET', '/v1/capacity/project:two')).body.scopes.find((s: any) => s.scope === 'project:two')
    .usage.gpus;

it('of 20 one-GPU starts split across two containers, exactly as many as the limit allows are admitted', async () => {
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      send(i % 2 ? a : b, 'POST', '/v1/models', model(`two-${i}`, 1)).then((r) => ({ i, r })),
    ),
  );
  const created = results.filter(({ r }) => r.status === 201);
  for (const { r } of results.filter(({ r }) => r.status !== 201)) {
    expect(r.status).toBe(409);
    expect(r.body.reason).toBe('LimitExceeded');
  }
  await api.admitter.settled();
  expect(await usage()).toBe(6);
  // Every acknowledged model is stored, as both containers read it; the admitter admitted exactly 6 of them.
  for (const h of [a, b]) {
    const listed = (await send(h, 'GET', '/v1/models')).body.items.filter((m: any) =>
      /^two-\d+$/.test(m.metadata.name),
    );
    expect(listed.map((m: any) => m.metadata.name).sort()).toEqual(created.map(({ i }) => `two-${i}`).sort());
    expect(listed.filter((m: any) => m.status.admitted === 1)).toHaveLength(6);
    for (const m of listed.filter((x: any) => x.status.admitted === 0))
      expect(m.status.reasons.map((r: any) => r.reason)).toEqual(['LimitExceeded']);
  }
});

it('concurrent scalings of one model from two containers all land, each answered with its own version', async () => {
  expect((await send(a, 'POST', '/v1/models', model('two-hot', 0, 1))).status).toBe(201);
  const rs = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      send(i % 2 ? a : b, 'PUT', '/v1/models/two-hot/scaling', { min: 0, max: i + 1 }),
    ),
  );
  expect(rs.map((r) => r.status)).toEqual(Array(12).fill(200));
  const versions = rs.map((r) => r.body.metadata.version as number).sort((x, y) => x - y);
  expect(versions).toEqual(Array.from({ length: 12 }, (_, i) => i + 2));
  const last = rs.find((r) => r.body.metadata.version === 13)!;
  for (const h of [a, b]) {
    const now = await send(h, 'GET', '/v1/models/two-hot');
    expect(now.body.metadata.version).toBe(13);
    expect(now.body.spec.scaling).toEqual(last.body.spec.scaling);
  }
});
