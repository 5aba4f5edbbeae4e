import { listComputes } from '../../../lambdas/store/computes';
import { listModelRows } from '../../../lambdas/store/models';
import { listScopes } from '../../../lambdas/store/tenancy';
import { l4Compute, l4Model } from '../../../soak/lib/fixture';
import { type TestApi, testApi } from '../../helpers/api';

/**
 * A scope deleted while models and computes are created under it (docs/security.md, "Deleting a scope"): however
 * the requests interleave, nothing is left owned by a scope that no longer exists, and each answer says what
 * happened: a create that answered 201 is there with its scope, a delete that answered 204 left nothing behind.
 */

/**
 * How long after the creates each round's delete goes out: later each round, so that in some rounds it wins and
 * in others the creates do, however slow the machine; rounds go on until both have happened.
 */
const delayMs = (round: number) => (round < 2 ? 0 : 10 * 2 ** (round - 2));
const MIN_ROUNDS = 6;
const MAX_ROUNDS = 12;

let api: TestApi;
beforeAll(async () => {
  api = await testApi();
  expect((await api.call('POST', '/v1/scopes', { name: 'org:race' })).status).toBe(201);
});

it('never leaves a model or a compute owned by a deleted scope', async () => {
  const outcomes: string[] = [];
  const both = () => outcomes.some((o) => o.startsWith('204')) && outcomes.some((o) => o.startsWith('409'));
  for (let round = 0; round < MAX_ROUNDS && (round < MIN_ROUNDS || !both()); round++) {
    const scope = `team:r${round}`;
    expect((await api.call('POST', '/v1/scopes', { name: scope, parent: 'org:race' })).status).toBe(201);
    const creates = [
      ...[0, 1, 2].map((i) => ({
        what: `model m${round}-${i}`,
        send: () => api.call('POST', '/v1/models', l4Model(`m${round}-${i}`, scope), { settle: false }),
      })),
      {
        what: `compute c${round}`,
        send: () => api.call('POST', '/v1/computes', l4Compute(`c${round}`, scope), { settle: false }),
      },
    ];
    const del = () => api.call('DELETE', `/v1/scopes/${scope}`, undefined, { settle: false });
    const [deleted, ...made] = await Promise.all([
      new Promise((r) => setTimeout(r, delayMs(round))).then(del),
      ...creates.map((c) => c.send()),
    ]);
    expect([204, 409]).toContain(deleted!.status);
    for (const [i, r] of made.entries()) {
      // A create loses only to the delete: the scope is gone (404 or 409 naming it), never a 500.
      expect({ what: creates[i]!.what, ok: [201, 404, 409].includes(r.status) }).toEqual({
        what: creates[i]!.what,
        ok: true,
      });
      if (r.status === 201) expect(deleted!.status).toBe(409);
    }
    if (deleted!.status === 409) expect(deleted!.body.detail).toMatch(/still holds|being deleted/);
    outcomes.push(`${deleted!.status}:${made.filter((r) => r.status === 201).length}`);
  }
  // What is stored agrees: every owner of a model or compute is a scope that exists.
  const scopes = new Set((await listScopes()).map((s) => s.name));
  const orphans = [
    ...(await listModelRows()).filter((m) => m.owner && !scopes.has(m.owner as string)).map((m) => m.name),
    ...(await listComputes()).filter((c) => c.owner && !scopes.has(c.owner)).map((c) => c.name),
  ];
  expect({ orphans, outcomes }).toEqual({ orphans: [], outcomes });
  // Both orders happened: a round where the delete won, and one where a create did.
  expect({ both: both(), outcomes }).toEqual({ both: true, outcomes });
});
