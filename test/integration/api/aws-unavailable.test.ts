import { type TestApi, testApi } from '../../helpers/api';
import { dumpTable } from '../../helpers/dump';
import { ownCloudSim } from '../../helpers/own-cloud-sim';

/**
 * A compute write is checked against EC2 DescribeInstanceTypes, the Price List and EKS DescribeCluster. When one
 * of them fails (after the SDK's own retries), the caller gets 503 problem+json with Retry-After that names the
 * service and its error, and nothing is written; once AWS answers again, the same write succeeds. The failures
 * come from a cloud simulator of this file's own, reached through the SDK's endpoint variables as in Lambda.
 */

const sim = ownCloudSim(5, (endpoint) => ({
  AWS_ENDPOINT_URL_EC2: endpoint,
  AWS_ENDPOINT_URL_PRICING: endpoint,
  AWS_ENDPOINT_URL_SERVICE_QUOTAS: endpoint,
  LLMCAP_EKS_ENDPOINT: endpoint,
  LLMCAP_CLUSTER: 'llmcap-local',
  // The SDK's six attempts back off on a clock 1,000 times as fast: the same retries, without seconds of waiting.
  LLMCAP_SDK_RETRY_TIME_SCALE: '0.001',
}));
let api: TestApi;
beforeAll(async () => {
  api = await testApi();
});

const compute = (name: string, instanceType: string, subnetIds?: string[]) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Compute',
  metadata: { name },
  spec: { node: { instanceType }, nodeGroup: { maxNodes: 2, ...(subnetIds ? { subnetIds } : {}) } },
});

it('refuses a compute write with 503 while EC2 fails, writing nothing, and takes it once EC2 answers', async () => {
  sim().admin.patchFaults({ serverErrorRate: 1, operations: ['DescribeInstanceTypes'] });
  const before = await dumpTable();
  const r = await api.call('POST', '/v1/computes', compute('gpu-when-ec2-fails', 'g6.2xlarge'));
  expect(r.status).toBe(503);
  expect(r.headers['content-type']).toBe('application/problem+json');
  expect(r.headers['retry-after']).toBe('5');
  expect(r.body).toMatchObject({ title: 'Service unavailable', status: 503 });
  expect(r.body.detail).toMatch(
    /^EC2 DescribeInstanceTypes and the Price List failed \(.+\); llmcap checks computes against it, so nothing was written: retry in a few seconds$/,
  );
  expect(await dumpTable()).toEqual(before);

  sim().admin.patchFaults({ serverErrorRate: 0 });
  const ok = await api.call('POST', '/v1/computes', compute('gpu-when-ec2-fails', 'g6.2xlarge'));
  expect(ok.status).toBe(201);
});

it("names EKS when the cluster's subnets cannot be read", async () => {
  process.env.LLMCAP_SUBNETS = '';
  sim().admin.patchFaults({ serverErrorRate: 1, operations: ['DescribeCluster'] });
  const r = await api.call(
    'POST',
    '/v1/computes',
    compute('cpu-in-cluster', 'm7i.xlarge', ['subnet-0a1b2c3d4e5f60003']),
  );
  expect(r.status).toBe(503);
  expect(r.body.detail).toMatch(/^EKS DescribeCluster failed \(ServerException: .+\)/);
  sim().admin.patchFaults({ serverErrorRate: 0 });
});
