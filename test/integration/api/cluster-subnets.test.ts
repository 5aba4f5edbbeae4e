import { resetHardwareFacts } from '../../../lambdas/aws/hardware';
import { resetClients } from '../../../lambdas/shared/clients';
import { type CloudSim, startCloudSim } from '../../../local/cloud-sim';
import { type TestApi, testApi } from '../../helpers/api';

/**
 * A stage config that lists no subnets leaves a compute's subnets to the cluster's: the API asks EKS
 * (DescribeCluster resourcesVpcConfig.subnetIds, the cloud simulator here) and refuses any other subnet.
 */

let sim: CloudSim;
let api: TestApi;
const saved = { ...process.env };
beforeAll(async () => {
  sim = await startCloudSim({ port: 0, seed: 3, kubernetes: false });
  process.env.LLMCAP_EKS_ENDPOINT = sim.endpoint;
  process.env.LLMCAP_CLUSTER = 'llmcap-local';
  process.env.LLMCAP_SUBNETS = '';
  resetClients();
  resetHardwareFacts();
  api = await testApi();
});
afterAll(async () => {
  process.env = saved;
  resetClients();
  resetHardwareFacts();
  await sim.stop();
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
