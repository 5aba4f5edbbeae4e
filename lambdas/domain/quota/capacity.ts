import type { UnitPlacement } from '../headroom';
import { effectiveClass, type ModelClass } from '../model';
import { scale } from '../resources';
import { Accounting, type ScopeFigures, scopeFigures } from './accounting';
import { type Quota, QuotaBook } from './quota';
import type { AdmissionAsSeen, TakenBackAsSeen } from './telling';
import { type Scope, ScopeTree } from './tenancy';
import type { AdmissionModel, ModelAdmission, PendingReason } from './types';

/**
 * Read views (docs/design.md §4, GET /v1/capacity and a model's status), computed from the stored admissions so
 * the API needs no decision pass to answer.
 */

export interface ModelStatus {
  effectiveClass: ModelClass;
  /** Replicas running or starting (units whose take-back has finished). */
  admitted: number;
  /** Of those, replicas admitted while a scope on the owner's path was above its guarantee. */
  borrowed: number;
  pending: number;
  placements: UnitPlacement[];
  reasons: { reason: PendingReason; message: string; replicas: number }[];
  /**
   * Replicas taken back or displaced that have not run again: what took them (`by`, where the reader may see
   * it) and when, beside `reasons`.
   */
  takenBack: TakenBackAsSeen[];
}

export function modelStatus(
  model: Pick<AdmissionModel, 'spec'>,
  admission?: ModelAdmission | AdmissionAsSeen,
): ModelStatus {
  const units = admission?.units ?? [];
  const ready = units.filter((u) => !u.takeBack);
  const merged = new Map<string, UnitPlacement>();
  for (const u of ready) {
    for (const pl of u.placements) {
      const key = `${pl.compute}\u0000${pl.profile}`;
      const m = merged.get(key);
      if (m) m.replicas += pl.replicas;
      else merged.set(key, { ...pl });
    }
  }
  const reasons = (admission?.pending ?? []).map((p) => ({
    reason: p.reason,
    message: p.message,
    replicas: p.replicas,
  }));
  return {
    effectiveClass: effectiveClass(model.spec),
    admitted: ready.reduce((n, u) => n + u.replicas, 0),
    borrowed: ready.filter((u) => u.borrowed).reduce((n, u) => n + u.replicas, 0),
    pending: reasons.reduce((n, r) => n + r.replicas, 0),
    placements: [...merged.values()].sort((a, b) =>
      a.compute < b.compute ? -1 : a.compute > b.compute ? 1 : 0,
    ),
    reasons,
    // The victim's own figures are in `message` already: the record's field for rewording it stays inside.
    takenBack: (admission?.takenBack ?? []).map(({ ownFigures: _f, ...t }) => ({
      ...t,
      ...(t.by ? { by: { ...t.by } } : {}),
    })),
  };
}

export interface ScopeCapacity extends ScopeFigures {
  /** Pending replicas of the scope's own models, by reason. */
  pending: Partial<Record<PendingReason, number>>;
  /** CapacityAtLimit: usage at a limit, or a request of the scope pending LimitExceeded or Headroom. */
  capacityAtLimit: boolean;
}

export interface CapacityView<C = unknown> {
  scopes: ScopeCapacity[];
  /** The cluster headroom as placement describes it (passed through). */
  cluster?: C;
}

export interface CapacityInput {
  scopes: readonly Scope[] | ScopeTree;
  quotas: readonly Quota[] | QuotaBook;
  models: readonly Pick<AdmissionModel, 'name' | 'owner'>[];
  admissions: readonly ModelAdmission[];
}

/** Per scope: guarantee, limit, usage, borrowed, atLimit, pending by reason; for one scope and its subtree if named. */
export function capacityView<C>(
  input: CapacityInput,
  opts: { scope?: string; cluster?: C } = {},
): CapacityView<C> {
  const tree = input.scopes instanceof ScopeTree ? input.scopes : new ScopeTree(input.scopes);
  const book = input.quotas instanceof QuotaBook ? input.quotas : new QuotaBook(tree, input.quotas);
  const acc = new Accounting(tree, book);
  const owner = new Map(input.models.map((m) => [m.name, m.owner ? (tree.ids.get(m.owner) ?? -1) : -1]));
  const pending: Partial<Record<PendingReason, number>>[] = Array.from({ length: tree.size }, () => ({}));
  for (const a of input.admissions) {
    const s = owner.get(a.model) ?? -1;
    if (s < 0) continue;
    for (const u of a.units) acc.charge(s, scale(u.resources, u.replicas), 1);
    for (const p of a.pending) pending[s]![p.reason] = (pending[s]![p.reason] ?? 0) + p.replicas;
  }
  const root = opts.scope === undefined ? -1 : tree.id(opts.scope);
  const scopes: ScopeCapacity[] = [];
  for (let i = 0; i < tree.size; i++) {
    if (root >= 0 && !tree.isAncestorOrSelf(root, i)) continue;
    const f = scopeFigures(acc, i);
    const p = pending[i]!;
    scopes.push({
      ...f,
      pending: p,
      capacityAtLimit: f.atLimit || (p.LimitExceeded ?? 0) > 0 || (p.Headroom ?? 0) > 0,
    });
  }
  return { scopes, ...(opts.cluster !== undefined ? { cluster: opts.cluster } : {}) };
}
