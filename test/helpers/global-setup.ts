import { startCloudSim } from '../../local/cloud-sim';
import { startDynamoDbLocal } from '../../local/dynamodb-local';
import { buildCliBundle, CLI_BUNDLE_ENV } from './cli-bundle';

// One DynamoDB Local for the whole integration run; each test file makes its own table (test/helpers/table.ts).
// It serves every file for minutes, so it starts with a larger heap (fewer collections).
// One cloud simulator answers EC2 DescribeInstanceTypes, the Price List and EKS DescribeCluster (the cluster's
// subnets, for a compute that names subnets when the stage lists none), Service Quotas and CloudWatch's alarms for every compute write the API resolves
// (lambdas/aws/hardware.ts), through the SDK's own endpoint variables as in Lambda; a test that starts its own
// simulator points them at it instead.
export default async function globalSetup(): Promise<void> {
  const ddb = await startDynamoDbLocal({ heapMb: 512 });
  process.env.LLMCAP_DYNAMODB_ENDPOINT = ddb.endpoint;
  // Its node groups per cluster are raised: the security matrix alone creates more computes than AWS's default 30,
  // which test/integration/local/aws-quotas.test.ts checks on a simulator of its own.
  const sim = await startCloudSim({
    port: 0,
    seed: 1,
    kubernetes: false,
    limits: { nodegroupsPerCluster: 1000 },
  });
  process.env.AWS_ENDPOINT_URL_EC2 = sim.endpoint;
  process.env.AWS_ENDPOINT_URL_PRICING = sim.endpoint;
  process.env.AWS_ENDPOINT_URL_SERVICE_QUOTAS = sim.endpoint;
  process.env.AWS_ENDPOINT_URL_EKS = sim.endpoint;
  // GET /v1/alarms reads the stage's alarms there (none unless a test's own control plane made some).
  process.env.AWS_ENDPOINT_URL_CLOUDWATCH = sim.endpoint;
  // The CLI tests start the CLI some 200 times: from one bundle built here, not through tsx each time.
  process.env[CLI_BUNDLE_ENV] = await buildCliBundle();
  Object.assign(globalThis as object, { __ddbLocal: ddb, __cloudSim: sim });
}
