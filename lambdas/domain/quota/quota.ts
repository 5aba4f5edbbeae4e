import * as z from 'zod';
import { sameValue } from '../compute';
import { DomainError, type FieldIssue } from '../errors';
import { RESOURCES, type Resource, type Resources } from '../resources';
import { numberAt, type RuleIssue, refineWith } from '../rules';
import type { ScopeTree } from './tenancy';

/**
 * Quotas (docs/reference/quota-semantics.md §1): a guarantee and an optional limit per resource. A missing guarantee
 * dimension is 0, a missing limit dimension is unlimited, and a scope without a quota guarantees the sum of
 * its children's and limits nothing. Validation works on the whole next set of quotas, so that every rule of
 * the tree is checked the same way whichever scope is written.
 */

const amounts = z.strictObject({
  gpus: z.number().int('whole GPUs only').min(0).max(1_000_000).optional(),
  cores: z.number().min(0).max(100_000_000).optional(),
  memoryGb: z.number().min(0).max(1_000_000_000).optional(),
});

/** A quota's own rule (paths relative to the quota): each limit at least the guarantee of its resource. */
export function quotaSpecIssues(q: unknown): RuleIssue[] {
  const o = (q ?? {}) as { guarantee?: unknown; limit?: unknown };
  return RESOURCES.flatMap((r) => {
    const [g, l] = [numberAt(o.guarantee, r) ?? 0, numberAt(o.limit, r)];
    if (l === undefined || l >= g) return [];
    return [
      {
        path: ['limit', r],
        message: `limit.${r} (${l}) is below guarantee.${r} (${g}); raise the limit or lower the guarantee`,
      },
    ];
  });
}

/** The body of PUT /v1/quotas/{scope}. */
export const QuotaSpecSchema = z
  .strictObject({
    guarantee: amounts.default({}),
    limit: amounts.optional(),
  })
  // Per resource: a type error in one resource leaves the others compared (numberAt reads what parsed).
  .superRefine(...refineWith(quotaSpecIssues));
export type QuotaSpec = z.output<typeof QuotaSpecSchema>;

export interface Quota {
  scope: string;
  guarantee: Partial<Resources>;
  limit?: Partial<Resources>;
}

/** The same guarantee and limit (a missing limit and an empty one both limit nothing): an apply that writes nothing. */
export function sameQuota(a: Quota, b: Quota): boolean {
  return sameValue(a.guarantee, b.guarantee) && sameValue(a.limit ?? {}, b.limit ?? {});
}

/** "12 gpus", "16 cores", "64 GB of memory": amounts as a person reads them, without float noise. */
export function amount(r: Resource, n: number): string {
  const v = Number.isFinite(n) ? Math.round(n * 1000) / 1000 : n;
  if (r === 'gpus') return `${v} gpu${v === 1 ? '' : 's'}`;
  if (r === 'cores') return `${v} core${v === 1 ? '' : 's'}`;
  return `${v} GB of memory`;
}

/** The word for a resource in "a 4-gpu replica" and in lists of what binds. */
export const RESOURCE_WORD: Record<Resource, string> = { gpus: 'gpus', cores: 'cores', memoryGb: 'memory' };

/**
 * Guarantees and limits per scope id, with the inheritance rules applied: `g` is the effective guarantee
 * (own, or the children's sum when the scope has no quota), `l` the own limit (Infinity when none).
 * Layout: index `scope * 3 + resource`, so accounting can run over typed arrays.
 */
export class QuotaBook {
  readonly g: Float64Array;
  readonly l: Float64Array;
  readonly hasQuota: Uint8Array;
  /**
   * 1 where a quota on the scope's path speaks of the resource (a guarantee above 0 or a limit): only those
   * count for "within its guarantee" and "borrowed", so GPU-only quotas leave cores and memory out of it.
   */
  readonly speaks: Uint8Array;

  constructor(
    readonly tree: ScopeTree,
    quotas: readonly Quota[],
  ) {
    const n = tree.size;
    this.g = new Float64Array(n * 3);
    this.l = new Float64Array(n * 3).fill(Number.POSITIVE_INFINITY);
    this.hasQuota = new Uint8Array(n);
    for (const q of quotas) {
      const i = tree.ids.get(q.scope);
      if (i === undefined) continue; // a quota of a deleted scope imposes nothing
      this.hasQuota[i] = 1;
      RESOURCES.forEach((r, k) => {
        this.g[i * 3 + k] = q.guarantee[r] ?? 0;
        const lim = q.limit?.[r];
        if (lim !== undefined) this.l[i * 3 + k] = lim;
      });
    }
    // Children before parents, so a scope without a quota can sum what is beneath it.
    const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => tree.depthOf[b]! - tree.depthOf[a]!);
    for (const i of order) {
      if (this.hasQuota[i]) continue;
      for (const c of tree.childrenOf[i]!)
        for (let k = 0; k < 3; k++) this.g[i * 3 + k]! += this.g[c * 3 + k]!;
    }
    this.speaks = new Uint8Array(n * 3);
    for (let j = order.length - 1; j >= 0; j--) {
      const i = order[j]!;
      const p = tree.parentOf[i]!;
      for (let k = 0; k < 3; k++) {
        const own = this.g[i * 3 + k]! > 0 || Number.isFinite(this.l[i * 3 + k]!);
        this.speaks[i * 3 + k] = own || (p >= 0 && this.speaks[p * 3 + k] === 1) ? 1 : 0;
      }
    }
  }

  /** The effective guarantee of scope `s` in resource `k` (0 gpus, 1 cores, 2 memoryGb). */
  guaranteed(s: number, k: number): number {
    return this.g[s * 3 + k]!;
  }

  /** The own limit of scope `s` in resource `k`; Infinity when unlimited. */
  limited(s: number, k: number): number {
    return this.l[s * 3 + k]!;
  }

  /** Whether a quota on the path of scope `s` speaks of resource `k` (see `speaks`). */
  speaksOf(s: number, k: number): boolean {
    return this.speaks[s * 3 + k] === 1;
  }

  guarantee(i: number): Resources {
    return { gpus: this.g[i * 3]!, cores: this.g[i * 3 + 1]!, memoryGb: this.g[i * 3 + 2]! };
  }

  /** The own limit per resource; undefined where unlimited. */
  limit(i: number): Partial<Resources> {
    const out: Partial<Resources> = {};
    RESOURCES.forEach((r, k) => {
      const v = this.l[i * 3 + k]!;
      if (Number.isFinite(v)) out[r] = v;
    });
    return out;
  }
}

export interface QuotaIssue {
  scope: string;
  message: string;
}

/** Every rule of §1 checked over a whole set of quotas. */
export function validateQuotas(tree: ScopeTree, quotas: readonly Quota[]): QuotaIssue[] {
  const issues: QuotaIssue[] = [];
  const seen = new Set<string>();
  for (const q of quotas) {
    if (!tree.has(q.scope)) issues.push({ scope: q.scope, message: `scope ${q.scope} does not exist` });
    if (seen.has(q.scope)) issues.push({ scope: q.scope, message: `${q.scope} has two quotas` });
    seen.add(q.scope);
    for (const r of RESOURCES) {
      const g = q.guarantee[r] ?? 0;
      const l = q.limit?.[r];
      if (!(g >= 0) || (l !== undefined && !(l >= 0))) {
        issues.push({ scope: q.scope, message: `${q.scope}: ${RESOURCE_WORD[r]} must be 0 or more` });
      }
      if (l !== undefined && l < g) {
        issues.push({
          scope: q.scope,
          message: `${q.scope} limits ${RESOURCE_WORD[r]} to ${amount(r, l)}, below its guarantee of ${amount(r, g)}`,
        });
      }
    }
  }
  const book = new QuotaBook(tree, quotas);
  for (let i = 0; i < tree.size; i++) {
    const name = tree.names[i]!;
    RESOURCES.forEach((r, k) => {
      if (book.hasQuota[i]) {
        let sum = 0;
        for (const c of tree.childrenOf[i]!) sum += book.guaranteed(c, k);
        const g = book.guaranteed(i, k);
        if (sum > g + 1e-9) {
          issues.push({
            scope: name,
            message: `${name} guarantees ${amount(r, sum)} to its children but holds ${Math.round(g * 1000) / 1000}`,
          });
        }
      }
      const own = book.limited(i, k);
      if (!Number.isFinite(own)) return;
      // The nearest ancestor with a limit caps this one: a scope without a quota imposes nothing in between.
      for (let a = tree.parentOf[i]!; a >= 0; a = tree.parentOf[a]!) {
        const cap = book.limited(a, k);
        if (!Number.isFinite(cap)) continue;
        if (own > cap) {
          issues.push({
            scope: name,
            message: `${name} limits ${RESOURCE_WORD[r]} to ${amount(r, own)}, above ${tree.names[a]}'s limit of ${amount(r, cap)}`,
          });
        }
        break;
      }
    });
  }
  return issues;
}

export type QuotaWrite = { scope: string; delete: true } | (Quota & { delete?: false });

export type QuotaWriteResult =
  | { ok: true; quotas: Quota[]; quota?: Quota }
  | { ok: false; message: string; issues: QuotaIssue[] };

/**
 * Checks a quota write (set or delete) against the tree and the other quotas. Refuses it when it would add a
 * broken rule, naming the numbers; problems that were there before the write (none, if every write went
 * through here) do not block a write that leaves them as they were. Returns the next set of quotas to store.
 */
export function checkQuotaWrite(
  tree: ScopeTree,
  quotas: readonly Quota[],
  write: QuotaWrite,
): QuotaWriteResult {
  if (!tree.has(write.scope)) {
    return {
      ok: false,
      message: `scope ${write.scope} does not exist`,
      issues: [{ scope: write.scope, message: 'unknown scope' }],
    };
  }
  const rest = quotas.filter((q) => q.scope !== write.scope);
  const quota: Quota | undefined = write.delete
    ? undefined
    : {
        scope: write.scope,
        guarantee: { ...write.guarantee },
        ...(write.limit ? { limit: { ...write.limit } } : {}),
      };
  const next = quota ? [...rest, quota] : rest;
  const before = new Set(validateQuotas(tree, quotas).map((i) => i.message));
  const added = validateQuotas(tree, next).filter((i) => !before.has(i.message));
  if (added.length > 0) return { ok: false, message: added.map((i) => i.message).join('; '), issues: added };
  return { ok: true, quotas: next, ...(quota ? { quota } : {}) };
}

/** The same check as a 409 DomainError, for handlers that throw. */
export function assertQuotaWrite(tree: ScopeTree, quotas: readonly Quota[], write: QuotaWrite): Quota[] {
  const r = checkQuotaWrite(tree, quotas, write);
  if (r.ok) return r.quotas;
  const errors: FieldIssue[] = r.issues.map((i) => ({ path: i.scope, message: i.message }));
  throw new DomainError('conflict', `quota refused: ${r.message}`, { errors });
}
