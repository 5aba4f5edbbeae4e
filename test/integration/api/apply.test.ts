import { type TestApi, testApi } from '../../helpers/api';
import { dumpTable } from '../../helpers/dump';
import { l4Model, l4Pool, scale } from '../../helpers/l4-pool';

/**
 * Apply is declarative (issue 18 §1) and every write has a what-if (§2), over the API handler against
 * DynamoDB Local: an unchanged manifest writes nothing, every kind honours its version, a scope manifest is the
 * whole of its members, and `?dryRun=All` decides (admission included) and writes nothing.
 */

const LEAD = 'arn:aws:iam::111111111111:role/apply-lead';
const DEV = 'arn:aws:iam::111111111111:role/apply-dev';

const pool = l4Pool('apply-pool');

const model = (name: string, owner: string, min: number, max = min, target?: number) =>
  l4Model('apply-pool', name, owner, scale(min, max, target));

const withoutStatus = ({ status: _s, ...m }: Record<string, unknown>) => m;

let api: TestApi;
beforeAll(async () => {
  api = await testApi();
  expect((await api.call('POST', '/v1/computes', pool)).status).toBe(201);
  const spare = { ...pool, metadata: { name: 'apply-spare' } };
  expect((await api.call('POST', '/v1/computes', spare)).status).toBe(201);
  for (const [name, parent] of [
    ['org:apply', undefined],
    ['team:apply', 'org:apply'],
    ['project:pa', 'team:apply'],
    ['project:pb', 'team:apply'],
  ] as const) {
    expect((await api.call('POST', '/v1/scopes', { name, ...(parent ? { parent } : {}) })).status).toBe(201);
  }
  for (const [scope, g, l] of [
    ['team:apply', 16, 16],
    ['project:pa', 8, 16],
    ['project:pb', 8, 16],
  ] as const) {
    const r = await api.call('PUT', `/v1/quotas/${scope}`, { guarantee: { gpus: g }, limit: { gpus: l } });
    expect(r.status).toBe(200);
  }
});

describe('an unchanged manifest writes nothing', () => {
  it('leaves a built-in compute following config/computes.yaml', async () => {
    const before = (await api.call('GET', '/v1/computes/cpu-small')).body;
    expect(before.metadata.updatedBy).toBe('config');
    const r = await api.call('PUT', '/v1/computes/cpu-small', withoutStatus(before));
    expect(r.status).toBe(200);
    const after = (await api.call('GET', '/v1/computes/cpu-small')).body;
    expect(after.metadata).toEqual(before.metadata);
  });

  it('keeps the version and updatedBy of an added model, a quota and a scope', async () => {
    expect(
      (await api.call('PUT', '/v1/models/apply-same', model('apply-same', 'project:pa', 0))).status,
    ).toBe(201);
    const m = (await api.call('GET', '/v1/models/apply-same')).body;
    const q = (await api.call('GET', '/v1/quotas/project:pa')).body;
    const table = await dumpTable();
    expect((await api.call('PUT', '/v1/models/apply-same', withoutStatus(m))).body.metadata.version).toBe(
      m.metadata.version,
    );
    expect((await api.call('PUT', '/v1/quotas/project:pa', q.spec)).body.metadata).toEqual(q.metadata);
    expect((await api.call('PUT', '/v1/scopes/project:pa/members', { members: {} })).status).toBe(200);
    expect(await dumpTable()).toEqual(table);
  });

  it('refuses a declared model changed over the API, naming config/catalog.yaml and the field', async () => {
    const m = (await api.call('GET', '/v1/models/qwen3-8b')).body;
    expect((await api.call('PUT', '/v1/models/qwen3-8b', withoutStatus(m))).status).toBe(200);
    const edited = { ...withoutStatus(m), spec: { ...m.spec, scaling: { ...m.spec.scaling, max: 3 } } };
    const r = await api.call('PUT', '/v1/models/qwen3-8b', edited);
    expect(r.status).toBe(409);
    expect(r.body.detail).toContain('config/catalog.yaml');
    expect(r.body.errors).toEqual([{ path: 'spec.scaling.max', message: 'set in config/catalog.yaml' }]);
  });
});

describe('every kind honours its version', () => {
  it('refuses a quota applied from a stale read (If-Match), keeping the newer one', async () => {
    const q = (await api.call('GET', '/v1/quotas/project:pb')).body;
    const newer = await api.call('PUT', '/v1/quotas/project:pb', {
      guarantee: { gpus: 8 },
      limit: { gpus: 15 },
    });
    expect(newer.body.metadata.version).toBe(q.metadata.version + 1);
    const stale = await api.call('PUT', '/v1/quotas/project:pb', q.spec, {
      headers: { 'if-match': `"${q.metadata.version}"` },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.detail).toMatch(/version/);
    expect((await api.call('GET', '/v1/quotas/project:pb')).body.spec.limit).toEqual({ gpus: 15 });
    await api.call('PUT', '/v1/quotas/project:pb', { guarantee: { gpus: 8 }, limit: { gpus: 16 } });
  });

  it('refuses a scope members write from a stale read', async () => {
    const s = (await api.call('GET', '/v1/scopes/project:pb')).body;
    await api.call('PUT', `/v1/scopes/project:pb/members/${encodeURIComponent(DEV)}`, { role: 'viewer' });
    const r = await api.call(
      'PUT',
      '/v1/scopes/project:pb/members',
      { members: { [LEAD]: 'admin' } },
      { headers: { 'if-match': `"${s.metadata.version}"` } },
    );
    expect(r.status).toBe(409);
    expect((await api.call('GET', '/v1/scopes/project:pb')).body.spec.members).toEqual({ [DEV]: 'viewer' });
  });
});

describe('a scope manifest is the desired state of its members', () => {
  it('removes members it no longer lists and adds new ones in one write', async () => {
    await api.call('PUT', `/v1/scopes/project:pa/members/${encodeURIComponent(DEV)}`, { role: 'editor' });
    const before = (await api.call('GET', '/v1/scopes/project:pa')).body;
    const r = await api.call('PUT', '/v1/scopes/project:pa/members', { members: { [LEAD]: 'admin' } });
    expect(r.status).toBe(200);
    expect(r.body.spec.members).toEqual({ [LEAD]: 'admin' });
    expect(r.body.metadata.version).toBe(before.metadata.version + 1);
  });

  it('refuses every bad member at once, writing nothing', async () => {
    const table = await dumpTable();
    const r = await api.call('PUT', '/v1/scopes/project:pa/members', {
      members: { 'not-an-arn': 'admin', [DEV]: 'viewer', [DEV.replace('role/', 'role/team/')]: 'viewer' },
    });
    expect(r.status).toBe(400);
    expect(r.body.errors.map((e: { path: string }) => e.path)).toEqual([
      'members["not-an-arn"]',
      `members["${DEV.replace('role/', 'role/team/')}"]`,
    ]);
    expect(await dumpTable()).toEqual(table);
  });
});

describe('?dryRun=All decides and writes nothing', () => {
  it('refuses any other value with the allowed one', async () => {
    const r = await api.call('PUT', '/v1/quotas/project:pa?dryRun=true', { guarantee: { gpus: 8 } });
    expect(r.status).toBe(400);
    expect(r.body.errors).toEqual([{ path: 'dryRun', message: 'allowed value: All' }]);
  });

  it('answers every write route as it would, with the table unchanged', async () => {
    const table = await dumpTable();
    const dry = (method: string, path: string, body?: unknown) =>
      api.call(method, `${path}?dryRun=All`, body);
    const c = await dry('POST', '/v1/computes', { ...pool, metadata: { name: 'apply-new' } });
    expect(c.status).toBe(201);
    expect(c.body.metadata).toMatchObject({ name: 'apply-new', version: 1 });
    expect(
      (await dry('PUT', '/v1/computes/apply-pool', { ...pool, spec: { ...pool.spec, cost: { perHour: 1 } } }))
        .body.metadata.version,
    ).toBe(2);
    expect((await dry('POST', '/v1/computes/apply-pool/clone', { name: 'apply-clone' })).status).toBe(201);
    expect((await dry('POST', '/v1/computes/apply-pool/rename', { name: 'apply-renamed' })).status).toBe(409);
    expect((await dry('DELETE', '/v1/computes/apply-spare')).status).toBe(204);
    expect((await dry('POST', '/v1/models', model('apply-dry', 'project:pa', 1))).status).toBe(201);
    expect(
      (await dry('PUT', '/v1/models/apply-same/scaling', { min: 0, max: 3 })).body.spec.scaling.max,
    ).toBe(3);
    expect((await dry('PUT', '/v1/models/apply-same/class', { class: 'critical' })).status).toBe(200);
    expect((await dry('PUT', '/v1/models/apply-same/owner', { owner: 'project:pb' })).status).toBe(200);
    expect((await dry('PUT', '/v1/models/apply-same/resources', { memoryGb: 20, cpuCores: 5 })).status).toBe(
      200,
    );
    expect((await dry('DELETE', '/v1/models/apply-same')).status).toBe(204);
    expect((await dry('POST', '/v1/scopes', { name: 'project:pc', parent: 'team:apply' })).status).toBe(201);
    expect(
      (await dry('PUT', `/v1/scopes/project:pa/members/${encodeURIComponent(DEV)}`, { role: 'viewer' })).body
        .spec.members,
    ).toEqual({ [LEAD]: 'admin', [DEV]: 'viewer' });
    expect((await dry('DELETE', `/v1/scopes/project:pa/members/${encodeURIComponent(LEAD)}`)).status).toBe(
      204,
    );
    expect((await dry('PUT', '/v1/scopes/project:pa/members', { members: {} })).body.spec.members).toEqual(
      {},
    );
    expect(
      (await dry('PUT', '/v1/quotas/project:pa', { guarantee: { gpus: 4 } })).body.spec.guarantee,
    ).toEqual({ gpus: 4 });
    expect((await dry('DELETE', '/v1/quotas/project:pa')).status).toBe(204);
    // Refusals are the write's own: a dry run of what a write would refuse is refused the same way.
    expect((await dry('PUT', '/v1/quotas/project:pa', { guarantee: { gpus: 400 } })).status).toBe(409);
    expect((await dry('DELETE', '/v1/scopes/org:apply')).status).toBe(409);
    expect((await dry('POST', '/v1/reconcile')).status).toBe(200);
    expect(await dumpTable()).toEqual(table);
  });

  it('previews admission: what the model would get, and the replicas of others it would take back', async () => {
    // project:pb borrows project:pa's unused guarantee: 12 GPUs on an 8-GPU guarantee.
    expect(
      (await api.call('PUT', '/v1/models/apply-borrower', model('apply-borrower', 'project:pb', 0, 12, 12)))
        .status,
    ).toBe(201);
    const b = (await api.call('GET', '/v1/models/apply-borrower')).body.status;
    expect(b).toMatchObject({ admitted: 12, borrowed: 4 });
    const table = await dumpTable();
    const r = await api.call(
      'PUT',
      '/v1/models/apply-claim?dryRun=All',
      model('apply-claim', 'project:pa', 6),
    );
    expect(r.status).toBe(201);
    // The team's limit is 16: 12 + 6 is 2 over, so 2 of the borrower's replicas go, and the claim waits for them.
    expect(r.body.status).toMatchObject({ admitted: 0, pending: 6 });
    expect(r.body.status.reasons).toEqual([
      expect.objectContaining({ reason: 'PendingTakeBack', replicas: 6 }),
    ]);
    for (const v of r.body.status.preview.takesBack) {
      expect(v).toMatchObject({ model: 'apply-borrower', scope: 'project:pb', reason: 'TakenBackForScope' });
      expect(v.message).toContain('taken back for apply-claim of project:pa');
    }
    const taken = r.body.status.preview.takesBack.reduce(
      (n: number, v: { replicas: number }) => n + v.replicas,
      0,
    );
    expect(taken).toBe(2);
    expect(await dumpTable()).toEqual(table);
    // The preview is the decision: the real write takes back what it said.
    await api.call('PUT', '/v1/models/apply-claim', model('apply-claim', 'project:pa', 6));
    expect((await api.call('GET', '/v1/models/apply-borrower')).body.status.admitted).toBe(12 - taken);
  });
});
