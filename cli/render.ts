import type { Problem } from './client';

/** Text output: kubectl-style tables, usage bars, YAML/JSON, and problem+json as a person reads it. */

export type Row = (string | number | undefined | null)[];

/** Columns separated by three spaces, headers in capitals; the last column is not padded. */
export function table(headers: string[], rows: Row[]): string {
  const widths = columnWidths(headers, rows);
  return [headers, ...rows].map((r) => tableLine(r, widths)).join('\n');
}

/** How wide each column of `table` is. */
export function columnWidths(headers: string[], rows: Row[]): number[] {
  const cells = [headers, ...rows.map((r) => r.map(cell))];
  return headers.map((_, i) => Math.max(...cells.map((r) => width(r[i] ?? ''))));
}

/** One line of a table with the given widths: a row printed later lines up with the table above it. */
export function tableLine(row: Row, widths: number[]): string {
  const r = row.map(cell);
  return r
    .map((c, i) => (i === r.length - 1 ? c : c + ' '.repeat(Math.max(0, (widths[i] ?? 0) - width(c)))))
    .join('   ')
    .trimEnd();
}

function cell(v: string | number | undefined | null): string {
  if (v === undefined || v === null || v === '') return '-';
  return String(v);
}

// Code points, not UTF-16 units: the bar characters are one column each.
function width(s: string): number {
  return [...s].length;
}

/** yaml is loaded on first use: most commands print tables, and every process start counts. */
export function yaml(): typeof import('yaml') {
  return require('yaml');
}

export function toYaml(value: unknown): string {
  return yaml().stringify(value, { lineWidth: 0 }).trimEnd();
}

/** A list as YAML is a stream of documents, so `get -o yaml > f && apply -f f` round-trips. */
export function toYamlStream(items: unknown[]): string {
  return items.map(toYaml).join('\n---\n');
}

export function toJson(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** `error: Conflict (409, NodegroupExists): detail` and one indented line per field issue. */
export function formatProblem(status: number, p: Problem | undefined, raw: string, subject?: string): string {
  const head = [p?.title ?? statusTitle(status), `(${[status, p?.reason].filter(Boolean).join(', ')})`].join(
    ' ',
  );
  const detail = withCommands(p?.detail ?? (raw.trim().slice(0, 500) || 'no details given'));
  const lines = [`error: ${subject ? `${subject}: ` : ''}${head}: ${detail}`];
  for (const e of p?.errors ?? []) lines.push(`  ${e.path || '(body)'}: ${withCommands(e.message)}`);
  if (status === 403 && !p?.title) {
    // API Gateway's own refusals carry only {message}: point at the usual causes.
    lines.push('  hint: check the AWS credentials in use (aws sts get-caller-identity) and the region');
  }
  return lines.join('\n');
}

/**
 * The API's messages name its routes (they are read by any HTTP client); the CLI adds the command that does
 * the same after each route it knows, so a person at the terminal reads what to type.
 */
const ROUTE_COMMANDS: [RegExp, (...m: string[]) => string][] = [
  [
    /PUT \/v1\/(model|compute)s\/([\w.~-]+) or remove it with DELETE/g,
    (all, kind, name) =>
      `${all.replace(/ or remove.*/, '')} (llmcap apply -f FILE) or remove it with DELETE (llmcap delete ${kind} ${name})`,
  ],
  [
    /(?:PUT|POST) \/v1\/(?:model|compute)s(?:\/[\w.~{}-]+)?(?![\w/])/g,
    (all) => `${all} (llmcap apply -f FILE)`,
  ],
  [
    /GET \/v1\/(models|computes|pods|sources|scopes|quotas)(?![\w/])/g,
    (all, kind) => `${all} (llmcap get ${kind})`,
  ],
  [/GET \/v1\/capacity(?![\w/])/g, (all) => `${all} (llmcap capacity)`],
  [/POST \/v1\/reconcile(?![\w/])/g, (all) => `${all} (llmcap reconcile)`],
  [/GET \/v1\/reconcile(?![\w/])/g, (all) => `${all} (llmcap reconcile --list)`],
  [/POST \/v1\/scopes(?![\w/])/g, (all) => `${all} (llmcap scope create SCOPE --parent PARENT)`],
  [/PUT \/v1\/quotas\/([\w:/-]+)/g, (all, scope) => `${all} (llmcap quota set ${scope})`],
  [/GET \/v1\/openapi\.json/g, (all) => `${all} (llmcap --help lists the commands)`],
];

export function withCommands(text: string): string {
  let out = text;
  for (const [re, to] of ROUTE_COMMANDS) {
    out = out.replace(re, (...m) => {
      const [offset, whole] = m.slice(-2) as [number, string];
      // A route already followed by its command (by an earlier rule) is left as it is.
      if (whole.startsWith(' (llmcap', offset + String(m[0]).length)) return m[0];
      return to(...(m.slice(0, -2) as string[]));
    });
  }
  return out;
}

function statusTitle(status: number): string {
  const t: Record<number, string> = {
    400: 'Invalid request',
    401: 'Unauthenticated',
    403: 'Forbidden',
    404: 'Not found',
    409: 'Conflict',
    413: 'Payload too large',
    429: 'Too many requests',
    500: 'Internal error',
    502: 'Bad gateway',
    503: 'Service unavailable',
    504: 'Gateway timeout',
  };
  return t[status] ?? `HTTP ${status}`;
}

export const RESOURCES = ['gpus', 'cores', 'memoryGb'] as const;
export type Resource = (typeof RESOURCES)[number];
export type Amounts = Partial<Record<Resource, number>>;

const SHORT: Record<Resource, string> = { gpus: 'gpus', cores: 'cores', memoryGb: 'memory' };

/** `gpus=8,cores=64,memory=512`, in the form `quota set` accepts; unset dimensions are left out. */
export function amounts(a: Amounts | undefined, empty = '-'): string {
  if (!a) return empty;
  const parts = RESOURCES.filter((r) => typeof a[r] === 'number').map((r) => `${SHORT[r]}=${fmt(a[r]!)}`);
  return parts.length ? parts.join(',') : empty;
}

export function fmt(n: number): string {
  return Number.isInteger(n) ? String(n) : String(Math.round(n * 100) / 100);
}

export const BAR_LEGEND =
  '█ used within guarantee   ▓ borrowed   ░ unused guarantee   · room up to the limit';

/**
 * A bar of usage against guarantee and limit, scaled to the limit (or, without one, to what is held or
 * guaranteed): `█` used within the guarantee, `▓` borrowed, `░` guarantee not used, `·` room to the limit.
 * A scope over its limit ends in `!`; one without a limit ends in `>`.
 */
export function bar(usage: number, guarantee: number, limit: number | undefined, width = 16): string {
  const over = limit !== undefined && usage > limit;
  const scale = Math.max(limit ?? 0, usage, guarantee, 0);
  if (scale <= 0) return `[${' '.repeat(width)}]${limit === undefined ? '>' : ' '}`;
  let s = '';
  for (let i = 0; i < width; i++) {
    const v = ((i + 0.5) / width) * scale;
    if (v < Math.min(usage, guarantee)) s += '█';
    else if (v < usage) s += '▓';
    else if (v < guarantee) s += '░';
    else if (limit !== undefined && v < limit) s += '·';
    else s += ' ';
  }
  return `[${s}]${over ? '!' : limit === undefined ? '>' : ' '}`;
}

/** `10/8/16`: used / guaranteed / limit (∞ without one). */
export function figures(usage: number, guarantee: number, limit: number | undefined): string {
  return `${fmt(usage)}/${fmt(guarantee)}/${limit === undefined ? '∞' : fmt(limit)}`;
}

/** `key:  value` lines with the values aligned, for describe. */
export function fields(rows: [string, unknown][]): string {
  const w = Math.max(...rows.map(([k]) => k.length)) + 2;
  return rows
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${`${k}:`.padEnd(w)}${v === '' || v === null ? '-' : String(v)}`)
    .join('\n');
}

export function indent(s: string, n = 2): string {
  return s
    .split('\n')
    .map((l) => (l ? ' '.repeat(n) + l : l))
    .join('\n');
}

/** "3m", "2h", "5d" since an ISO time, as kubectl shows ages. */
export function age(iso: unknown, now = Date.now()): string | undefined {
  if (typeof iso !== 'string') return undefined;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return undefined;
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}
