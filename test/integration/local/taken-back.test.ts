import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, testControlPlane } from '../../helpers/control-plane';
import { l4Model, l4Pool, type Scaling } from '../../helpers/l4-pool';
import { decided } from '../../helpers/passes';
import { roleArn } from '../../helpers/principals';
import { llmcap } from '../cli/run';

/**
 * Take-back and displacement reasons that stay (docs/quotas.md "Taken back"): a replica taken back or
 * displaced keeps what took it and when, through the API and the reconcile passes after it, beside what it
 * waits for now, until it runs again.
 */

const pool = l4Pool('l4-pool', 4);

const model = (name: string, owner: string, scaling: Scaling, cls?: string) =>
  l4Model('l4-pool', name, owner, scaling, cls ? { class: cls } : {});

let cp: ControlPlane;
let call: ReturnType<typeof httpApi>;
beforeAll(async () => {
  cp = await testControlPlane('taken-back');
  call = httpApi(cp);
  expect((await call('POST', '/v1/computes', pool)).status).toBe(201);
  for (const [name, parent] of [
    ['org:o', undefined],
    ['team:t', 'org:o'],
    ['project:a', 'team:t'],
    ['project:b', 'team:t'],
  ] as const) {
    expect((await call('POST', '/v1/scopes', { name, ...(parent ? { parent } : {}) })).status).toBe(201);
  }
  for (const [scope, q] of [
    ['team:t', { guarantee: { gpus: 4 }, limit: { gpus: 4 } }],
    ['project:a', { guarantee: { gpus: 2 }, limit: { gpus: 4 } }],
    ['project:b', { guarantee: { gpus: 2 }, limit: { gpus: 4 } }],
  ] as const) {
    expect((await call('PUT', `/v1/quotas/${scope}`, q)).status).toBe(200);
  }
});
afterAll(() => cp.stop());

const status = async (name: string) => {
  const r = await call('GET', `/v1/models/${name}`);
  expect(r.status).toBe(200);
  return r.body.status;
};
const reasons = async (name: string) => ((await status(name)).reasons as any[]).map((r) => r.reason);

describe('a replica taken back', () => {
  it("keeps TakenBackForScope, what took it and when, after the admitter's next run and the passes, beside what it waits for", async () => {
    // a borrows 2 of b's guarantee; then b starts within its guarantee and takes them back.
    expect(
      (await call('POST', '/v1/models', model('a-batch', 'project:a', { min: 1, max: 4, target: 4 }))).status,
    ).toBe(201);
    await cp.reconcile();
    expect(await status('a-batch')).toMatchObject({ admitted: 4, borrowed: 2 });
    // The pass's own writes reach the admitter first, so b-serve's write is the only one its run decides.
    await cp.admitterSettled();
    const r = await call('POST', '/v1/models', model('b-serve', 'project:b', { min: 2, max: 2 }));
    expect(r.body).toMatchObject({ metadata: { name: 'b-serve' } });
    await decided(() => call('GET', '/v1/models/b-serve'));
    expect(await reasons('a-batch')).toEqual(['TakenBackForScope']);
    expect(await reasons('b-serve')).toEqual(['PendingTakeBack']);
    const takenAt = (await status('a-batch')).takenBack[0]?.at;
    // Both reasons last until the admitter's next run, which any write it reads brings before a pass
    // (docs/quotas.md#take-back): here a quota of the org, which binds nothing.
    expect(
      (await call('PUT', '/v1/quotas/org:o', { guarantee: { gpus: 8 }, limit: { gpus: 8 } })).status,
    ).toBe(200);
    await cp.admitterSettled();
    expect(await status('b-serve')).toMatchObject({ admitted: 2, pending: 0, reasons: [] });
    expect(await status('a-batch')).toMatchObject({
      admitted: 2,
      pending: 2,
      reasons: [expect.objectContaining({ reason: 'InsufficientQuota' })],
      takenBack: [expect.objectContaining({ reason: 'TakenBackForScope', at: takenAt })],
    });
    await cp.reconcile();
    await cp.reconcile();
    const s = await status('a-batch');
    expect(s).toMatchObject({ admitted: 2, pending: 2 });
    // What it waits for now is the team's limit; why it lost the replicas stays beside it.
    expect(s.reasons.map((x: any) => x.reason)).toEqual(['InsufficientQuota']);
    expect(s.takenBack).toEqual([
      expect.objectContaining({
        reason: 'TakenBackForScope',
        replicas: 2,
        by: { model: 'b-serve', unitId: 'b-serve#min', scope: 'project:b', class: 'standard' },
        at: takenAt,
      }),
    ]);
    expect(takenAt).toEqual(expect.any(String));
    const d = await llmcap(['describe', 'model', 'a-batch'], { endpoint: cp.apiUrl });
    expect(d.stdout).toContain(
      `2 replica(s) TakenBackForScope at ${takenAt} by standard model b-serve of project:b`,
    );
    expect(d.stdout).toMatch(/2 replica\(s\) InsufficientQuota: team:t is at its limit/);
    // A viewer of project:a alone does not see project:b: it reads that another scope took them, and its own figures.
    const viewer = roleArn('a-viewer');
    expect(
      (await call('PUT', `/v1/scopes/project:a/members/${encodeURIComponent(viewer)}`, { role: 'viewer' }))
        .status,
    ).toBe(200);
    const v = await llmcap(['describe', 'model', 'a-batch'], {
      endpoint: cp.apiUrl,
      env: { LLMCAP_PRINCIPAL: viewer },
    });
    expect(v.stdout).toContain(`2 replica(s) TakenBackForScope at ${takenAt} by another scope`);
    expect(v.stdout).not.toMatch(/b-serve|project:b/);
  });

  it('clears the record once the replicas run again', async () => {
    expect((await call('PUT', '/v1/models/b-serve/scaling', { min: 0, max: 0 })).status).toBe(200);
    await cp.reconcile();
    await cp.reconcile();
    const s = await status('a-batch');
    expect(s).toMatchObject({ admitted: 4, pending: 0 });
    expect(s.takenBack).toEqual([]);
  });
});

describe('a replica displaced by a higher class', () => {
  it('shows DisplacedByHigherClass with the model and class that took it, after the next pass', async () => {
    // a's opportunistic model fills a's limit; a standard model of a needs the room.
    expect((await call('DELETE', '/v1/models/a-batch')).status).toBeLessThan(300);
    expect((await call('DELETE', '/v1/models/b-serve')).status).toBeLessThan(300);
    await cp.reconcile();
    expect(
      (
        await call(
          'POST',
          '/v1/models',
          model('a-opp', 'project:a', { min: 0, max: 4, target: 4 }, 'opportunistic'),
        )
      ).status,
    ).toBe(201);
    await cp.reconcile();
    expect(await status('a-opp')).toMatchObject({ admitted: 4 });
    expect(
      (await call('POST', '/v1/models', model('a-std', 'project:a', { min: 2, max: 2 }, 'standard'))).status,
    ).toBe(201);
    await cp.reconcile();
    await cp.reconcile();
    expect(await status('a-std')).toMatchObject({ admitted: 2 });
    const s = await status('a-opp');
    expect(s).toMatchObject({ admitted: 2, pending: 2 });
    expect(s.takenBack).toEqual([
      expect.objectContaining({
        reason: 'DisplacedByHigherClass',
        replicas: 2,
        by: expect.objectContaining({ model: 'a-std', scope: 'project:a', class: 'standard' }),
      }),
    ]);
    expect(await reasons('a-opp')).not.toContain('DisplacedByHigherClass');
  });
});
