import { buildRouter } from '../../../lambdas/api/app';
import { recordWorkloads } from '../../../lambdas/store/workloads';
import type { LocalLambda } from '../../../local/lambda';
import {
  createTenancy,
  enc,
  expectOk,
  l4Compute,
  l4Model,
  P,
  PRINCIPALS,
  type PrincipalKey,
  setupTenancy,
} from '../../../soak/lib/fixture';
import { invokeInProcess, type JsonClient, jsonClient } from '../../../soak/lib/invoke';
import { testApi } from '../../helpers/api';
import { reconcilerLambda } from '../../helpers/lambda';

/**
 * docs/design.md §8 as a table: every route of the router, tried by a platform admin, an admin of team:ml, an
 * editor and a viewer of project:a, a stranger, and an unauthenticated caller, against the outcome the
 * design calls for. The route list comes from the router, so a route added without a row fails here.
 *
 * A second tenant (org:beta > team:ops > project:b, its own admin, editor and viewer, its own compute and
 * model) tries every route too, on the first tenant's resources: it gets exactly what the stranger gets, and
 * no answer to either tenant names a scope, compute or model of the other (issue 17 §1, §3).
 *
 * Each principal works on resources of its own (c-put-editor, m-del-viewer, ...) made beforehand by the
 * platform admin, so the order of the cases does not matter. A resource a caller may not see answers 404,
 * like a missing one (names do not leak); one it sees but may not change answers 403.
 */

type Outcome = Record<PrincipalKey, number>;
/** The pass the platform admin queued in setup, read by GET /v1/reconcile/{id}. */
let passId = '';
interface Case {
  /** Made by the platform admin before any case runs. */
  setup?: (admin: JsonClient, p: PrincipalKey) => Promise<void>;
  req: (p: PrincipalKey) => { path: string; body?: unknown };
  expect: Outcome;
}

const all = (s: number): Outcome => ({ platform: s, teamAdmin: s, editor: s, viewer: s, stranger: s });
/** Seen and changed by the project's editors and above; seen by its viewer; invisible to a stranger. */
const projectEdit = (ok: number): Outcome => ({
  platform: ok,
  teamAdmin: ok,
  editor: ok,
  viewer: 403,
  stranger: 404,
});
/** Decided one level up (team:ml admins), seen by the project's members, invisible to a stranger. */
const fromAbove = (ok: number): Outcome => ({
  platform: ok,
  teamAdmin: ok,
  editor: 403,
  viewer: 403,
  stranger: 404,
});
const readable: Outcome = { platform: 200, teamAdmin: 200, editor: 200, viewer: 200, stranger: 404 };

const compute = (name: string) => l4Compute(name, 'project:a', 2);
const model = (name: string) => l4Model(name, 'project:a');
const mkCompute = (prefix: string) => async (admin: JsonClient, p: PrincipalKey) =>
  expectOk(
    `${prefix}-${p}`,
    await admin('POST', '/v1/computes', compute(`${prefix}-${p.toLowerCase()}`)),
    201,
  );
const mkModel = (prefix: string) => async (admin: JsonClient, p: PrincipalKey) =>
  expectOk(`${prefix}-${p}`, await admin('POST', '/v1/models', model(`${prefix}-${p.toLowerCase()}`)), 201);
/** A project of the principal's own under team:ml, where the editor and viewer hold their roles too. */
const mkProject = (prefix: string, quota: boolean) => async (admin: JsonClient, p: PrincipalKey) => {
  const name = `project:${prefix}-${p.toLowerCase()}`;
  expectOk(name, await admin('POST', '/v1/scopes', { name, parent: 'team:ml' }), 201);
  for (const [who, role] of [
    [P.editor, 'editor'],
    [P.viewer, 'viewer'],
  ] as const)
    expectOk(
      `${name} ${role}`,
      await admin('PUT', `/v1/scopes/${enc(name)}/members/${enc(who)}`, { role }),
      200,
    );
  if (quota)
    expectOk(`${name} quota`, await admin('PUT', `/v1/quotas/${enc(name)}`, { guarantee: { gpus: 1 } }), 200);
};
const n = (prefix: string, p: PrincipalKey) => `${prefix}-${p.toLowerCase()}`;

const MATRIX: Record<string, Case> = {
  'GET /v1/healthz': { req: () => ({ path: '/v1/healthz' }), expect: all(200) },
  'GET /v1/openapi.json': { req: () => ({ path: '/v1/openapi.json' }), expect: all(200) },

  'GET /v1/computes': { req: () => ({ path: '/v1/computes' }), expect: all(200) },
  'POST /v1/computes': {
    req: (p) => ({ path: '/v1/computes', body: compute(n('c-new', p)) }),
    // A stranger may not create in project:a either; the owner scope is named in the body, so 403.
    expect: { ...projectEdit(201), stranger: 403 },
  },
  'GET /v1/computes/{name}': { req: () => ({ path: '/v1/computes/c-a' }), expect: readable },
  // A resource's events are read as the resource is: those who may not read it get its 404.
  'GET /v1/computes/{name}/events': { req: () => ({ path: '/v1/computes/c-a/events' }), expect: readable },
  'PUT /v1/computes/{name}': {
    setup: mkCompute('c-put'),
    req: (p) => {
      const body = compute(n('c-put', p));
      body.spec.nodeGroup.maxNodes = 3;
      return { path: `/v1/computes/${n('c-put', p)}`, body };
    },
    // To a stranger the name is free (names per owner): a create in project:a, which it may not make, as POST.
    expect: { ...projectEdit(200), stranger: 403 },
  },
  'DELETE /v1/computes/{name}': {
    setup: mkCompute('c-del'),
    req: (p) => ({ path: `/v1/computes/${n('c-del', p)}` }),
    expect: projectEdit(204),
  },
  'POST /v1/computes/{name}/clone': {
    req: (p) => ({ path: '/v1/computes/c-a/clone', body: { name: n('c-clone', p) } }),
    expect: projectEdit(201),
  },
  'POST /v1/computes/{name}/rename': {
    setup: mkCompute('c-ren'),
    req: (p) => ({ path: `/v1/computes/${n('c-ren', p)}/rename`, body: { name: n('c-renamed', p) } }),
    expect: projectEdit(201),
  },

  'GET /v1/models': { req: () => ({ path: '/v1/models' }), expect: all(200) },
  'POST /v1/models': {
    req: (p) => ({ path: '/v1/models', body: model(n('m-new', p)) }),
    expect: { ...projectEdit(201), stranger: 403 },
  },
  'GET /v1/models/{name}': { req: () => ({ path: '/v1/models/m-a' }), expect: readable },
  'GET /v1/models/{name}/events': { req: () => ({ path: '/v1/models/m-a/events' }), expect: readable },
  'PUT /v1/models/{name}': {
    setup: mkModel('m-put'),
    req: (p) => {
      const body = model(n('m-put', p));
      body.spec.scaling = { min: 0, max: 2 };
      return { path: `/v1/models/${n('m-put', p)}`, body };
    },
    // As for computes: to a stranger the name is free, and a create in project:a is not its to make.
    expect: { ...projectEdit(200), stranger: 403 },
  },
  'DELETE /v1/models/{name}': {
    setup: mkModel('m-del'),
    req: (p) => ({ path: `/v1/models/${n('m-del', p)}` }),
    expect: projectEdit(204),
  },
  'PUT /v1/models/{name}/scaling': {
    setup: mkModel('m-scale'),
    req: (p) => ({ path: `/v1/models/${n('m-scale', p)}/scaling`, body: { min: 0, max: 3 } }),
    expect: projectEdit(200),
  },
  'PUT /v1/models/{name}/resources': {
    setup: mkModel('m-res'),
    req: (p) => ({ path: `/v1/models/${n('m-res', p)}/resources`, body: { memoryGb: 20, cpuCores: 3 } }),
    expect: projectEdit(200),
  },
  'PUT /v1/models/{name}/class': {
    setup: mkModel('m-class'),
    req: (p) => ({ path: `/v1/models/${n('m-class', p)}/class`, body: { class: 'critical' } }),
    expect: projectEdit(200),
  },
  'PUT /v1/models/{name}/owner': {
    setup: mkModel('m-own'),
    // Handing a model to team:ml needs editor there too: the project's editor is not.
    req: (p) => ({ path: `/v1/models/${n('m-own', p)}/owner`, body: { owner: 'team:ml' } }),
    expect: { platform: 200, teamAdmin: 200, editor: 403, viewer: 403, stranger: 404 },
  },
  'GET /v1/sources': { req: () => ({ path: '/v1/sources' }), expect: all(200) },
  // Everyone may list pods; each sees those of the models it may see (seeded below for m-a and m-b).
  'GET /v1/pods': { req: () => ({ path: '/v1/pods' }), expect: all(200) },

  'GET /v1/scopes': { req: () => ({ path: '/v1/scopes' }), expect: all(200) },
  'POST /v1/scopes': {
    req: (p) => ({ path: '/v1/scopes', body: { name: `project:${n('new', p)}`, parent: 'team:ml' } }),
    expect: { platform: 201, teamAdmin: 201, editor: 403, viewer: 403, stranger: 403 },
  },
  'GET /v1/scopes/{name}': { req: () => ({ path: '/v1/scopes/project:a' }), expect: readable },
  'DELETE /v1/scopes/{name}': {
    setup: mkProject('del', false),
    req: (p) => ({ path: `/v1/scopes/project:${n('del', p)}` }),
    expect: fromAbove(204),
  },
  'PUT /v1/scopes/{name}/instance-families': {
    req: () => ({ path: '/v1/scopes/project:a/instance-families', body: { instanceFamilies: null } }),
    expect: { platform: 200, teamAdmin: 403, editor: 403, viewer: 403, stranger: 404 },
  },
  'PUT /v1/scopes/{name}/members/{principal}': {
    req: (p) => ({
      path: `/v1/scopes/project:a/members/${enc(`arn:aws:iam::111111111111:role/new-${p}`)}`,
      body: { role: 'viewer' },
    }),
    expect: fromAbove(200),
  },
  // A dry run, so that replacing all of project:a's members leaves the principals of the other rows in place.
  'PUT /v1/scopes/{name}/members': {
    req: () => ({ path: '/v1/scopes/project:a/members?dryRun=All', body: { members: {} } }),
    expect: fromAbove(200),
  },
  'DELETE /v1/scopes/{name}/members/{principal}': {
    setup: async (admin, p) =>
      expectOk(
        `gone-${p}`,
        await admin(
          'PUT',
          `/v1/scopes/project:a/members/${enc(`arn:aws:iam::111111111111:role/gone-${p}`)}`,
          {
            role: 'viewer',
          },
        ),
        200,
      ),
    req: (p) => ({ path: `/v1/scopes/project:a/members/${enc(`arn:aws:iam::111111111111:role/gone-${p}`)}` }),
    expect: fromAbove(204),
  },

  'GET /v1/quotas': { req: () => ({ path: '/v1/quotas' }), expect: all(200) },
  'GET /v1/quotas/{scope}': { req: () => ({ path: '/v1/quotas/project:a' }), expect: readable },
  'PUT /v1/quotas/{scope}': {
    setup: mkProject('q', false),
    req: (p) => ({
      path: `/v1/quotas/project:${n('q', p)}`,
      body: { guarantee: { gpus: 1 }, limit: { gpus: 2 } },
    }),
    expect: fromAbove(200),
  },
  'DELETE /v1/quotas/{scope}': {
    setup: mkProject('qd', true),
    req: (p) => ({ path: `/v1/quotas/project:${n('qd', p)}` }),
    expect: fromAbove(204),
  },
  'GET /v1/capacity': { req: () => ({ path: '/v1/capacity' }), expect: all(200) },
  'GET /v1/capacity/{scope}': { req: () => ({ path: '/v1/capacity/project:a' }), expect: readable },

  'POST /v1/reconcile': {
    req: () => ({ path: '/v1/reconcile' }),
    expect: { platform: 202, teamAdmin: 403, editor: 403, viewer: 403, stranger: 403 },
  },
  'GET /v1/reconcile': {
    req: () => ({ path: '/v1/reconcile?limit=5' }),
    expect: { platform: 200, teamAdmin: 403, editor: 403, viewer: 403, stranger: 403 },
  },
  'GET /v1/reconcile/{id}': {
    setup: async (admin, p) => {
      if (p === 'platform') passId = (await admin('POST', '/v1/reconcile')).body.id;
    },
    req: () => ({ path: `/v1/reconcile/${passId}` }),
    expect: { platform: 200, teamAdmin: 403, editor: 403, viewer: 403, stranger: 403 },
  },
};

/** The second tenant's principals, and the stranger whose outcome they must get on the first tenant's things. */
const B = {
  teamAdminB: 'arn:aws:iam::333333333333:role/ops-lead',
  editorB: 'arn:aws:iam::333333333333:role/b-dev',
  viewerB: 'arn:aws:iam::333333333333:role/b-reader',
} as const;
type TenantB = keyof typeof B;
const TENANT_B = Object.keys(B) as TenantB[];
const SCOPES_A = ['org:acme', 'team:ml', 'project:a'];
const SCOPES_B = ['org:beta', 'team:ops', 'project:b'];
/** Names of resources each tenant owns, filled in setup: the other tenant's answers must not contain them. */
const owned: Record<'a' | 'b', string[]> = { a: [...SCOPES_A], b: [...SCOPES_B, 'c-b', 'm-b'] };

async function setupTenantB(admin: JsonClient): Promise<void> {
  await createTenancy(
    admin,
    [['org:beta'], ['team:ops', 'org:beta'], ['project:b', 'team:ops']],
    [
      ['team:ops', B.teamAdminB, 'admin'],
      ['project:b', B.editorB, 'editor'],
      ['project:b', B.viewerB, 'viewer'],
    ],
  );
  expectOk('c-b', await admin('POST', '/v1/computes', l4Compute('c-b', 'project:b', 2)), 201);
  expectOk('m-b', await admin('POST', '/v1/models', l4Model('m-b', 'project:b', 1, 'c-b')), 201);
}

/** A Ready pod of each tenant's model, as the reconciler would have stored it (no cluster runs here). */
async function seedPods(): Promise<void> {
  const pod = (model: string, compute: string, scope: string) => ({
    running: 1,
    total: 1,
    pods: [
      {
        name: `${model}-l4-${compute}-5d8f9c7b6-x2x9q`,
        model,
        namespace: `llmcap-test-${scope.replace(':', '-')}`,
        compute,
        profile: 'l4',
        node: `ip-10-0-${model === 'm-a' ? 1 : 2}-7.ec2.internal`,
        phase: 'Running',
        ready: true,
        restarts: 0,
      },
    ],
    podReasons: [],
  });
  await recordWorkloads(
    new Map([
      ['m-a', pod('m-a', 'c-a', 'project:a')],
      ['m-b', pod('m-b', 'c-b', 'project:b')],
    ]),
    new Date().toISOString(),
  );
}

/** Every quoted string in an answer, so a leak is a name that appears as a value, not a substring of one. */
const strings = (body: unknown): Set<string> => {
  const out = new Set<string>();
  JSON.stringify(body ?? null, (_k, v) => {
    if (typeof v === 'string') out.add(v);
    return v;
  });
  return out;
};
const leaked = (body: unknown, names: string[]) => {
  const s = strings(body);
  return names.filter((n) => s.has(n));
};

let admin: JsonClient;
let lambda: LocalLambda;
const routes = buildRouter()
  .list()
  .map((r) => `${r.method} ${r.path}`);

const workloadsBefore = process.env.LLMCAP_WORKLOADS;
// Some hundred writes through the API: on a loaded machine they outlast jest's 60 s, which proves nothing here.
beforeAll(async () => {
  // The API serves pods only where llmcap runs them.
  process.env.LLMCAP_WORKLOADS = 'deploy';
  await testApi({ admins: [P.platform] });
  lambda = await reconcilerLambda();
  admin = jsonClient(invokeInProcess, P.platform);
  await setupTenancy(admin);
  expectOk('c-a', await admin('POST', '/v1/computes', compute('c-a')), 201);
  expectOk('m-a', await admin('POST', '/v1/models', model('m-a')), 201);
  for (const c of Object.values(MATRIX)) for (const p of PRINCIPALS) await c.setup?.(admin, p);
  await setupTenantB(admin);
  await seedPods();
  const mine = (items: { metadata: { name: string; owner?: string } }[]) =>
    items.filter((i) => SCOPES_A.includes(i.metadata.owner ?? '')).map((i) => i.metadata.name);
  owned.a.push(
    ...mine((await admin('GET', '/v1/computes')).body.items),
    ...mine((await admin('GET', '/v1/models')).body.items),
  );
  expect(owned.a).toEqual(expect.arrayContaining(['c-a', 'm-a', 'c-put-editor']));
}, 240_000);
afterAll(async () => {
  await lambda.stop();
  if (workloadsBefore === undefined) delete process.env.LLMCAP_WORKLOADS;
  else process.env.LLMCAP_WORKLOADS = workloadsBefore;
});

describe('security matrix', () => {
  it('has a row for every route the router serves, and none for a route it does not', () => {
    expect(Object.keys(MATRIX).sort()).toEqual([...routes].sort());
  });

  const cases = Object.keys(MATRIX).flatMap((route) => PRINCIPALS.map((p) => [route, p] as const));
  it.each(cases)('%s as %s', async (route, p) => {
    const c = MATRIX[route]!;
    const [method] = route.split(' ') as [string];
    const { path, body } = c.req(p);
    const r = await jsonClient(invokeInProcess, P[p])(method, path, body);
    expect({
      route,
      principal: p,
      status: r.status,
      detail: r.status >= 400 ? r.body?.detail : undefined,
    }).toEqual({
      route,
      principal: p,
      status: c.expect[p],
      detail: c.expect[p] >= 400 ? r.body?.detail : undefined,
    });
    if (r.status >= 400) expect(r.headers['content-type']).toBe('application/problem+json');
    // The first tenant's members never see the second tenant's names (the platform admin sees all).
    if (p !== 'platform')
      expect({ route, principal: p, leaked: leaked(r.body, owned.b) }).toEqual({
        route,
        principal: p,
        leaked: [],
      });
  });

  const tenantCases = Object.keys(MATRIX).flatMap((route) => TENANT_B.map((p) => [route, p] as const));
  it.each(tenantCases)("%s as %s, on the other tenant's resources", async (route, p) => {
    const c = MATRIX[route]!;
    const [method] = route.split(' ') as [string];
    // The stranger's own resources (made in setup, owned by project:a): the other tenant must fare no better.
    const { path, body } = c.req('stranger');
    const r = await jsonClient(invokeInProcess, B[p])(method, path, body);
    expect({ route, principal: p, status: r.status }).toEqual({
      route,
      principal: p,
      status: c.expect.stranger,
    });
    // Whatever it may read (lists, capacity) holds nothing of the first tenant's, which it did not name itself.
    const named = strings(body);
    const own = owned.a.filter((n) => !named.has(n) && !path.includes(n));
    expect({ route, principal: p, leaked: leaked(r.body, own) }).toEqual({ route, principal: p, leaked: [] });
  });

  it('lets the second tenant see and use its own resources', async () => {
    for (const p of TENANT_B) {
      const call = jsonClient(invokeInProcess, B[p]);
      expect((await call('GET', '/v1/computes/c-b')).status).toBe(200);
      expect((await call('GET', '/v1/models/m-b')).status).toBe(200);
      const pods = (await call('GET', '/v1/pods')).body.items.map((i: { model: string }) => i.model);
      expect(pods).toEqual(['m-b']);
      expect((await call('GET', '/v1/pods?model=m-a')).status).toBe(404);
      const cap = await call('GET', '/v1/capacity');
      expect(cap.body.scopes.map((s: { scope: string }) => s.scope).sort()).toEqual([...SCOPES_B].sort());
      expect(cap.body.cluster.computes.map((c: { compute: string }) => c.compute)).toContain('c-b');
    }
  });

  it.each(routes)('%s refuses a caller without an IAM identity (401)', async (route) => {
    const [method] = route.split(' ') as [string];
    const { path, body } = MATRIX[route]?.req('stranger') ?? { path: route.split(' ')[1]! };
    const r = await invokeInProcess({
      method,
      path,
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    expect(r.status).toBe(401);
    expect(r.headers['content-type']).toBe('application/problem+json');
  });
});
