import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { createServices } from '../../../lambdas/service';
import { documentClient } from '../../../lambdas/shared/clients';
import { logger } from '../../../lambdas/shared/logger';
import { keys } from '../../../lambdas/store/keys';
import { ADMIN, type TestApi, testApi } from '../../helpers/api';

/**
 * A table holding rows written by an older version or by hand: one that does not parse, one that parses but
 * no longer validates (it pins a compute that is gone). Each is skipped with its own warning; the declared
 * models and the good rows stay in force, over the store and over the API.
 */

const DECLARED = ['bge-m3', 'llama-3-3-70b', 'qwen2-5-1-5b-cpu', 'qwen3-8b'];
const NOW = '2025-01-01T00:00:00.000Z';

const row = (name: string, spec: unknown) => ({
  ...keys.model(name),
  name,
  spec,
  version: 3,
  createdAt: NOW,
  createdBy: ADMIN,
  updatedAt: NOW,
  updatedBy: ADMIN,
});

const good = {
  source: 'hf://org/good',
  engine: 'vllm',
  profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 2, minMemoryGb: 8 }],
  scaling: { min: 0, max: 1 },
};

let api: TestApi;
let warn: jest.SpiedFunction<typeof logger.warn>;
beforeAll(async () => {
  api = await testApi();
  await api.call('GET', '/v1/healthz'); // seeds the built-in computes
  // Watched from before the rows land: the admitter, woken by them, may be first to load the catalog.
  warn = jest.spyOn(logger, 'warn');
  const put = (Item: Record<string, unknown>) =>
    documentClient().send(new PutCommand({ TableName: api.table, Item }));
  await put(row('corrupt', { source: 42, engine: 'vllm' }));
  await put(
    row('stale', {
      ...good,
      source: 'hf://org/stale',
      profiles: [{ name: 'x', gpus: 1, gpuType: 'L4', cpuCores: 2, minMemoryGb: 8, compute: 'gpu-retired' }],
    }),
  );
  await put(row('good', good));
  // Rows written by hand are read by the next request: nothing caches the catalog.
});

afterEach(() => jest.restoreAllMocks());

it('skips the corrupt and the no-longer-valid row, each with its own warning; the rest survive', async () => {
  const c = await createServices().catalog.load();
  await api.admitter.settled();
  expect(c.models.map((m) => m.name).sort()).toEqual([...DECLARED, 'good'].sort());
  expect(
    c.models
      .filter((m) => m.declared)
      .map((m) => m.name)
      .sort(),
  ).toEqual(DECLARED);
  expect(c.skipped.map((s) => s.name)).toEqual(['corrupt', 'stale']);
  expect(c.skipped[0]!.problem).toMatch(/does not parse \(spec.source: /);
  expect(c.skipped[1]!.problem).toMatch(
    /no longer validates: .*pins compute gpu-retired, which does not exist/,
  );
  // One warning each, once per process, whichever load (this one or the admitter's) met the row first.
  const warned = warn.mock.calls.map(([, detail]) => (detail as { model: string }).model);
  expect(warned.sort()).toEqual(['corrupt', 'stale']);
});

it('the API still lists the rest, tells an admin what was skipped, and lets the rows be fixed or removed', async () => {
  const list = await api.call('GET', '/v1/models');
  expect(list.status).toBe(200);
  expect(list.body.items.map((m: any) => m.metadata.name).sort()).toEqual([...DECLARED, 'good'].sort());
  expect(list.body.skipped.map((s: any) => s.name)).toEqual(['corrupt', 'stale']);
  const other = await api.as('arn:aws:iam::111111111111:role/someone').call('GET', '/v1/models');
  expect(other.body.skipped).toBeUndefined();

  const get = await api.call('GET', '/v1/models/stale');
  expect(get.status).toBe(404);
  expect(get.body.detail).toMatch(
    /stored but left out of the catalog because .* replace it with PUT \/v1\/models\/stale/,
  );
  expect((await api.call('PUT', '/v1/models/stale/scaling', { min: 0, max: 1 })).body.reason).toBe('Skipped');

  // New changes are decided without the bad rows in the way.
  const add = await api.call('POST', '/v1/models', {
    apiVersion: 'llmcap/v1',
    kind: 'Model',
    metadata: { name: 'newer' },
    spec: { ...good, source: 'hf://org/newer', fallback: 'good' },
  });
  expect(add.status).toBe(201);
  // Naming a skipped model as fallback is naming one that is not in the catalog.
  const toStale = await api.call('PUT', '/v1/models/newer', {
    ...add.body,
    spec: { ...add.body.spec, fallback: 'stale' },
  });
  expect(toStale.status).toBe(409);

  const fixed = await api.call('PUT', '/v1/models/stale', {
    apiVersion: 'llmcap/v1',
    kind: 'Model',
    metadata: { name: 'stale', version: 3 },
    spec: { ...good, source: 'hf://org/stale' },
  });
  expect(fixed.status).toBe(200);
  expect(fixed.body.metadata).toMatchObject({ version: 4, declared: false });
  expect((await api.call('DELETE', '/v1/models/corrupt')).status).toBe(204);
  const after = await createServices().catalog.load();
  expect(after.skipped).toEqual([]);
  expect(after.models.map((m) => m.name)).toEqual(expect.arrayContaining(['stale', 'good', 'newer']));
});
