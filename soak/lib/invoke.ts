import { randomUUID } from 'node:crypto';
import { handle } from '../../lambdas/api/app';
import type { Event } from '../../lambdas/api/http';
import { iamAuthorizerOf } from '../../local/identity';

/**
 * One way to send a raw request to the API, in-process (the handler with an API Gateway v2 event, as the tests
 * do) or over HTTP (the local control plane's server). Raw, because the hardening suites send what a client
 * library never would: bodies that are not JSON, odd headers, no identity at all.
 */

export interface RawRequest {
  method: string;
  /** The path as it goes on the wire, percent-encoding included; may carry a query string. */
  path: string;
  headers?: Record<string, string>;
  /** The body text, exactly; undefined sends none. */
  body?: string;
  /**
   * The IAM principal that signs (a role ARN signs as one of its sessions, local/identity.ts); undefined sends
   * an unauthenticated request (in-process only).
   */
  principal?: string;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
}

export type Invoke = (r: RawRequest) => Promise<RawResponse>;

/** Calls the API Lambda's handler directly with the event API Gateway would send. */
export const invokeInProcess: Invoke = async (r) => {
  const [rawPath = '/', qs = ''] = r.path.split(/\?(.*)/s);
  const event = {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString: qs,
    headers: r.headers ?? {},
    queryStringParameters: qs ? Object.fromEntries(new URLSearchParams(qs)) : undefined,
    body: r.body,
    isBase64Encoded: false,
    requestContext: {
      http: {
        method: r.method,
        path: rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: 'fuzz',
      },
      requestId: randomUUID(),
      ...(r.principal === undefined ? {} : { authorizer: { iam: iamAuthorizerOf(r.principal) } }),
    },
  } as unknown as Event;
  const res = await handle(event);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers ?? {})) headers[k.toLowerCase()] = String(v);
  return { status: res.statusCode ?? 200, headers, text: typeof res.body === 'string' ? res.body : '' };
};

/** Sends the request to a running local API; the principal travels in x-llmcap-principal. */
export function invokeHttp(apiUrl: string): Invoke {
  return async (r) => {
    const headers: Record<string, string> = { ...(r.headers ?? {}) };
    if (r.principal !== undefined) headers['x-llmcap-principal'] = r.principal;
    // fetch refuses a body on GET and HEAD (HTTP allows it; API Gateway passes it on): send those without.
    const body = r.method === 'GET' || r.method === 'HEAD' ? undefined : r.body;
    const res = await fetch(`${apiUrl}${r.path}`, { method: r.method, headers, body });
    const out: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      out[k] = v;
    });
    return { status: res.status, headers: out, text: await res.text() };
  };
}

/** JSON in, parsed JSON out: for setting up fixtures through the API itself. */
export function jsonClient(invoke: Invoke, principal: string) {
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await invoke({
      method,
      path,
      principal,
      headers: { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, headers: r.headers, body: r.text ? (JSON.parse(r.text) as any) : undefined };
  };
}

export type JsonClient = ReturnType<typeof jsonClient>;

/**
 * Every item of a list, over its pages (?continue, metadata.continue): the API answers at most a page, and a
 * check that read only the first would pass on the items it never saw.
 */
export async function listAll(
  client: (method: string, path: string) => Promise<{ status: number; body?: any }>,
  path: string,
): Promise<any[]> {
  const items: any[] = [];
  let token: string | undefined;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const r = await client('GET', token ? `${path}${sep}continue=${encodeURIComponent(token)}` : path);
    if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    items.push(...(r.body?.items ?? []));
    token = r.body?.metadata?.continue;
  } while (token);
  return items;
}
