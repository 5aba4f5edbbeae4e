import { type TestApi, testApi } from '../../helpers/api';
import { dumpTable } from '../../helpers/dump';
import { l4Model, l4Pool, scale } from '../../helpers/l4-pool';

/** Scopes, quotas and admission over the API against DynamoDB Local, including races for the last GPUs. */

const LEAD = 'arn:aws:iam::111111111111:role/team-lead';
const DEV = 'arn:aws:iam::111111111111:role/dev';

const pool = l4Pool('l4-pool');

const model = (name: string, owner: string, min: number, max = min, target?: number) =>
  l4Model('l4-pool', name, owner, scale(min, max, target));

let api: TestApi;
beforeAll(async () => {
  api = await testApi();
  expect((await api.call('POST', '/v1/computes', pool)).status).toBe(201);
  for (const [name, parent] of [
    ['org:acme', undefined],
    ['team:t', 'org:acme'],
    ['project:a', 'team:t'],
    ['project:b', 'team:t'],
    ['project:race', 'team:t'],
  ] as const) {
    expect((await api.call('POST', '/v1/scopes', { name, ...(parent ? { parent } : {}) })).status).toBe(201);
  }
  expect(
    (await api.call('PUT', '/v1/quotas/team:t', { guarantee: { gpus: 40 }, limit: { gpus: 60 } })).status,
  ).toBe(200);
  expect(
    (await api.call('PUT', '/v1/quotas/project:a', { guarantee: { gpus: 9 }, limit: { gpus: 10 } })).status,
  ).toBe(200);
  expect(
    (await api.call('PUT', '/v1/quotas/project:b', { guarantee: { gpus: 12 }, limit: { gpus: 21 } })).status,
  ).toBe(200);
  expect(
    (await api.call('PUT', '/v1/quotas/project:race', { guarantee: { gpus: 10 }, limit: { gpus: 10 } }))
      .status,
  ).toBe(200);
  await api.call('PUT', `/v1/scopes/team:t/members/${encodeURIComponent(LEAD)}`, { role: 'admin' });
  await api.call('PUT', `/v1/scopes/project:a/members/${encodeURIComponent(DEV)}`, { role: 'editor' });
});

const gpusOf = async (scope: string) =>
  (await api.call('GET', `/v1/capacity/${scope}`)).body.scopes.find((s: any) => s.scope === scope);

describe('quota writes', () => {
  it('refuses a child guarantee the parent cannot hold, naming the numbers, and writes nothing', async () => {
    const before = await dumpTable();
    const r = await api.call('PUT', '/v1/quotas/project:b', { guarantee: { gpus: 35 } });
    expect(r.status).toBe(409);
    expect(r.body.detail).toMatch(/team:t guarantees 54 gpus to its children but holds 40/);
    expect(await dumpTable()).toEqual(before);
  });

  it('refuses a limit below the guarantee (400) and a child limit above its parent (409)', async () => {
    expect(
      (await api.call('PUT', '/v1/quotas/project:b', { guarantee: { gpus: 12 }, limit: { gpus: 5 } })).status,
    ).toBe(400);
    expect(
      (await api.call('PUT', '/v1/quotas/project:b', { guarantee: { gpus: 12 }, limit: { gpus: 61 } }))
        .status,
    ).toBe(409);
  });

  it('lets an admin of the parent set a quota, but not a member of the scope itself', async () => {
    expect(
      (
        await api
          .as(LEAD)
          .call('PUT', '/v1/quotas/project:b', { guarantee: { gpus: 12 }, limit: { gpus: 21 } })
      ).status,
    ).toBe(200);
    expect(
      (
        await api
          .as(DEV)
          .call('PUT', '/v1/quotas/project:a', { guarantee: { gpus: 10 }, limit: { gpus: 10 } })
      ).status,
    ).toBe(403);
    expect((await api.as(LEAD).call('PUT', '/v1/quotas/team:t', { guarantee: { gpus: 50 } })).status).toBe(
      403,
    );
  });

  it('lists every invalid field of a malformed quota', async () => {
    const r = await api.call('PUT', '/v1/quotas/project:b', {
      guarantee: { gpus: -1, tpus: 2 },
      limit: { cores: 'x' },
    });
    expect(r.status).toBe(400);
    expect(r.body.errors.map((e: any) => e.path)).toEqual(
      expect.arrayContaining(['guarantee.gpus', 'guarantee', 'limit.cores']),
    );
  });
});

describe('admission through the API', () => {
  it('admits within the limit, borrows above the guarantee, and refuses a start over the limit with 409', async () => {
    // Worked example "Limit": A (G 9, L 10) runs 9 one-GPU replicas; one more borrows; two more are refused.
    expect((await api.as(DEV).call('POST', '/v1/models', model('a-nine', 'project:a', 9))).status).toBe(201);
    const one = await api.as(DEV).call('POST', '/v1/models', model('a-one', 'project:a', 1));
    expect(one.status).toBe(201);
    // Stored as intent and answered at once; the admitter decides it moments later.
    expect(one.body.status.reasons).toEqual([expect.objectContaining({ reason: 'Queued', replicas: 1 })]);
    expect((await api.as(DEV).call('GET', '/v1/models/a-one')).body.status).toMatchObject({
      admitted: 1,
      borrowed: 1,
      observedVersion: 1,
    });
    const before = await dumpTable();
    const two = await api.as(DEV).call('POST', '/v1/models', model('a-two', 'project:a', 2));
    expect(two.status).toBe(409);
    expect(two.body.reason).toBe('LimitExceeded');
    expect(two.body.detail).toMatch(/project:a/);
    expect(await dumpTable()).toEqual(before);
    const cap = await gpusOf('project:a');
    expect(cap).toMatchObject({ usage: { gpus: 10 }, borrowed: { gpus: 1 }, atLimit: true });
  });

  it('refuses at the API a start that could never fit its limit, even in an empty scope', async () => {
    const r = await api.call('POST', '/v1/models', model('b-huge', 'project:b', 22));
    expect(r.status).toBe(409);
    expect(r.body.reason).toBe('LimitExceeded');
    expect((await api.call('GET', '/v1/models/b-huge')).status).toBe(404);
  });

  it('refuses a model owned by a scope that does not exist', async () => {
    const r = await api.call('POST', '/v1/models', model('ghost', 'project:nope', 1));
    expect(r.status).toBe(409);
    expect(r.body.reason).toBe('UnknownScope');
  });

  it('shows placements and pending reasons in the model status', async () => {
    const r = await api.call('POST', '/v1/models', model('b-scaled', 'project:b', 1, 30, 30));
    expect(r.status).toBe(201);
    const st = (await api.call('GET', '/v1/models/b-scaled')).body.status;
    expect(st.admitted).toBe(21);
    expect(st.placements).toEqual([{ compute: 'l4-pool', profile: 'l4', replicas: 21 }]);
    expect(st.pending).toBe(9);
    expect(st.reasons[0].message).toMatch(/project:b/);
  });
});

describe('races', () => {
  it('admits exactly as many of 50 concurrent one-GPU starts as the limit allows, and loses none', async () => {
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        api.call('POST', '/v1/models', model(`race-${i}`, 'project:race', 1)),
      ),
    );
    const created = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 409);
    // Each start alone could fit, so each is stored (one seen after the admitter filled the limit is refused).
    expect(created.length + refused.length).toBe(50);
    expect(created.length).toBeGreaterThanOrEqual(10);
    for (const r of refused) expect(r.body.reason).toBe('LimitExceeded');
    const cap = await gpusOf('project:race');
    expect(cap.usage.gpus).toBe(10);
    const models = (await api.call('GET', '/v1/models')).body.items.filter(
      (m: any) => m.metadata.owner === 'project:race',
    );
    // None lost: every start answered 201 is there; the admitter admitted exactly 10, the rest wait, saying why.
    expect(models.map((m: any) => m.metadata.name).sort()).toEqual(
      created.map((r) => r.body.metadata.name).sort(),
    );
    const admitted = models.filter((m: any) => m.status.admitted === 1);
    expect(admitted).toHaveLength(10);
    for (const m of models.filter((x: any) => x.status.admitted === 0))
      expect(m.status.reasons.map((r: any) => r.reason)).toEqual(['LimitExceeded']);
    // The next test starts from the 10 admitted.
    for (const m of models.filter((x: any) => x.status.admitted === 0))
      expect((await api.call('DELETE', `/v1/models/${m.metadata.name}`)).status).toBe(204);
  });

  it('never exceeds the limit when 20 concurrent scale-ups compete for the last GPUs', async () => {
    // project:race is full (10 of 10); free 4 GPUs, then let 20 models race to scale up.
    const mine = (await api.call('GET', '/v1/models')).body.items.filter(
      (m: any) => m.metadata.owner === 'project:race',
    );
    for (const m of mine.slice(0, 4))
      expect((await api.call('DELETE', `/v1/models/${m.metadata.name}`)).status).toBe(204);
    const left = mine.slice(4).map((m: any) => m.metadata.name);
    const results = await Promise.all(
      left.map((name: string) =>
        api.call('PUT', `/v1/models/${name}/scaling`, { min: 1, max: 3, target: 3 }),
      ),
    );
    expect(results.every((r) => r.status === 200 || r.status === 409)).toBe(true);
    const cap = await gpusOf('project:race');
    expect(cap.usage.gpus).toBe(10);
    const total = (await api.call('GET', '/v1/models')).body.items
      .filter((m: any) => m.metadata.owner === 'project:race')
      .reduce((n: number, m: any) => n + m.status.admitted, 0);
    expect(total).toBe(10);
  });
});

describe('scopes', () => {
  it('refuses to delete a scope with children or models, and deletes an empty one', async () => {
    expect((await api.call('DELETE', '/v1/scopes/team:t')).status).toBe(409);
    expect((await api.call('DELETE', '/v1/scopes/project:a')).status).toBe(409);
    expect((await api.call('POST', '/v1/scopes', { name: 'project:tmp', parent: 'team:t' })).status).toBe(
      201,
    );
    expect((await api.call('DELETE', '/v1/scopes/project:tmp')).status).toBe(204);
  });

  it('hides scopes from strangers and shows members their own tree', async () => {
    const stranger = api.as('arn:aws:iam::111111111111:role/nobody');
    expect((await stranger.call('GET', '/v1/scopes')).body.items).toEqual([]);
    expect((await stranger.call('GET', '/v1/scopes/team:t')).status).toBe(404);
    const names = (await api.as(DEV).call('GET', '/v1/scopes')).body.items.map((s: any) => s.metadata.name);
    expect(names).toEqual(expect.arrayContaining(['org:acme', 'team:t', 'project:a']));
    expect(names).not.toContain('project:b');
  });

  it('refuses a team without an org parent, with the field named', async () => {
    const r = await api.call('POST', '/v1/scopes', { name: 'team:orphan' });
    expect(r.status).toBe(400);
    expect(r.body.errors[0].path).toBe('parent');
  });
});
