import { validateCatalog } from '../../../lambdas/domain/catalog';
import { listComputes } from '../../../lambdas/store/computes';
import { ledgerVersion } from '../../../lambdas/store/ledger';
import { loadCatalog } from '../../../lambdas/store/models';
import { type ApiResult, type TestApi, testApi } from '../../helpers/api';

/**
 * Concurrent adds and removes: each is decided against the whole catalog under the ledger, so however they
 * interleave, no fallback is left pointing at nothing and every committed change moved the ledger once.
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
  const ledgerBefore = await ledgerVersion();

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
  const committed = results.filter((r) => r.res.status < 300).length;
  expect(await ledgerVersion()).toBe(ledgerBefore + committed);

  // The stored catalog validates as a whole, with nothing skipped on load.
  const loaded = await loadCatalog();
  expect(loaded.skipped).toEqual([]);
  expect(validateCatalog(loaded.models, await listComputes())).toEqual([]);
  const names = new Set(loaded.models.map((m) => m.name));
  // Each pair was decided one way or the other: x_i added (and m_i kept) or m_i removed (and x_i refused).
  for (let i = 0; i < 8; i++) expect(names.has(`x${i}`)).toBe(names.has(`m${i}`));
  for (let i = 0; i < 4; i++) if (names.has(`y${i}`)) expect(names.has(`x${i}`)).toBe(true);
  // The API serves the same catalog.
  const listed = (await api.call('GET', '/v1/models')).body.items.map((m: any) => m.metadata.name).sort();
  expect(listed).toEqual([...names].sort());
});
