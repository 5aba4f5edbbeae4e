import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { createServices } from '../../../lambdas/service';
import { documentClient } from '../../../lambdas/shared/clients';
import { keys } from '../../../lambdas/store/keys';
import { freshTable } from '../../helpers/table';

/**
 * Ledger writers take turns (lambdas/store/turn.ts): one at a time in a process, and across processes (Lambda
 * containers) through a lease item. A "container" here is a second copy of the store's modules, with its own queue
 * and clients, talking to the same DynamoDB Local table.
 */

type Store = {
  turn: typeof import('../../../lambdas/store/turn');
  ledger: typeof import('../../../lambdas/store/ledger');
  cache: typeof import('../../../lambdas/store/ledger-cache');
  /** The services of that container, wired over its own copies of the store. */
  services: ReturnType<typeof createServices>;
};

function container(): Store {
  let s: Store | undefined;
  jest.isolateModules(() => {
    s = {
      turn: require('../../../lambdas/store/turn'),
      ledger: require('../../../lambdas/store/ledger'),
      cache: require('../../../lambdas/store/ledger-cache'),
      services: require('../../../lambdas/service').createServices(),
    };
  });
  return s!;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const lease = async () =>
  (
    await documentClient().send(
      new GetCommand({ TableName: process.env.LLMCAP_TABLE!, Key: keys.ledgerLease(), ConsistentRead: true }),
    )
  ).Item;

/** A lease as another container would have left it. */
const putLease = (holder: string, expiresAt: number) =>
  documentClient().send(
    new PutCommand({
      TableName: process.env.LLMCAP_TABLE!,
      Item: { ...keys.ledgerLease(), holder, by: holder, expiresAt },
    }),
  );

beforeAll(async () => {
  await freshTable('turn');
  await createServices().computes.seedBuiltins();
});

it('a second container waits for the first one to finish its turn, then takes it; nothing is left behind', async () => {
  const [a, b] = [container(), container()];
  const log: string[] = [];
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  const first = a.turn.inLedgerTurn(
    async () => {
      log.push('a in');
      await gate;
      log.push('a out');
    },
    { by: 'a' },
  );
  while (!log.length) await sleep(10);
  expect((await lease())?.by).toBe('a');
  const second = b.turn.inLedgerTurn(async () => log.push('b in'), { by: 'b' });
  await sleep(300);
  expect(log).toEqual(['a in']);
  open();
  await Promise.all([first, second]);
  expect(log).toEqual(['a in', 'a out', 'b in']);
  expect(await lease()).toBeUndefined();
});

it('a holder that died holds the others up only until its lease expires', async () => {
  const b = container();
  await putLease('crashed', Date.now() + 1_000);
  let entered = false;
  const turn = b.turn.inLedgerTurn(
    async () => {
      entered = true;
    },
    { by: 'b' },
  );
  await sleep(300);
  expect(entered).toBe(false);
  await turn;
  expect(entered).toBe(true);
  expect(await lease()).toBeUndefined();
});

it('a writer whose turn does not come in time is refused (409, retry) and writes nothing', async () => {
  const b = container();
  await putLease('stuck', Date.now() + 60_000);
  const mark = { pk: 'TEST', sk: 'while-stuck' };
  try {
    const before = await b.ledger.ledgerVersion();
    const refused = await b.ledger
      .withLedger(
        async () => ({
          items: [{ Put: { TableName: process.env.LLMCAP_TABLE!, Item: { ...mark, by: 'b' } } }],
          result: undefined,
        }),
        { by: 'b', waitMs: 300 },
      )
      .catch((e: Error & { kind?: string; details?: { reason?: string } }) => e);
    expect(refused).toMatchObject({ kind: 'conflict', details: { reason: 'ConcurrentUpdate' } });
    expect((refused as Error).message).toMatch(/busy .*nothing was written, retry/);
    expect(await b.ledger.ledgerVersion()).toBe(before);
    const out = await documentClient().send(
      new GetCommand({ TableName: process.env.LLMCAP_TABLE!, Key: mark, ConsistentRead: true }),
    );
    expect(out.Item).toBeUndefined();
  } finally {
    await putLease('stuck', 0);
  }
});

it('writers racing from two containers lose no update', async () => {
  const stores = [container(), container()];
  const counter = { pk: 'TEST', sk: 'counter' };
  const results = await Promise.all(
    stores.flatMap((s) => Array.from({ length: 15 }, () => incrementOf(s, counter))),
  );
  expect([...results].sort((x, y) => x - y)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  const out = await documentClient().send(
    new GetCommand({ TableName: process.env.LLMCAP_TABLE!, Key: counter, ConsistentRead: true }),
  );
  expect(out.Item?.n).toBe(30);
});

it("a container's cached catalog never hides a change another container committed", async () => {
  const [a, b] = [container(), container()];
  const before = (await a.services.catalog.load()).models.map((m) => m.name);
  await b.services.models.change(
    {
      verb: 'add',
      name: 'from-b',
      spec: {
        source: 'hf://org/from-b',
        engine: 'vllm',
        profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 2, minMemoryGb: 8 }],
        scaling: { min: 0, max: 1 },
      } as never,
    },
    { by: 'b' },
  );
  const after = (await a.services.catalog.load()).models.map((m) => m.name);
  expect(before).not.toContain('from-b');
  expect(after).toContain('from-b');
});

/** A counter increment as a ledger decision: read, then write n + 1 conditional on n. */
function incrementOf(s: Store, counter: { pk: string; sk: string }, opts: { gate?: Promise<void> } = {}) {
  return s.ledger.withLedger(
    async () => {
      const out = await documentClient().send(
        new GetCommand({ TableName: process.env.LLMCAP_TABLE!, Key: counter, ConsistentRead: true }),
      );
      const n = (out.Item?.n as number | undefined) ?? 0;
      await opts.gate;
      return {
        items: [
          {
            Put: {
              TableName: process.env.LLMCAP_TABLE!,
              Item: { ...counter, n: n + 1 },
              ConditionExpression: n === 0 ? 'attribute_not_exists(pk)' : 'n = :n',
              ...(n === 0 ? {} : { ExpressionAttributeValues: { ':n': n } }),
            },
          },
        ],
        result: n + 1,
      };
    },
    { by: 'race' },
  );
}

it('a container writing alone commits without taking the lease: its commit checks that nobody holds it', async () => {
  const a = container();
  const counter = { pk: 'TEST', sk: 'alone' };
  await incrementOf(a, counter);
  let seen: unknown = 'not read';
  await a.ledger.withLedger(
    async () => {
      seen = await lease();
      return { items: [], result: undefined };
    },
    { by: 'a' },
  );
  expect(seen).toBeUndefined();
  expect(await incrementOf(a, counter)).toBe(2);
});

it("a free commit never lands while another container holds the turn: it waits, then decides on the holder's write", async () => {
  const [a, b] = [container(), container()];
  const counter = { pk: 'TEST', sk: 'holder-first' };
  // b has written lately, so its next turn is a free one decided against the version it knows.
  await incrementOf(b, counter);
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  let aRead!: () => void;
  const aInside = new Promise<void>((r) => {
    aRead = r;
  });
  // a holds the turn (as reconcile does) and decides slowly: it has read 1 and has not committed yet.
  const holder = a.turn.inLedgerTurn(
    () =>
      incrementOf(a, counter, {
        gate: (async () => {
          aRead();
          await gate;
        })(),
      }),
    { by: 'a' },
  );
  await aInside;
  expect((await lease())?.by).toBe('a');
  // b decides against the same version (1 stored, ledger unmoved): only the lease check stops its commit.
  const free = incrementOf(b, counter);
  await sleep(300);
  open();
  const [fromA, fromB] = await Promise.all([holder, free]);
  expect({ fromA, fromB }).toEqual({ fromA: 2, fromB: 3 });
  const out = await documentClient().send(
    new GetCommand({ TableName: process.env.LLMCAP_TABLE!, Key: counter, ConsistentRead: true }),
  );
  expect(out.Item?.n).toBe(3);
  expect(await lease()).toBeUndefined();
});

it('a refusal decided against a cached ledger version is made again when another container moved the ledger', async () => {
  const [a, b] = [container(), container()];
  const model = (name: string, fallback?: string) =>
    ({
      source: `hf://org/${name}`,
      engine: 'vllm',
      profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 2, minMemoryGb: 8 }],
      scaling: { min: 0, max: 1 },
      ...(fallback ? { fallback } : {}),
    }) as never;
  // a writes, so it knows the ledger version and holds the catalog at it.
  await a.services.models.change({ verb: 'add', name: 'stale-a', spec: model('stale-a') }, { by: 'a' });
  // b adds the model a's next change names as its fallback; a's cache has not seen it.
  await b.services.models.change({ verb: 'add', name: 'stale-base', spec: model('stale-base') }, { by: 'b' });
  const r = await a.services.models.change(
    { verb: 'add', name: 'stale-child', spec: model('stale-child', 'stale-base') },
    { by: 'a' },
  );
  expect(r.after?.spec.fallback).toBe('stale-base');
  // The same for a decision that is not grouped and commits nothing, in a container that has seen no other
  // writer yet (a has, and takes the lease for a while): it answers from the ledger as it is.
  const c = container();
  await c.services.models.change({ verb: 'add', name: 'stale-c', spec: model('stale-c') }, { by: 'c' });
  await b.services.models.change({ verb: 'add', name: 'stale-late', spec: model('stale-late') }, { by: 'b' });
  const sees = await c.ledger.withLedger(
    async () => {
      const rows = await c.cache.queryLedgerPartition('MODEL');
      if (!rows.some((m) => m.sk === 'stale-late')) throw new Error('stale-late is not in the catalog');
      return { items: [], result: 'seen' };
    },
    { by: 'a' },
  );
  expect(sees).toBe('seen');
});

it('a free turn commits a decision of 99 items, which leaves no room in the transaction for the lease check', async () => {
  const a = container();
  const items = Array.from({ length: 99 }, (_, i) => ({
    Put: { TableName: process.env.LLMCAP_TABLE!, Item: { pk: 'TEST', sk: `full-${i}` } },
  }));
  await a.ledger.withLedger(async () => ({ items, result: undefined }), { by: 'a' });
  await a.ledger.withLedger(async () => ({ items, result: undefined }), { by: 'a' });
  const out = await documentClient().send(
    new GetCommand({
      TableName: process.env.LLMCAP_TABLE!,
      Key: { pk: 'TEST', sk: 'full-98' },
      ConsistentRead: true,
    }),
  );
  expect(out.Item).toBeDefined();
  expect(await lease()).toBeUndefined();
});

it('a writer hears its answer only once its turn has released the lease, however slow the release', async () => {
  // A Lambda container is frozen once its handler answers: a release still in flight then would leave the lease
  // to hold every other container up for its 10 s. Here the release is slow (DynamoDB under load).
  let clients!: typeof import('../../../lambdas/shared/clients');
  let ledger!: typeof import('../../../lambdas/store/ledger');
  jest.isolateModules(() => {
    clients = require('../../../lambdas/shared/clients');
    ledger = require('../../../lambdas/store/ledger');
  });
  const leaseKey = keys.ledgerLease();
  clients.documentClient().middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as { Key?: { pk?: unknown; sk?: unknown } };
      if (input.Key?.pk === leaseKey.pk && input.Key?.sk === leaseKey.sk && !('ConsistentRead' in input))
        await sleep(500);
      return next(args);
    },
    { step: 'initialize', name: 'slowLeaseWrites' },
  );
  const items = Array.from({ length: 99 }, (_, i) => ({
    Put: { TableName: process.env.LLMCAP_TABLE!, Item: { pk: 'TEST', sk: `slow-${i}` } },
  }));
  await ledger.withLedger(async () => ({ items, result: undefined }), { by: 'slow' });
  expect(await lease()).toBeUndefined();
});
