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
  const before = await b.ledger.ledgerVersion();
  let decided = false;
  const refused = await b.ledger
    .withLedger(
      async () => {
        decided = true;
        return { items: [], result: undefined };
      },
      { by: 'b', waitMs: 300 },
    )
    .catch((e: Error & { kind?: string; details?: { reason?: string } }) => e);
  expect(decided).toBe(false);
  expect(refused).toMatchObject({ kind: 'conflict', details: { reason: 'ConcurrentUpdate' } });
  expect((refused as Error).message).toMatch(/busy .*nothing was written, retry/);
  expect(await b.ledger.ledgerVersion()).toBe(before);
  await putLease('stuck', 0);
});

it('writers racing from two containers lose no update', async () => {
  const stores = [container(), container()];
  const counter = { pk: 'TEST', sk: 'counter' };
  const increment = (s: Store) =>
    s.ledger.withLedger(
      async () => {
        const out = await documentClient().send(
          new GetCommand({ TableName: process.env.LLMCAP_TABLE!, Key: counter, ConsistentRead: true }),
        );
        const n = (out.Item?.n as number | undefined) ?? 0;
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
  const results = await Promise.all(stores.flatMap((s) => Array.from({ length: 15 }, () => increment(s))));
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
