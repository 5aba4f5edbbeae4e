import { listComputes } from '../../../lambdas/store/computes';
import { createTenancy, expectOk, l4Compute, l4Model, P, setupTenancy } from '../../../soak/lib/fixture';
import { invokeInProcess, type JsonClient, jsonClient } from '../../../soak/lib/invoke';
import { testApi } from '../../helpers/api';

/**
 * Names per owner (issue 17 §3, docs/security.md "What names tell"): a tenant creating a compute or model whose
 * name another tenant holds gets it, as if the name were free, and never learns of the other; a name already
 * on its own line of the tree is a 409 it may see. Two tenants side by side: org:acme > team:ml > project:a
 * (the fixture's) and org:beta > team:ops > project:b.
 */

const B = {
  teamAdmin: 'arn:aws:iam::333333333333:role/ops-lead',
  editor: 'arn:aws:iam::333333333333:role/b-dev',
};

let admin: JsonClient;
let a: JsonClient;
let aTeam: JsonClient;
let b: JsonClient;
/** Every answer each caller got, to look for a twin mark in them at the end. */
const answers: Record<'platform' | 'tenant', unknown[]> = { platform: [], tenant: [] };

const recording =
  (call: JsonClient, who: 'platform' | 'tenant'): JsonClient =>
  async (...args) => {
    const r = await call(...args);
    answers[who].push({ status: r.status, headers: r.headers, body: r.body });
    return r;
  };

beforeAll(async () => {
  await testApi({ admins: [P.platform] });
  admin = recording(jsonClient(invokeInProcess, P.platform), 'platform');
  a = recording(jsonClient(invokeInProcess, P.editor), 'tenant');
  aTeam = recording(jsonClient(invokeInProcess, P.teamAdmin), 'tenant');
  b = recording(jsonClient(invokeInProcess, B.editor), 'tenant');
  await setupTenancy(admin);
  await createTenancy(
    admin,
    [['org:beta'], ['team:ops', 'org:beta'], ['project:b', 'team:ops']],
    [
      ['team:ops', B.teamAdmin, 'admin'],
      ['project:b', B.editor, 'editor'],
    ],
  );
}, 120_000);

describe('names per owner', () => {
  it('lets a second tenant create a compute and a model of names the first holds, each seeing only its own', async () => {
    expectOk('a gpu', await a('POST', '/v1/computes', l4Compute('gpu', 'project:a', 2)), 201);
    const made = await b('POST', '/v1/computes', l4Compute('gpu', 'project:b', 3));
    expect(made.status).toBe(201);
    expect(made.body.metadata).toMatchObject({ name: 'gpu', owner: 'project:b' });
    expect(made.headers.location).toBe('/v1/computes/gpu');

    // Each pins `gpu`: the one in its own reach (the other's would be refused as out of reach).
    expectOk('a llama', await a('POST', '/v1/models', l4Model('llama', 'project:a', 0, 'gpu')), 201);
    const model = await b('POST', '/v1/models', l4Model('llama', 'project:b', 0, 'gpu'));
    expect(model.status).toBe(201);
    expect(model.body.metadata).toMatchObject({ name: 'llama', owner: 'project:b' });
    expect(model.body.spec.profiles[0].compute).toBe('gpu');

    for (const [call, owner, maxNodes] of [
      [a, 'project:a', 2],
      [b, 'project:b', 3],
    ] as const) {
      const c = await call('GET', '/v1/computes/gpu');
      expect({ status: c.status, owner: c.body.metadata.owner, max: c.body.spec.nodeGroup.maxNodes }).toEqual(
        {
          status: 200,
          owner,
          max: maxNodes,
        },
      );
      const m = await call('GET', '/v1/models/llama');
      expect({ status: m.status, owner: m.body.metadata.owner }).toEqual({ status: 200, owner });
      const computes = (await call('GET', '/v1/computes')).body.items.filter(
        (i: { metadata: { name: string } }) => i.metadata.name === 'gpu',
      );
      expect(computes.map((i: { metadata: { owner: string } }) => i.metadata.owner)).toEqual([owner]);
      const models = (await call('GET', '/v1/models')).body.items.filter(
        (i: { metadata: { name: string } }) => i.metadata.name === 'llama',
      );
      expect(models.map((i: { metadata: { owner: string } }) => i.metadata.owner)).toEqual([owner]);
    }
  });

  it("changes only the caller's own one of two of a name", async () => {
    const before = (await a('GET', '/v1/models/llama')).body.metadata.version;
    expectOk('b scales', await b('PUT', '/v1/models/llama/scaling', { min: 0, max: 2 }), 200);
    const mine = await a('GET', '/v1/models/llama');
    expect({ version: mine.body.metadata.version, max: mine.body.spec.scaling.max }).toEqual({
      version: before,
      max: 1,
    });
    expect((await b('GET', '/v1/models/llama')).body.spec.scaling.max).toBe(2);
  });

  it("refuses a name already on the owner's line of the tree, naming the holder the caller can see", async () => {
    // team:ml is above project:a, whose gpu its admin sees.
    const c = await aTeam('POST', '/v1/computes', l4Compute('gpu', 'team:ml', 2));
    expect({ status: c.status, reason: c.body.reason }).toEqual({ status: 409, reason: 'AlreadyExists' });
    expect(c.body.detail).toContain('owned by project:a');
    const m = await aTeam('POST', '/v1/models', l4Model('llama', 'team:ml'));
    expect({ status: m.status, reason: m.body.reason }).toEqual({ status: 409, reason: 'AlreadyExists' });
    // A shared resource is on every line: a platform admin cannot make a shared gpu beside the tenants' ones.
    const shared = await admin('POST', '/v1/computes', l4Compute('gpu', undefined, 2));
    expect(shared.status).toBe(409);
    // Handing b's model to a scope on a's line would put two on one line.
    expectOk('a mistral', await a('POST', '/v1/models', l4Model('mistral', 'project:a')), 201);
    expectOk('b mistral', await b('POST', '/v1/models', l4Model('mistral', 'project:b')), 201);
    const moved = await admin('PUT', '/v1/models/mistral/owner?owner=project:b', { owner: 'team:ml' });
    expect({ status: moved.status, reason: moved.body.reason }).toEqual({
      status: 409,
      reason: 'AlreadyExists',
    });
  });

  it('asks whoever sees two of a name which owner it means (?owner=)', async () => {
    const both = await admin('GET', '/v1/computes/gpu');
    expect({ status: both.status, reason: both.body.reason }).toEqual({
      status: 409,
      reason: 'AmbiguousName',
    });
    expect(both.body.detail).toContain('project:a and project:b');
    const one = await admin('GET', '/v1/computes/gpu?owner=project:b');
    expect({ status: one.status, owner: one.body.metadata.owner }).toEqual({
      status: 200,
      owner: 'project:b',
    });
    // The node groups are two, each its own (platform admins read the names AWS knows them by).
    const groups = (await admin('GET', '/v1/computes')).body.items
      .filter((i: { metadata: { name: string } }) => i.metadata.name === 'gpu')
      .map((i: { status: { nodegroupName: string } }) => i.status.nodegroupName);
    expect(new Set(groups).size).toBe(2);
    expect(groups).toContain('llmcap-test-gpu');
    // Capacity lists both, each with its owner; a tenant's lists its own.
    const owners = async (call: JsonClient) =>
      (await call('GET', '/v1/capacity')).body.cluster.computes
        .filter((c: { compute: string }) => c.compute === 'gpu')
        .map((c: { owner?: string }) => c.owner)
        .sort();
    expect(await owners(admin)).toEqual(['project:a', 'project:b']);
    expect(await owners(b)).toEqual(['project:b']);
    const m = await admin('GET', '/v1/models/llama?owner=project:a');
    expect({ status: m.status, owner: m.body.metadata.owner }).toEqual({ status: 200, owner: 'project:a' });
    expect((await admin('GET', '/v1/models/llama')).body.reason).toBe('AmbiguousName');
    const bad = await admin('GET', '/v1/models/llama?owner=acme');
    expect({ status: bad.status, path: bad.body.errors?.[0]?.path }).toEqual({ status: 400, path: 'owner' });
    // The key itself, as a NodegroupFailed alarm names it ("llmcap describe compute <key>"), means that one.
    const twin = (await listComputes()).find((c) => c.name.startsWith('gpu~'))!;
    const byKey = await admin('GET', `/v1/computes/${twin.name}`);
    expect({
      status: byKey.status,
      owner: byKey.body.metadata.owner,
      name: byKey.body.metadata.name,
    }).toEqual({
      status: 200,
      owner: twin.owner,
      name: 'gpu',
    });
    const other = twin.owner === 'project:a' ? b : a;
    expect((await other('GET', `/v1/computes/${twin.name}`)).status).toBe(404);
    // A PUT's manifest names its owner: that says which, as ?owner= would.
    const put = l4Compute('gpu', 'project:a', 4);
    const applied = await admin('PUT', '/v1/computes/gpu', put);
    expect({ status: applied.status, owner: applied.body.metadata.owner }).toEqual({
      status: 200,
      owner: 'project:a',
    });
  });

  it('lets exactly one of two racing creates on one line have a name another tenant holds', async () => {
    for (let i = 0; i < 4; i++) {
      const name = `race-${i}`;
      expectOk(`b ${name}`, await b('POST', '/v1/computes', l4Compute(name, 'project:b', 1)), 201);
      const [one, two] = await Promise.all([
        a('POST', '/v1/computes', l4Compute(name, 'project:a', 1)),
        aTeam('POST', '/v1/computes', l4Compute(name, 'team:ml', 1)),
      ]);
      expect([one.status, two.status].sort()).toEqual([201, 409]);
      const [m1, m2] = await Promise.all([
        a('POST', '/v1/models', l4Model(name, 'project:a')),
        aTeam('POST', '/v1/models', l4Model(name, 'team:ml')),
      ]);
      // A model name must be free on its line whatever b holds; b holds no model of this name here.
      expect([m1.status, m2.status].sort()).toEqual([201, 409]);
    }
    const held = (await admin('GET', '/v1/computes')).body.items.filter((c: { metadata: { name: string } }) =>
      c.metadata.name.startsWith('race-'),
    );
    expect(held).toHaveLength(8);
  });

  it('lets two tenants each make a project of one name, and each use its own', async () => {
    const bTeam = recording(jsonClient(invokeInProcess, B.teamAdmin), 'tenant');
    const mine = await aTeam('POST', '/v1/scopes', { name: 'project:x', parent: 'team:ml' });
    expect(mine.status).toBe(201);
    const theirs = await bTeam('POST', '/v1/scopes', { name: 'project:x', parent: 'team:ops' });
    expect({ status: theirs.status, name: theirs.body.metadata?.name }).toEqual({
      status: 201,
      name: 'project:x',
    });
    expect(theirs.headers.location).toBe('/v1/scopes/project:x');
    // Twice under one parent is a clash the creator sees.
    const again = await aTeam('POST', '/v1/scopes', { name: 'project:x', parent: 'team:ml' });
    expect({ status: again.status, reason: again.body.reason }).toEqual({
      status: 409,
      reason: 'AlreadyExists',
    });
    for (const [call, parent] of [
      [aTeam, 'team:ml'],
      [bTeam, 'team:ops'],
    ] as const) {
      const got = await call('GET', '/v1/scopes/project:x');
      expect({ status: got.status, parent: got.body.spec?.parent }).toEqual({ status: 200, parent });
      const listed = (await call('GET', '/v1/scopes')).body.items.filter(
        (i: { metadata: { name: string } }) => i.metadata.name === 'project:x',
      );
      expect(listed).toHaveLength(1);
    }
    // Quotas, computes and models name the project as their owner: each tenant's means its own.
    expectOk('b quota', await bTeam('PUT', '/v1/quotas/project:x', { guarantee: { gpus: 1 } }), 200);
    expect((await aTeam('GET', '/v1/quotas/project:x')).status).toBe(404);
    expectOk('b compute', await bTeam('POST', '/v1/computes', l4Compute('x-pool', 'project:x', 1)), 201);
    expect((await aTeam('GET', '/v1/computes/x-pool')).status).toBe(404);
    expectOk('a model', await aTeam('POST', '/v1/models', l4Model('x-chat', 'project:x')), 201);
    const bm = await bTeam('GET', '/v1/models/x-chat');
    expect(bm.status).toBe(404);
    // The team's own scope tree shows its project among the children.
    expect((await bTeam('GET', '/v1/scopes/team:ops')).body.status.children).toEqual([
      'project:b',
      'project:x',
    ]);
  });

  it('asks whoever sees two projects of a name to write the parent', async () => {
    const both = await admin('GET', '/v1/scopes/project:x');
    expect({ status: both.status, reason: both.body.reason }).toEqual({
      status: 409,
      reason: 'AmbiguousName',
    });
    expect(both.body.detail).toContain('write team:ml/project:x');
    const one = await admin('GET', `/v1/scopes/${encodeURIComponent('team:ops/project:x')}`);
    expect({ status: one.status, parent: one.body.spec?.parent }).toEqual({
      status: 200,
      parent: 'team:ops',
    });
    const made = await admin('POST', '/v1/models', l4Model('x-ops', 'team:ops/project:x'));
    expect({ status: made.status, owner: made.body.metadata?.owner }).toEqual({
      status: 201,
      owner: 'project:x',
    });
    const ambiguous = await admin('POST', '/v1/models', l4Model('x-which', 'project:x'));
    expect(ambiguous.body.reason).toBe('AmbiguousName');
    const q = await admin('GET', `/v1/quotas/${encodeURIComponent('team:ops/project:x')}`);
    expect({ status: q.status, gpus: q.body.spec?.guarantee?.gpus }).toEqual({ status: 200, gpus: 1 });
    expect((await admin('GET', `/v1/scopes/${encodeURIComponent('team:nope/project:x')}`)).status).toBe(404);
    const c = await admin('GET', '/v1/computes/x-pool');
    expect({ status: c.status, owner: c.body.metadata?.owner }).toEqual({ status: 200, owner: 'project:x' });
  });

  it('never shows a twin mark in an answer, nor a tenant the wire names that carry one', () => {
    expect(answers.tenant.length).toBeGreaterThan(20);
    const tenant = JSON.stringify(answers.tenant);
    // The key (`~`), the node group and execution names (`_`), the labels and taint (`.`).
    expect(tenant.match(/(gpu|llama|race-\d|project:x)[~_.][a-z2-7]{8}/g) ?? []).toEqual([]);
    expect(JSON.stringify(answers.platform).match(/~[a-z2-7]{8}/g) ?? []).toEqual([]);
    // Platform admins do read the wire names: the twin's node group is its own.
    expect(JSON.stringify(answers.platform)).toMatch(/llmcap-test-gpu_[a-z2-7]{8}/);
  });
});
