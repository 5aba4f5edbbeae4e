import type { Headroom, PlaceResult, ReplicaUnit } from '../headroom';
import type { Profile } from '../model';
import type { Resources } from '../resources';
import type { Accounting } from './accounting';
import { type Chosen, EPS, type Held, type Option, type Request, type Violation, vec } from './pass-state';
import type { QuotaBook } from './quota';
import type { ScopeTree } from './tenancy';
import type { VictimReason } from './types';

/**
 * Making room for a request that does not fit (docs/reference/quota-semantics.md §3–§4): take back what others
 * borrow, then displace the requester's own lower classes, all or nothing. Split the way Kueue splits its
 * classical preemption (pkg/scheduler/preemption):
 * - `VictimSearch` is the candidate iterator: the next unit worth taking, level by level, outer branches first;
 * - `RoomPlan.removeUntilFits` takes candidates off the pass's snapshot (usage and headroom) until the request
 *   fits: the classical loop;
 * - `RoomPlan.fillBack` puts back, last taken first, every victim the request turns out not to need;
 * - `RoomPlan.restore` puts a victim back; a plan that cannot be made restores all it took.
 * The pass (admission.ts) then commits a plan: the victims' room goes to the request in the same step.
 */

/** What a plan needs from the pass: its snapshot and the rules it shares with the request's own check. */
export interface RoomHost {
  readonly tree: ScopeTree;
  readonly book: QuotaBook;
  /** Usage as it stands: a plan takes victims off it, and puts back those it does not keep. */
  readonly acc: Accounting;
  readonly headroom: Headroom;
  /** Units that could still be victims in this pass; a plan takes them and gives back those it does not keep. */
  takeable: number;
  eligible(S: number, tot: Resources, K: number[]): boolean;
  headroomResources(S: number, tot: Resources): number[];
  /** Units held directly by a scope, in victim order. */
  sortedOwn(V: number): Held[];
  roots(): number[];
  unitFor(r: Request, profiles: Profile[]): ReplicaUnit;
}

/** A plan that makes the request fit: the headroom with its victims released and the request placed. */
export interface Room {
  headroom: Headroom;
  placed: Extract<PlaceResult, { ok: true }>;
  victims: Chosen[];
}

/** A room found, none (`false`), or a request that may not make room at all. */
export type RoomOutcome = Room | false | 'not-eligible';

/**
 * Tries to make room for request `r` with option `o`; `needHeadroom` when the headroom (not only quota) binds.
 * On success the victims stay taken off the pass's usage (the pass victimizes them); otherwise usage is as it was.
 */
export function makeRoom(host: RoomHost, r: Request, o: Option, needHeadroom: boolean): RoomOutcome {
  const S = r.ms.scope;
  if (S < 0) return false;
  // Only critical replicas count against a critical model's guarantee, and they are never victims: no room
  // can be made for it there.
  if (o.viol.some((v) => v.kind === 'critical-guarantee')) return false;
  const quotaBinding = [...new Set(o.viol.map((v) => v.k))];
  const headroomBinding = needHeadroom ? host.headroomResources(S, o.tot) : [];
  if (needHeadroom && headroomBinding.length === 0) return 'not-eligible';
  const binding = [...new Set([...quotaBinding, ...headroomBinding])].sort();
  if (!host.eligible(S, o.tot, binding)) return 'not-eligible';
  const plan = new RoomPlan(host, r, o, needHeadroom, binding, headroomBinding);
  if (!plan.removeUntilFits()) {
    plan.restore(plan.chosen);
    return false;
  }
  plan.fillBack();
  return plan.placeRequest();
}

/**
 * One take-back level: the scopes beneath `ancestor` outside the requester's branch (the orgs, for headroom,
 * above the top). The branch may take from outside itself at most its unused guarantee at this level.
 */
interface Level {
  /** The ancestor; -1 above the orgs. */
  ancestor: number;
  /** Its index in the owner's path (path.length above the orgs). */
  at: number;
  /** The child of the ancestor on the requester's side. */
  branch: number;
  /** Taken so far from outside the branch at this level, per resource. */
  taken: number[];
}

/** What the plan has left to gain: quota still short, and whether the headroom fits yet. */
interface Shortfall {
  readonly deficits: Violation[];
  headroomFits: boolean;
  readonly headroomBinding: readonly number[];
  readonly candidates: ReadonlySet<string> | undefined;
}

/**
 * The candidate iterator: the next unit worth taking. Take-back goes level by level, outer first (other orgs,
 * for headroom; then each ancestor down to the owner); among sibling branches the one that borrows most,
 * re-ranked after each pick; inside a scope in victim order. Displacement takes the requester's own scope's
 * strictly lower classes, once take-back has nothing left.
 */
class VictimSearch {
  /** What the request holds with the option being tried, per resource index. */
  private readonly requestTotal: readonly number[];

  constructor(
    private readonly host: RoomHost,
    private readonly r: Request,
    o: Option,
    private readonly levels: readonly Level[],
    private readonly binding: readonly number[],
    private readonly need: Shortfall,
  ) {
    this.requestTotal = vec(o.tot);
  }

  nextTakeBack(): { h: Held; level: number } | undefined {
    const { tree } = this.host;
    for (let li = 0; li < this.levels.length; li++) {
      const lv = this.levels[li]!;
      if (!this.branchWithinGuarantee(lv)) continue;
      const useful = this.usefulResources(lv.at);
      if (useful.length === 0) continue;
      const branches = (lv.ancestor < 0 ? this.host.roots() : tree.childrenOf[lv.ancestor]!).filter(
        (c) => c !== lv.branch,
      );
      const borrowing = branches.filter((c) => this.borrows(c, useful)).sort(this.mostBorrowing(useful));
      for (const c of borrowing) {
        const h = this.descend(c, useful, lv);
        if (h) return { h, level: li };
      }
      // The ancestor's own models, when it is itself above its guarantee (not at the owner: that is displacement).
      if (lv.ancestor >= 0 && lv.at > 0) {
        const over = useful.filter((k) => this.host.acc.over(lv.ancestor, k) > EPS);
        const h = over.length > 0 ? this.ownCandidate(lv.ancestor, over, lv) : undefined;
        if (h) return { h, level: li };
      }
    }
    return undefined;
  }

  nextDisplaced(): Held | undefined {
    const useful = this.usefulResources(0);
    if (useful.length === 0) return undefined;
    for (const h of this.host.sortedOwn(this.r.ms.scope)) {
      if (takeable(h) && h.ms.rank > this.r.ms.rank && this.helps(h, 0, useful)) return h;
    }
    return undefined;
  }

  /**
   * Judged against usage as it stands after the victims chosen so far: a branch whose own borrowers gave back may
   * then take from outside, and only up to its unused guarantee.
   */
  private branchWithinGuarantee(lv: Level): boolean {
    const { acc, book } = this.host;
    const t = this.requestTotal;
    return this.binding.every((k) => acc.used(lv.branch, k) + t[k]! <= book.guaranteed(lv.branch, k) + EPS);
  }

  /** The resources a victim taken at depth `at` would help with: quota still short there, and the headroom. */
  private usefulResources(at: number): number[] {
    const ks = new Set<number>();
    for (const d of this.need.deficits) if (d.deficit > EPS && d.at >= at) ks.add(d.k);
    if (!this.need.headroomFits) for (const k of this.need.headroomBinding) ks.add(k);
    return [...ks];
  }

  private quotaShortAt(at: number, k: number): boolean {
    return this.need.deficits.some((d) => d.deficit > EPS && d.at >= at && d.k === k);
  }

  private onCandidateCompute(h: Held): boolean {
    return h.unit.placements.some((pl) => this.need.candidates?.has(pl.compute));
  }

  private helps(h: Held, at: number, useful: readonly number[]): boolean {
    const v = vec(h.total);
    return useful.some(
      (k) =>
        v[k]! > 0 &&
        (this.quotaShortAt(at, k) ||
          (!this.need.headroomFits && this.need.headroomBinding.includes(k) && this.onCandidateCompute(h))),
    );
  }

  /** Within the branch's unused guarantee at this level (inside the owner's own subtree nothing is outside). */
  private withinUnusedGuarantee(h: Held, lv: Level): boolean {
    if (lv.at === 0) return true;
    const { acc, book } = this.host;
    const v = vec(h.total);
    return this.binding.every(
      (k) => lv.taken[k]! + v[k]! <= book.guaranteed(lv.branch, k) - acc.used(lv.branch, k) + EPS,
    );
  }

  private ownCandidate(V: number, useful: readonly number[], lv: Level): Held | undefined {
    for (const h of this.host.sortedOwn(V)) {
      if (takeable(h) && this.helps(h, lv.at, useful) && this.withinUnusedGuarantee(h, lv)) return h;
    }
    return undefined;
  }

  private borrows(scope: number, useful: readonly number[]): boolean {
    return useful.some((k) => this.host.acc.over(scope, k) > EPS);
  }

  private mostBorrowing(useful: readonly number[]) {
    const acc = this.host.acc;
    return (a: number, b: number) => {
      for (const k of useful) {
        const d = acc.over(b, k) - acc.over(a, k);
        if (Math.abs(d) > EPS) return d;
      }
      return a - b;
    };
  }

  /** Down from a branch root through scopes above their guarantee, most-borrowing child first. */
  private descend(C: number, useful: readonly number[], lv: Level): Held | undefined {
    const over = useful.filter((k) => this.host.acc.over(C, k) > EPS);
    if (over.length === 0) return undefined;
    const kids = this.host.tree.childrenOf[C]!.filter((c) => this.borrows(c, over)).sort(
      this.mostBorrowing(over),
    );
    for (const c of kids) {
      const h = this.descend(c, over, lv);
      if (h) return h;
    }
    return this.ownCandidate(C, over, lv);
  }
}

/**
 * Critical units are never victims: they are admitted within their owner's guarantee only. Units admitted in
 * this pass are never victims in it, and neither is a min whose model has an extra admitted in this pass: its
 * extras go with it, so taking the min would make the fresh extra a victim too.
 */
function takeable(h: Held): boolean {
  return h.alive && !h.fresh && h.ms.cls !== 'critical' && !(h.unit.kind === 'min' && h.ms.admittedNow);
}

/** One plan: the victims chosen so far, taken off the pass's snapshot, and what is still short. */
class RoomPlan {
  readonly chosen: Chosen[] = [];
  private readonly need: Shortfall;
  private readonly levels: Level[] = [];
  private readonly search: VictimSearch;
  private readonly unit: ReplicaUnit;
  /** The headroom with the victims released, made once quota no longer binds. */
  private working: Headroom | undefined;
  private placed: Extract<PlaceResult, { ok: true }> | undefined;

  constructor(
    private readonly host: RoomHost,
    r: Request,
    o: Option,
    private readonly needHeadroom: boolean,
    binding: number[],
    headroomBinding: number[],
  ) {
    const S = r.ms.scope;
    const path = host.tree.pathOf[S]!;
    const deficits = o.viol.map((v) => ({ ...v }));
    this.unit = host.unitFor(r, [o.p]);
    this.need = {
      deficits,
      headroomFits: !needHeadroom,
      headroomBinding,
      candidates: needHeadroom ? new Set(host.headroom.candidateComputes(this.unit)) : undefined,
    };
    // Levels, outer first: other orgs (headroom only), then each ancestor down to the owner itself.
    const topAt = deficits.reduce((m, v) => Math.max(m, v.at), -1);
    for (let at = needHeadroom ? path.length : topAt; at >= 0; at--) {
      this.levels.push({
        ancestor: at === path.length ? -1 : path[at]!,
        at,
        branch: at === 0 ? S : path[at - 1]!,
        taken: [0, 0, 0],
      });
    }
    this.search = new VictimSearch(host, r, o, this.levels, binding, this.need);
  }

  private quotaShort(): boolean {
    return this.need.deficits.some((d) => d.deficit > EPS);
  }

  /** The classical loop: take the next candidate until quota and headroom both fit; false when none is left. */
  removeUntilFits(): boolean {
    for (;;) {
      // Without a victim the headroom is as it was when the request failed: no copy to try it on.
      if (!this.quotaShort() && (this.need.headroomFits || this.chosen.length > 0)) {
        if (this.need.headroomFits) return true;
        this.working ??= this.without(this.chosen);
        const res = this.working.place(this.unit);
        if (res.ok) {
          this.placed = res;
          this.need.headroomFits = true;
          return true;
        }
      }
      const tb = this.search.nextTakeBack();
      const displaced = tb ? undefined : this.search.nextDisplaced();
      if (!tb && !displaced) return false;
      const reason: VictimReason = tb ? 'TakenBackForScope' : 'DisplacedByHigherClass';
      const level = tb ? tb.level : -1;
      const h = tb ? tb.h : displaced!;
      this.take(h, reason, level);
      // A model cannot run with fewer than min: its extras go with its min.
      if (h.unit.kind === 'min') {
        const minPick = this.chosen[this.chosen.length - 1]!;
        for (const x of h.ms.held)
          if (x.alive && x.unit.kind === 'extra') this.take(x, reason, level, minPick);
      }
    }
  }

  /**
   * Fill-back: put back any victim that turns out not to be needed, last chosen first. The last one is needed by
   * construction (the plan did not fit before it), unless it only came along with its min.
   */
  fillBack(): void {
    const picks = this.chosen;
    const lastNeeded = picks.length - 1;
    for (let i = picks.length - 1; i >= 0; i--) {
      if (i === lastNeeded && !picks[i]!.forcedBy && !picks.some((q) => q.dropped)) continue;
      const p = picks[i]!;
      if (p.dropped || (p.forcedBy && !p.forcedBy.dropped)) continue;
      if (!this.quotaHoldsWithout(p)) continue;
      let retried: { headroom: Headroom; placed: Extract<PlaceResult, { ok: true }> } | undefined;
      if (this.needHeadroom) {
        const headroom = this.without(picks.filter((q) => q !== p && !q.dropped));
        const res = headroom.place(this.unit);
        if (!res.ok) continue;
        retried = { headroom, placed: res };
      }
      p.dropped = true;
      this.restore([p]);
      if (retried) {
        this.working = retried.headroom;
        this.placed = retried.placed;
      }
      // A dropped min frees its forced extras to be judged on their own.
      if (p.h.unit.kind === 'min') i = picks.length;
    }
  }

  /** The request placed on the headroom without the victims kept; false (all restored) if it does not fit. */
  placeRequest(): RoomOutcome {
    const kept = this.chosen.filter((p) => !p.dropped);
    // The victims' room goes to the request in the same step, so nobody else can take it.
    if (!this.working) {
      const headroom = this.without(kept);
      const res = headroom.place(this.unit);
      if (!res.ok) {
        this.restore(kept);
        return false;
      }
      this.working = headroom;
      this.placed = res;
    }
    return { headroom: this.working, placed: this.placed!, victims: kept };
  }

  /** Takes a unit off the snapshot: its usage, the quota still short, the level's share, the working headroom. */
  private take(h: Held, reason: VictimReason, level: number, forcedBy?: Chosen): void {
    h.alive = false;
    if (!h.fresh) this.host.takeable--;
    this.chosen.push({ h, reason, level, ...(forcedBy ? { forcedBy } : {}) });
    this.host.acc.charge(h.scope, h.total, -1);
    const v = vec(h.total);
    for (const d of this.need.deficits)
      if (this.host.tree.isAncestorOrSelf(d.scope, h.scope)) d.deficit -= v[d.k]!;
    if (level >= 0) for (let k = 0; k < 3; k++) this.levels[level]!.taken[k]! += v[k]!;
    this.working?.release(h.unit.id);
  }

  /** Puts victims back on the snapshot's usage (Kueue's restoreSnapshot): alive, takeable and charged again. */
  restore(picks: readonly Chosen[]): void {
    for (const p of picks) {
      p.h.alive = true;
      if (!p.h.fresh) this.host.takeable++;
      this.host.acc.charge(p.h.scope, p.h.total, 1);
      const v = vec(p.h.total);
      for (const d of this.need.deficits)
        if (this.host.tree.isAncestorOrSelf(d.scope, p.h.scope)) d.deficit += v[d.k]!;
    }
  }

  /** Whether quota still fits with `p` put back. */
  private quotaHoldsWithout(p: Chosen): boolean {
    const v = vec(p.h.total);
    return this.need.deficits.every(
      (d) => !this.host.tree.isAncestorOrSelf(d.scope, p.h.scope) || d.deficit + v[d.k]! <= EPS,
    );
  }

  /** A copy of the pass's headroom with these victims released. */
  private without(picks: readonly Chosen[]): Headroom {
    const W = this.host.headroom.clone();
    for (const p of picks) W.release(p.h.unit.id);
    return W;
  }
}
