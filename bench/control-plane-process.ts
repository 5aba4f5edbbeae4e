import { createInterface } from 'node:readline';
import { documentClient } from '../lambdas/shared/clients';
import { startControlPlane } from '../local/control-plane';
import { LOCAL_ADMIN } from '../local/identity';

/**
 * The local control plane (its HTTP API, the admitter driven by the table's stream, the simulators) in a process
 * of its own, for bench/write-path.ts: a deployed stage runs its API Lambda apart from its admitter, so the API
 * handler is measured in the bench's process with nothing else in its event loop, and the admitter's work lands
 * here, as it would in its own Lambda. Started with the DynamoDB endpoint and table as arguments; prints one JSON
 * marked line, the API's URL and the environment the control plane set (for the bench's own handler to read the same
 * table and simulators); then answers each `calls` line on stdin with the DynamoDB calls this process made since
 * the last, by command, and `stop` by stopping.
 */

/** An answer, marked apart from anything the control plane's logger prints on the same stdout. */
export const MARK = '@bench ';
const say = (v: unknown) => console.log(`${MARK}${JSON.stringify(v)}`);

async function main(): Promise<void> {
  const [endpoint, table] = process.argv.slice(2);
  const cp = await startControlPlane({
    port: 0,
    simPort: 0,
    reconcileSeconds: 0,
    dynamodbEndpoint: endpoint!,
    table: table!,
    admins: [LOCAL_ADMIN],
  });
  let calls: Record<string, number> = {};
  documentClient().middlewareStack.add(
    (next, context) => async (args) => {
      const pk = (args.input as { ExpressionAttributeValues?: Record<string, unknown> })
        .ExpressionAttributeValues?.[':pk'];
      const got = (args.input as { Key?: { pk?: unknown } }).Key?.pk;
      const command = `${String(context.commandName ?? '?').replace(/Command$/, '')}${pk ? ` ${pk}` : got ? ` ${got}` : ''}`;
      calls[command] = (calls[command] ?? 0) + 1;
      return next(args);
    },
    { step: 'initialize', name: 'benchCalls', override: true },
  );
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => k.startsWith('LLMCAP_') || k.startsWith('AWS_')),
  );
  say({ apiUrl: cp.apiUrl, env });
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'calls') {
      say(calls);
      calls = {};
    } else if (line === 'stop') break;
  }
  await cp.stop();
}

if (require.main === module)
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
