import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../../../lambdas/shared/clients';
import { listScopes } from '../../../lambdas/store/tenancy';
import { freshTable } from '../../helpers/table';

/**
 * Computes and scopes are written outside the ledger, so a read of them is never cached; concurrent readers share
 * one Query (lambdas/store/ledger-cache.ts), but only one sent after they asked.
 */

beforeAll(async () => {
  await freshTable('cache');
});

const putScope = (name: string) =>
  documentClient().send(
    new PutCommand({
      TableName: process.env.LLMCAP_TABLE!,
      Item: { pk: 'SCOPE', sk: name, name, members: {} },
    }),
  );
const names = async (p: Promise<{ name: string }[]>) => (await p).map((s) => s.name);

it('a read asked after a write ended sees it, even while an earlier read is still on its way', async () => {
  await putScope('org:one');
  // Holds the answer of the next Query after DynamoDB has run it, until `release`.
  let release!: () => void;
  const held = new Promise<void>((r) => {
    release = r;
  });
  let ran!: () => void;
  const hasRun = new Promise<void>((r) => {
    ran = r;
  });
  let holding = true;
  documentClient().middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      if (holding && context.commandName === 'QueryCommand') {
        holding = false;
        ran();
        await held;
      }
      return out;
    },
    { step: 'initialize', name: 'holdQuery' },
  );
  try {
    const early = listScopes();
    await hasRun;
    await putScope('org:two');
    const late = listScopes();
    release();
    expect(await names(early)).toEqual(['org:one']);
    expect(await names(late)).toEqual(['org:one', 'org:two']);
  } finally {
    release();
    documentClient().middlewareStack.remove('holdQuery');
  }
});

it('readers that ask together each see every write that ended before it asked', async () => {
  await putScope('org:three');
  const together = await Promise.all(Array.from({ length: 20 }, () => names(listScopes())));
  for (const r of together) expect(r).toEqual(['org:one', 'org:three', 'org:two']);
  // Shared rows are frozen: a caller cannot change what the others read.
  const [a] = await Promise.all([listScopes(), listScopes()]);
  expect(() => {
    (a[0]!.members as Record<string, string>).x = 'admin';
  }).toThrow(TypeError);
});
