import { createTenancy, expectOk, l4Compute, l4Model, P, setupTenancy } from '../../../soak/lib/fixture';
import { invokeInProcess, type JsonClient, jsonClient, listAll } from '../../../soak/lib/invoke';
import { testApi } from '../../helpers/api';

/**
 * Lists come a page at a time (?limit, ?continue, metadata.continue; docs/design.md §4): one
 * unpaged answer passed API Gateway's 6 MB at a few thousand models. Two tenants, org:acme > team:ml >
 * project:a (the fixture's) and org:beta > team:ops > project:b, each with models and computes, some of the
 * same name; small limits stand in for the thousands.
 */

const B = {
  teamAdmin: 'arn:aws:iam::333333333333:role/ops-lead',
  editor: 'arn:aws:iam::333333333333:role/b-dev',
};

let admin: JsonClient;
let viewer: JsonClient;
let b: JsonClient;

type Item = { metadata: { name: string; owner?: string } };
const idOf = (i: Item) => `${i.metadata.name}@${i.metadata.owner ?? ''}`;

/** Every page of `path` with `limit`, checking each page's size and that only the last lacks a token. */
async function allPages(call: JsonClient, path: string, limit: number) {
  const items: Item[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const r = await call(
      'GET',
      `${path}${sep}limit=${limit}${token ? `&continue=${encodeURIComponent(token)}` : ''}`,
    );
    expectOk(`GET ${path} page ${pages + 1}`, r, 200);
    expect(r.body.items.length).toBeLessThanOrEqual(limit);
    items.push(...r.body.items);
    token = r.body.metadata?.continue;
    if (token) expect(r.body.metadata.remainingItemCount).toBeGreaterThan(0);
    pages++;
    if (pages > 200) throw new Error(`GET ${path} never ended`);
  } while (token);
  return { items, pages };
}

beforeAll(async () => {
  await testApi({ admins: [P.platform] });
  admin = jsonClient(invokeInProcess, P.platform);
  viewer = jsonClient(invokeInProcess, P.viewer);
  const a = jsonClient(invokeInProcess, P.editor);
  b = jsonClient(invokeInProcess, B.editor);
  await setupTenancy(admin);
  await createTenancy(
    admin,
    [['org:beta'], ['team:ops', 'org:beta'], ['project:b', 'team:ops']],
    [
      ['team:ops', B.teamAdmin, 'admin'],
      ['project:b', B.editor, 'editor'],
    ],
  );
  // `m-2` and `gpu-2` are held by both tenants: the admin sees each twice, once per owner.
  for (const n of ['m-1', 'm-2', 'm-3', 'm-4', 'm-5'])
    expectOk(`a ${n}`, await a('POST', '/v1/models', l4Model(n, 'project:a')), 201);
  for (const n of ['m-2', 'm-2b', 'm-6', 'm-7'])
    expectOk(`b ${n}`, await b('POST', '/v1/models', l4Model(n, 'project:b')), 201);
  for (const n of ['gpu-1', 'gpu-2', 'gpu-3'])
    expectOk(`a ${n}`, await a('POST', '/v1/computes', l4Compute(n, 'project:a')), 201);
  for (const n of ['gpu-2', 'gpu-4'])
    expectOk(`b ${n}`, await b('POST', '/v1/computes', l4Compute(n, 'project:b')), 201);
}, 120_000);

describe('paged lists', () => {
  const lists = ['/v1/models', '/v1/computes', '/v1/scopes', '/v1/quotas'];

  it.each(lists)(
    '%s comes back whole over pages of 2, no item twice, for an admin and a viewer',
    async (path) => {
      for (const [who, call] of [
        ['admin', admin],
        ['viewer', viewer],
      ] as const) {
        const whole = await call('GET', `${path}?limit=1000`);
        expectOk(`${who} ${path}`, whole, 200);
        expect(whole.body.metadata).toBeUndefined();
        const { items, pages } = await allPages(call, path, 2);
        expect(pages).toBe(Math.max(1, Math.ceil(whole.body.items.length / 2)));
        // The same items in the same order, each once.
        expect(items.map(idOf)).toEqual(whole.body.items.map(idOf));
        expect(new Set(items.map(idOf)).size).toBe(items.length);
        if (path === '/v1/models') {
          const names = items.map(idOf);
          if (who === 'admin')
            expect(names).toEqual(
              expect.arrayContaining(['m-2@project:a', 'm-2@project:b', 'm-6@project:b', 'm-1@project:a']),
            );
          else {
            // The viewer of project:a: its own and the shared, never project:b's.
            expect(names).toEqual(
              expect.arrayContaining(['m-1@project:a', 'm-2@project:a', 'm-5@project:a']),
            );
            expect(items.filter((i) => i.metadata.owner === 'project:b')).toEqual([]);
          }
        }
      }
    },
  );

  it('pages the weights sources too, each model under its source only as the caller may see it', async () => {
    for (const call of [admin, viewer]) {
      const whole = (await call('GET', '/v1/sources?limit=1000')).body.items as { source: string }[];
      const paged: { source: string; models: string[] }[] = [];
      let token: string | undefined;
      do {
        const r = await call(
          'GET',
          `/v1/sources?limit=2${token ? `&continue=${encodeURIComponent(token)}` : ''}`,
        );
        expect(r.body.items.length).toBeLessThanOrEqual(2);
        paged.push(...r.body.items);
        token = r.body.metadata?.continue;
      } while (token);
      expect(paged).toEqual(whole);
      expect(whole.length).toBeGreaterThan(4);
    }
    const seen = (await viewer('GET', '/v1/sources?limit=1000')).body.items.map(
      (s: { source: string }) => s.source,
    );
    expect(seen).not.toContain('hf://org/m-6');
  });

  it("gives the soak's checks every page, as they read lists with listAll", async () => {
    const whole = await allPages(admin, '/v1/models', 1000);
    const paged = await allPages(admin, '/v1/models', 2);
    expect(paged.pages).toBeGreaterThan(1);
    expect((await listAll(admin, '/v1/models?limit=2')).map(idOf)).toEqual(whole.items.map(idOf));
  });

  it('orders by name, then owner, and pages keep that order', async () => {
    const { items } = await allPages(admin, '/v1/models', 3);
    const keys = items.map((i) => [i.metadata.name, i.metadata.owner ?? '']);
    const sorted = [...keys].sort(([n1, o1], [n2, o2]) =>
      n1! < n2! ? -1 : n1! > n2! ? 1 : o1! < o2! ? -1 : o1! > o2! ? 1 : 0,
    );
    expect(keys).toEqual(sorted);
    // The twins sit side by side, split across a page boundary or not.
    const i = items.findIndex((x) => x.metadata.name === 'm-2');
    expect(items.slice(i, i + 2).map(idOf)).toEqual(['m-2@project:a', 'm-2@project:b']);
  });

  it('splits twins across pages without losing either', async () => {
    // A page that ends on the first m-2: the next starts with the second.
    const whole = (await admin('GET', '/v1/models?limit=1000')).body.items as Item[];
    const i = whole.findIndex((x) => x.metadata.name === 'm-2');
    const first = await admin('GET', `/v1/models?limit=${i + 1}`);
    expect(first.body.items.at(-1).metadata).toMatchObject({ name: 'm-2', owner: 'project:a' });
    const next = await admin(
      'GET',
      `/v1/models?limit=1&continue=${encodeURIComponent(first.body.metadata.continue)}`,
    );
    expect(next.body.items[0].metadata).toMatchObject({ name: 'm-2', owner: 'project:b' });
    expect(first.body.metadata.remainingItemCount).toBe(whole.length - i - 1);
  });

  it("lets a token from another caller's list show the viewer only what it may list", async () => {
    // The admin's page ends inside project:b's models; the viewer continues from there.
    const whole = (await admin('GET', '/v1/models?limit=1000')).body.items as Item[];
    const at = whole.findIndex((x) => x.metadata.name === 'm-2b');
    const page = await admin('GET', `/v1/models?limit=${at + 1}`);
    const token = page.body.metadata.continue as string;
    // Nothing in it names a key, a twin mark or another tenant's owner beyond the position itself.
    expect(Buffer.from(token, 'base64url').toString()).not.toMatch(/~/);
    const r = await viewer('GET', `/v1/models?limit=1000&continue=${encodeURIComponent(token)}`);
    expect(r.status).toBe(200);
    const mine = ((await viewer('GET', '/v1/models?limit=1000')).body.items as Item[]).filter(
      (x) => x.metadata.name > 'm-2b',
    );
    expect(r.body.items.map(idOf)).toEqual(mine.map(idOf));
    expect(r.body.items.filter((i: Item) => i.metadata.owner === 'project:b')).toEqual([]);
  });

  it('neither skips nor repeats an item when others come and go between pages', async () => {
    const first = await admin('GET', '/v1/computes?limit=2');
    const seen = (first.body.items as Item[]).map(idOf);
    // One added before the position (not in the next pages), one after it (in them).
    expectOk('aaa', await admin('POST', '/v1/computes', l4Compute('aaa-early', 'project:a')), 201);
    expectOk('zzz', await admin('POST', '/v1/computes', l4Compute('zzz-late', 'project:a')), 201);
    let token = first.body.metadata.continue as string | undefined;
    const rest: string[] = [];
    while (token) {
      const r = await admin('GET', `/v1/computes?limit=2&continue=${encodeURIComponent(token)}`);
      rest.push(...(r.body.items as Item[]).map(idOf));
      token = r.body.metadata?.continue;
    }
    const all = [...seen, ...rest];
    expect(new Set(all).size).toBe(all.length);
    expect(all).toContain('zzz-late@project:a');
    expect(all).not.toContain('aaa-early@project:a');
  });

  it('refuses a bad limit and a bad token in one 400 listing both, and says to start again', async () => {
    const r = await admin('GET', '/v1/models?limit=0&continue=not-a-token');
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['continue', 'limit']);
    expect(r.body.errors.find((e: { path: string }) => e.path === 'continue').message).toMatch(
      /start again without continue/,
    );
    for (const q of ['limit=1001', 'limit=two', 'limit=1.5', 'continue=', 'colour=red']) {
      const bad = await admin('GET', `/v1/computes?${q}`);
      expect({ q, status: bad.status, type: bad.headers['content-type'] }).toEqual({
        q,
        status: 400,
        type: 'application/problem+json',
      });
      expect(bad.body.errors.length).toBeGreaterThan(0);
    }
  });

  it('refuses a token made for another list, naming the list it continues', async () => {
    const models = await admin('GET', '/v1/models?limit=1');
    const token = encodeURIComponent(models.body.metadata.continue);
    for (const other of ['/v1/computes', '/v1/scopes', '/v1/quotas', '/v1/pods?model=m-1']) {
      const r = await admin('GET', `${other}${other.includes('?') ? '&' : '?'}continue=${token}`);
      expect({ other, status: r.status }).toEqual({ other, status: 400 });
      expect(r.body.errors).toEqual([
        { path: 'continue', message: expect.stringMatching(/continues \/v1\/models.*start again/) },
      ]);
    }
  });
});
