import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join } from 'node:path';
import { ApiError, type Client } from '../client';

/**
 * The web console (`llmcap console`, and `npm start`): static pages on localhost and, under /api, a read-only
 * proxy to the API that makes each call with the CLI's client, so with the caller's own credentials (SigV4 from
 * the default chain; locally the principal header), as `kubectl proxy` does for a dashboard. The pages see
 * exactly what the caller may read, and nothing else: only GET is forwarded, so a page (or another site's
 * form) can change nothing through it, and a request naming another host is refused (DNS rebinding).
 */

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

// The sources run from cli/console; the CLI bundle (one file in cli/) finds them under console/.
const STATIC_DIR = [join(__dirname, 'static'), join(__dirname, 'console', 'static')].find((d) =>
  existsSync(join(d, 'index.html')),
);

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

export interface ConsoleServer {
  url: string;
  close(): Promise<void>;
}

export interface ConsoleOptions {
  client: Client;
  /** 0: any free port. */
  port: number;
  host?: string;
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, { 'content-type': type, ...SECURITY_HEADERS });
  res.end(body);
}

function problem(res: ServerResponse, status: number, title: string, detail: string): void {
  send(
    res,
    status,
    'application/problem+json',
    JSON.stringify({ type: 'about:blank', title, status, detail }),
  );
}

export async function startConsole(o: ConsoleOptions): Promise<ConsoleServer> {
  if (!STATIC_DIR) throw new Error('the console pages (cli/console/static) are missing from this install');
  const host = o.host ?? '127.0.0.1';
  const files = new Map<string, { type: string; body: Buffer }>();
  for (const f of ['index.html', 'console.js', 'console.css'])
    files.set(`/${f}`, { type: TYPES[extname(f)]!, body: readFileSync(join(STATIC_DIR, f)) });
  files.set('/', files.get('/index.html')!);

  let port = o.port;
  const allowedHosts = () => new Set([`${host}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`]);

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void handle(req, res).catch((e) => problem(res, 500, 'Console error', (e as Error).message));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!allowedHosts().has(req.headers.host ?? '')) {
      problem(res, 403, 'Forbidden', `the console answers requests to ${host}:${port} only`);
      return;
    }
    if (req.method !== 'GET') {
      problem(res, 405, 'Method not allowed', 'the console only reads; use the CLI to change anything');
      return;
    }
    const url = new URL(req.url ?? '/', `http://${host}`);
    if (url.pathname.startsWith('/api/v1/')) {
      const path = url.pathname.slice('/api'.length) + url.search;
      try {
        const r = await o.client.request('GET', path);
        send(res, r.status, 'application/json', JSON.stringify(r.body));
      } catch (e) {
        if (e instanceof ApiError)
          send(res, e.status, 'application/problem+json', e.raw || JSON.stringify(e.problem ?? {}));
        else problem(res, 502, 'API unreachable', `${(e as Error).message}`);
      }
      return;
    }
    const f = files.get(url.pathname);
    if (f) send(res, 200, f.type, f.body);
    else problem(res, 404, 'Not found', `no page ${url.pathname}`);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: o.port, host }, () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
