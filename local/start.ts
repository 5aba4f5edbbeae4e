import { startControlPlane } from './control-plane';

// The Lambdas run on Node 22; on a Node 20 laptop the SDK's end-of-support warning is noise.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** `npm start [-- --persist]`: the local control plane in the foreground, stopped by Ctrl-C. */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    console.log(`usage: npm start [-- --persist]

  --persist   keep the data under .llmcap/ between runs (default: in memory)

environment:
  LLMCAP_PORT               API port (default 3000)
  LLMCAP_ADMINS             comma-separated platform admins (default local-admin)`);
    return;
  }
  const port = Number(process.env.LLMCAP_PORT ?? 3000);
  console.log('llmcap local control plane starting...');
  const cp = await startControlPlane({
    port,
    persist: args.includes('--persist'),
    admins: (process.env.LLMCAP_ADMINS ?? 'local-admin').split(',').filter(Boolean),
    log: (l) => console.log(`  ${l}`),
  });
  console.log(`
Ready. Try:
  curl -s ${cp.apiUrl}/v1/computes
  curl -s -X POST ${cp.apiUrl}/v1/computes -H 'content-type: application/json' \\
    -d '{"apiVersion":"llmcap/v1","kind":"Compute","metadata":{"name":"cpu-tiny"},"spec":{"node":{"instanceType":"m7i.large","cpu":2,"memoryGb":8},"cost":{"perHour":0.1008}}}'
Press Ctrl-C to stop.`);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping...`);
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
