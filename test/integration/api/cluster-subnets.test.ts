import { type TestApi, testApi } from '../../helpers/api';
import { ownCloudSim } from '../../helpers/own-cloud-sim';

/**
 * A stage config that lists no subnets leaves a compute's subnets to the cluster's: the API asks EKS
 * (DescribeCluster resourcesVpcConfig.subnetIds, the cloud simulator here) and refuses any other subnet.
 */

ownCloudSim(3, (endpoint) => ({
  LLMCAP_EKS_ENDPOINT: endpoint,
  LLMCAP_CLUSTER: 'llmcap-local',
  LLMCAP_SUBNETS: '',
}));
let api: TestApi;
beforeAll(async () => {
  api = await testApi();
});

const compute = (name: string, subnetIds: string[]) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Compute',
  metadata: { name },
  spec: { node: { instanceType: 'm7i.xlarge' }, nodeGroup: { maxNodes: 2, subnetIds } },
});

it("takes the cluster's subnets from EKS when the stage lists none, and refuses others", async () => {
  // The simulated cluster's third subnet (local/cloud-sim/eks.ts), which no stage config lists.
  const ok = await api.call('POST', '/v1/computes', compute('in-cluster', ['subnet-0a1b2c3d4e5f60003']));
  expect(ok.status).toBe(201);
  const stray = await api.call('POST', '/v1/computes', compute('elsewhere', ['subnet-0fedcba987654321f']));
  expect(stray.status).toBe(400);
  expect(stray.body.errors).toEqual([
    expect.objectContaining({
      path: 'spec.nodeGroup.subnetIds',
      message: expect.stringContaining('subnet-0a1b2c3d4e5f60003'),
    }),
  ]);
});
