import { startCloudSim } from './index';

/**
 * `npm run cloud-sim`: the simulator on its own, for the AWS CLI, a debugger or another process.
 * Env: LLMCAP_SIM_PORT (4510), LLMCAP_SIM_TIME_SCALE (1), LLMCAP_SIM_SEED, LLMCAP_SIM_CONFIG (JSON/YAML file),
 * LLMCAP_SIM_QUIET=1 to silence the request log.
 */

function num(name: string): number | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) {
    console.error(`${name} must be a number, got ${JSON.stringify(v)}`);
    process.exit(2);
  }
  return n;
}

async function main(): Promise<void> {
  const quiet = process.env.LLMCAP_SIM_QUIET === '1';
  const sim = await startCloudSim({
    port: num('LLMCAP_SIM_PORT'),
    timeScale: num('LLMCAP_SIM_TIME_SCALE'),
    seed: num('LLMCAP_SIM_SEED'),
    configFile: process.env.LLMCAP_SIM_CONFIG || undefined,
    log: quiet ? undefined : (line) => console.log(`[cloud-sim] ${line}`),
  });
  const ep = sim.endpoint;
  console.log(
    [
      `cloud-sim: EKS, Auto Scaling, CloudWatch, SNS, EC2 instance types and Price List listening on ${ep} (cluster ${sim.clusterName}, seed ${sim.seed})`,
      '  any region and credentials are accepted; point a client at it with the endpoint override, e.g.',
      '    export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1',
      `    aws eks describe-cluster --name ${sim.clusterName} --endpoint-url ${ep}`,
      `    aws eks list-nodegroups --cluster-name ${sim.clusterName} --endpoint-url ${ep}`,
      `    aws autoscaling describe-auto-scaling-groups --endpoint-url ${ep}`,
      `    aws cloudwatch describe-alarms --endpoint-url ${ep}`,
      `    aws ec2 describe-instance-types --instance-types g6.2xlarge --endpoint-url ${ep}`,
      `  admin: curl ${ep}/_sim/state   (faults: PUT/PATCH ${ep}/_sim/faults, reset: POST ${ep}/_sim/reset)`,
      ...(sim.kubernetes
        ? [
            `  Kubernetes API on ${sim.kubernetes.endpoint} (DescribeCluster's endpoint and CA), e.g.`,
            `    curl -s ${ep}/_sim/kubeconfig > kubeconfig && kubectl --kubeconfig kubeconfig get nodes`,
          ]
        : []),
      '  Ctrl-C to stop',
    ].join('\n'),
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`cloud-sim: ${signal}, stopping`);
    sim.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

main().catch((e: Error) => {
  console.error(`cloud-sim: ${e.message}`);
  process.exit(1);
});
