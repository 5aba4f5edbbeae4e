import { documentClient } from '../../../lambdas/shared/clients';
import { resetConfig } from '../../../lambdas/shared/config';
import { lastObserved, recordWorkloads } from '../../../lambdas/store/workloads';
import { type TestApi, testApi } from '../../helpers/api';
import { l4Model, l4Pool, scale } from '../../helpers/l4-pool';

/**
 * What one PUT /v1/models/{name}/scaling reads through the real store on DynamoDB Local (issue 19's write
 * path): the answer's admission is the one the write's own decision committed, so no GetItem of the admission
 * record follows the commit; where llmcap runs the pods, the answer reads the model's pods and the pass stamp
 * (written by reconcile outside the ledger) in one BatchGetItem beside the decision's reads, and nothing else item
 * by item; concurrent answers share the stamp's read. The answer still says what a GET reads afterwards.
 */

let api: TestApi;
const before = process.env.LLMCAP_WORKLOADS;
const snapshotBefore = process.env.LLMCAP_WRITE_SNAPSHOT_MS;

/**
 * The point reads (by key; a GetItem, or one key of a BatchGetItem), the requests that carried them, and the
 * Queries (by partition) the document client sent while `fn` ran.
 */
async function reads(
  fn: () => Promise<unknown>,
): Promise<{ gets: string[]; getRequests: string[][]; queries: string[]; sequence: string[] }> {
  const gets: string[] = [];
  const getRequests: string[][] = [];
  const queries: string[] = [];
  const sequence: string[] = [];
  documentClient().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as {
        Key?: { pk: string; sk: string };
        RequestItems?: Record<string, { Keys: { pk: string; sk: string }[] }>;
        ExpressionAttributeValues?: Record<string, unknown>;
      };
      // The document client's middleware sees the low-level command names (GetItemCommand for a GetCommand).
      const keys =
        context.commandName === 'GetItemCommand'
          ? [input.Key!]
          : context.commandName === 'BatchGetItemCommand'
            ? Object.values(input.RequestItems!).flatMap((r) => r.Keys)
            : [];
      if (keys.length) {
        const named = keys.map((k) => `${k.pk}/${k.sk}`);
        gets.push(...named);
        getRequests.push(named);
      }
      if (context.commandName === 'QueryCommand')
        queries.push(String(input.ExpressionAttributeValues?.[':pk']));
      // A transaction by what it does to which partition: "TransactWriteItems Put MODEL, ConditionCheck COMPUTE".
      const tx = (
        args.input as { TransactItems?: Record<string, { Item?: { pk: string }; Key?: { pk: string } }>[] }
      ).TransactItems;
      const what = tx?.map((it) => Object.entries(it).map(([op, b]) => `${op} ${(b.Item ?? b.Key)?.pk}`)[0]);
      sequence.push(
        `${String(context.commandName).replace(/Command$/, '')}${what ? ` ${what.join(', ')}` : ''}`,
      );
      return next(args);
    },
    { step: 'initialize', name: 'countReads' },
  );
  try {
    await fn();
  } finally {
    documentClient().middlewareStack.remove('countReads');
  }
  return { gets, getRequests, queries, sequence };
}

beforeAll(async () => {
  process.env.LLMCAP_WORKLOADS = 'deploy';
  // Each decision on fresh reads, unless a test says otherwise: what a write reads is what is shown.
  process.env.LLMCAP_WRITE_SNAPSHOT_MS = '0';
  api = await testApi();
  expect((await api.call('POST', '/v1/computes', l4Pool('l4-pool'))).status).toBe(201);
  expect((await api.call('POST', '/v1/scopes', { name: 'org:acme' })).status).toBe(201);
  expect((await api.call('POST', '/v1/scopes', { name: 'team:ml', parent: 'org:acme' })).status).toBe(201);
  const quota = { guarantee: { gpus: 8 }, limit: { gpus: 8 } };
  expect((await api.call('PUT', '/v1/quotas/team:ml', quota)).status).toBe(200);
  const add = await api.call('POST', '/v1/models', l4Model('l4-pool', 'chat', 'team:ml', scale(1, 2)));
  expect(add.status).toBe(201);
  await recordWorkloads(new Map(), '2026-01-05T10:15:02.000Z');
});
afterAll(() => {
  if (before === undefined) delete process.env.LLMCAP_WORKLOADS;
  else process.env.LLMCAP_WORKLOADS = before;
  if (snapshotBefore === undefined) delete process.env.LLMCAP_WRITE_SNAPSHOT_MS;
  else process.env.LLMCAP_WRITE_SNAPSHOT_MS = snapshotBefore;
  resetConfig();
});

it('a scaling write reads no admission record after its commit, only what the reconciler wrote', async () => {
  expect((await api.call('PUT', '/v1/models/chat/scaling', scale(1, 3))).status).toBe(200);
  let answer: any;
  // The write alone, not the admitter's run it triggers.
  const r = await reads(async () => {
    answer = await api.call('PUT', '/v1/models/chat/scaling', scale(2, 3), { settle: false });
  });
  expect(answer.status).toBe(200);
  // The admitter this write wakes runs in this process meanwhile; its fence read is its own, not the write's.
  const mine = (gets: string[]) => gets.filter((k) => k !== 'ADMITTER/STATE');
  expect(mine(r.gets).sort()).toEqual(['WORKLOAD/chat', 'WORKLOAD_OBSERVED/LAST']);
  // Both in one request, sent beside the decision's reads rather than after its commit.
  expect(r.getRequests.filter((g) => mine(g).length > 0).map((g) => g.sort())).toEqual([
    ['WORKLOAD/chat', 'WORKLOAD_OBSERVED/LAST'],
  ]);
  // A change of replicas reads no instance types, prices or pods partition: only what the decision needs.
  expect(r.queries.filter((q) => !['SCOPE', 'COMPUTE', 'MODEL', 'QUOTA', 'ADMISSION'].includes(q))).toEqual(
    [],
  );
  // The answer is the last decision, of the version before, and the replica this write adds waits Queued.
  expect(answer.body.status).toMatchObject({
    admitted: 1,
    observedVersion: answer.body.metadata.version - 1,
    observedAt: '2026-01-05T10:15:02.000Z',
  });
  expect(answer.body.status.reasons).toEqual([expect.objectContaining({ reason: 'Queued', replicas: 1 })]);
  // Once the admitter has run, a read shows two admitted, of this version.
  await api.admitter.settled();
  const got = await api.call('GET', '/v1/models/chat');
  expect(got.body.status).toMatchObject({ admitted: 2, observedVersion: answer.body.metadata.version });
  expect(answer.headers.etag).toBe(got.headers.etag);
});

it("on this process's young reading (the default), a scaling write right after another sends its commit first, and no point read", async () => {
  process.env.LLMCAP_WRITE_SNAPSHOT_MS = '10000';
  resetConfig();
  try {
    expect((await api.call('PUT', '/v1/models/chat/scaling', scale(1, 2))).status).toBe(200);
    let answer: any;
    const r = await reads(async () => {
      answer = await api.call('PUT', '/v1/models/chat/scaling', scale(1, 3), { settle: false });
    });
    expect(answer.status).toBe(200);
    // The decision, the caller's roles and the answer's pods come from the reading the write before left: the
    // first request is the commit, the model and a check of the compute it pins (the admitter it wakes reads
    // afterwards, and its fence is its own).
    expect(r.sequence.filter((c) => c !== 'GetItem')[0]).toBe(
      'TransactWriteItems Put MODEL, ConditionCheck COMPUTE',
    );
    expect(r.gets.filter((k) => k !== 'ADMITTER/STATE')).toEqual([]);
    expect(answer.body.status).toMatchObject({ observedAt: '2026-01-05T10:15:02.000Z' });
    await api.admitter.settled();
    const got = await api.call('GET', '/v1/models/chat');
    expect(got.body.spec.scaling).toMatchObject({ min: 1, max: 3 });
    expect(answer.headers.etag).toBe(got.headers.etag);
  } finally {
    process.env.LLMCAP_WRITE_SNAPSHOT_MS = '0';
    resetConfig();
  }
});

it('answers asking together share one read of the pass stamp, and one asked after a pass sees it', async () => {
  const r = await reads(() => Promise.all(Array.from({ length: 20 }, () => lastObserved())));
  expect(r.gets.filter((k) => k !== 'ADMITTER/STATE')).toEqual(['WORKLOAD_OBSERVED/LAST']);
  await recordWorkloads(new Map(), '2026-01-05T10:16:02.000Z');
  expect(await lastObserved()).toBe('2026-01-05T10:16:02.000Z');
  const got = await api.call('GET', '/v1/models/chat');
  expect(got.body.status.observedAt).toBe('2026-01-05T10:16:02.000Z');
});

it('a stage that runs no pods reads nothing item by item to answer a scaling write', async () => {
  process.env.LLMCAP_WORKLOADS = 'off';
  api = await testApi();
  expect((await api.call('POST', '/v1/computes', l4Pool('l4-pool'))).status).toBe(201);
  const add = await api.call('POST', '/v1/models', l4Model('l4-pool', 'chat', undefined as never, scale(1)));
  expect(add.status).toBe(201);
  expect((await api.call('PUT', '/v1/models/chat/scaling', scale(1, 2))).status).toBe(200);
  let answer: any;
  const r = await reads(async () => {
    answer = await api.call('PUT', '/v1/models/chat/scaling', scale(0, 2), { settle: false });
  });
  expect(answer.status).toBe(200);
  // The admitter this write wakes runs in this process meanwhile; its fence read is its own, not the write's.
  expect(r.gets.filter((k) => k !== 'ADMITTER/STATE')).toEqual([]);
  await api.admitter.settled();
  const got = await api.call('GET', '/v1/models/chat');
  expect(got.body.status.admitted).toBe(0);
  expect(got.body.status.observedVersion).toBe(answer.body.metadata.version);
});
