import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Context } from 'aws-lambda';
import type { Event, Result } from '../lambdas/api/http';
import { iamAuthorizerOf, LOCAL_ACCOUNT, LOCAL_ADMIN } from './identity';

/**
 * Serves the API Lambda's handler over HTTP on 127.0.0.1, turning each request into the API Gateway v2 event
 * that AWS would send. Locally the caller is whoever `x-llmcap-principal` names (default LOCAL_ADMIN), presented
 * as the IAM authorizer presents a signer (identity.ts); in AWS that header means nothing: SigV4 decides.
 */

export type LambdaHandler = (event: Event, context: Context) => Promise<Result>;

const MAX_READ = 1024 * 1024;

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((res, rej) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      // Keep reading past the API's own limit (so it can answer 413) but never hold more than 1 MiB.
      if (size <= MAX_READ) chunks.push(c);
    });
    req.on('end', () => res(Buffer.concat(chunks)));
    req.on('error', rej);
  });
}

export function toEvent(req: IncomingMessage, body: Buffer, defaultPrincipal: string): Event {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(',') : v;
  const query: Record<string, string> = {};
  url.searchParams.forEach((v, k) => {
    query[k] = v;
  });
  // Only an absent header means the default: an empty one names nobody, and the handler refuses it (401).
  const principal = headers['x-llmcap-principal'] ?? defaultPrincipal;
  const now = Date.now();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.replace(/^\?/, ''),
    headers,
    queryStringParameters: Object.keys(query).length ? query : undefined,
    body: body.length ? body.toString('base64') : undefined,
    isBase64Encoded: body.length > 0,
    requestContext: {
      accountId: LOCAL_ACCOUNT,
      apiId: 'local',
      domainName: 'localhost',
      domainPrefix: 'localhost',
      http: {
        method: req.method ?? 'GET',
        path: url.pathname,
        protocol: 'HTTP/1.1',
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
      authorizer: { iam: iamAuthorizerOf(principal) },
    },
  } as unknown as Event;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Why a browser request must not write, or undefined. The local API answers as local-admin, so a page the
 * developer has open could otherwise create and delete anything with a form POST or a no-cors fetch. Browsers
 * name where a request comes from (Origin, Sec-Fetch-Site); the CLI, curl and SDKs send neither and pass.
 * Origins are compared with this server's own (by its port, not the Host header, which DNS rebinding controls).
 * In AWS, SigV4 is the guard: no browser holds the caller's keys, so this is the local server's alone.
 */
export function crossSiteRefusal(req: IncomingMessage): string | undefined {
  if (SAFE_METHODS.has((req.method ?? 'GET').toUpperCase())) return undefined;
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return `Sec-Fetch-Site is ${site}`;
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  const port = req.socket.localPort;
  const own = ['127.0.0.1', 'localhost', '[::1]'].map((h) => `http://${h}:${port}`);
  return own.includes(origin) ? undefined : `Origin is ${origin}`;
}

function fakeContext(requestId: string): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'llmcap-api-local',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:llmcap-api-local',
    memoryLimitInMB: '512',
    awsRequestId: requestId,
    logGroupName: 'local',
    logStreamName: 'local',
    getRemainingTimeInMillis: () => 30000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

export async function startApiServer(opts: {
  handler: LambdaHandler;
  port: number;
  host?: string;
  defaultPrincipal?: string;
}): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const server = createServer(async (req, res) => {
    try {
      const refused = crossSiteRefusal(req);
      if (refused) {
        req.resume();
        res.writeHead(403, { 'content-type': 'application/problem+json' });
        res.end(
          JSON.stringify({
            type: 'https://llmcap.dev/problems/cross-site-write',
            title: 'Forbidden',
            status: 403,
            detail: `a cross-site browser request may not write to the local control plane (${refused}); use the llmcap CLI, curl or an SDK`,
          }),
        );
        return;
      }
      const event = toEvent(req, await readBody(req), opts.defaultPrincipal ?? LOCAL_ADMIN);
      const out = await opts.handler(event, fakeContext(event.requestContext.requestId));
      res.writeHead(out.statusCode ?? 200, out.headers as Record<string, string>);
      res.end(out.isBase64Encoded && out.body ? Buffer.from(out.body, 'base64') : (out.body ?? ''));
    } catch (e) {
      res.writeHead(500, { 'content-type': 'application/problem+json' });
      res.end(
        JSON.stringify({ type: 'about:blank', title: 'Internal error', status: 500, detail: String(e) }),
      );
    }
  });
  server.keepAliveTimeout = 5000;
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((r, j) => {
    server.once('error', j);
    server.listen(opts.port, host, () => r());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.port;
  return {
    server,
    url: `http://${host}:${port}`,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
