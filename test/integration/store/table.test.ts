import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { dynamoClient } from '../../../lambdas/shared/clients';
import { freshTable } from '../../helpers/table';

describe('DynamoDB Local', () => {
  it('creates the llmcap table with the pk/sk key schema', async () => {
    const name = await freshTable();
    const client = dynamoClient();
    const out = await client.send(new DescribeTableCommand({ TableName: name }));
    client.destroy();
    expect(out.Table?.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
  });
});
