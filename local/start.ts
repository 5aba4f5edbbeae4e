import { join } from 'node:path';
import { loadConfig } from '../lambdas/shared/config';
import { LOCAL_ADMIN } from './identity';
import { checkPortsFree, cliEndpointLine, explainPortError, portsHelp, resolvePorts } from './ports';

// The Lambdas run on Node 24; on a Node 20 laptop the SDK's end-of-support warning is noise.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** `npm start [-- --persist]`: the local control plane in the foreground, stopped by Ctrl-C. */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    console.log(`usage: npm start [-- --persist]

  --persist   keep the data under .llmcap/ between runs (default: in memory)

environment:
${portsHelp(26)}
  LLMCAP_ADMINS             comma-separated platform admins, IAM principal ARNs (default ${LOCAL_ADMIN})
  LLMCAP_RECONCILE_SECONDS  seconds between reconciles (default 10; 0 = only POST /v1/reconcile)
  LLMCAP_COOLDOWN_SECONDS   scale-down cool-down (default 600)
  LLMCAP_CONSOLIDATION      the consolidation policy as JSON, e.g. '{"enabled": true}' (default off; docs/operations.md)
  LLMCAP_WRITE_SNAPSHOT_MS  how old a reading a model write may decide on first (default 1000; 0 = none; docs/architecture.md)
  LLMCAP_CREATE_RETRY_SECONDS  first wait before a failed node group create is retried (default 300 x time scale)
  LLMCAP_SUPPLY_GRACE_SECONDS  how long a node may be NotReady before llmcap stops counting on it (default 300 x time scale)
  LLMCAP_CAPACITY_GRACE_SECONDS  how long a failed launch for lack of capacity is counted on before its replicas go elsewhere (default 60 x time scale)
  LLMCAP_SDK_RETRY_TIME_SCALE  share of their time the AWS SDK's retry backoff and rate limiter wait (default 1)
  LLMCAP_ALERT_WEBHOOK      HTTP(S) URL subscribed to the on-call SNS topic: it gets SNS's SubscriptionConfirmation
                            (GET its SubscribeURL to confirm), then each alarm notification (docs/local.md)
  LLMCAP_SIM_TIME_SCALE     simulator speed: 1 = EKS's real durations (default 0.1: a create takes 12 s)
  LLMCAP_SUBNETS            comma-separated subnets for CreateNodegroup (default two dummies; only their syntax is checked)
  LLMCAP_STAGE              the stage, in every node group's and alarm's name llmcap-<stage>-* (default local)`);
    return;
  }
  const admins = (process.env.LLMCAP_ADMINS ?? LOCAL_ADMIN)
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  // The checks startControlPlane makes first, made before its modules load (3-4 s of CPU under tsx), so a
  // bad variable or a taken port fails at once; it makes them again, as for any other caller.
  const ports = resolvePorts({});
  loadConfig({ LLMCAP_ADMINS: admins.join(',') });
  await checkPortsFree(ports);
  console.log('llmcap local control plane starting...');
  // Loaded only now: the control plane pulls in the simulators and the SDK, which --help has no use for.
  const { startControlPlane } = await import('./control-plane');
  const cp = await startControlPlane({
    ...(process.env.LLMCAP_ALERT_WEBHOOK ? { alertWebhook: process.env.LLMCAP_ALERT_WEBHOOK } : {}),
    persist: args.includes('--persist'),
    admins,
    log: (l) => console.log(`  ${l}`),
    kubeconfigPath: join(process.cwd(), '.llmcap', 'kubeconfig'),
  });
  // The web console, as `llmcap console` serves it, reading the API as the default local caller.
  const { Client } = await import('../cli/client');
  const { startConsole } = await import('../cli/console/server');
  const web = await startConsole({
    client: new Client({ endpoint: cp.apiUrl, sign: false }),
    port: ports.console,
  }).catch((e) => {
    throw explainPortError(e, ports);
  });
  console.log(`  Console          ${web.url}   (or npx llmcap console, to read as someone else with --as)`);
  console.log(`  CLI              ${cliEndpointLine(cp.apiUrl, cp.sim.endpoint)}`);
  console.log(`
Ready. The declared catalog (config/catalog.yaml) is loaded; watch its node groups come up here. Try:
  curl -s ${cp.apiUrl}/v1/computes | jq '.items[] | {name: .metadata.name, status: .status.nodegroupStatus}'
  npx llmcap get models
  npx llmcap capacity
  npx llmcap apply -f examples/        # scopes, quotas and models that borrow and take back
  kubectl --kubeconfig .llmcap/kubeconfig get nodes,pods -A   # the simulated cluster
Press Ctrl-C to stop.`);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping...`);
    await web.close();
    await cp.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((e) => {
  console.error(`llmcap: could not start: ${(e as Error).message}`);
  process.exit(1);
});
