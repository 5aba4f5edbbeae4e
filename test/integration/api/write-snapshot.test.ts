import { DeleteCommand, DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { createServices } from '../../../lambdas/service';
import { builtinComputes, declaredModels } from '../../../lambdas/shared/builtin-config';
import { documentClient, dynamoClient } from '../../../lambdas/shared/clients';
import { config } from '../../../lambdas/shared/config';
import { keys } from '../../../lambdas/store/keys';
import { type TestApi, testApi } from '../../helpers/api';
import { l4Model, l4Pool, scale } from '../../helpers/l4-pool';

/**
 * A write's first decision reads the world as this API process last read it (LLMCAP_WRITE_SNAPSHOT_MS, 1 s by
 * default; store/shared-read.ts), as a webhook validates against its informer's cache. Another API container's
 * writes are not in that reading. Here "another container" is a DynamoDB client of its own, whose writes this
 * process never sees: each test changes the table behind the API's back and shows that nothing is lost, no
 * revoked role is honoured, no refusal or "unchanged" is answered from the older reading, and no model is stored
 * that only a compute deleted meanwhile could take.
 */

let api: TestApi;
let other: DynamoDBDocumentClient;
const EDITOR = 'arn:aws:iam::111111111111:role/ml-editor';

const before = process.env.LLMCAP_WRITE_SNAPSHOT_MS;

beforeAll(async () => {
  // Long enough that every write here decides first on this process's reading, however slow the machine.
  process.env.LLMCAP_WRITE_SNAPSHOT_MS = '10000';
  api = await testApi();
  other = DynamoDBDocumentClient.from(dynamoClient(), { marshallOptions: { removeUndefinedValues: true } });
  expect((await api.call('POST', '/v1/computes', l4Pool('l4-pool'))).status).toBe(201);
  expect((await api.call('POST', '/v1/scopes', { name: 'org:acme' })).status).toBe(201);
  expect((await api.call('POST', '/v1/scopes', { name: 'team:ml', parent: 'org:acme' })).status).toBe(201);
  const grant = await api.call('PUT', `/v1/scopes/team:ml/members/${encodeURIComponent(EDITOR)}`, {
    role: 'editor',
  });
  expect(grant.status).toBe(200);
  const quota = { guarantee: { gpus: 8 }, limit: { gpus: 8 } };
  expect((await api.call('PUT', '/v1/quotas/team:ml', quota)).status).toBe(200);
  // The admitter reads the whole table fresh when a write wakes it, and in this process that reading is the one
  // the next write may use: stopped, so that what each test shows does not hang on when it runs.
  await api.admitter.stop();
});

const call: TestApi['call'] = (m, p, b, o = {}) => api.call(m, p, b, { ...o, settle: false });
const as =
  (principal: string): TestApi['call'] =>
  (m, p, b, o = {}) =>
    call(m, p, b, { ...o, principal });
afterAll(() => {
  other.destroy();
  if (before === undefined) delete process.env.LLMCAP_WRITE_SNAPSHOT_MS;
  else process.env.LLMCAP_WRITE_SNAPSHOT_MS = before;
});

const table = () => config().table;

/** Another container's change of one item: read it, change it, write it back one version on. */
async function elsewhere(key: { pk: string; sk: string }, change: (item: any) => void): Promise<number> {
  const item = (await other.send(new GetCommand({ TableName: table(), Key: key, ConsistentRead: true })))
    .Item!;
  change(item);
  item.version += 1;
  await other.send(new PutCommand({ TableName: table(), Item: item }));
  return item.version;
}

async function addModel(name: string): Promise<void> {
  const r = await call('POST', '/v1/models', l4Model('l4-pool', name, 'team:ml', scale(1, 2)));
  expect(r.status).toBe(201);
  // A write now, so that this process holds a fresh reading of the model to decide the next one on.
  expect((await call('PUT', `/v1/models/${name}/scaling`, scale(1, 3))).status).toBe(200);
}

it("keeps another container's change made after this process read the model: the write decides again", async () => {
  await addModel('kept');
  const theirs = await elsewhere(keys.model('kept'), (m) => {
    m.spec.profiles[0].cpuCores = 6;
  });
  const r = await call('PUT', '/v1/models/kept/scaling', scale(1, 4));
  expect(r.status).toBe(200);
  expect(r.body.metadata.version).toBe(theirs + 1);
  const got = await call('GET', '/v1/models/kept');
  expect(got.body.spec.profiles[0].cpuCores).toBe(6);
  expect(got.body.spec.scaling).toMatchObject({ min: 1, max: 4 });
});

it('checks If-Match against the table, not against an older reading of this process', async () => {
  await addModel('matched');
  // The caller read the model from another container, after that container's change.
  const theirs = await elsewhere(keys.model('matched'), (m) => {
    m.spec.scaling.max = 5;
  });
  const r = await call('PUT', '/v1/models/matched/scaling', scale(1, 6), {
    headers: { 'if-match': `"${theirs}"` },
  });
  expect(r.status).toBe(200);
  expect(r.body.metadata.version).toBe(theirs + 1);
  // And a stale If-Match is still refused, with nothing written.
  const stale = await call('PUT', '/v1/models/matched/scaling', scale(1, 7), {
    headers: { 'if-match': `"${theirs}"` },
  });
  expect(stale.status).toBe(409);
  expect(stale.body.reason).toBe('VersionMismatch');
  expect((await call('GET', '/v1/models/matched')).body.spec.scaling.max).toBe(6);
});

it('does not answer "nothing to change" from an older reading: an apply of a stale manifest is refused', async () => {
  await addModel('unchanged');
  // `llmcap get -o yaml` as this process reads it: 1..3 at some version.
  const { status: _status, ...manifest } = (await call('GET', '/v1/models/unchanged')).body;
  // Another container scales it to 1..5; the manifest read before is applied back unchanged.
  await elsewhere(keys.model('unchanged'), (m) => {
    m.spec.scaling.max = 5;
  });
  const r = await call('PUT', '/v1/models/unchanged', manifest);
  // Against this process's reading it is unchanged; against the table its version is stale.
  expect(r.status).toBe(409);
  expect(r.body.reason).toBe('VersionMismatch');
  expect((await call('GET', '/v1/models/unchanged')).body.spec.scaling.max).toBe(5);
});

it('refuses at once an editor whose role another container revoked, and writes nothing', async () => {
  await addModel('revoked');
  const editor = as(EDITOR);
  // The editor's own write first, so that this process holds a reading of the tree in which the role holds.
  expect((await editor('PUT', '/v1/models/revoked/scaling', scale(1, 2))).status).toBe(200);
  await elsewhere(keys.scope('team:ml'), (s) => {
    delete s.members[Object.keys(s.members).find((k) => k.includes('ml-editor'))!];
  });
  const r = await editor('PUT', '/v1/models/revoked/scaling', scale(1, 4));
  // Without a role in team:ml the model is one the caller cannot see: the answer is that it does not exist.
  expect(r.status).toBe(404);
  expect(r.body.detail).not.toMatch(/team:ml/);
  expect((await call('GET', '/v1/models/revoked')).body.spec.scaling.max).toBe(2);
});

it('refuses a name another container took on the same line of the tree: a guarded write decides on fresh reads', async () => {
  // This process reads the catalog (a write), then another container adds dup for org:acme under a twin key
  // (a dup of another org holds the plain key) and bumps the name's guard, as its commit does.
  expect((await call('POST', '/v1/scopes', { name: 'org:else' })).status).toBe(201);
  expect((await call('POST', '/v1/models', l4Model('l4-pool', 'dup', 'org:else', scale(0)))).status).toBe(
    201,
  );
  await addModel('reader');
  const stored = (await other.send(new GetCommand({ TableName: table(), Key: keys.model('dup') }))).Item!;
  await other.send(
    new PutCommand({
      TableName: table(),
      Item: { ...stored, sk: 'dup~elsewher', name: 'dup~elsewher', owner: 'org:acme', version: 1 },
    }),
  );
  const guard = keys.guard('model-name#dup');
  const g = (await other.send(new GetCommand({ TableName: table(), Key: guard, ConsistentRead: true }))).Item;
  await other.send(
    new PutCommand({ TableName: table(), Item: { ...guard, version: (g?.version ?? 0) + 1 } }),
  );
  // team:ml is under org:acme: the same line, so the name is taken there.
  const r = await call('POST', '/v1/models', l4Model('l4-pool', 'dup', 'team:ml', scale(0)));
  expect(r.status).toBe(409);
  expect(r.body.reason).toBe('AlreadyExists');
  expect(r.body.detail).toMatch(/model dup already exists/);
});

it('takes concurrent writes of one model in this process one after another: every one lands at once, none retried', async () => {
  await addModel('hot');
  let commits = 0;
  documentClient().middlewareStack.add(
    (next) => async (args) => {
      const model = args.input as {
        Item?: { pk?: string };
        TransactItems?: { Put?: { Item?: { pk?: string } } }[];
      };
      const pk = model.Item?.pk ?? model.TransactItems?.[0]?.Put?.Item?.pk;
      if (pk === 'MODEL') commits++;
      return next(args);
    },
    { step: 'initialize', name: 'countCommits' },
  );
  try {
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => call('PUT', '/v1/models/hot/scaling', scale(0, 1 + (i % 4)))),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    const versions = answers.map((a) => a.body.metadata.version).sort((a, b) => a - b);
    expect(new Set(versions).size).toBe(30);
    // One commit each: none lost a race to another write of this process and tried again.
    expect(commits).toBe(30);
  } finally {
    documentClient().middlewareStack.remove('countCommits');
  }
});

it('refuses a resources change that only a compute another container deleted could take, and writes nothing', async () => {
  const pool = (name: string, instanceType: string) => ({
    apiVersion: 'llmcap/v1',
    kind: 'Compute',
    metadata: { name },
    spec: { node: { instanceType }, nodeGroup: { maxNodes: 2 } },
  });
  for (const [name, type] of [
    ['a10g-small', 'g5.xlarge'],
    ['a10g-wide', 'g5.12xlarge'],
  ])
    expect((await call('POST', '/v1/computes', pool(name!, type!))).status).toBe(201);
  // No compute named: the model fits either pool, so deleting the wide one is allowed.
  const model = l4Model('', 'roomy', 'team:ml', scale(0, 1));
  const profile = { name: 'a10g', gpus: 1, gpuType: 'A10G', cpuCores: 2, minMemoryGb: 8 };
  model.spec.profiles = [profile as never];
  expect((await call('POST', '/v1/models', model)).status).toBe(201);
  // A write now, so that this process holds a reading of the computes in which the wide pool exists.
  expect((await call('PUT', '/v1/models/roomy/scaling', scale(0, 2))).status).toBe(200);
  // Another container deletes the wide pool (nothing needs it) and bumps the computes' guard, as its commit does.
  await other.send(new DeleteCommand({ TableName: table(), Key: keys.compute('a10g-wide') }));
  const guard = keys.guard('computes');
  const g = (await other.send(new GetCommand({ TableName: table(), Key: guard, ConsistentRead: true }))).Item;
  await other.send(
    new PutCommand({ TableName: table(), Item: { ...guard, version: (g?.version ?? 0) + 1 } }),
  );
  // 24 cores fit only the wide pool's 48 vCPUs (not the small pool's 4, nor the built-in g5.2xlarge's 8).
  const r = await call('PUT', '/v1/models/roomy/resources', { cpuCores: 24, memoryGb: 8 });
  expect(r.status).toBe(409);
  expect(r.body.reason).toBe('CatalogRule');
  expect(r.body.detail).toMatch(/no compute has a node that can hold/);
  const got = await call('GET', '/v1/models/roomy');
  expect(got.status).toBe(200);
  expect(got.body.spec.profiles[0].cpuCores).toBe(2);
});

it("moves the computes' guard on a compute's replace, so a model write deciding on an older reading decides again", async () => {
  // The test above shows a moved guard makes a model write decide again; this one, that a replace moves it as a
  // delete does. A compute without a node group may change its hardware, and a model write in another container
  // deciding on the old node must not store a model only that node fitted.
  const manifest = (instanceType: string) => ({
    apiVersion: 'llmcap/v1',
    kind: 'Compute',
    metadata: { name: 'reshaped' },
    spec: { node: { instanceType }, nodeGroup: { maxNodes: 2 } },
  });
  expect((await call('POST', '/v1/computes', manifest('g5.12xlarge'))).status).toBe(201);
  const guard = async () =>
    (
      await other.send(
        new GetCommand({ TableName: table(), Key: keys.guard('computes'), ConsistentRead: true }),
      )
    ).Item?.version ?? 0;
  const was = await guard();
  const r = await call('PUT', '/v1/computes/reshaped', manifest('g5.xlarge'));
  expect(r.status).toBe(200);
  expect(r.body.spec.node.cpu).toBe(4);
  expect(await guard()).toBeGreaterThan(was);
  // A replace that loses to another container's change is still refused, and writes nothing.
  const version = r.body.metadata.version;
  await elsewhere(keys.compute('reshaped'), (item) => {
    item.spec.nodeGroup.maxNodes = 3;
  });
  const stale = await call('PUT', '/v1/computes/reshaped', manifest('g5.2xlarge'), {
    headers: { 'if-match': `"${version}"` },
  });
  expect(stale.status).toBe(409);
  expect((await call('GET', '/v1/computes/reshaped')).body.spec.node.instanceType).toBe('g5.xlarge');
});

it("moves the computes' guard when a built-in's declaration changes it, as a user's replace does", async () => {
  // Built-ins are seeded from config at each pass (seedBuiltins): a changed declaration replaces the stored
  // compute, and a model write in another container deciding on the old one must decide again.
  const guard = async () =>
    (
      await other.send(
        new GetCommand({ TableName: table(), Key: keys.guard('computes'), ConsistentRead: true }),
      )
    ).Item?.version ?? 0;
  const declared = builtinComputes();
  const name = 'gpu-l4-1x';
  const stored = (await call('GET', `/v1/computes/${name}`)).body;
  const more = stored.spec.nodeGroup.maxNodes + 1;
  const changed = declared.map((c) =>
    c.name === name ? { ...c, spec: { ...c.spec, nodeGroup: { ...c.spec.nodeGroup, maxNodes: more } } } : c,
  );
  const was = await guard();
  const seeded = await createServices({
    builtins: { computes: () => changed, models: declaredModels },
  }).computes.seedBuiltins();
  expect(seeded).toBe(1);
  expect((await call('GET', `/v1/computes/${name}`)).body.spec.nodeGroup.maxNodes).toBe(more);
  expect(await guard()).toBeGreaterThan(was);
});
