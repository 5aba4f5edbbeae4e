import type { Resources } from '../resources';
import type { QuotaBook } from './quota';
import type { ScopeTree } from './tenancy';

/**
 * Usage per scope, kept incrementally (docs/reference/quota-semantics.md §2): a unit admitted or released changes its
 * owner and every scope above it, O(depth). The decision code reads these sums and never recomputes them
 * (Kueue keeps its cache apart from its scheduler the same way).
 */
export class Accounting {
  /** index `scope * 3 + resource`. */
  readonly u: Float64Array;

  constructor(
    readonly tree: ScopeTree,
    readonly book: QuotaBook,
    u?: Float64Array,
  ) {
    this.u = u ?? new Float64Array(tree.size * 3);
  }

  /** Adds `sign` × res to the scope and every scope above it. A negative scope id (shared model) is a no-op. */
  charge(scope: number, res: Resources, sign: 1 | -1): void {
    if (scope < 0) return;
    const path = this.tree.pathOf[scope]!;
    const g = res.gpus * sign;
    const c = res.cores * sign;
    const m = res.memoryGb * sign;
    for (let j = 0; j < path.length; j++) {
      const b = path[j]! * 3;
      this.u[b] = this.u[b]! + g;
      this.u[b + 1] = this.u[b + 1]! + c;
      this.u[b + 2] = this.u[b + 2]! + m;
    }
  }

  /** What scope `s` and the scopes beneath it hold of resource `k` (0 gpus, 1 cores, 2 memoryGb). */
  used(s: number, k: number): number {
    return this.u[s * 3 + k]!;
  }

  usage(i: number): Resources {
    return { gpus: this.u[i * 3]!, cores: this.u[i * 3 + 1]!, memoryGb: this.u[i * 3 + 2]! };
  }

  borrowed(i: number): Resources {
    const g = this.book.g;
    return {
      gpus: Math.max(0, this.u[i * 3]! - g[i * 3]!),
      cores: Math.max(0, this.u[i * 3 + 1]! - g[i * 3 + 1]!),
      memoryGb: Math.max(0, this.u[i * 3 + 2]! - g[i * 3 + 2]!),
    };
  }

  /** usage − guarantee for one resource index (positive: borrowing). */
  over(i: number, k: number): number {
    return this.u[i * 3 + k]! - this.book.g[i * 3 + k]!;
  }

  /** True when usage reaches a limit in some resource (and the scope holds something of it). */
  atLimit(i: number): boolean {
    for (let k = 0; k < 3; k++) {
      const l = this.book.l[i * 3 + k]!;
      const u = this.u[i * 3 + k]!;
      if (u >= l - 1e-9 && (u > 0 || l > 0)) return true;
    }
    return false;
  }

  overLimit(i: number): boolean {
    for (let k = 0; k < 3; k++) if (this.u[i * 3 + k]! > this.book.l[i * 3 + k]! + 1e-9) return true;
    return false;
  }

  /** A copy whose changes do not reach this one: the state at the start of a pass, or a plan tried and dropped. */
  clone(): Accounting {
    return new Accounting(this.tree, this.book, this.u.slice());
  }
}

/** Per-scope figures as the capacity view and metrics show them. */
export interface ScopeFigures {
  scope: string;
  parent?: string;
  hasQuota: boolean;
  guarantee: Resources;
  limit: Partial<Resources>;
  usage: Resources;
  borrowed: Resources;
  atLimit: boolean;
  overLimit: boolean;
}

export function scopeFigures(acc: Accounting, i: number): ScopeFigures {
  const tree = acc.tree;
  const p = tree.parentOf[i]!;
  return {
    scope: tree.names[i]!,
    ...(p >= 0 ? { parent: tree.names[p]! } : {}),
    hasQuota: acc.book.hasQuota[i] === 1,
    guarantee: acc.book.guarantee(i),
    limit: acc.book.limit(i),
    usage: acc.usage(i),
    borrowed: acc.borrowed(i),
    atLimit: acc.atLimit(i),
    overLimit: acc.overLimit(i),
  };
}
