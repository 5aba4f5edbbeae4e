import { type Command, EXIT, int, positionals, UsageError } from '../command';
import { startConsole } from '../console/server';

/**
 * `console`: the web console on localhost, calling the API with this CLI's client and so with the caller's own
 * credentials (SigV4 from the default chain for a deployed API; locally the principal header), as
 * `kubectl proxy` serves a dashboard. It runs until interrupted.
 */

export const DEFAULT_CONSOLE_PORT = 8001;

export const consoleCommand: Command = {
  name: 'console',
  summary: 'Serve the web console on localhost, reading the API as you',
  usage: ['console [--port N]'],
  help: `Pages: capacity per scope down the tenancy tree, computes and their node groups, models with their
placements, reasons, take-backs and pods, alarms, recent reconcile passes, and costs per scope. The console
only reads, and it reads what you may read: every page calls the API with your credentials, as the other
commands do (--as and $LLMCAP_PRINCIPAL on the local control plane). It listens on 127.0.0.1 only.

Options:
  --port N    the port to listen on (default ${DEFAULT_CONSOLE_PORT}; 0 = any free port)

Examples:
  llmcap console
  llmcap console --port 0 --as arn:aws:iam::000000000000:role/ml-viewer`,
  options: { port: { type: 'string' } },
  async run(ctx) {
    positionals(ctx.args, 0, 0, '');
    const port = int(ctx.args.values, 'port') ?? DEFAULT_CONSOLE_PORT;
    if (port < 0 || port > 65535) throw new UsageError(`--port must be from 0 to 65535, not ${port}`);
    const client = await ctx.client();
    let server: Awaited<ReturnType<typeof startConsole>>;
    try {
      server = await startConsole({ client, port });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EADDRINUSE')
        throw new UsageError(`port ${port} is in use; pass --port with another port, or 0 for any free one`);
      throw e;
    }
    ctx.out(`llmcap console: ${server.url}  (reading ${client.endpoint} as you; Ctrl-C to stop)`);
    await new Promise<void>((resolve) => {
      const stop = () => void server.close().then(resolve);
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    return EXIT.ok;
  },
};
