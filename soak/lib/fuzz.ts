import fc from 'fast-check';
import * as z from 'zod';
import type { Route } from '../../lambdas/api/router';
import { mulberry32 } from '../../local/cloud-sim/rng';
import { P } from './fixture';
import type { Invoke, RawRequest, RawResponse } from './invoke';

/**
 * Property-based requests against every route of the API. Bodies are generated from the route's own zod
 * schema (z.toJSONSchema, then a JSON Schema → fast-check arbitrary), with names drawn mostly from the
 * fixture so that requests reach existing resources, then mutated: unknown fields, missing fields, wrong
 * types, out-of-range numbers, huge strings, wrong nesting, text that is not JSON, other content types,
 * wrong methods, odd path parameters and encodings, odd If-Match and Idempotency-Key headers, every
 * principal (and none). The invariants: no 5xx; every refusal is RFC 9457 problem+json; a refused request
 * writes nothing (the table is the same before and after); a read writes nothing either.
 */

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = Record<string, any>;

export const POOLS = {
  computes: ['gpu-l4-1x', 'cpu-small', 'fz-l4', 'fz-cpu', 'fz-new', 'nope'],
  models: ['fz-chat', 'fz-batch', 'fz-new', 'fz-fb', 'nope'],
  scopes: ['org:acme', 'team:ml', 'project:a', 'project:fz', 'team:nope', 'org:other'],
  principals: [P.platform, P.teamAdmin, P.editor, P.viewer, P.stranger],
};

/** Callers and members named like Object.prototype's keys: bare (not principals) or as IAM users. */
const PROTO_NAMES = ['constructor', '__proto__', 'toString', 'arn:aws:iam::111111111111:user/__proto__'];

const ODD_SEGMENTS = [
  '%E0%A4%A', // a truncated UTF-8 sequence: not decodable
  '%',
  '%zz',
  '%00',
  '%2F',
  '..',
  '.',
  '%20',
  'A-UPPER',
  '-lead',
  'ü',
  '%F0%9F%92%A9',
  'x'.repeat(300),
  'y'.repeat(2100),
  'org:',
  'project:a%3Fq%3D1',
  "'; DROP TABLE",
  '{name}',
];

/** A JSON Schema (draft 2020-12, as zod 4 writes it) as an arbitrary of valid values. */
export function fromSchema(s: Schema, key = ''): fc.Arbitrary<Json> {
  const hint = HINTS[key];
  const base = fromSchemaRaw(s, key);
  return hint ? fc.oneof({ weight: 6, arbitrary: hint }, { weight: 1, arbitrary: base }) : base;
}

const HINTS: Record<string, fc.Arbitrary<Json>> = {
  name: fc.constantFrom(...POOLS.computes, ...POOLS.models),
  owner: fc.constantFrom(...POOLS.scopes, ''),
  parent: fc.constantFrom(...POOLS.scopes),
  compute: fc.constantFrom(...POOLS.computes),
  fallback: fc.constantFrom(...POOLS.models),
  profile: fc.constantFrom('l4', 'cpu', 'nope'),
  source: fc.constantFrom('hf://org/fz', 's3://weights-bucket/fz', 'hf://org/repo/file.gguf'),
};

function fromSchemaRaw(s: Schema, key: string): fc.Arbitrary<Json> {
  if ('const' in s) return fc.constant(s.const as Json);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as Json[]));
  const alts = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (alts) return fc.oneof(...alts.map((a) => fromSchemaRaw(a, key)));
  switch (s.type) {
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, Schema>;
      const required = new Set<string>((s.required as string[]) ?? []);
      const arbs: Record<string, fc.Arbitrary<Json>> = {};
      for (const [k, v] of Object.entries(props)) arbs[k] = fromSchema(v, k);
      return fc.record(arbs, { requiredKeys: [...required] }) as fc.Arbitrary<Json>;
    }
    case 'array':
      return fc.array(fromSchema((s.items ?? {}) as Schema, key), {
        minLength: s.minItems ?? 0,
        maxLength: Math.min(s.maxItems ?? 4, Math.max(s.minItems ?? 0, 4)),
      });
    case 'string':
      if (s.pattern)
        return fc
          .stringMatching(new RegExp(s.pattern as string))
          .filter((x) => x.length <= (s.maxLength ?? 1e9));
      return fc.string({ minLength: s.minLength ?? 0, maxLength: Math.min(s.maxLength ?? 40, 40) });
    case 'integer':
      return fc.integer({
        min: Math.max(s.minimum ?? -1e6, -1e9),
        max: Math.min(s.maximum ?? 1e6, 1e9),
      });
    case 'number':
      return fc.double({
        min: s.minimum ?? s.exclusiveMinimum ?? -1e6,
        max: s.maximum ?? 1e6,
        minExcluded: s.exclusiveMinimum !== undefined,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>;
  }
}

const schemaCache = new Map<z.ZodType, Schema>();
function jsonSchemaOf(t: z.ZodType): Schema {
  let s = schemaCache.get(t);
  if (!s) {
    s = z.toJSONSchema(t, { io: 'input', unrepresentable: 'any' }) as Schema;
    schemaCache.set(t, s);
  }
  return s;
}

// ---- mutations -------------------------------------------------------------------------------------------

const WRONG: Json[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  1e308,
  -1e308,
  '',
  'x',
  [],
  {},
  [1, 2],
  { a: 1 },
  '1',
  '0',
];

type Mutation = (v: Json, rnd: () => number) => Json;

function paths(
  v: Json,
  at: (string | number)[] = [],
  out: (string | number)[][] = [],
): (string | number)[][] {
  out.push(at);
  if (Array.isArray(v)) {
    v.forEach((x, i) => {
      paths(x, [...at, i], out);
    });
  } else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) paths(x, [...at, k], out);
  return out;
}

function setAt(v: Json, p: (string | number)[], f: (old: Json) => Json | undefined): Json {
  if (p.length === 0) return f(v) ?? null;
  const [head, ...rest] = p as [string | number, ...(string | number)[]];
  if (Array.isArray(v)) {
    const copy = [...v];
    const next = setAt(copy[head as number] ?? null, rest, f);
    copy[head as number] = next;
    return copy;
  }
  if (v && typeof v === 'object') {
    const copy = { ...v };
    if (rest.length === 0) {
      const next = f(copy[head as string] ?? null);
      if (next === undefined) delete copy[head as string];
      else copy[head as string] = next;
      return copy;
    }
    copy[head as string] = setAt(copy[head as string] ?? null, rest, f);
    return copy;
  }
  return v;
}

const pick = <T>(xs: readonly T[], rnd: () => number): T => xs[Math.floor(rnd() * xs.length)]!;

const MUTATIONS: Record<string, Mutation> = {
  unknownField: (v, rnd) => {
    const objs = paths(v).filter((p) => {
      const x = p.reduce<Json>((o, k) => (o as any)?.[k], v);
      return x !== null && typeof x === 'object' && !Array.isArray(x);
    });
    if (!objs.length) return v;
    return setAt(v, pick(objs, rnd), (o) => ({
      ...(o as object),
      [pick(['extra', '__proto__', 'constructor', 'spec', 'x'.repeat(200)], rnd)]: pick(WRONG, rnd),
    }));
  },
  dropField: (v, rnd) => {
    const ps = paths(v).filter((p) => p.length > 0 && typeof p[p.length - 1] === 'string');
    return ps.length ? setAt(v, pick(ps, rnd), () => undefined) : v;
  },
  wrongType: (v, rnd) => {
    const ps = paths(v);
    return setAt(v, pick(ps, rnd), () => pick(WRONG, rnd));
  },
  outOfRange: (v, rnd) => {
    const nums = paths(v).filter((p) => typeof p.reduce<Json>((o, k) => (o as any)?.[k], v) === 'number');
    if (!nums.length) return v;
    return setAt(v, pick(nums, rnd), () =>
      pick([-1, 0, 1e9, 0.5, 2 ** 53 + 1, -0, 1e-320, 10001, 1025], rnd),
    );
  },
  hugeString: (v, rnd) => {
    const ps = paths(v).filter((p) => p.length > 0);
    const big = rnd() < 0.3 ? 'x'.repeat(300 * 1024) : 'é'.repeat(5000);
    return ps.length ? setAt(v, pick(ps, rnd), () => big) : big;
  },
  wrongNesting: (v, rnd) => (rnd() < 0.5 ? [v] : { spec: v, metadata: v }),
  protoMembers: (v, rnd) => withMembers(v, Object.fromEntries(PROTO_NAMES.map((n) => [n, pick(ROLES, rnd)]))),
  manyMembers: (v) =>
    withMembers(
      v,
      Object.fromEntries(
        Array.from({ length: 250 }, (_, i) => [`arn:aws:iam::111111111111:user/fz-${i}`, 'viewer']),
      ),
    ),
};

/** Depths around the API's bound of 32 and far past it (the old RangeError was at some thousands). */
const DEEP_LEVELS = [33, 40, 200, 5000];

/** A body nested that deep, as text: the generator's own JSON.stringify would overflow its stack first. */
function deepText(rnd: () => number): string {
  const n = pick(DEEP_LEVELS, rnd);
  let open = '';
  let close = '';
  for (let i = 0; i < n; i++) {
    const array = rnd() < 0.5;
    open += array ? '[' : '{"a":';
    close = (array ? ']' : '}') + close;
  }
  return `{"a":${open}1${close}}`;
}
const ROLES = ['admin', 'editor', 'viewer'];

/** The body with its members (at the top, under spec, or as the whole body) replaced. */
function withMembers(v: Json, members: Record<string, Json>): Json {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    if ('members' in v) return { ...v, members };
    const spec = v.spec;
    if (spec && typeof spec === 'object' && !Array.isArray(spec)) return { ...v, spec: { ...spec, members } };
  }
  return { members };
}

/** A write a browser page on another site (or a DNS-rebinding one) would send. */
function browserWrite(req: FuzzRequest): boolean {
  if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(req.method)) return false;
  const site = req.headers?.['sec-fetch-site'];
  return (
    (site !== undefined && site !== 'same-origin' && site !== 'none') || req.headers?.origin !== undefined
  );
}

/**
 * On the local HTTP server a browser write is refused before anything else looks at it: by the cross-site
 * rule, whoever the caller and whatever the body.
 */
export function crossSiteProblem(req: FuzzRequest, res: RawResponse): string | undefined {
  if (!browserWrite(req)) return undefined;
  if (res.status === 403 && res.text.includes('/problems/cross-site-write')) return undefined;
  return `a cross-site browser write was answered ${res.status}, not the cross-site 403`;
}

/**
 * Requests no server may accept, whatever the route or caller: a write is then refused for its own reason or
 * for this one, never answered 2xx. The cross-site rule only holds where a browser can reach the server (the
 * local HTTP server); API Gateway's callers sign with IAM instead.
 */
export function mustBeRefused(
  req: FuzzRequest,
  o: { crossSite: boolean; takesBody: ReadonlySet<string> },
): string | undefined {
  const write = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(req.method);
  if (!write) return undefined;
  if (o.crossSite && browserWrite(req)) return 'a cross-site browser write was accepted (expected 403)';
  // A route without a body (every DELETE, POST /v1/reconcile) does not read what a request carries.
  if (!o.takesBody.has(`${req.method} ${req.route.split(' ')[1]}`) || !req.route.startsWith(`${req.method} `))
    return undefined;
  const type = (req.headers?.['content-type'] ?? '').toLowerCase();
  // application/json or a +json type (application/merge-patch+json), as docs/security.md says.
  if (req.body !== undefined && type && !/^application\/([\w.-]+\+)?json\s*(;|$)/.test(type))
    return `a write with content-type ${type} was accepted (expected 415)`;
  if (req.mutation === 'deepNesting') return 'a body nested past 32 levels was accepted (expected 400)';
  if (req.mutation === 'protoMembers' && req.body?.includes('"members"'))
    return 'members named like Object.prototype keys were accepted (expected 400)';
  if (req.mutation === 'manyMembers' && req.body?.includes('"members"'))
    return 'more members than the bound were accepted (expected 400)';
  return undefined;
}

// ---- requests --------------------------------------------------------------------------------------------

export interface FuzzRequest extends RawRequest {
  route: string;
  mutation: string;
}

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'];

function paramArb(route: Route, name: string): fc.Arbitrary<string> {
  let pool: string[];
  if (name === 'principal') pool = [...POOLS.principals, ...PROTO_NAMES].map((p) => encodeURIComponent(p));
  else if (name === 'scope' || route.path.startsWith('/v1/scopes'))
    pool = POOLS.scopes.map((s) => encodeURIComponent(s));
  else if (route.path.startsWith('/v1/models')) pool = POOLS.models;
  else pool = POOLS.computes;
  return fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...pool) },
    { weight: 1, arbitrary: fc.constantFrom(...ODD_SEGMENTS) },
  );
}

function headerArb(): fc.Arbitrary<Record<string, string>> {
  return fc
    .record(
      {
        'content-type': fc.constantFrom(
          'application/json',
          'application/json',
          'application/json; charset=utf-8',
          'text/plain',
          'application/x-www-form-urlencoded',
          'application/merge-patch+json',
          'application/json; charset=latin1',
          'application/json;charset=UTF-16',
          'text/plain; charset=utf-8',
          'application/jsonx',
          '',
        ),
        'if-match': fc.constantFrom(
          '"1"',
          '"2"',
          '"999"',
          'W/"1"',
          '*',
          'abc',
          '"0"',
          '""',
          '"1.5"',
          '"-3"',
          '1e3',
          '"1", "2"',
        ),
        'idempotency-key': fc.constantFrom('k1', 'k2', 'ü-key', 'x'.repeat(129), 'x'.repeat(128), ' ', 'a#b'),
        accept: fc.constantFrom('application/json', 'text/html', '*/*'),
        // What a browser adds to a page's request to another site (and a DNS-rebinding page's Origin).
        // Mostly absent (''), so most writes still reach the routes behind the browser check.
        'sec-fetch-site': fc.constantFrom(
          '',
          '',
          '',
          '',
          '',
          'cross-site',
          'same-site',
          'same-origin',
          'none',
        ),
        origin: fc.constantFrom(
          '',
          '',
          '',
          '',
          '',
          '',
          'https://evil.example',
          'http://localhost.evil.example',
          'null',
        ),
      },
      { requiredKeys: ['content-type'] },
    )
    .map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== '')));
}

const RAW_BODIES = [
  'not json',
  '{"a":',
  '{',
  '[',
  '"',
  '\uFEFF{}',
  '{}',
  '[]',
  'null',
  '0',
  'true',
  '"string"',
  '{"__proto__":{"x":1}}',
  'NaN',
  '1e400',
];

export function requestArb(routes: readonly Route[], withAnonymous: boolean): fc.Arbitrary<FuzzRequest> {
  const perRoute = routes.map((route) => {
    const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const params = names.length
      ? fc.tuple(...names.map((n) => paramArb(route, n)))
      : fc.constant([] as string[]);
    const body: fc.Arbitrary<Json | undefined> = route.doc.body
      ? fromSchema(jsonSchemaOf(route.doc.body))
      : fc.option(fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>, { nil: undefined, freq: 3 });
    return fc
      .record({
        params,
        body,
        mutation: fc.constantFrom(
          'none',
          'none',
          'none',
          ...Object.keys(MUTATIONS),
          'rawText',
          'deepNesting',
          'noBody',
          'method',
        ),
        headers: headerArb(),
        principal: withAnonymous
          ? fc.option(fc.constantFrom(...POOLS.principals, ...PROTO_NAMES), { nil: undefined, freq: 12 })
          : fc.constantFrom(...POOLS.principals, ...PROTO_NAMES),
        rawText: fc.constantFrom(...RAW_BODIES),
        method: fc.constantFrom(...METHODS),
        query: fc.constantFrom('', '', '', '?x=1', '?limit=-1&limit=2', '?%zz', `?q=${'z'.repeat(500)}`),
        seed: fc.integer(),
      })
      .map((g): FuzzRequest => {
        let i = 0;
        const path = route.path.replace(/\{(\w+)\}/g, () => g.params[i++] ?? 'x') + g.query;
        const rnd = mulberry32(g.seed);
        let value = g.body;
        let text: string | undefined;
        let method = route.method;
        if (g.mutation in MUTATIONS && value !== undefined) value = MUTATIONS[g.mutation]!(value, rnd);
        if (g.mutation === 'rawText') text = g.rawText;
        else if (g.mutation === 'deepNesting') text = deepText(rnd);
        else if (g.mutation === 'noBody') text = undefined;
        else text = value === undefined ? undefined : JSON.stringify(value);
        if (g.mutation === 'method') method = g.method;
        return {
          route: `${route.method} ${route.path}`,
          mutation: g.mutation,
          method,
          path,
          headers: g.headers,
          ...(text === undefined ? {} : { body: text }),
          ...(g.principal === undefined ? {} : { principal: g.principal }),
        };
      });
  });
  return fc.oneof(...perRoute);
}

// ---- checks ----------------------------------------------------------------------------------------------

/** What is wrong with a response, or undefined. */
export function checkResponse(req: RawRequest, res: RawResponse): string | undefined {
  if (res.status >= 500) return `${res.status}: ${res.text.slice(0, 300)}`;
  if (res.status < 400) {
    if (res.text && req.method !== 'HEAD') {
      if (!/^application\/json/.test(res.headers['content-type'] ?? ''))
        return `2xx content-type ${res.headers['content-type']}`;
      try {
        JSON.parse(res.text);
      } catch {
        return '2xx body is not JSON';
      }
    }
    return undefined;
  }
  if (res.headers['content-type'] !== 'application/problem+json')
    return `${res.status} with content-type ${res.headers['content-type']}`;
  if (req.method === 'HEAD') return undefined;
  let p: any;
  try {
    p = JSON.parse(res.text);
  } catch {
    return `${res.status} body is not JSON: ${res.text.slice(0, 200)}`;
  }
  if (typeof p?.type !== 'string' || typeof p.title !== 'string' || typeof p.detail !== 'string')
    return `${res.status} problem lacks type/title/detail: ${res.text.slice(0, 200)}`;
  if (p.status !== res.status) return `problem.status ${p.status} but HTTP ${res.status}`;
  if (p.reason !== undefined && typeof p.reason !== 'string') return 'problem.reason is not a string';
  if (p.errors !== undefined) {
    if (!Array.isArray(p.errors)) return 'problem.errors is not a list';
    for (const e of p.errors)
      if (typeof e?.path !== 'string' || typeof e?.message !== 'string')
        return `problem.errors entry without path/message: ${JSON.stringify(e)}`;
  }
  return undefined;
}

/** A stable text of the table, for before/after comparison. */
export function canonical(items: Record<string, unknown>[]): string {
  return JSON.stringify(items, (_k, v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

export interface FuzzFailure {
  route: string;
  mutation: string;
  method: string;
  path: string;
  principal?: string;
  headers?: Record<string, string>;
  body?: string;
  status: number;
  problem: string;
}

export interface FuzzReport {
  seed: number;
  requests: number;
  byStatus: Record<string, number>;
  byRoute: Record<string, number>;
  refusals: number;
  /** Generated requests the HTTP client would not send (not counted in requests). */
  unsendable: number;
  /** Failures by known cause (see knownCause), so a long run reads at a glance. */
  failureCauses: Record<string, number>;
  refusalsCompared: number;
  readsCompared: number;
  failures: FuzzFailure[];
  failureCount: number;
  durationMs: number;
}

export interface FuzzOptions {
  routes: readonly Route[];
  invoke: Invoke;
  dump: () => Promise<Record<string, unknown>[]>;
  requests: number;
  seed?: number;
  /** Stop early after this long (the request count is then lower). */
  timeLimitMs?: number;
  withAnonymous?: boolean;
  /** The server is the local HTTP one, which must refuse cross-site browser writes (local/api-server.ts). */
  crossSite?: boolean;
  /** Called after a 2xx POST /v1/reconcile, e.g. to wait for the workflows it started. */
  afterReconcile?: () => Promise<void>;
  log?: (line: string) => void;
}

export async function runFuzz(o: FuzzOptions): Promise<FuzzReport> {
  const seed = o.seed ?? Date.now() % 2 ** 31;
  const t0 = Date.now();
  const reqs = fc.sample(requestArb(o.routes, o.withAnonymous ?? true), { numRuns: o.requests, seed });
  const report: FuzzReport = {
    seed,
    requests: 0,
    byStatus: {},
    byRoute: {},
    refusals: 0,
    unsendable: 0,
    failureCauses: {},
    refusalsCompared: 0,
    readsCompared: 0,
    failures: [],
    failureCount: 0,
    durationMs: 0,
  };
  const takesBody = new Set(o.routes.filter((r) => r.doc.body).map((r) => `${r.method} ${r.path}`));
  let before = canonical(await o.dump());
  for (const req of reqs) {
    if (o.timeLimitMs && Date.now() - t0 > o.timeLimitMs) break;
    let res: RawResponse;
    try {
      res = await o.invoke(req);
    } catch (e) {
      // A request the HTTP client itself refuses to send (an invalid URL) never reached the API.
      if (
        /invalid url|failed to parse|invalid header/i.test(
          `${(e as Error).message} ${(e as any).cause?.message ?? ''}`,
        )
      ) {
        report.unsendable++;
        continue;
      }
      res = { status: 599, headers: {}, text: `transport error: ${(e as Error).message}` };
    }
    report.requests++;
    report.byStatus[res.status] = (report.byStatus[res.status] ?? 0) + 1;
    report.byRoute[req.route] = (report.byRoute[req.route] ?? 0) + 1;
    let problem = checkResponse(req, res);
    if (!problem && res.status < 300)
      problem = mustBeRefused(req, { crossSite: o.crossSite ?? false, takesBody });
    if (!problem && o.crossSite) problem = crossSiteProblem(req, res);
    const isReconcile = req.method === 'POST' && req.path.startsWith('/v1/reconcile') && res.status < 300;
    if (isReconcile) await o.afterReconcile?.();
    const after = canonical(await o.dump());
    if (res.status >= 400) {
      report.refusals++;
      report.refusalsCompared++;
      if (!problem && after !== before) problem = `refused with ${res.status} but the table changed`;
    } else if ((req.method === 'GET' || req.method === 'HEAD') && !problem) {
      report.readsCompared++;
      if (after !== before) problem = `a read (${res.status}) changed the table`;
    }
    if (problem) {
      report.failureCount++;
      const cause = knownCause(req, problem);
      report.failureCauses[cause] = (report.failureCauses[cause] ?? 0) + 1;
      if (report.failures.length < 25)
        report.failures.push({
          route: req.route,
          mutation: req.mutation,
          method: req.method,
          path: req.path.slice(0, 200),
          principal: req.principal,
          headers: req.headers,
          body: req.body?.slice(0, 300),
          status: res.status,
          problem,
        });
      o.log?.(`FAIL ${req.method} ${req.path.slice(0, 80)} → ${res.status}: ${problem}`);
    }
    before = after;
  }
  report.durationMs = Date.now() - t0;
  return report;
}

/** The bugs this suite found (see test/integration/hardening/bugs.test.ts), recognised from the request. */
export function knownCause(req: RawRequest, problem: string): string {
  if (!problem.startsWith('5')) return `other: ${problem.slice(0, 60)}`;
  const segments = req.path.split('?')[0]!.split('/');
  const undecodable = (s: string) => {
    try {
      decodeURIComponent(s);
      return false;
    } catch {
      return true;
    }
  };
  if (segments.some(undecodable))
    return 'malformed percent-encoding in a path parameter (URIError in router.ts)';
  if (segments.some((s) => Buffer.byteLength(s) > 1024))
    return 'path parameter over 1024 bytes reaches DynamoDB';
  if (req.body && /\d(\.\d+)?e-(1[3-9]\d|[2-9]\d\d)/i.test(req.body))
    return 'number below DynamoDB range (|x| < 1e-130) accepted by the schema';
  return `other 5xx: ${req.method} ${req.path.slice(0, 40)}`;
}
