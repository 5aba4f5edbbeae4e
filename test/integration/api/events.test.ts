import { type TestApi, testApi } from '../../helpers/api';

/**
 * A resource's events (GET /v1/models/{name}/events, /v1/computes/{name}/events): what admission decided for a
 * model, recorded where it decided, readable by those who may read the model and by nobody else, and not
 * inherited by a model created again under the same name.
 */

const MEMBER = 'arn:aws:iam::111111111111:role/ev-member';
const STRANGER = 'arn:aws:iam::111111111111:role/ev-stranger';

const model = (name: string, min: number) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name, owner: 'team:ev' },
  spec: {
    source: 'hf://org/ev-8b',
    engine: 'vllm',
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16 }],
    scaling: { min: 1, target: min, max: min },
  },
});

let api: TestApi;
beforeAll(async () => {
  api = await testApi();
  expect((await api.call('POST', '/v1/scopes', { name: 'org:ev' })).status).toBe(201);
  expect((await api.call('POST', '/v1/scopes', { name: 'team:ev', parent: 'org:ev' })).status).toBe(201);
  await api.call('PUT', `/v1/scopes/team:ev/members/${encodeURIComponent(MEMBER)}`, { role: 'editor' });
  const q = await api.call('PUT', '/v1/quotas/team:ev', { guarantee: { gpus: 1 }, limit: { gpus: 1 } });
  expect(q.status).toBe(200);
});

it("records a model's admission decisions as events its readers see, newest first", async () => {
  expect((await api.as(MEMBER).call('POST', '/v1/models', model('ev-chat', 1))).status).toBe(201);
  expect(
    (await api.as(MEMBER).call('PUT', '/v1/models/ev-chat/scaling', { min: 1, target: 3, max: 3 })).status,
  ).toBe(200);
  const r = await api.as(MEMBER).call('GET', '/v1/models/ev-chat/events');
  expect(r.status).toBe(200);
  const reasons = r.body.items.map((e: any) => e.reason);
  expect(reasons).toContain('Admitted');
  const wait = r.body.items.find((e: any) => e.type === 'Warning');
  expect(wait).toMatchObject({
    source: 'admitter',
    count: 1,
    message: expect.stringMatching(/^2 replicas pending \(\w+\)$/),
  });
  const admitted = r.body.items.find((e: any) => e.reason === 'Admitted');
  expect(admitted.message).toBe('1 replica admitted (was 0)');
  // Newest first.
  const times = r.body.items.map((e: any) => e.lastAt);
  expect(times).toEqual([...times].sort().reverse());
});

it('answers a caller who may not read the model exactly as for a model that does not exist', async () => {
  const theirs = await api.as(STRANGER).call('GET', '/v1/models/ev-chat/events');
  const none = await api.as(STRANGER).call('GET', '/v1/models/ev-none/events');
  expect(theirs.status).toBe(404);
  expect(theirs.body).toEqual({ ...none.body, detail: none.body.detail.replace('ev-none', 'ev-chat') });
});

it('starts a model created again under the same name with no events of the one before', async () => {
  expect((await api.as(MEMBER).call('DELETE', '/v1/models/ev-chat')).status).toBe(204);
  expect((await api.as(MEMBER).call('POST', '/v1/models', model('ev-chat', 1))).status).toBe(201);
  const r = await api.as(MEMBER).call('GET', '/v1/models/ev-chat/events');
  expect(r.body.items.map((e: any) => [e.reason, e.message])).toEqual([
    ['Admitted', '1 replica admitted (was 0)'],
  ]);
});

it("lists a compute's events to those who may read it (none until a pass acts on it)", async () => {
  const r = await api.call('GET', '/v1/computes/gpu-l4-1x/events');
  expect(r).toMatchObject({ status: 200, body: { items: [] } });
  expect((await api.as(STRANGER).call('GET', '/v1/computes/nope/events')).status).toBe(404);
});
