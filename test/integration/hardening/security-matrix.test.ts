import { buildRouter } from '../../../lambdas/api/app';
import { takesOwner } from '../../../lambdas/api/http';
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
import { testAdmitter } from '../../helpers/admitter';
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
  // Lists filtered to what the caller may see: everyone gets 200, a stranger an empty answer.
  'GET /v1/alarms': { req: () => ({ path: '/v1/alarms' }), expect: all(200) },
  'GET /v1/costs': { req: () => ({ path: '/v1/costs' }), expect: all(200) },
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
  'POST /v1/models/{name}/wake': {
    setup: async (admin, p) => {
      const body = model(n('m-wake', p));
      (body.spec as Record<string, unknown>).autoscaling = {
        metric: 'vllm:num_requests_waiting',
        targetPerReplica: 2,
        scaleToZeroAfterSeconds: 600,
      };
      expectOk(`m-wake-${p}`, await admin('POST', '/v1/models', body), 201);
    },
    req: (p) => ({ path: `/v1/models/${n('m-wake', p)}/wake` }),
    expect: projectEdit(202),
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
    // A parent the stranger cannot see is one that does not exist to it (issue 30 §2).
    expect: { platform: 201, teamAdmin: 201, editor: 403, viewer: 403, stranger: 404 },
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

/** An answer as a caller reads it, whole: status, the headers that say something, and the body's text. */
const answer = async (principal: string, method: string, path: string, body?: unknown) => {
  const r = await invokeInProcess({
    method,
    path,
    principal,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const { date: _d, ...headers } = r.headers;
  return { status: r.status, headers, text: r.text };
};
/** Two answers to compare: one name written as the other; the times and the random uid a create stamps left out. */
const asIf = (a: Awaited<ReturnType<typeof answer>>, from: string, to: string) =>
  JSON.parse(
    JSON.stringify(a)
      .split(from)
      .join(to)
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>')
      .replace(/\\"uid\\":\\"[a-z0-9]+\\"/g, '<uid>'),
  );

/** Each tenant's callers, and the names the other tenant holds where they cannot see them. */
const CALLERS = [
  ...(['teamAdmin', 'editor', 'viewer', 'stranger'] as const).map((p) => ({
    who: p as string,
    arn: P[p],
    t: 'b',
  })),
  ...TENANT_B.map((p) => ({ who: p as string, arn: B[p], t: 'a' })),
] as const;
/** A resource of each kind held by each tenant (`held`), and a name nobody holds (`never`). */
const held = (t: string) => ({ compute: `g${t}-c`, model: `g${t}-m`, scope: `project:g${t}` });
const never = { compute: 'never-c', model: 'never-m', scope: 'project:never' };

/** How each route that names a resource is called with a name of that kind; the router's table says which. */
const kindOf = (path: string): 'compute' | 'model' | 'scope' | 'untenanted' =>
  path.startsWith('/v1/computes/')
    ? 'compute'
    : path.startsWith('/v1/models/')
      ? 'model'
      : /^\/v1\/(scopes|quotas|capacity)\//.test(path)
        ? 'scope'
        : 'untenanted';
const BODIES: Record<string, (name: string) => unknown> = {
  'PUT /v1/computes/{name}': (name) => l4Compute(name, 'project:a'),
  'POST /v1/computes/{name}/clone': (name) => ({ name: `${name}-k` }),
  'POST /v1/computes/{name}/rename': (name) => ({ name: `${name}-r` }),
  'PUT /v1/models/{name}': (name) => l4Model(name, 'project:a'),
  'PUT /v1/models/{name}/scaling': () => ({ min: 0, max: 2 }),
  'PUT /v1/models/{name}/resources': () => ({ memoryGb: 20, cpuCores: 3 }),
  'PUT /v1/models/{name}/class': () => ({ class: 'critical' }),
  'PUT /v1/models/{name}/owner': () => ({ owner: 'project:a' }),
  // A wake has no body.
  'POST /v1/models/{name}/wake': () => undefined,
  'PUT /v1/scopes/{name}/instance-families': () => ({ instanceFamilies: null }),
  'PUT /v1/scopes/{name}/members/{principal}': () => ({ role: 'viewer' }),
  'PUT /v1/scopes/{name}/members': () => ({ members: {} }),
  'PUT /v1/quotas/{scope}': () => ({ guarantee: { gpus: 1 } }),
};
const MEMBER = enc('arn:aws:iam::111111111111:role/ghost-member');
/** A route's request for a resource `name`; writes are dry runs, so that every case sees the same world. */
const named = (route: string, name: string) => {
  const [method, template] = route.split(' ') as [string, string];
  const path = template
    .replace(/\{(name|scope)\}/, name)
    .replace('{principal}', MEMBER)
    .replace('{id}', '00000000-0000-4000-8000-000000000000');
  const write = method !== 'GET';
  return { method, path: write ? `${path}?dryRun=All` : path, body: BODIES[route]?.(name) };
};

describe('what names tell (issue 30)', () => {
  beforeAll(async () => {
    // Each tenant holds a compute, a model and a scope (with a quota and a member) the other's callers do not see.
    for (const [t, scope, team] of [
      ['a', 'project:a', 'team:ml'],
      ['b', 'project:b', 'team:ops'],
    ] as const) {
      const h = held(t);
      expectOk(h.compute, await admin('POST', '/v1/computes', l4Compute(h.compute, scope, 1)), 201);
      expectOk(h.model, await admin('POST', '/v1/models', l4Model(h.model, scope)), 201);
      expectOk(h.scope, await admin('POST', '/v1/scopes', { name: h.scope, parent: team }), 201);
      expectOk(
        `${h.scope} quota`,
        await admin('PUT', `/v1/quotas/${h.scope}`, { guarantee: { gpus: 1 } }),
        200,
      );
      expectOk(
        `${h.scope} member`,
        await admin('PUT', `/v1/scopes/${h.scope}/members/${MEMBER}`, { role: 'viewer' }),
        200,
      );
    }
  }, 120_000);

  const paramRoutes = routes.filter((r) => r.includes('{'));
  it('knows how to call every route that names a resource', () => {
    // A route with a body and none here fails: its answers would be 400s, equal for any name.
    const writes = paramRoutes.filter((r) => /^(PUT|POST) /.test(r));
    expect(writes.filter((r) => !(r in BODIES))).toEqual([]);
    // Only reconcile passes are the platform's alone: everything else a route names has an owner.
    expect(paramRoutes.filter((r) => kindOf(r.split(' ')[1]!) === 'untenanted')).toEqual([
      'GET /v1/reconcile/{id}',
    ]);
  });

  const identical = paramRoutes
    .filter((r) => kindOf(r.split(' ')[1]!) !== 'untenanted')
    .flatMap((route) => CALLERS.map((c) => [route, c.who, c] as const));
  it.each(identical)(
    '%s as %s answers for a name another tenant holds exactly as for one nobody holds',
    async (route, _who, c) => {
      const kind = kindOf(route.split(' ')[1]!) as 'compute' | 'model' | 'scope';
      const x = held(c.t)[kind];
      const y = never[kind];
      const hidden = named(route, x);
      const missing = named(route, y);
      const a = await answer(c.arn, hidden.method, hidden.path, hidden.body);
      const b = await answer(c.arn, missing.method, missing.path, missing.body);
      expect({ route, answer: asIf(b, y, x) }).toEqual({ route, answer: asIf(a, y, x) });
    },
  );

  // Routes whose body names a scope: an owner or a parent the caller cannot see is one that does not exist.
  const bodyNamed: [string, (scope: string) => unknown][] = [
    ['POST /v1/scopes', (scope) => ({ name: 'project:newer', parent: scope })],
    ['POST /v1/computes', (scope) => l4Compute('c-newer', scope)],
    ['POST /v1/models', (scope) => l4Model('m-newer', scope)],
  ];
  const bodyCases = bodyNamed.flatMap(([route, body]) =>
    CALLERS.map((c) => [route, c.who, c, body] as const),
  );
  it.each(bodyCases)(
    '%s as %s answers for a scope another tenant holds exactly as for one nobody holds',
    async (route, _who, c, body) => {
      const path = `${route.split(' ')[1]}?dryRun=All`;
      const x = held(c.t).scope;
      const a = await answer(c.arn, 'POST', path, body(x));
      const b = await answer(c.arn, 'POST', path, body(never.scope));
      expect(a.status).toBeGreaterThanOrEqual(400);
      expect({ route, answer: asIf(b, never.scope, x) }).toEqual({ route, answer: asIf(a, never.scope, x) });
    },
  );
});

describe("?owner= means that owner's resource or none (issue 30 §3)", () => {
  // team:ml's admin may change its own tw-c and tw-m; project:b holds a compute and a model of those names too.
  const own = { compute: 'tw-c', model: 'tw-m' } as const;
  beforeAll(async () => {
    // Each made by its tenant's editor, who cannot see the other's.
    for (const [scope, who] of [
      ['project:a', P.editor],
      ['project:b', B.editorB],
    ] as const) {
      const call = jsonClient(invokeInProcess, who);
      expectOk(`tw-c ${scope}`, await call('POST', '/v1/computes', l4Compute(own.compute, scope, 1)), 201);
      expectOk(`tw-m ${scope}`, await call('POST', '/v1/models', l4Model(own.model, scope)), 201);
    }
  }, 60_000);

  const ownerRoutes = routes.filter((r) => r.includes('{') && takesOwner(r.split(' ')[1]!));
  it('covers every route that takes ?owner=', () => {
    expect(ownerRoutes.length).toBeGreaterThanOrEqual(12);
  });

  const BODY: Record<string, (name: string) => unknown> = {
    ...BODIES,
    'PUT /v1/computes/{name}': (name) => {
      const c = l4Compute(name, 'project:a', 1);
      c.spec.nodeGroup.maxNodes = 2;
      return c;
    },
    'PUT /v1/models/{name}': (name) => {
      const m = l4Model(name, 'project:a');
      m.spec.scaling = { min: 0, max: 3 };
      return m;
    },
  };
  // Another tenant's scope (which holds one of the name), one that does not exist, shared (which holds none).
  const OWNERS = ['project:b', 'project:never', 'shared'];
  // Those who may change project:a's resources, and one who only reads them.
  const ownerCases = ownerRoutes.flatMap((route) =>
    (['teamAdmin', 'editor', 'viewer'] as const).map((p) => [route, p] as const),
  );
  it.each(ownerCases)(
    '%s?owner=<not the caller’s> as %s never reaches the caller’s own resource',
    async (route, p) => {
      const kind = route.split(' ')[1]!.startsWith('/v1/computes') ? 'compute' : 'model';
      const name = own[kind];
      const read = `/v1/${kind}s/${name}`;
      const before = await admin('GET', `${read}?owner=project:a`);
      expect(before.status).toBe(200);
      const [method, template] = route.split(' ') as [string, string];
      const path = template.replace('{name}', name);
      const answers = [];
      for (const o of OWNERS) {
        const sep = path.includes('?') ? '&' : '?';
        answers.push(await answer(P[p], method, `${path}${sep}owner=${o}`, BODY[route]?.(name)));
      }
      // Nothing of project:a's changed: the same version, still there.
      const after = await admin('GET', `${read}?owner=project:a`);
      expect({ route, p, status: after.status, version: after.body?.metadata?.version }).toEqual({
        route,
        p,
        status: 200,
        version: before.body.metadata.version,
      });
      // It is refused, and the same way whichever owner was named (a name it cannot see tells nothing).
      for (const a of answers)
        expect({ route, p, refused: a.status >= 400 }).toEqual({ route, p, refused: true });
      const [first, ...rest] = answers.map((a, i) => asIf(a, OWNERS[i]!, '<owner>'));
      for (const a of rest) expect(a).toEqual(first);
    },
  );

  it('still reaches the owner named, for a caller who sees it', async () => {
    const r = await answer(P.teamAdmin, 'GET', `/v1/models/${own.model}?owner=project:a`);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text).metadata.owner).toBe('project:a');
  });
});

describe('a platform admin and a tenant editor agree on a name another tenant holds (issue 30 §2)', () => {
  it('creates a compute and a model whose name is held only on an unrelated line, for both', async () => {
    for (const [kind, make] of [
      ['computes', (n: string, o: string) => l4Compute(n, o, 1)],
      ['models', (n: string, o: string) => l4Model(n, o)],
    ] as const) {
      for (const name of [`dup-${kind}-1`, `dup-${kind}-2`])
        expectOk(name, await admin('POST', `/v1/${kind}`, make(name, 'project:b')), 201);
      const byAdmin = await admin('POST', `/v1/${kind}`, make(`dup-${kind}-1`, 'project:a'));
      const byEditor = await jsonClient(invokeInProcess, P.editor)(
        'POST',
        `/v1/${kind}`,
        make(`dup-${kind}-2`, 'project:a'),
      );
      expect({ kind, admin: byAdmin.status, editor: byEditor.status }).toEqual({
        kind,
        admin: 201,
        editor: 201,
      });
      // On the owner's own line the name is taken, for both.
      const again = await admin('POST', `/v1/${kind}`, make(`dup-${kind}-1`, 'team:ml'));
      expect({ kind, status: again.status, reason: again.body.reason }).toEqual({
        kind,
        status: 409,
        reason: 'AlreadyExists',
      });
    }
  });
});

describe('take-back tells each tenant only its own (issue 30 §1)', () => {
  // A shared compute of two L4 nodes; project:b borrows both beyond its guarantee of 1 GPU (m-b holds it), and
  // project:a, within its guarantee of 1 GPU, then starts one replica there: one of project:b's gives way.
  const NAMES = { a: ['a-tb', ...SCOPES_A], b: ['b-borrow', ...SCOPES_B] };
  const tells = (text: string, names: string[]) => names.filter((n) => text.includes(n));
  const aTb = l4Model('a-tb', 'project:a', 1, 'c-tb');
  beforeAll(async () => {
    expectOk('c-tb', await admin('POST', '/v1/computes', l4Compute('c-tb', undefined, 2)), 201);
    expectOk(
      'quota b',
      await admin('PUT', '/v1/quotas/project:b', { guarantee: { gpus: 1 }, limit: { gpus: 4 } }),
      200,
    );
    expectOk('quota a', await admin('PUT', '/v1/quotas/project:a', { guarantee: { gpus: 1 } }), 200);
    const borrow = l4Model('b-borrow', 'project:b', 1, 'c-tb');
    borrow.spec.scaling = { min: 1, max: 2, target: 2 } as typeof borrow.spec.scaling;
    const made = await jsonClient(invokeInProcess, B.editorB)('POST', '/v1/models', borrow);
    expectOk('b-borrow', made, 201);
    // Stored as intent; the admitter decides it moments later.
    expect(made.body.status.reasons).toEqual([expect.objectContaining({ reason: 'Queued', replicas: 2 })]);
    await testAdmitter()!.settled();
    const decided = await jsonClient(invokeInProcess, B.editorB)('GET', '/v1/models/b-borrow');
    expect(decided.body.status).toMatchObject({ admitted: 2, borrowed: 2 });
  }, 60_000);

  it("previews a take-back to the taker without the other tenant's model, scope or figures", async () => {
    const r = await answer(P.editor, 'POST', '/v1/models?dryRun=All', aTb);
    expect(r.status).toBe(201);
    const body = JSON.parse(r.text);
    expect(body.status.preview.takesBack).toEqual([
      { reason: 'TakenBackForScope', message: expect.stringContaining('another scope') },
    ]);
    expect(tells(r.text, NAMES.b)).toEqual([]);
    // A platform admin reads it all.
    const all = await admin('POST', '/v1/models?dryRun=All', aTb);
    expect(all.body.status.preview.takesBack).toEqual([
      expect.objectContaining({ model: 'b-borrow', scope: 'project:b', reason: 'TakenBackForScope' }),
    ]);
    expect(all.body.status.preview.takesBack[0].message).toMatch(
      /project:b holds 3 gpus against a guarantee of 1/,
    );
  });

  it("tells the taker's readers its room is held, without naming what gives way", async () => {
    const made = await answer(P.editor, 'POST', '/v1/models', aTb);
    expect(made.status).toBe(201);
    await testAdmitter()!.settled();
    const decided = await answer(P.editor, 'GET', '/v1/models/a-tb');
    expect(JSON.parse(decided.text).status.reasons).toEqual([
      expect.objectContaining({
        reason: 'PendingTakeBack',
        message: expect.stringContaining('another scope'),
      }),
    ]);
    for (const who of [P.editor, P.viewer, P.teamAdmin]) {
      for (const path of ['/v1/models/a-tb', '/v1/models']) {
        const r = await answer(who, 'GET', path);
        expect({ who, path, status: r.status, told: tells(r.text, NAMES.b) }).toEqual({
          who,
          path,
          status: 200,
          told: [],
        });
      }
    }
    expect((await admin('GET', '/v1/models/a-tb')).body.status.reasons[0].message).toContain('b-borrow');
  });

  it("tells the victim's readers their borrowed replica was taken back, with their own figures only", async () => {
    for (const who of Object.values(B)) {
      const r = await answer(who, 'GET', '/v1/models/b-borrow');
      expect(r.status).toBe(200);
      const s = JSON.parse(r.text).status;
      expect(s.takenBack).toEqual([
        {
          reason: 'TakenBackForScope',
          replicas: 1,
          at: expect.any(String),
          message: expect.stringMatching(
            /^taken back for another scope, which is within its guarantee: project:b holds 3 gpus against a guarantee of 1 gpu/,
          ),
        },
      ]);
      expect(s.reasons.map((x: { message: string }) => x.message)).toContain(s.takenBack[0].message);
      for (const path of ['/v1/models/b-borrow', '/v1/models'])
        expect({ who, path, told: tells((await answer(who, 'GET', path)).text, NAMES.a) }).toEqual({
          who,
          path,
          told: [],
        });
    }
    const all = await admin('GET', '/v1/models/b-borrow');
    expect(all.body.status.takenBack).toEqual([
      expect.objectContaining({ by: expect.objectContaining({ model: 'a-tb', scope: 'project:a' }) }),
    ]);
    expect(all.body.status.takenBack[0].message).toMatch(/^taken back for a-tb of project:a/);
  });
});
