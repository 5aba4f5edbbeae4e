import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { Client } from '../../../cli/client';
import { type ConsoleServer, startConsole } from '../../../cli/console/server';
import type { ControlPlane } from '../../../local/control-plane';
import { CLI_BUNDLE_ENV } from '../../helpers/cli-bundle';
import { httpApi, reconcileUntil, seedTwoTenants, testControlPlane } from '../../helpers/control-plane';
import { l4Model, l4Pool, scale } from '../../helpers/l4-pool';
import { roleArn } from '../../helpers/principals';

/**
 * The web console (llmcap console) in a real headless Chromium, against the local control plane with a seeded
 * world: each page shows the numbers the API answers, and a member of team:ml sees only what it may read.
 * Chromium is a prerequisite like Java (README); CHROMIUM_PATH points elsewhere than /usr/bin/chromium.
 * LLMCAP_CONSOLE_SCREENSHOTS=1 saves each page to docs/console/<page>.png.
 */

const ML_VIEWER = roleArn('ml-viewer');
const SHOTS = process.env.LLMCAP_CONSOLE_SCREENSHOTS
  ? join(__dirname, '..', '..', '..', 'docs', 'console')
  : undefined;

let cp: ControlPlane;
let call: ReturnType<typeof httpApi>;
let admin: ConsoleServer;
let viewer: ConsoleServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  const launched = chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  cp = await testControlPlane('console');
  call = httpApi(cp);
  await seedTwoTenants(call, ML_VIEWER);
  expect(
    (await call('PUT', '/v1/quotas/team:ml', { guarantee: { gpus: 2 }, limit: { gpus: 3 } })).status,
  ).toBe(200);
  expect((await call('PUT', '/v1/quotas/team:ops', { guarantee: { gpus: 1 } })).status).toBe(200);
  expect((await call('POST', '/v1/computes', l4Pool('pool'))).status).toBe(201);
  // ml-extra's target goes beyond team:ml's limit: one replica runs, two wait (LimitExceeded).
  for (const [name, owner, s] of [
    ['ml-chat', 'team:ml', scale(2)],
    ['ml-extra', 'team:ml', scale(1, 3, 3)],
    ['ops-chat', 'team:ops', scale(1)],
  ] as const)
    expect((await call('POST', '/v1/models', l4Model('pool', name, owner, s))).status).toBe(201);
  await reconcileUntil(cp, async () => {
    const c = (await call('GET', '/v1/computes/pool')).body;
    return c.status.nodegroupStatus === 'ACTIVE' && c.status.readyNodes >= 1;
  });
  await cp.reconcile();
  admin = await startConsole({ client: new Client({ endpoint: cp.apiUrl, sign: false }), port: 0 });
  viewer = await startConsole({
    client: new Client({ endpoint: cp.apiUrl, sign: false, principal: ML_VIEWER }),
    port: 0,
  });
  browser = await launched;
  page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
}, 120_000); // a control plane, a converged node group and a browser, on a busy machine
afterAll(async () => {
  await browser?.close();
  await admin?.close();
  await viewer?.close();
  await cp?.stop();
});

/** Opens a page of the console and waits until it has rendered what the API answered. */
async function open(server: ConsoleServer, name: string): Promise<void> {
  await page.goto(`${server.url}#${name}`);
  await page.waitForSelector(`main[data-ready="${name}"]`);
  if (SHOTS && server === admin) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** The text of each `[data-field]` cell of the row `selector`. */
const fields = (selector: string) =>
  page.$eval(selector, (row) =>
    Object.fromEntries(
      [...row.querySelectorAll('[data-field]')].map((c) => [c.getAttribute('data-field'), c.textContent]),
    ),
  );
const attrs = (selector: string, attr: string) =>
  page.$$eval(selector, (els, a) => els.map((e) => e.getAttribute(a)), attr);
const money = (x: number) => `$${x < 10 ? x.toFixed(4) : x.toFixed(2)}`;

describe('the console, as a platform admin', () => {
  it('shows capacity per scope down the tree: held, guarantee, limit, borrowed and pending by reason', async () => {
    const api = (await call('GET', '/v1/capacity')).body;
    await open(admin, 'capacity');
    expect((await attrs('#capacity tr[data-scope]', 'data-scope')).sort()).toEqual(
      api.scopes.map((s: { scope: string }) => s.scope).sort(),
    );
    const ml = api.scopes.find((s: { scope: string }) => s.scope === 'team:ml');
    expect(await fields('tr[data-scope="team:ml"]')).toMatchObject({
      held: String(ml.usage.gpus),
      guarantee: '2',
      limit: '3',
      borrowed: String(ml.borrowed.gpus),
    });
    expect(ml.pending.LimitExceeded).toBeGreaterThan(0);
    expect(await page.textContent('tr[data-scope="team:ml"] [data-reason="LimitExceeded"]')).toBe(
      `${ml.pending.LimitExceeded} LimitExceeded`,
    );
  });

  it('shows each compute with its node group: needed, desired, ready, short and cost per hour', async () => {
    const items = (await call('GET', '/v1/computes')).body.items;
    await open(admin, 'computes');
    expect((await attrs('#computes tr[data-compute]', 'data-compute')).sort()).toEqual(
      items.map((c: { metadata: { name: string } }) => c.metadata.name).sort(),
    );
    const pool = items.find((c: { metadata: { name: string } }) => c.metadata.name === 'pool');
    expect(await fields('tr[data-compute="pool"]')).toMatchObject({
      status: pool.status.nodegroupStatus,
      needed: String(pool.status.neededNodes),
      desired: String(pool.status.desiredNodes),
      ready: String(pool.status.readyNodes),
      short: String(Math.max(0, pool.status.neededNodes - pool.status.readyNodes)),
      perHour: money(pool.status.desiredNodes * 13.35),
    });
  });

  it('shows models with placements and the reasons replicas wait', async () => {
    const extra = (await call('GET', '/v1/models/ml-extra')).body.status;
    await open(admin, 'models');
    const card = '[data-model="ml-extra"]';
    expect(await page.textContent(`${card} [data-field="admitted"]`)).toBe(String(extra.admitted));
    expect(await page.textContent(`${card} [data-field="pending"]`)).toBe(String(extra.pending));
    expect(extra.reasons[0].reason).toBe('LimitExceeded');
    expect(await page.textContent(`${card} p[data-reason="LimitExceeded"]`)).toContain(
      extra.reasons[0].message,
    );
    const chat = (await call('GET', '/v1/models/ml-chat')).body.status;
    expect(
      await page.textContent('[data-model="ml-chat"] tr[data-placement="pool"] [data-field="replicas"]'),
    ).toBe(String(chat.placements[0].replicas));
    expect(await page.$('[data-model="ops-chat"]')).not.toBeNull();
  });

  it('reads every page of a list: the models and computes of pages of one item each', async () => {
    const asked: string[] = [];
    const record = (r: { url(): string }) => asked.push(decodeURIComponent(new URL(r.url()).search));
    page.on('request', record);
    try {
      for (const [name, path, attr] of [
        ['models', '/v1/models', 'data-model'],
        ['computes', '/v1/computes', 'data-compute'],
      ] as const) {
        const all = (await call('GET', `${path}?limit=1000`)).body.items.map(
          (i: { metadata: { name: string } }) => i.metadata.name,
        );
        await page.goto(`${admin.url}?chunk-size=1#${name}`);
        await page.waitForSelector(`main[data-ready="${name}"]`);
        expect((await attrs(`[${attr}]`, attr)).sort()).toEqual([...all].sort());
      }
      // One request per item, each after the first continuing the previous page.
      expect(asked.filter((q) => q.startsWith('?limit=1&continue=')).length).toBeGreaterThan(2);
    } finally {
      page.off('request', record);
    }
  });

  it('shows the alarms and their state, and the recent reconcile passes', async () => {
    const alarms = (await call('GET', '/v1/alarms')).body.items;
    await open(admin, 'alarms');
    expect(await attrs('#alarms tr[data-alarm]', 'data-alarm')).toEqual(
      alarms.map((a: { name: string }) => a.name),
    );
    const first = alarms[0];
    expect((await fields(`tr[data-alarm="${first.name}"]`)).state).toBe(first.state);
    const passes = (await call('GET', '/v1/reconcile?limit=20')).body.items;
    await open(admin, 'passes');
    expect(await attrs('#passes tr[data-pass]', 'data-pass')).toEqual(
      passes.map((p: { id: string }) => p.id),
    );
    expect((await fields(`tr[data-pass="${passes[0].id}"]`)).state).toBe(passes[0].state);
  });

  it('charts the costs and lists each scope’s cost per hour and each compute’s idle cost', async () => {
    const api = (await call('GET', '/v1/costs')).body;
    await open(admin, 'costs');
    expect(await attrs('#cost-scopes tr[data-scope]', 'data-scope')).toEqual(
      api.scopes.map((s: { scope: string }) => s.scope),
    );
    const ml = api.scopes.find((s: { scope: string }) => s.scope === 'team:ml');
    expect((await fields('#cost-scopes tr[data-scope="team:ml"]')).perHour).toBe(money(ml.perHour));
    const pool = api.computes.find((c: { compute: string }) => c.compute === 'pool');
    expect(await fields('#cost-computes tr[data-compute="pool"]')).toMatchObject({
      nodes: String(pool.nodes),
      idlePerHour: money(pool.idlePerHour),
    });
    expect(await page.$$('.chart svg rect')).not.toHaveLength(0);
  });
});

describe('the console, as a viewer of team:ml', () => {
  it('shows only the scopes, models and costs the viewer may read, and no reconcile passes', async () => {
    const api = (await call('GET', '/v1/capacity', undefined, ML_VIEWER)).body;
    await open(viewer, 'capacity');
    const scopes = await attrs('#capacity tr[data-scope]', 'data-scope');
    expect(scopes.sort()).toEqual(api.scopes.map((s: { scope: string }) => s.scope).sort());
    expect(scopes).toContain('team:ml');
    expect(scopes.filter((s) => /ops|beta/.test(s!))).toEqual([]);
    await open(viewer, 'models');
    expect(await page.$('[data-model="ml-chat"]')).not.toBeNull();
    expect(await page.$('[data-model="ops-chat"]')).toBeNull();
    await open(viewer, 'costs');
    expect(await attrs('#cost-scopes tr[data-scope]', 'data-scope')).not.toContain('team:ops');
    expect(await page.$('[data-field="total"]')).toBeNull();
    await open(viewer, 'alarms');
    expect(
      (await attrs('#alarms tr[data-alarm]', 'data-alarm')).filter((a) => /ops|Reconcile/.test(a!)),
    ).toEqual([]);
    await open(viewer, 'passes');
    expect(await page.getAttribute('[data-problem]', 'data-problem')).toBe('403');
  });

  it('forwards reads only: a write through the console is refused and changes nothing', async () => {
    const r = await fetch(`${viewer.url}api/v1/models/ml-chat`, { method: 'DELETE' });
    expect(r.status).toBe(405);
    expect((await call('GET', '/v1/models/ml-chat')).status).toBe(200);
  });
});

describe('llmcap console', () => {
  it('serves the console as the caller it is told (--as), prints where, and stops on Ctrl-C', async () => {
    const bin = process.env[CLI_BUNDLE_ENV] ?? join(__dirname, '..', '..', '..', 'cli', 'bin', 'llmcap.js');
    const child = spawn(process.execPath, [bin, 'console', '--port', '0', '--as', ML_VIEWER], {
      env: { ...process.env, LLMCAP_ENDPOINT: cp.apiUrl, [CLI_BUNDLE_ENV]: '' },
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d) => {
          out += d;
          const m = /^llmcap console: (http:\/\/127\.0\.0\.1:\d+\/) /m.exec(out);
          if (m) resolve(m[1]!);
        });
        child.on('close', () => reject(new Error(`llmcap console exited: ${out}`)));
      });
      expect((await fetch(url)).headers.get('content-type')).toMatch(/text\/html/);
      const seen = (await (await fetch(`${url}api/v1/capacity`)).json()) as { scopes: { scope: string }[] };
      const api = (await call('GET', '/v1/capacity', undefined, ML_VIEWER)).body;
      expect(seen.scopes.map((s) => s.scope).sort()).toEqual(
        api.scopes.map((s: { scope: string }) => s.scope).sort(),
      );
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
  });
});
