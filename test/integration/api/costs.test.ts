import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, reconcileUntil, seedTwoTenants, testControlPlane } from '../../helpers/control-plane';
import { l4Model, l4Pool, scale } from '../../helpers/l4-pool';
import { roleArn } from '../../helpers/principals';
import { llmcap } from '../cli/run';

/**
 * GET /v1/costs on the local control plane (docs/design.md §3.6): two tenants' replicas on one L4 pool node,
 * each charged its dominant share (1 of 8 GPUs a replica), the rest idle, the parts adding up to the node
 * groups' cost; a member sees only its scopes, and a scope that is not its own answers as one that does not exist.
 */

const ML_VIEWER = roleArn('ml-viewer');
const PRICE = 13.35;

let cp: ControlPlane;
let call: ReturnType<typeof httpApi>;
const started = new Date(Date.now() - 1000).toISOString();
beforeAll(async () => {
  cp = await testControlPlane('costs');
  call = httpApi(cp);
  await seedTwoTenants(call, ML_VIEWER);
  expect((await call('POST', '/v1/computes', l4Pool('pool'))).status).toBe(201);
  expect((await call('POST', '/v1/models', l4Model('pool', 'ml-chat', 'team:ml', scale(2)))).status).toBe(
    201,
  );
  expect((await call('POST', '/v1/models', l4Model('pool', 'ops-chat', 'team:ops', scale(1)))).status).toBe(
    201,
  );
  await reconcileUntil(cp, async () => {
    const c = (await call('GET', '/v1/computes/pool')).body;
    return c.status.nodegroupStatus === 'ACTIVE' && c.status.desiredNodes === 1;
  });
  await cp.reconcile(); // one sample with the node billing
}, 120_000);
afterAll(() => cp.stop());

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('GET /v1/costs', () => {
  it("charges each scope its replicas' dominant share of the node, and the rest of the node is idle", async () => {
    const r = await call('GET', `/v1/costs?from=${started}`);
    expect(r.status).toBe(200);
    const scope = (s: string) => r.body.scopes.find((x: { scope: string }) => x.scope === s);
    expect(scope('team:ml').perHour).toBeCloseTo((2 / 8) * PRICE, 6);
    expect(scope('team:ops').perHour).toBeCloseTo((1 / 8) * PRICE, 6);
    const pool = r.body.computes.find((c: { compute: string }) => c.compute === 'pool');
    expect(pool).toMatchObject({ nodes: 1, perHour: PRICE });
    expect(pool.idlePerHour).toBeCloseTo((5 / 8) * PRICE, 6);
    // The parts add up to the whole, now and over the period (within 1%).
    const idleNow = sum(r.body.computes.map((c: { idlePerHour: number }) => c.idlePerHour));
    const scopesNow = sum(r.body.scopes.map((s: { perHour: number }) => s.perHour));
    expect(Math.abs(scopesNow + idleNow - r.body.total.perHour)).toBeLessThanOrEqual(
      r.body.total.perHour * 0.01,
    );
    const idle = sum(r.body.computes.map((c: { idle: number }) => c.idle));
    const scoped = sum(r.body.scopes.map((s: { cost: number }) => s.cost));
    expect(r.body.total.cost).toBeGreaterThan(0);
    expect(Math.abs(scoped + idle - r.body.total.cost)).toBeLessThanOrEqual(r.body.total.cost * 0.01);
    expect(r.body.series).toHaveLength(24);
    expect(r.body.samples).toBeGreaterThan(1);
  });

  it('shows a member only the scopes it may read, and no total', async () => {
    const r = await call('GET', `/v1/costs?from=${started}`, undefined, ML_VIEWER);
    expect(r.status).toBe(200);
    const names = r.body.scopes.map((s: { scope: string }) => s.scope);
    expect(names).toContain('team:ml');
    expect(names).not.toContain('team:ops');
    expect(names).not.toContain('org:beta');
    expect(r.body.total).toBeUndefined();
    for (const b of r.body.series) expect(Object.keys(b.scopes)).not.toContain('team:ops');
  });

  it('answers a scope that is not yours exactly as one that does not exist', async () => {
    const theirs = await call('GET', '/v1/costs?scope=team:ops', undefined, ML_VIEWER);
    const none = await call('GET', '/v1/costs?scope=team:nope', undefined, ML_VIEWER);
    expect(theirs.status).toBe(404);
    expect(none.status).toBe(404);
    expect(theirs.body.detail.replace('team:ops', 'X')).toBe(none.body.detail.replace('team:nope', 'X'));
    const own = await call('GET', '/v1/costs?scope=team:ml', undefined, ML_VIEWER);
    expect(own.body.scopes.map((s: { scope: string }) => s.scope)).toEqual(['team:ml']);
  });

  it('refuses a bad query with every issue listed, as problem+json', async () => {
    const r = await fetch(`${cp.apiUrl}/v1/costs?from=yesterday&buckets=0&colour=red`);
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
    const paths = ((await r.json()) as { errors: { path: string }[] }).errors.map((e) => e.path).sort();
    expect(paths).toEqual(['(query)', 'buckets', 'from']);
    const backwards = await call('GET', '/v1/costs?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z');
    expect(backwards.status).toBe(400);
    expect(backwards.body.errors).toEqual([
      { path: 'to', message: 'must be after from (2026-01-02T00:00:00Z)' },
    ]);
    const long = await call('GET', '/v1/costs?from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z');
    expect(long.body.errors[0].path).toBe('from');
  });
});

describe('llmcap costs', () => {
  it("prints each scope's cost per hour and the compute's idle cost, as the API answers them", async () => {
    const api = (await call('GET', `/v1/costs?from=${started}`)).body;
    const r = await llmcap(['costs', '--since', started], { endpoint: cp.apiUrl });
    expect(r.code).toBe(0);
    const ml = api.scopes.find((s: { scope: string }) => s.scope === 'team:ml');
    expect(r.stdout).toMatch(new RegExp(`^team:ml\\s+\\$${ml.perHour.toFixed(4)}\\s`, 'm'));
    expect(r.stdout).toMatch(/^pool\s+\(platform\)\s+1\s+\$13\.35\s+\$8\.3438\s/m);
    expect(r.stdout).toContain(`Total: $${api.total.perHour.toFixed(2)} per hour now`);
  });

  it('shows a member its own scopes only', async () => {
    const r = await llmcap(['costs', '--since', '1h'], {
      endpoint: cp.apiUrl,
      env: { LLMCAP_PRINCIPAL: ML_VIEWER },
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^team:ml\s/m);
    expect(r.stdout).not.toMatch(/team:ops/);
    expect(r.stdout).not.toMatch(/^Total/m);
  });
});

describe('GET /v1/alarms', () => {
  it("shows a member its scopes' alarms only, and a platform admin the stage's too", async () => {
    const all = await call('GET', '/v1/alarms');
    expect(all.status).toBe(200);
    const kinds = (items: { kind: string; subject: string }[]) => items.map((a) => `${a.kind} ${a.subject}`);
    expect(kinds(all.body.items)).toEqual(
      expect.arrayContaining(['CapacityAtLimit team:ml', 'CapacityAtLimit team:ops', 'NodegroupFailed pool']),
    );
    expect(all.body.items.some((a: { kind: string }) => a.kind === 'ReconcileStale')).toBe(true);
    const mine = await call('GET', '/v1/alarms', undefined, ML_VIEWER);
    expect(kinds(mine.body.items)).toContain('CapacityAtLimit team:ml');
    expect(kinds(mine.body.items)).toContain('NodegroupFailed pool');
    expect(kinds(mine.body.items).filter((k) => /team:ops|org:beta|Reconcile/.test(k))).toEqual([]);
    for (const a of mine.body.items) expect(['OK', 'ALARM', 'INSUFFICIENT_DATA']).toContain(a.state);
  });
});
