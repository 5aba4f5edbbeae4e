import type * as z from 'zod';
import type { ApiRequest, ApiResponse } from './http';
import { HttpError } from './http';

export type RouteHandler = (req: ApiRequest) => Promise<ApiResponse>;

/** What the OpenAPI document says of a route; the body schema is the very one the handler parses with. */
export interface RouteDoc {
  summary?: string;
  body?: z.ZodType;
  /** The query parameters, as the object schema the handler parses `req.query` with. */
  query?: z.ZodObject;
  /** Success status and what it returns, e.g. `{ 200: 'the compute' }`. */
  responses?: Record<number, string>;
  tag?: string;
}

export interface Route {
  method: string;
  /** e.g. `/v1/computes/{name}`; `{x}` matches one path segment. */
  path: string;
  handler: RouteHandler;
  /** Writes accept Idempotency-Key; reads do not need it. */
  write: boolean;
  doc: RouteDoc;
}

interface Compiled extends Route {
  regex: RegExp;
  names: string[];
}

/** Longest path parameter accepted: names are far shorter, and DynamoDB refuses keys over 1024 bytes. */
export const MAX_PARAM_BYTES = 512;
/** A principal is no key, and the longest IAM ARN (a role with a 512-character path) is about 620 bytes. */
const MAX_PRINCIPAL_BYTES = 1024;

function decodeParam(name: string, raw: string): string {
  let value: string;
  try {
    value = decodeURIComponent(raw);
  } catch {
    throw new HttpError(
      400,
      `the ${name} in the path is not valid percent-encoding; encode it with encodeURIComponent`,
      {
        errors: [{ path: name, message: 'malformed percent-encoding' }],
      },
    );
  }
  const max = name === 'principal' ? MAX_PRINCIPAL_BYTES : MAX_PARAM_BYTES;
  if (Buffer.byteLength(value, 'utf8') > max) {
    throw new HttpError(400, `the ${name} in the path is over ${max} bytes`, {
      errors: [{ path: name, message: `at most ${max} bytes` }],
    });
  }
  return value;
}

/**
 * A small table router: the route list is data, so the OpenAPI test can check every route is documented,
 * and an unknown path (404) is told apart from a known path with the wrong method (405, with Allow).
 */
export class Router {
  private readonly routes: Compiled[] = [];

  add(method: string, path: string, handler: RouteHandler, doc: RouteDoc = {}): this {
    const names: string[] = [];
    const pattern = path.replace(/\{(\w+)\}/g, (_, n: string) => {
      names.push(n);
      return '([^/]+)';
    });
    this.routes.push({
      method,
      path,
      handler,
      write: method !== 'GET' && method !== 'HEAD',
      doc,
      regex: new RegExp(`^${pattern}/?$`),
      names,
    });
    return this;
  }

  list(): Route[] {
    return this.routes.map(({ method, path, handler, write, doc }) => ({
      method,
      path,
      handler,
      write,
      doc,
    }));
  }

  match(method: string, path: string): { route: Route; params: Record<string, string> } {
    const allowed: string[] = [];
    for (const r of this.routes) {
      const m = r.regex.exec(path);
      if (!m) continue;
      if (r.method !== method) {
        allowed.push(r.method);
        continue;
      }
      const params: Record<string, string> = {};
      r.names.forEach((n, i) => {
        params[n] = decodeParam(n, m[i + 1] ?? '');
      });
      return { route: r, params };
    }
    if (allowed.length) {
      throw new HttpError(405, `${method} is not allowed on ${path}; use ${allowed.join(', ')}`, {
        headers: { allow: allowed.join(', ') },
      });
    }
    throw new HttpError(404, `no route ${method} ${path}; GET /v1/openapi.json lists the API`);
  }
}
