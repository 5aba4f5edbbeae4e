import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CLI_BUNDLE_ENV } from '../../helpers/cli-bundle';

/**
 * Runs the CLI as a user would, in a child process: `node cli/bin/llmcap.js ...` with `launcher`, else the
 * same sources bundled once per run by the global setup (test/helpers/cli-bundle.ts), which start faster.
 */

const BIN = join(__dirname, '..', '..', '..', 'cli', 'bin', 'llmcap.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function llmcap(
  args: string[],
  opts: {
    endpoint?: string;
    env?: Record<string, string | undefined>;
    input?: string;
    /** The working directory, against which file arguments resolve; the test's own by default. */
    cwd?: string;
    /** Sees stderr as it comes, e.g. to act on a progress line while the command still runs. */
    onStderr?: (soFar: string) => void;
    /** Sees stdout as it comes, e.g. the rows `get -w` prints. */
    onStdout?: (soFar: string) => void;
    /** Sends the command SIGINT, as Ctrl-C does, when aborted. */
    interrupt?: AbortSignal;
    /** Through cli/bin/llmcap.js, what `npx llmcap` runs, rather than the run's bundle of the same sources. */
    launcher?: boolean;
  } = {},
): Promise<CliResult> {
  const env: Record<string, string | undefined> = { ...process.env };
  const bin = (!opts.launcher && env[CLI_BUNDLE_ENV]) || BIN;
  delete env[CLI_BUNDLE_ENV];
  // Whatever the developer's shell points at must not leak into the tests.
  for (const k of ['LLMCAP_ENDPOINT', 'LLMCAP_STACK', 'LLMCAP_PRINCIPAL', 'LLMCAP_SIGN', 'AWS_PROFILE'])
    delete env[k];
  if (opts.endpoint) env.LLMCAP_ENDPOINT = opts.endpoint;
  Object.assign(env, opts.env ?? {});
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { env: env as NodeJS.ProcessEnv, cwd: opts.cwd });
    opts.interrupt?.addEventListener('abort', () => child.kill('SIGINT'), { once: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
      opts.onStdout?.(stdout);
    });
    child.stderr.on('data', (d) => {
      stderr += d;
      opts.onStderr?.(stderr);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

export interface Recorded {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  raw: string;
}

/** `body` is sent as JSON; `raw` as it is (the CloudFormation stub answers XML). */
export interface Answer {
  status: number;
  body?: unknown;
  raw?: string;
  type?: string;
}

export type Handler = (req: Recorded) => Answer | Promise<Answer>;

/** A small HTTP server that records every request and answers with `handler`. */
export async function stubServer(handler: Handler): Promise<{
  url: string;
  requests: Recorded[];
  close(): Promise<void>;
}> {
  const requests: Recorded[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        body = undefined;
      }
      const rec: Recorded = {
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers: req.headers,
        body,
        raw,
      };
      requests.push(rec);
      try {
        const r = await handler(rec);
        const type = r.type ?? (r.status >= 400 ? 'application/problem+json' : 'application/json');
        const text = r.raw ?? (r.body === undefined ? undefined : JSON.stringify(r.body));
        res.writeHead(r.status, text === undefined ? {} : { 'content-type': type });
        res.end(text);
      } catch (e) {
        res.writeHead(500, { 'content-type': 'application/problem+json' });
        res.end(
          JSON.stringify({ type: 'about:blank', title: 'Internal error', status: 500, detail: String(e) }),
        );
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export const problem = (
  status: number,
  detail: string,
  extra: { reason?: string; errors?: { path: string; message: string }[] } = {},
) => ({
  status,
  body: {
    type: `https://llmcap.dev/problems/${status}`,
    title: {
      400: 'Invalid request',
      403: 'Forbidden',
      404: 'Not found',
      409: 'Conflict',
      500: 'Internal error',
    }[status],
    status,
    detail,
    ...extra,
  },
});

/**
 * The CLI's main() in this process, for checks that need no server (help, usage errors) or that are about the
 * server's answers rather than the process (test/integration/cli/apply.test.ts): the same argument parsing,
 * output and exit code as the process minus its startup, so the suite stays fast. `endpoint` is given as
 * LLMCAP_ENDPOINT, as llmcap() gives it; since the environment is the process's, calls take turns.
 */
let turn: Promise<unknown> = Promise.resolve();
export function inProcess(
  args: string[],
  opts: { endpoint?: string; input?: string } = {},
): Promise<CliResult> {
  const call = turn.then(async () => {
    const { main } = await import('../../../cli/main');
    const saved = process.env.LLMCAP_ENDPOINT;
    if (opts.endpoint) process.env.LLMCAP_ENDPOINT = opts.endpoint;
    else delete process.env.LLMCAP_ENDPOINT;
    let stdout = '';
    let stderr = '';
    try {
      const code = await main(args, {
        out: (s) => {
          stdout += `${s}\n`;
        },
        err: (s) => {
          stderr += `${s}\n`;
        },
        readStdin: async () => opts.input ?? '',
      });
      return { code, stdout, stderr };
    } finally {
      if (saved === undefined) delete process.env.LLMCAP_ENDPOINT;
      else process.env.LLMCAP_ENDPOINT = saved;
    }
  });
  turn = call.catch(() => undefined);
  return call;
}
