import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { MAX_MEMBERS_PER_SCOPE } from '../../../lambdas/domain/quota';
import { documentClient } from '../../../lambdas/shared/clients';
import { keys } from '../../../lambdas/store/keys';
import { type TestApi, testApi } from '../../helpers/api';
import { dumpTable } from '../../helpers/dump';
import { roleArn, userArn } from '../../helpers/principals';

/**
 * Members are principals like any other: names that are also Object.prototype's keys get nothing, and the
 * number of members of a scope is bounded well before DynamoDB's 400 KB item limit, atomically.
 */

const enc = encodeURIComponent;
let api: TestApi;
const put = (scope: string, principal: string, role = 'viewer') =>
  api.call('PUT', `/v1/scopes/${enc(scope)}/members/${enc(principal)}`, { role });
/** Runs `fn` for 0..n-1, eight at a time. */
async function inBatches(n: number, fn: (i: number) => Promise<void>): Promise<void> {
  for (let start = 0; start < n; start += 8)
    await Promise.all(Array.from({ length: Math.min(8, n - start) }, (_, j) => fn(start + j)));
}
const storedMembers = async (scope: string) =>
  (
    await documentClient().send(
      new GetCommand({ TableName: api.table, Key: keys.scope(scope), ConsistentRead: true }),
    )
  ).Item?.members as Record<string, string>;

beforeAll(async () => {
  api = await testApi();
  for (const [name, parent] of [
    ['org:acme', undefined],
    ['team:ml', 'org:acme'],
    ['team:full', 'org:acme'],
    ['team:race', 'org:acme'],
  ] as const) {
    expect((await api.call('POST', '/v1/scopes', { name, ...(parent ? { parent } : {}) })).status).toBe(201);
  }
});

describe("a principal named like one of Object.prototype's keys", () => {
  const NAMES = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

  it.each(NAMES)('%s, bare, is not a caller: 401 that names the forms, and it sees nothing', async (name) => {
    const r = await api.as(name).call('GET', '/v1/scopes');
    expect(r.status).toBe(401);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.body.detail).toContain('arn:aws:iam::<account>:role/<name>');
  });

  it.each(NAMES)('the IAM user %s holds no role until given one, and then only that one', async (name) => {
    const who = api.as(userArn(name));
    expect((await who.call('GET', '/v1/scopes')).body.items).toEqual([]);
    expect((await who.call('GET', '/v1/scopes/team:ml')).status).toBe(404);
    expect((await put('team:ml', userArn(name))).status).toBe(200);
    const seen = (await who.call('GET', '/v1/scopes')).body.items.map((s: any) => s.metadata.name).sort();
    expect(seen).toEqual(['org:acme', 'team:ml']);
    expect(
      (
        await who.call('POST', '/v1/scopes', {
          name: `project:${name.replace(/_/g, '').toLowerCase()}`,
          parent: 'team:ml',
        })
      ).status,
    ).toBe(403);
  });

  it('round-trips through DynamoDB as an own key, never as a prototype', async () => {
    const stored = await storedMembers('team:ml');
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype);
    expect(Object.keys(stored)).toContain(userArn('__proto__'));
    expect(Object.hasOwn(stored, userArn('__proto__'))).toBe(true);
    const shown = (await api.call('GET', '/v1/scopes/team:ml')).body.spec.members;
    expect(Object.keys(shown).sort()).toEqual(NAMES.map((n) => userArn(n)).sort());
  });
});

describe('the number of members of a scope', () => {
  // The longest principal there is: a role with a 512-character path and a 64-character name.
  const longest = (i: number) =>
    roleArn(`r${String(i).padStart(63, '0')}`, undefined, `/${'p'.repeat(510)}/`);

  it(`holds ${MAX_MEMBERS_PER_SCOPE} of the longest principals, well within DynamoDB's item limit`, async () => {
    // Eight grants at a time, as several admins would send them: each must land, none may be lost.
    await inBatches(MAX_MEMBERS_PER_SCOPE, async (i) => {
      const r = await put('team:full', longest(i));
      if (r.status !== 200) throw new Error(`member ${i}: ${r.status} ${JSON.stringify(r.body)}`);
    });
    const stored = await storedMembers('team:full');
    expect(Object.keys(stored)).toHaveLength(MAX_MEMBERS_PER_SCOPE);
    // DynamoDB counts a map entry as its key's bytes plus its value's: under a third of the 400 KB limit.
    const bytes = Object.entries(stored).reduce((n, [k, v]) => n + Buffer.byteLength(k) + v.length + 1, 0);
    expect(bytes).toBeLessThan((400 * 1024) / 3);
  });

  it('refuses one more with 400 that says what to do, and writes nothing', async () => {
    const before = await dumpTable();
    const r = await put('team:full', roleArn('one-too-many'));
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.body.detail).toMatch(/team:full has 200 members, and a scope holds at most 200; grant a role/);
    expect(r.body.errors).toEqual([{ path: 'principal', message: 'team:full is full (200 members)' }]);
    expect(await dumpTable()).toEqual(before);
  });

  it('still changes the role of a member, or takes one out, when full', async () => {
    expect((await put('team:full', longest(7), 'editor')).status).toBe(200);
    const del = await api.call('DELETE', `/v1/scopes/team:full/members/${enc(longest(8))}`);
    expect(del.status).toBe(204);
    expect((await put('team:full', roleArn('in-the-free-place'))).status).toBe(200);
  });

  it('holds under concurrent grants: of six racing for the last place, one gets it', async () => {
    // The scope one short of full, in one write (PUT .../members sets them all); then six grants race.
    const members = Object.fromEntries(
      Array.from({ length: MAX_MEMBERS_PER_SCOPE - 1 }, (_, i) => [roleArn(`m${i}`), 'viewer']),
    );
    expect((await api.call('PUT', '/v1/scopes/team:race/members', { members })).status).toBe(200);
    const racers = Array.from({ length: 6 }, (_, i) => roleArn(`racer-${i}`));
    const results = await Promise.all(racers.map((p) => put('team:race', p)));
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400, 400, 400, 400]);
    const stored = await storedMembers('team:race');
    expect(Object.keys(stored)).toHaveLength(MAX_MEMBERS_PER_SCOPE);
    expect(racers.filter((p) => Object.hasOwn(stored, p))).toHaveLength(1);
  });
});

describe('a key named __proto__ in a body (issue 30 §4)', () => {
  const ADMIN_ARN = roleArn('proto-keeper');
  const putMembers = (raw: string) => api.call('PUT', '/v1/scopes/team:ml/members', undefined, { raw });

  beforeAll(async () => {
    expect((await put('team:ml', ADMIN_ARN, 'admin')).status).toBe(200);
  });

  it.each([
    ['an object', '{"members":{"__proto__":{"a":"admin"}}}'],
    ['a role', `{"members":{"${ADMIN_ARN}":"admin","__proto__":"viewer"}}`],
  ])('as a member with %s for its value is 400 naming the entry, and nothing is written', async (_, raw) => {
    const before = await dumpTable();
    const r = await putMembers(raw);
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.body.detail).toContain('members.__proto__');
    expect(r.body.errors).toEqual([
      { path: 'members.__proto__', message: expect.stringContaining('__proto__') },
    ]);
    expect(await dumpTable()).toEqual(before);
    expect(Object.hasOwn(await storedMembers('team:ml'), ADMIN_ARN)).toBe(true);
  });

  it('is named wherever it sits, each one, in any body', async () => {
    const r = await api.call('POST', '/v1/scopes', undefined, {
      raw: '{"name":"team:p","__proto__":{"parent":"org:acme"},"x":[{"__proto__":1}]}',
    });
    expect(r.status).toBe(400);
    expect(r.body.errors.map((e: any) => e.path)).toEqual(['__proto__', 'x[0].__proto__']);
  });

  it.each(['constructor', 'prototype', 'toString'])(
    'a member keyed %s is refused as no principal, naming it, and nothing is written',
    async (key) => {
      const before = await dumpTable();
      const r = await putMembers(`{"members":{"${ADMIN_ARN}":"admin","${key}":"viewer"}}`);
      expect(r.status).toBe(400);
      expect(r.body.errors).toEqual([{ path: `members.${key}`, message: expect.any(String) }]);
      expect(await dumpTable()).toEqual(before);
    },
  );
});
