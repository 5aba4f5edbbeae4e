import { randomUUID } from 'node:crypto';
import { dynamoClient, resetClients } from '../../lambdas/shared/clients';
import { resetConfig } from '../../lambdas/shared/config';
import { ensureTable } from '../../lambdas/store/table';

/** A fresh table per test file, on the DynamoDB Local that global-setup started, named in LLMCAP_TABLE. */
export async function freshTable(prefix = 't'): Promise<string> {
  if (!process.env.LLMCAP_DYNAMODB_ENDPOINT)
    throw new Error('integration tests need global-setup (DynamoDB Local)');
  const name = `${prefix}-${randomUUID().slice(0, 8)}`;
  const client = dynamoClient(process.env.LLMCAP_DYNAMODB_ENDPOINT);
  await ensureTable(client, name);
  client.destroy();
  process.env.LLMCAP_TABLE = name;
  resetConfig();
  resetClients();
  return name;
}
