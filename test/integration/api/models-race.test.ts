import { validateCatalog } from '../../../lambdas/domain/catalog';
import { createServices } from '../../../lambdas/service';
import { listComputes } from '../../../lambdas/store/computes';
import { type ApiResult, type TestApi, testApi } from '../../helpers/api';

/**
 * Concurrent adds and removes: each is decided against the whole catalog, under the guards of the names it makes,
 * removes or names as its fallback (store/commit.ts), so however they
 * interleave, no fallback is left pointing at nothing and every change that answered success is in the catalog.
 */

const manifest = (name: string, fallback?: string) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name },
  spec: {
    source: `hf://org/${name}`,
    engine: 'vllm',
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 2, minMemoryGb: 8 }],
    scaling: { min: 0, max: 1 },
    ...(fallback ? { fallback } : {}),
  },
});

let api: TestApi;
beforeAll(async () => {
  api = await testApi();
});

it('a race of 20 adds and removes never leaves a fallback pointing at nothing', async () => {
  for (let i = 0; i < 8; i++)
    expect((await api.call('POST', '/v1/models', manifest(`m${i}`))).status).toBe(201);

  // x_i names m_i as its fallback while m_i is being removed; y_i names x_i, which may not exist yet.
  const requests: { what: string; send: () => Promise<ApiResult> }[] = [];
  for (let i = 0; i < 8; i++) {
    requests.push({
      what: `add x${i}`,
      send: () => api.call('POST', '/v1/models', manifest(`x${i}`, `m${i}`)),
    });
    requests.push({ what: `remove m${i}`, send: () => api.call('DELETE', `/v1/models/m${i}`) });
  }
  for (let i = 0; i < 4; i++) {
    requests.push({
      what: `add y${i}`,
      send: () => api.call('POST', '/v1/models', manifest(`y${i}`, `x${i}`)),
    });
  }
  const results = await Promise.all(requests.map(async (r) => ({ what: r.what, res: await r.send() })));

  // Every request either committed or was refused by a catalog rule: never a 500, never a lost race.
  for (const { what, res } of results) {
    const ok = what.startsWith('add') ? [201, 409] : [204, 409];
    expect({ what, status: res.status, ok: ok.includes(res.status) }).toEqual({
      what,
      status: res.status,
      ok: true,
    });
    if (res.status === 409)
      expect(res.body.reason).toBe(what.startsWith('add') ? 'CatalogRule' : 'FallbackInUse');
  }
  const committed = results.filter((r) => r.res.status < 300);
  // The stored catalog validates as a whole, with nothing skipped on load.
  const loaded = await createServices().catalog.load();
  expect(loaded.skipped).toEqual([]);
  expect(validateCatalog(loaded.models, await listComputes())).toEqual([]);
  const names = new Set(loaded.models.map((m) => m.name));
  // No acknowledged change is lost: every add that answered 201 is there, every remove that answered 204 is gone.
  for (const { what } of committed)
    expect({ what, there: names.has(what.split(' ')[1]!) }).toEqual({ what, there: what.startsWith('add') });
  // Each pair was decided one way or the other: x_i added (and m_i kept) or m_i removed (and x_i refused).
  for (let i = 0; i < 8; i++) expect(names.has(`x${i}`)).toBe(names.has(`m${i}`));
  for (let i = 0; i < 4; i++) if (names.has(`y${i}`)) expect(names.has(`x${i}`)).toBe(true);
  // The API serves the same catalog.
  const listed = (await api.call('GET', '/v1/models')).body.items.map((m: any) => m.metadata.name).sort();
  expect(listed).toEqual([...names].sort());
});

it('concurrent scalings of one model all land, one after another, each answered with its own version', async () => {
  expect((await api.call('POST', '/v1/models', manifest('hot'))).status).toBe(201);
  const rs = await Promise.all(
    Array.from({ length: 12 }, (_, i) => api.call('PUT', '/v1/models/hot/scaling', { min: 0, max: i + 1 })),
  );
  expect(rs.map((r) => r.status)).toEqual(Array(12).fill(200));
  const versions = rs.map((r) => r.body.metadata.version as number).sort((a, b) => a - b);
  expect(versions).toEqual(Array.from({ length: 12 }, (_, i) => i + 2));
  // The stored model is the one the last of them answered.
  const last = rs.find((r) => r.body.metadata.version === 13)!;
  const now = await api.call('GET', '/v1/models/hot');
  expect(now.body.metadata.version).toBe(13);
  expect(now.body.spec.scaling).toEqual(last.body.spec.scaling);
});

it('a change refused among concurrent ones is refused alone; the others land', async () => {
  const rs = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      api.call('POST', '/v1/models', manifest(`g${i}`, i === 5 ? 'nowhere' : undefined)),
    ),
  );
  expect(rs.map((r) => r.status)).toEqual([201, 201, 201, 201, 201, 409, 201, 201, 201, 201]);
  expect(rs[5]!.body.reason).toBe('CatalogRule');
  const names = (await api.call('GET', '/v1/models')).body.items.map((m: any) => m.metadata.name);
  expect(names.filter((n: string) => /^g\d$/.test(n)).sort()).toEqual([
    'g0',
    'g1',
    'g2',
    'g3',
    'g4',
    'g6',
    'g7',
    'g8',
    'g9',
  ]);
});
