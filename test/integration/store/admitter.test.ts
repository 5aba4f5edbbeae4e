import { createAdmitterServices } from '../../../lambdas/service/for-admitter';
import { documentClient } from '../../../lambdas/shared/clients';
import { admitterVersion, listAdmissions } from '../../../lambdas/store/admissions';
import { type TestApi, testApi } from '../../helpers/api';
import { l4Model, l4Pool, scale } from '../../helpers/l4-pool';

/**
 * The admitter (service/admitter.ts) on DynamoDB Local: the only writer of admissions, behind a fence. Two run at
 * once here, as a misconfigured second one would: neither over-admits, and the loser decides again. A run over a
 * world already decided writes nothing, so the table's stream (which triggers it) goes quiet.
 */

let api: TestApi;
beforeAll(async () => {
  api = await testApi();
  expect((await api.call('POST', '/v1/computes', l4Pool('l4-big'))).status).toBe(201);
  expect((await api.call('POST', '/v1/scopes', { name: 'org:adm' })).status).toBe(201);
  expect((await api.call('POST', '/v1/scopes', { name: 'project:adm', parent: 'org:adm' })).status).toBe(201);
  const quota = { guarantee: { gpus: 6 }, limit: { gpus: 6 } };
  expect((await api.call('PUT', '/v1/quotas/project:adm', quota)).status).toBe(200);
});

const held = async () => {
  const mine = (await listAdmissions()).filter((a) => a.model.startsWith('adm-'));
  return mine.reduce((n, a) => n + a.units.reduce((k, u) => k + u.replicas, 0), 0);
};

it('two admitters racing over the same writes never admit past a limit, and both finish', async () => {
  // Stored without waiting for the stream's admitter, so the two below find the same undecided world.
  const writes = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      api.call('POST', '/v1/models', l4Model('l4-big', `adm-${i}`, 'project:adm', scale(1)), {
        settle: false,
      }),
    ),
  );
  expect(writes.map((w) => w.status)).toEqual(Array(10).fill(201));
  const fenceBefore = await admitterVersion();
  await Promise.all([createAdmitterServices().admitter.run(), createAdmitterServices().admitter.run()]);
  // Whoever committed moved the fence once per transaction; a run that lost it decided again.
  expect(await admitterVersion()).toBeGreaterThan(fenceBefore);
  await api.admitter.settled();
  expect(await held()).toBe(6);
  const models = (await api.call('GET', '/v1/models')).body.items.filter((m: any) =>
    m.metadata.name.startsWith('adm-'),
  );
  // Every model is decided, of its version: six admitted, four waiting on the limit.
  expect(models.every((m: any) => m.status.observedVersion === m.metadata.version)).toBe(true);
  expect(models.filter((m: any) => m.status.admitted === 1)).toHaveLength(6);
});

it('a run over a world already decided writes nothing, so its own stream does not wake it again', async () => {
  await api.admitter.settled();
  const fence = await admitterVersion();
  const run = await createAdmitterServices().admitter.run();
  expect(run).toMatchObject({ commits: 0, written: [], removed: [] });
  await api.admitter.settled();
  expect(await admitterVersion()).toBe(fence);
});

it('decides a write within the next run and says so in the model: Queued first, then the decision', async () => {
  const w = await api.call('PUT', '/v1/models/adm-0/scaling', scale(0, 1), { settle: false });
  expect(w.status).toBe(200);
  expect(w.body.status.observedVersion).toBe(w.body.metadata.version - 1);
  await api.admitter.settled();
  const got = await api.call('GET', '/v1/models/adm-0');
  expect(got.body.status).toMatchObject({ admitted: 0, observedVersion: w.body.metadata.version });
  // The replica it gave up is taken by one that waited on the limit.
  expect(await held()).toBe(6);
});

it("re-reads on the stream's trigger only the partitions its records name, and everything once another run moved the fence", async () => {
  await api.admitter.settled();
  const mine = createAdmitterServices().admitter;
  const queried: string[] = [];
  documentClient().middlewareStack.add(
    (next) => async (args) => {
      const pk = (args.input as { ExpressionAttributeValues?: Record<string, unknown> })
        .ExpressionAttributeValues?.[':pk'];
      if (typeof pk === 'string') queried.push(pk);
      return next(args);
    },
    { step: 'initialize', name: 'countQueries' },
  );
  try {
    await mine.run(); // no trigger: everything, fresh
    expect(queried).toEqual(expect.arrayContaining(['MODEL', 'COMPUTE', 'SCOPE', 'QUOTA', 'ADMISSION']));
    queried.length = 0;
    // A write to a model, as the stream says: the catalog's models and the admissions, not the rest.
    await mine.run({ written: ['MODEL'] });
    expect(queried).toEqual(expect.arrayContaining(['MODEL', 'ADMISSION']));
    expect(queried).not.toEqual(expect.arrayContaining(['COMPUTE']));
    expect(queried.filter((pk) => ['SCOPE', 'QUOTA', 'DEMAND'].includes(pk))).toEqual([]);
    // Another admitter commits (a new model to decide): this process may have missed records, so it reads all.
    const added = await api.call(
      'POST',
      '/v1/models',
      l4Model('l4-big', 'adm-late', 'project:adm', scale(0, 1)),
      {
        settle: false,
      },
    );
    expect(added.status).toBe(201);
    const fence = await admitterVersion();
    await createAdmitterServices().admitter.run();
    await api.admitter.settled();
    expect(await admitterVersion()).toBeGreaterThan(fence);
    queried.length = 0;
    await mine.run({ written: ['MODEL'] });
    expect(queried).toEqual(expect.arrayContaining(['MODEL', 'COMPUTE', 'SCOPE', 'QUOTA', 'ADMISSION']));
  } finally {
    documentClient().middlewareStack.remove('countQueries');
  }
});
