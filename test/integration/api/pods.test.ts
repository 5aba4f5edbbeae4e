import { recordWorkloads } from '../../../lambdas/store/workloads';
import { type TestApi, testApi } from '../../helpers/api';

/**
 * GET /v1/pods over the API handler against DynamoDB Local, on pods as the reconciler stores them (no cluster
 * here): bad filters are refused all at once, pods of a model gone from the catalog are a platform admin's
 * concern, a model with more pods than its status holds says so, and a stage that runs no pods says why.
 */

const VIEWER = 'arn:aws:iam::111111111111:role/ml-viewer';
let api: TestApi;
const before = process.env.LLMCAP_WORKLOADS;

const pods = (model: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    name: `${model}-gpu-l4-5d8f9c7b6-${String(i).padStart(5, 'x')}`,
    model,
    namespace: 'llmcap-test-team-ml',
    compute: 'gpu-l4-1x',
    profile: 'l4',
    node: `ip-10-0-1-${i}.ec2.internal`,
    phase: 'Running',
    ready: true,
    restarts: 0,
  }));

beforeAll(async () => {
  process.env.LLMCAP_WORKLOADS = 'deploy';
  api = await testApi();
  expect((await api.call('POST', '/v1/scopes', { name: 'org:acme' })).status).toBe(201);
  expect((await api.call('POST', '/v1/scopes', { name: 'team:ml', parent: 'org:acme' })).status).toBe(201);
  const member = `/v1/scopes/team:ml/members/${encodeURIComponent(VIEWER)}`;
  expect((await api.call('PUT', member, { role: 'viewer' })).status).toBe(200);
  // `gone` was removed from the catalog while its pods still terminate; qwen3-8b is declared and shared.
  await recordWorkloads(
    new Map([
      ['gone', { running: 1, total: 1, pods: pods('gone', 1), podReasons: [] }],
      ['qwen3-8b', { running: 60, total: 60, pods: pods('qwen3-8b', 50), podReasons: [] }],
    ]),
    '2026-01-05T10:15:02.000Z',
  );
});
afterAll(() => {
  if (before === undefined) delete process.env.LLMCAP_WORKLOADS;
  else process.env.LLMCAP_WORKLOADS = before;
});

it('refuses bad filters with every issue listed', async () => {
  const r = await api.call('GET', '/v1/pods?model=Not_A_Name&ready=maybe&colour=red');
  expect(r.status).toBe(400);
  expect(r.headers['content-type']).toBe('application/problem+json');
  expect(r.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['(query)', 'model', 'ready']);
});

it("shows a removed model's pods to platform admins only, and names a model whose pods are cut", async () => {
  const admin = await api.call('GET', '/v1/pods');
  expect(new Set(admin.body.items.map((p: { model: string }) => p.model))).toEqual(
    new Set(['gone', 'qwen3-8b']),
  );
  expect(admin.body).toMatchObject({
    observedAt: '2026-01-05T10:15:02.000Z',
    truncated: [{ model: 'qwen3-8b', shown: 50, total: 60 }],
  });
  const viewer = await api.as(VIEWER).call('GET', '/v1/pods');
  expect(new Set(viewer.body.items.map((p: { model: string }) => p.model))).toEqual(new Set(['qwen3-8b']));
  expect((await api.as(VIEWER).call('GET', '/v1/pods?model=gone')).status).toBe(404);
  const ready = await api.call('GET', '/v1/pods?model=qwen3-8b&node=ip-10-0-1-7.ec2.internal&ready=true');
  expect(ready.body.items.map((p: { name: string }) => p.name)).toEqual([pods('qwen3-8b', 8)[7]!.name]);
  expect((await api.call('GET', '/v1/pods?ready=false')).body.items).toEqual([]);
});

it('answers the pods a page at a time, whole over the pages, for an admin and a viewer', async () => {
  for (const call of [api.call, api.as(VIEWER).call]) {
    const whole = await call('GET', '/v1/pods?limit=1000');
    const names: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const r = await call('GET', `/v1/pods?limit=7${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.items.length).toBeLessThanOrEqual(7);
      // observedAt on every page; the note on the whole list on the first only.
      expect(r.body.observedAt).toBe('2026-01-05T10:15:02.000Z');
      expect(r.body.truncated !== undefined).toBe(pages === 0);
      names.push(...r.body.items.map((p: { name: string }) => p.name));
      token = r.body.metadata?.continue;
      pages++;
    } while (token);
    expect(names).toEqual(whole.body.items.map((p: { name: string }) => p.name));
    expect(new Set(names).size).toBe(names.length);
    expect(pages).toBe(Math.ceil(names.length / 7));
  }
  const admin = (await api.call('GET', '/v1/pods?limit=1000')).body.items.length;
  const viewer = (await api.as(VIEWER).call('GET', '/v1/pods?limit=1000')).body.items.length;
  expect([admin, viewer]).toEqual([51, 50]);
});

it('says why it lists no pods where llmcap does not run them', async () => {
  process.env.LLMCAP_WORKLOADS = 'off';
  const off = await testApi();
  const r = await off.call('GET', '/v1/pods');
  expect(r.status).toBe(200);
  expect(r.body).toEqual({ items: [], message: expect.stringContaining('LLMCAP_WORKLOADS=off') });
});
