import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateNodegroupCommand, DescribeNodegroupCommand } from '@aws-sdk/client-eks';
import { NormalizedSchema } from '@smithy/core/schema';
import {
  createDispatcher,
  fromSdk,
  parseResource,
  stepFunctionsErrorName,
  toSdk,
  toTaskError,
} from '../../../local/sfn/dispatcher';
import { substitute } from '../../../local/sfn/runner';

/** The conversions Step Functions applies between task JSON and the SDK, checked without any network. */

const io = (C: new (i: never) => { schema?: unknown }) => {
  const op = new C({} as never).schema as unknown[];
  return { input: NormalizedSchema.of(op[4] as never), output: NormalizedSchema.of(op[5] as never) };
};

describe('PascalCase task parameters to SDK input', () => {
  const { input } = io(CreateNodegroupCommand as never);

  it('renames structure members at every depth but keeps label and tag keys as written', () => {
    const out = toSdk(input, {
      ClusterName: 'c',
      NodegroupName: 'ng',
      ScalingConfig: { MinSize: 0, MaxSize: 4, DesiredSize: 2 },
      Labels: { 'llmcap.dev/compute': 'gpu-l4-1x', Name: 'x' },
      Tags: { 'llmcap:stage': 'dev', Owner: 'ml' },
      Taints: [{ Key: 'nvidia.com/gpu', Value: 'true', Effect: 'NO_SCHEDULE' }],
      Subnets: ['subnet-1'],
    });
    expect(out).toEqual({
      clusterName: 'c',
      nodegroupName: 'ng',
      scalingConfig: { minSize: 0, maxSize: 4, desiredSize: 2 },
      labels: { 'llmcap.dev/compute': 'gpu-l4-1x', Name: 'x' },
      tags: { 'llmcap:stage': 'dev', Owner: 'ml' },
      taints: [{ key: 'nvidia.com/gpu', value: 'true', effect: 'NO_SCHEDULE' }],
      subnets: ['subnet-1'],
    });
  });

  it('refuses a misspelt parameter instead of dropping it', () => {
    expect(() => toSdk(input, { ClusterName: 'c', NodeGroupName: 'ng' })).toThrow(/NodeGroupName/);
  });

  it('passes DynamoDB attribute values through unchanged (its members are PascalCase already)', () => {
    const { input: ddb } = io(UpdateItemCommand as never);
    const params = {
      TableName: 't',
      Key: { pk: { S: 'COMPUTE' }, sk: { S: 'a' } },
      UpdateExpression: 'SET #s.#l = :l',
      ExpressionAttributeNames: { '#s': 'status', '#l': 'healthIssues' },
      ExpressionAttributeValues: { ':l': { L: [{ M: { code: { S: 'X' } } }] }, ':n': { N: '3' } },
    };
    expect(toSdk(ddb, params)).toEqual(params);
  });
});

describe('SDK output to PascalCase task result', () => {
  it('renames members, keeps map keys, and writes timestamps as ISO text', () => {
    const { output } = io(DescribeNodegroupCommand as never);
    const res = fromSdk(output, {
      $metadata: { httpStatusCode: 200 },
      nodegroup: {
        nodegroupName: 'ng',
        status: 'CREATE_FAILED',
        createdAt: new Date('2026-01-01T00:00:00Z'),
        scalingConfig: { minSize: 0, maxSize: 4, desiredSize: 1 },
        labels: { 'llmcap.dev/compute': 'a' },
        health: {
          issues: [{ code: 'AsgInstanceLaunchFailures', message: 'no capacity', resourceIds: ['asg'] }],
        },
      },
    });
    expect(res).toEqual({
      Nodegroup: {
        NodegroupName: 'ng',
        Status: 'CREATE_FAILED',
        CreatedAt: '2026-01-01T00:00:00.000Z',
        ScalingConfig: { MinSize: 0, MaxSize: 4, DesiredSize: 1 },
        Labels: { 'llmcap.dev/compute': 'a' },
        Health: {
          Issues: [{ Code: 'AsgInstanceLaunchFailures', Message: 'no capacity', ResourceIds: ['asg'] }],
        },
      },
    });
  });
});

describe('error names as Step Functions gives them', () => {
  it.each([
    ['Eks', 'ResourceInUseException', 'Eks.ResourceInUseException'],
    ['S3', 'NoSuchKey', 'S3.NoSuchKeyException'],
    ['DynamoDb', 'InternalServerError', 'DynamoDb.InternalServerErrorException'],
  ])('AWS SDK integration: %s %s → %s', (prefix, name, expected) => {
    expect(stepFunctionsErrorName(prefix, name)).toBe(expected);
  });

  const serviceError = (name: string, status: number) =>
    Object.assign(new Error(`${name} happened`), {
      name,
      $metadata: { httpStatusCode: status, requestId: 'r-2' },
      $fault: status >= 500 ? 'server' : 'client',
    });

  it.each([
    ['ConditionalCheckFailedException', 400, 'DynamoDB.ConditionalCheckFailedException'],
    ['ProvisionedThroughputExceededException', 400, 'DynamoDB.ProvisionedThroughputExceededException'],
    ['RequestLimitExceeded', 400, 'DynamoDB.RequestLimitExceeded'],
    ['ThrottlingException', 400, 'DynamoDB.ThrottlingException'],
    ['InternalServerError', 500, 'DynamoDB.InternalServerError'],
  ])('optimized DynamoDB integration: %s → the error code as DynamoDB sends it', (name, status, expected) => {
    const t = toTaskError('DynamoDB', serviceError(name, status));
    expect(t.name).toBe(expected);
    expect(t.message).toBe(
      `${name} happened (Service: AmazonDynamoDBv2; Status Code: ${status}; Error Code: ${name}; Request ID: r-2; Proxy: null)`,
    );
  });

  it('names an optimized DynamoDB call that gets no answer DynamoDB.AmazonDynamoDBException', async () => {
    const d = createDispatcher({ endpoints: { dynamodb: 'http://127.0.0.1:9' } });
    await expect(
      d.dispatch('arn:aws:states:::dynamodb:updateItem', {
        TableName: 't',
        Key: { pk: { S: 'a' } },
        UpdateExpression: 'SET x = :x',
        ExpressionAttributeValues: { ':x': { S: 'y' } },
      }),
    ).rejects.toMatchObject({ name: 'DynamoDB.AmazonDynamoDBException' });
    await d.destroy();
  });

  it('puts the service, HTTP status and request id in the cause of a service error', () => {
    const e = Object.assign(new Error('NodeGroup already exists with name ng and cluster name c'), {
      name: 'ResourceInUseException',
      $metadata: { httpStatusCode: 409, requestId: 'r-1' },
      $fault: 'client',
    });
    const t = toTaskError('Eks', e);
    expect(t.name).toBe('Eks.ResourceInUseException');
    expect(t.message).toBe(
      'NodeGroup already exists with name ng and cluster name c (Service: Eks, Status Code: 409, Request ID: r-1)',
    );
  });

  it('names a failure without any service answer SdkClientException', () => {
    expect(toTaskError('Eks', new Error('connect ECONNREFUSED 127.0.0.1:1')).name).toBe(
      'Eks.SdkClientException',
    );
  });

  it('names a real call that reaches no service SdkClientException, as Retry lists it', async () => {
    // Nothing listens on port 9: the SDK fails before any service answers.
    const d = createDispatcher({ endpoints: { eks: 'http://127.0.0.1:9' } });
    await expect(
      d.dispatch('arn:aws:states:::aws-sdk:eks:describeNodegroup', { ClusterName: 'c', NodegroupName: 'n' }),
    ).rejects.toMatchObject({ name: 'Eks.SdkClientException' });
    await d.destroy();
  });
});

describe('stopping', () => {
  it('waits for a Task call in flight, then refuses new ones instead of opening a client', async () => {
    // An EKS endpoint that answers late, as a stopped execution's last Task may still be waiting on it.
    let answered = false;
    const server = createServer((_req, res) =>
      setTimeout(() => {
        answered = true;
        res.writeHead(404, {
          'content-type': 'application/json',
          'x-amzn-errortype': 'ResourceNotFoundException',
        });
        res.end(JSON.stringify({ message: 'No node group found for name: n.' }));
      }, 150),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const d = createDispatcher({
      endpoints: { eks: `http://127.0.0.1:${(server.address() as AddressInfo).port}` },
    });
    const call = d.dispatch('arn:aws:states:::aws-sdk:eks:describeNodegroup', {
      ClusterName: 'c',
      NodegroupName: 'n',
    });
    const settled = call.catch((e: Error) => e.name);
    await d.destroy();
    expect(answered).toBe(true);
    expect(await settled).toBe('Eks.ResourceNotFoundException');
    await expect(
      d.dispatch('arn:aws:states:::aws-sdk:eks:describeNodegroup', { ClusterName: 'c', NodegroupName: 'n' }),
    ).rejects.toMatchObject({ name: 'States.Runtime', message: 'the local Step Functions has stopped' });
    await new Promise((r) => server.close(r));
  });
});

describe('task resources', () => {
  it('routes aws-sdk and optimized DynamoDB resources, with their error prefixes', () => {
    expect(parseResource('arn:aws:states:::aws-sdk:eks:createNodegroup')).toEqual({
      service: 'eks',
      action: 'createNodegroup',
      errorPrefix: 'Eks',
    });
    expect(parseResource('arn:aws:states:::dynamodb:updateItem')).toMatchObject({ errorPrefix: 'DynamoDB' });
    expect(parseResource('arn:aws:states:::aws-sdk:dynamodb:updateItem')).toMatchObject({
      errorPrefix: 'DynamoDb',
    });
    expect(() => parseResource('arn:aws:states:::lambda:invoke')).toThrow(/not supported/);
  });

  it('fills substitutions like CDK and refuses to run with one missing', () => {
    const ph = (name: string) => `$${'{'}${name}}`;
    expect(substitute(`{"a":"${ph('TableName')}"}`, { TableName: 't' })).toBe('{"a":"t"}');
    expect(() => substitute(`${ph('ClusterName')} ${ph('TableName')}`, { TableName: 't' })).toThrow(
      ph('ClusterName'),
    );
  });
});
