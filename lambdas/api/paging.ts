import * as z from 'zod';
import type { FieldIssue } from '../domain/errors';
import { speakNames } from '../domain/names';
import { type ApiRequest, parseQuery } from './http';

/**
 * Lists answer in pages, as Kubernetes does (`?limit=` and `?continue=`; docs/design.md §4):
 * API Gateway refuses a proxy Lambda's answer over 6 MB with a 502, which one unpaged GET /v1/models reached at
 * a few thousand models. A page is cut from the list the service already filtered by tenancy, in a stable
 * order (the item's name, then its owner), and the token says only where the last page ended.
 */

/**
 * The page size when `limit` is absent. A typical model manifest (one profile, admitted, one pod) is about 1.6 KB
 * in the Lambda's answer, so 500 of them are about 0.8 MB, far below 6 MB, and 10,000 models take 21 requests.
 * The largest the schemas allow (16 profiles of 8 computes, a 1 KB source, the longest ARNs, 50 pods listed)
 * is about 78 KB: PAGE_BYTES cuts such a page at about 67 items instead (test/unit/api/paging.test.ts).
 */
export const DEFAULT_LIMIT = 500;
export const MAX_LIMIT = 1000;
/**
 * Most a page's items may take once the body is escaped into the Lambda's answer (its quotes doubled): 6 MB
 * is the answer's limit, and the envelope and headers need far less than the 1 MB left.
 */
export const PAGE_BYTES = 5 * 1024 * 1024;
/** Tokens are a few hundred bytes; anything longer was not made here. */
const MAX_TOKEN_CHARS = 4096;
const TOKEN_VERSION = 1;

/** The query of every paged list; routes with filters extend it (routes/pods.ts). */
export const LIST_PARAMS = {
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_LIMIT)
    .optional()
    .describe(
      `most items in this page (1 to ${MAX_LIMIT}, default ${DEFAULT_LIMIT}); a page may hold fewer, to stay under 6 MB`,
    ),
  continue: z
    .string()
    .min(1)
    .max(MAX_TOKEN_CHARS)
    .optional()
    .describe('metadata.continue of the previous page: the next page of the same list'),
};
export const ListQuery = z.strictObject(LIST_PARAMS);

/** Where an item sits in its list: the parts it is ordered by, as the caller reads them (names, never keys). */
export type Position = readonly string[];

interface Token {
  /** The list it continues: the path and the other query parameters, so it cannot page another list. */
  list: string;
  /** The position of the last item of the previous page. */
  after: Position;
  /** How many items at exactly `after` the previous pages held (twins the caller reads alike). */
  at: number;
}

const compare = (a: Position, b: Position): number => {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? '';
    const y = b[i] ?? '';
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
};

/** The list a token belongs to: the route's path and its filters, without the paging parameters. */
function listOf(req: ApiRequest): string {
  const filters = Object.entries(req.query)
    .filter(([k, v]) => k !== 'limit' && k !== 'continue' && v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`);
  return filters.length ? `${req.path.replace(/\/$/, '')}?${filters.join('&')}` : req.path.replace(/\/$/, '');
}

function encode(t: Token): string {
  return Buffer.from(JSON.stringify({ v: TOKEN_VERSION, ...t })).toString('base64url');
}

const TokenSchema = z.strictObject({
  v: z.literal(TOKEN_VERSION),
  list: z.string(),
  after: z.array(z.string()).min(1),
  at: z.number().int().min(1),
});

const AGAIN = 'start again without continue';

/** The token's position in this list, or the issue that says why it cannot be one. */
function decode(raw: string, list: string): Token | FieldIssue {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const t = TokenSchema.safeParse(parsed);
  if (!t.success) return { path: 'continue', message: `not a continue token of this API; ${AGAIN}` };
  if (t.data.list !== list)
    return {
      path: 'continue',
      message: `the token continues ${t.data.list}, not ${list}; ${AGAIN}, or send the same parameters`,
    };
  return t.data;
}

/**
 * The query of a paged list, parsed with `schema` (ListQuery, or a route's extension of it), or one 400 that
 * lists every issue: the schema's and the token's.
 */
export function parseListQuery<S extends z.ZodObject>(
  schema: S,
  req: ApiRequest,
): { query: z.output<S>; limit: number; from?: Token } {
  const raw = req.query.continue;
  const from = raw && raw.length <= MAX_TOKEN_CHARS ? decode(raw, listOf(req)) : undefined;
  const query = parseQuery(schema, req.query, from && 'path' in from ? [from] : []);
  const limit = (query as { limit?: number }).limit ?? DEFAULT_LIMIT;
  return { query, limit, ...(from ? { from: from as Token } : {}) };
}

/** Escaped into the Lambda's answer as a JSON string: what an item adds to the 6 MB. */
const answerBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(JSON.stringify(v)), 'utf8');

export interface Page<V> {
  items: V[];
  /** Present when more items follow: `continue` for the next page and how many items are left after this one. */
  metadata?: { continue: string; remainingItemCount: number };
}

/**
 * One page of `all` (the caller's whole list, already filtered by what it may see): the items after the token's
 * position in order, at most `limit`, rendered by `view` (only the page is, so a model's admission is read for
 * the page only), and fewer when they would pass PAGE_BYTES. A token carries only a position, so a caller who
 * forged one still reads nothing it could not list: the items are those of its own list after that position.
 */
export async function pageOf<T, V>(
  req: ApiRequest,
  all: readonly T[],
  position: (t: T) => Position,
  view: (page: T[]) => V[] | Promise<V[]>,
  parsed: { limit: number; from?: Token },
): Promise<Page<V>> {
  // Positions speak names: a twin's mark would tell that another resource of its name exists (domain/names.ts).
  const keyed = all.map((t) => ({ t, p: position(t).map(speakNames) }));
  keyed.sort((a, b) => compare(a.p, b.p));
  let start = 0;
  const { from } = parsed;
  if (from) {
    while (start < keyed.length && compare(keyed[start]!.p, from.after) < 0) start++;
    let seen = 0;
    while (start < keyed.length && seen < from.at && compare(keyed[start]!.p, from.after) === 0) {
      start++;
      seen++;
    }
  }
  const window = keyed.slice(start, start + parsed.limit);
  const rendered = await view(window.map((k) => k.t));
  let bytes = 0;
  let n = 0;
  while (n < rendered.length) {
    bytes += answerBytes(rendered[n]);
    // A lone item always goes: one manifest is far below 6 MB (a body is at most 256 KB).
    if (n > 0 && bytes > PAGE_BYTES) break;
    n++;
  }
  const end = start + n;
  if (end >= keyed.length) return { items: rendered.slice(0, n) };
  const after = keyed[end - 1]!.p;
  let at = 0;
  for (let i = end - 1; i >= 0 && compare(keyed[i]!.p, after) === 0; i--) at++;
  return {
    items: rendered.slice(0, n),
    metadata: { continue: encode({ list: listOf(req), after, at }), remainingItemCount: keyed.length - end },
  };
}

/** parseListQuery and pageOf in one, for a list without filters of its own; a bad query reads nothing. */
export async function listPage<T, V>(
  req: ApiRequest,
  all: () => Promise<readonly T[]>,
  position: (t: T) => Position,
  view: (page: T[]) => V[] | Promise<V[]> = (p) => p as unknown as V[],
): Promise<Page<V>> {
  const q = parseListQuery(ListQuery, req);
  return pageOf(req, await all(), position, view, q);
}

/** Computes and models: by name, then owner (shared first) where the caller sees two of a name. */
export const byNameAndOwner = (r: { name: string; owner?: string }): Position => [r.name, r.owner ?? ''];

/** Whether this is the first page: list-wide notes (skipped rows, truncated pods) come with it only. */
export const firstPage = (req: ApiRequest) => req.query.continue === undefined;
