import { demandTarget } from '../autoscaling';
import type { Headroom, PlaceResult, ReplicaUnit, UnitPlacement } from '../headroom';
import { effectiveClass, type ModelClass, type Profile, targetReplicas } from '../model';
import { perReplica, RESOURCES, type Resources, scale } from '../resources';
import { Accounting, type ScopeFigures, scopeFigures } from './accounting';
import { makeRoom, type RoomHost } from './make-room';
import {
  type Chosen,
  cmpStr,
  EPS,
  type Held,
  type MState,
  type Option,
  type Request,
  seq,
  type Violation,
  vec,
  victimOrder,
} from './pass-state';
import { amount, type Quota, QuotaBook } from './quota';
import { heldMessage, victimMessage } from './telling';
import { type Scope, ScopeTree } from './tenancy';
import type {
  AdmissionModel,
  AdmittedUnit,
  Binding,
  ModelAdmission,
  PendingEntry,
  PendingReason,
  TakenBack,
  Victim,
  VictimRef,
} from './types';

/**
 * The admission decision (docs/reference/quota-semantics.md §3–§5). One function, `decide`, runs a pass: it keeps what is
 * admitted, drops what is no longer wanted, orders the requests (within guarantee, class, oldest) and admits
 * each one that fits, making room by take-back or displacement for eligible requests, all or nothing.
 * `checkStart` answers the API with the same code on the current state and on an empty one.
 */

export interface DecideInput {
  scopes: readonly Scope[] | ScopeTree;
  quotas: readonly Quota[] | QuotaBook;
  models: readonly AdmissionModel[];
  /** The stored admission of each model (missing: nothing admitted yet). */
  admissions: readonly ModelAdmission[];
  /** Loaded with every admitted unit's placements under its unit id. The pass changes it: use Decision.headroom. */
  headroom: Headroom;
  /** ISO time of the pass. */
  now: string;
  /** Victims still stopping, as `<model>/<unitId>`: the units that took their room stay PendingTakeBack. */
  draining?: ReadonlySet<string>;
  /**
   * The replicas load asks for, per autoscaled model (domain/autoscaling.ts demandOf). A model with
   * `spec.autoscaling` and a demand here wants clamp(demand, min, max) instead of its scaling.target.
   */
  demand?: ReadonlyMap<string, number>;
}

export interface DecideOptions {
  /** Decide only these models' requests (the API's start of one model); other models are left exactly as they are. */
  only?: { models: readonly string[]; kinds?: readonly ('min' | 'extra')[] };
  /** The request is alone in an empty world (checkStart's "could it ever fit"): no take-back note in messages. */
  alone?: boolean;
}

export interface AdmittedEvent {
  model: string;
  unitId: string;
  replicas: number;
  profile: string;
  borrowed: boolean;
  victims: VictimRef[];
}

export interface ReleasedEvent {
  model: string;
  unitId: string;
  replicas: number;
  why: 'scaled-down' | 'removed' | 'changed' | 'min-not-admitted';
}

export interface ScopeSummary extends ScopeFigures {
  /** Pending replicas of the scope's own models, by reason. */
  pending: Partial<Record<PendingReason, number>>;
  /** A request of the scope is pending LimitExceeded or Headroom (CapacityAtLimit, docs/design.md §7). */
  refused: boolean;
}

export interface Decision {
  /** The next state, one per input model, in input order. */
  admissions: ModelAdmission[];
  /** Models whose admission differs from the stored one: the only items the store needs to write. */
  changed: string[];
  /** Admissions of models no longer in the catalog: the store deletes them. */
  removed: string[];
  admitted: AdmittedEvent[];
  released: ReleasedEvent[];
  victims: Victim[];
  scopes: ScopeSummary[];
  /** Scopes whose CapacityAtLimit is 1: usage at a limit, or a request refused for LimitExceeded or Headroom. */
  atLimit: string[];
  headroom: Headroom;
}

const CLASS_RANK: Record<ModelClass, number> = { critical: 0, standard: 1, opportunistic: 2 };
const NONE: Violation[] = [];

const sameResources = (a: Resources, b: Resources) =>
  Math.abs(a.gpus - b.gpus) < EPS &&
  Math.abs(a.cores - b.cores) < EPS &&
  Math.abs(a.memoryGb - b.memoryGb) < EPS;

class Pass implements RoomHost {
  readonly tree: ScopeTree;
  readonly book: QuotaBook;
  readonly acc: Accounting;
  headroom: Headroom;
  /**
   * What critical units alone hold per scope: a critical model runs within its owner's guarantee, and it is the
   * critical replicas that must fit it. Lower classes beside them borrow above it (up to the limits), and are
   * displaced only when a limit binds, so a critical model's growth never costs a standard model more than the
   * limit needs (issue 33: counting them made one critical replica displace a standard model's min).
   */
  readonly crit: Accounting;
  start!: { acc: Accounting; crit: Accounting; headroom: Headroom };
  readonly states: MState[] = [];
  readonly byName = new Map<string, MState>();
  /** Units held directly by each scope, in victim order once sorted. */
  readonly own: Held[][];
  private readonly ownSorted: Uint8Array;
  readonly admitted: AdmittedEvent[] = [];
  readonly released: ReleasedEvent[] = [];
  readonly victims: Victim[] = [];
  readonly removed: string[] = [];
  /** Units that could ever be victims in this pass (held from before it, owned, not critical). */
  takeable = 0;

  constructor(
    readonly input: DecideInput,
    readonly opts: DecideOptions,
  ) {
    this.tree = input.scopes instanceof ScopeTree ? input.scopes : new ScopeTree(input.scopes);
    this.book = input.quotas instanceof QuotaBook ? input.quotas : new QuotaBook(this.tree, input.quotas);
    this.acc = new Accounting(this.tree, this.book);
    this.crit = new Accounting(this.tree, this.book);
    this.headroom = input.headroom;
    this.own = Array.from({ length: this.tree.size }, () => []);
    this.ownSorted = new Uint8Array(this.tree.size);
  }

  // ---------------------------------------------------------------------------------------------------------
  // Loading: keep what is still wanted, release the rest

  load(): void {
    const only = this.opts.only ? new Set(this.opts.only.models) : undefined;
    const prevByModel = new Map(this.input.admissions.map((a) => [a.model, a]));
    const draining = this.input.draining;
    for (const m of this.input.models) {
      const scope = m.owner ? (this.tree.ids.get(m.owner) ?? -2) : -1;
      const cls = effectiveClass(m.spec);
      const prev = prevByModel.get(m.name);
      prevByModel.delete(m.name);
      // ISO times compare as strings: the earliest a model has been waiting since.
      let since = this.input.now;
      for (const p of prev?.pending ?? []) if (cmpStr(p.since, since) < 0) since = p.since;
      const ms: MState = {
        m,
        scope,
        cls,
        rank: CLASS_RANK[cls],
        min: m.spec.scaling.min,
        target: demandTarget(
          m.spec.scaling,
          m.spec.autoscaling !== undefined,
          this.input.demand?.get(m.name),
          Math.max(m.spec.scaling.min, Math.min(targetReplicas(m.spec.scaling), m.spec.scaling.max)),
        ),
        ...(prev ? { prev } : {}),
        held: [],
        pending: [],
        takenBack: prev?.takenBack?.map((t) => ({ ...t, by: { ...t.by } })) ?? [],
        since,
        active: only ? only.has(m.name) : true,
        dirty: prev === undefined && (only ? only.has(m.name) : true),
      };
      this.states.push(ms);
      this.byName.set(m.name, ms);
      const units = prev?.units ?? [];
      if (!ms.active) {
        // Left exactly as stored: a preview (?dryRun=All) decides one model without touching the others' state.
        ms.pending = prev?.pending.map((p) => ({ ...p })) ?? [];
        for (const u of units) this.hold(ms, u, false);
        continue;
      }
      const keep: AdmittedUnit[] = [];
      for (const u of units) {
        const p = m.spec.profiles.find((x) => x.name === u.profile);
        const stale =
          !p ||
          !sameResources(perReplica(p), u.resources) ||
          (u.kind === 'min' && (u.replicas !== ms.min || ms.min === 0));
        if (stale) this.drop(ms, u, 'changed');
        else keep.push(u);
      }
      // Scaling down releases the most recently started extras first.
      const wantExtras = Math.max(0, ms.min >= 1 ? ms.target - ms.min : ms.target);
      let extraCount = 0;
      for (const u of keep) if (u.kind === 'extra') extraCount++;
      let dropped: Set<AdmittedUnit> | undefined;
      if (extraCount > wantExtras) {
        const extras = keep
          .filter((u) => u.kind === 'extra')
          .sort((a, b) => cmpStr(a.admittedAt, b.admittedAt) || seq(a.id) - seq(b.id) || cmpStr(a.id, b.id));
        const excess = extras.slice(wantExtras).reverse();
        for (const u of excess) this.drop(ms, u, 'scaled-down');
        dropped = new Set(excess);
      }
      for (const u of keep) {
        if (dropped?.has(u)) continue;
        let unit = u;
        if (u.takeBack && !u.takeBack.victims.some((v) => draining?.has(`${v.model}/${v.unitId}`))) {
          const { takeBack: _, ...rest } = u;
          unit = rest;
          ms.dirty = true;
        }
        this.hold(ms, unit, false);
      }
    }
    for (const a of prevByModel.values()) {
      this.removed.push(a.model);
      for (const u of a.units) {
        this.headroom.release(u.id);
        this.released.push({ model: a.model, unitId: u.id, replicas: u.replicas, why: 'removed' });
      }
    }
    this.start = { acc: this.acc.clone(), crit: this.crit.clone(), headroom: this.headroom.clone() };
  }

  private drop(ms: MState, u: AdmittedUnit, why: ReleasedEvent['why']): void {
    this.headroom.release(u.id);
    this.released.push({ model: ms.m.name, unitId: u.id, replicas: u.replicas, why });
    ms.dirty = true;
  }

  private readonly times = new Map<string, number>();
  /** Units admitted in one pass share their admittedAt: parse each distinct time once. */
  private time(iso: string): number {
    let t = this.times.get(iso);
    if (t === undefined) {
      t = Date.parse(iso) || 0;
      this.times.set(iso, t);
    }
    return t;
  }

  private hold(ms: MState, unit: AdmittedUnit, fresh: boolean): Held {
    const scope = ms.scope >= 0 ? ms.scope : -1;
    const h: Held = {
      ms,
      unit,
      scope,
      total: scale(unit.resources, unit.replicas),
      alive: true,
      fresh,
      t: this.time(unit.admittedAt),
    };
    ms.held.push(h);
    if (fresh) ms.admittedNow = true;
    this.acc.charge(scope, h.total, 1);
    if (ms.cls === 'critical') this.crit.charge(scope, h.total, 1);
    if (scope >= 0 && !fresh) {
      this.own[scope]!.push(h);
      if (ms.cls !== 'critical') this.takeable++;
    }
    return h;
  }

  // ---------------------------------------------------------------------------------------------------------
  // Requests and their order

  requests(): Request[] {
    const kinds = new Set(this.opts.only?.kinds ?? ['min', 'extra']);
    const out: Request[] = [];
    for (const ms of this.states) {
      if (!ms.active) continue;
      if (ms.scope === -2) {
        ms.blocked = {
          reason: 'LimitExceeded',
          message: `owner ${ms.m.owner} is not a scope; set the owner to an existing scope, or empty for a shared model`,
          binding: { kind: 'own-limit', scope: ms.m.owner },
        };
      }
      const first = ms.m.spec.profiles[0];
      const per = first ? perReplica(first) : { gpus: 0, cores: 0, memoryGb: 0 };
      const cum = [0, 0, 0];
      const within = (n: number) => {
        if (ms.scope < 0) return true; // shared models have no quota to be beyond
        const v = vec(per);
        const S = ms.scope;
        let ok = true;
        for (let k = 0; k < 3; k++) {
          cum[k]! += v[k]! * n;
          if (
            v[k]! > 0 &&
            this.book.speaksOf(S, k) &&
            this.start.acc.used(S, k) + cum[k]! > this.book.guaranteed(S, k) + EPS
          ) {
            ok = false;
          }
        }
        return ok;
      };
      let hasMin = false;
      let extras = 0;
      for (const h of ms.held) {
        if (h.unit.kind === 'min') hasMin = true;
        else extras++;
      }
      if (ms.min >= 1 && !hasMin && kinds.has('min')) {
        out.push({ ms, kind: 'min', id: `${ms.m.name}#min`, replicas: ms.min, within: within(ms.min) });
      }
      const want = (ms.min >= 1 ? ms.target - ms.min : ms.target) - extras;
      if (want > 0 && kinds.has('extra')) {
        // Fresh ids fill the gaps left by released extras, so ids stay small and stable.
        const used = extras > 0 ? new Set(ms.held.map((h) => h.unit.id)) : undefined;
        let n = 1;
        for (let i = 0; i < want; i++) {
          while (used?.has(`${ms.m.name}#${n}`)) n++;
          const id = `${ms.m.name}#${n}`;
          used?.add(id);
          n++;
          out.push({ ms, kind: 'extra', id, replicas: 1, within: within(1) });
        }
      }
    }
    // Within guarantee first, then class, then the oldest (waiting since, then created); a model's own units
    // keep their order. Models are ranked by age once, so sorting the requests compares numbers only.
    const byAge = this.states
      .filter((ms) => ms.active)
      .sort(
        (a, b) =>
          cmpStr(a.since, b.since) || cmpStr(a.m.createdAt, b.m.createdAt) || cmpStr(a.m.name, b.m.name),
      );
    const age = new Map(byAge.map((ms, i) => [ms, i]));
    const n = out.length + 1;
    const keyed = out.map((r, i) => ({
      r,
      key: (((r.within ? 0 : 3) + r.ms.rank) * (byAge.length + 1) + age.get(r.ms)!) * n + i,
    }));
    keyed.sort((a, b) => a.key - b.key);
    return keyed.map((x) => x.r);
  }

  // ---------------------------------------------------------------------------------------------------------
  // One request

  violations(ms: MState, tot: Resources, acc: Accounting, crit: Accounting): Violation[] {
    const S = ms.scope;
    if (S < 0) return NONE;
    let out: Violation[] | undefined;
    const t = vec(tot);
    const path = this.tree.pathOf[S]!;
    for (let j = 0; j < path.length; j++) {
      const X = path[j]!;
      for (let k = 0; k < 3; k++) {
        if (t[k]! <= 0) continue;
        const cap = this.book.limited(X, k);
        const usage = acc.used(X, k);
        const d = usage + t[k]! - cap;
        if (d <= EPS) continue;
        out ??= [];
        out.push({
          kind: j === 0 ? 'own-limit' : 'ancestor-limit',
          scope: X,
          at: j,
          k,
          deficit: d,
          cap,
          usage,
        });
      }
    }
    if (ms.cls === 'critical') {
      // Critical runs only within its owner's guarantee, for the resources the owner has a guarantee of: its
      // critical replicas, with this one, fit the guarantee (what lower classes hold beside them borrows).
      for (let k = 0; k < 3; k++) {
        const g = this.book.guaranteed(S, k);
        if (g <= 0 || t[k]! <= 0) continue;
        const usage = crit.used(S, k);
        const d = usage + t[k]! - g;
        if (d <= EPS) continue;
        out ??= [];
        out.push({ kind: 'critical-guarantee', scope: S, at: 0, k, deficit: d, cap: g, usage });
      }
    }
    return out ?? NONE;
  }

  unitFor(r: Request, profiles: Profile[]): ReplicaUnit {
    return {
      id: r.id,
      model: r.ms.m.name,
      profiles,
      replicas: r.replicas,
      reach: this.tree.reach(r.ms.m.owner),
      ...(r.kind === 'min' && r.ms.cls === 'critical' ? { onDemandOnly: true } : {}),
    };
  }

  evaluate(r: Request): void {
    const ms = r.ms;
    if (ms.blocked) {
      this.addPending(ms, { ...ms.blocked, replicas: r.replicas });
      return;
    }
    const options: Option[] = ms.m.spec.profiles.map((p) => {
      const per = perReplica(p);
      const tot = scale(per, r.replicas);
      return { p, per, tot, viol: this.violations(ms, tot, this.acc, this.crit) };
    });
    const feasible =
      options.length === 1 && options[0]!.viol.length === 0
        ? options
        : options.filter((o) => o.viol.length === 0);
    let headroomMessage: string | undefined;
    if (feasible.length > 0) {
      const res = this.headroom.place(
        this.unitFor(
          r,
          feasible.map((o) => o.p),
        ),
      );
      if (res.ok) {
        this.admit(r, res, options.find((o) => o.p.name === res.profile.name)!, []);
        return;
      }
      headroomMessage = res.message;
    }
    let notEligible = false;
    const headroomFits = new Map<Option, boolean>();
    for (const o of options) {
      // A request that may not make room for its quota need not probe the headroom either.
      if (o.viol.length > 0 && !this.eligible(ms.scope, o.tot, [...new Set(o.viol.map((v) => v.k))])) {
        notEligible = true;
        continue;
      }
      // Nothing anyone could lose (a first pass, say): no plan to try, only the explanation to get right.
      if (this.takeable === 0) {
        if (o.viol.length === 0 && !this.eligible(ms.scope, o.tot, this.headroomResources(ms.scope, o.tot))) {
          notEligible = true;
        }
        continue;
      }
      // The same request shape against the same state fails the same way: retried pending requests of
      // one scope often come one after another with nothing admitted in between.
      const key = `${ms.scope}|${ms.rank}|${o.p.name}|${vec(o.per).join(',')}|${o.p.compute ?? ''}|${o.p.computes?.join(',') ?? ''}|${o.p.gpuType ?? ''}|${r.replicas}`;
      const known = this.failed.get(key);
      if (known !== undefined && known.epoch === this.epoch) {
        headroomFits.set(o, known.fits);
        if (known.plan === 'not-eligible') notEligible = true;
        continue;
      }
      const fits = o.viol.length === 0 ? false : this.probe(this.headroom, r, o.p);
      headroomFits.set(o, fits);
      const plan = makeRoom(this, r, o, !fits);
      if (plan && plan !== 'not-eligible') {
        this.headroom = plan.headroom;
        for (const p of plan.victims) this.victimize(p, r, o);
        this.admit(r, plan.placed, o, plan.victims);
        return;
      }
      this.failed.set(key, { epoch: this.epoch, fits, plan });
      if (plan === 'not-eligible') notEligible = true;
    }
    this.fail(r, options[0]!, headroomFits.get(options[0]!) ?? false, headroomMessage, notEligible);
  }

  /** Does the unit fit this headroom with this profile? Leaves the headroom as it was. */
  private probe(h: Headroom, r: Request, p: Profile): boolean {
    const res = h.place({ ...this.unitFor(r, [p]), id: `${r.id}?probe` });
    if (res.ok) h.release(`${r.id}?probe`);
    return res.ok;
  }

  /** Bumped by every change of usage or placement in the pass: failed plans are remembered per epoch. */
  private epoch = 0;
  private readonly failed = new Map<string, { epoch: number; fits: boolean; plan: false | 'not-eligible' }>();

  private admit(r: Request, res: Extract<PlaceResult, { ok: true }>, o: Option, picks: Chosen[]): void {
    this.epoch++;
    const ms = r.ms;
    const refs = picks.map((p) => ({
      model: p.h.ms.m.name,
      unitId: p.h.unit.id,
      scope: this.tree.names[p.h.scope]!,
    }));
    const unit: AdmittedUnit = {
      id: r.id,
      kind: r.kind,
      replicas: r.replicas,
      profile: res.profile.name,
      resources: perReplica(res.profile),
      placements: res.placements.map((pl: UnitPlacement) => ({ ...pl })),
      admittedAt: this.input.now,
      borrowed: false,
      ...(refs.length > 0 ? { takeBack: { victims: refs, since: this.input.now } } : {}),
    };
    const h = this.hold(ms, unit, true);
    unit.borrowed = this.borrowing(h.scope, o.tot);
    ms.dirty = true;
    // Replicas that run again settle the oldest take-back first.
    consumeTakenBack(ms.takenBack, r.replicas);
    this.admitted.push({
      model: ms.m.name,
      unitId: r.id,
      replicas: r.replicas,
      profile: unit.profile,
      borrowed: unit.borrowed,
      victims: refs,
    });
  }

  /** "The replica is borrowed if any scope on the path ends above its guarantee" (in a resource it holds). */
  private borrowing(S: number, tot: Resources): boolean {
    if (S < 0) return false;
    const t = vec(tot);
    for (const X of this.tree.pathOf[S]!) {
      // Only resources a quota on the path speaks of: cores nobody guarantees or limits are not "borrowed".
      for (let k = 0; k < 3; k++)
        if (t[k]! > 0 && this.book.speaksOf(X, k) && this.acc.over(X, k) > EPS) return true;
    }
    return false;
  }

  // ---------------------------------------------------------------------------------------------------------
  // What make-room.ts asks of the pass: take-back (§4) then displacement, all or nothing

  /**
   * Resources that bind for headroom: GPUs for a GPU replica (the scarce dimension), else the cores and memory
   * it holds that a quota speaks of (nothing guaranteed, nothing to reclaim).
   */
  headroomResources(S: number, tot: Resources): number[] {
    if (tot.gpus > 0) return [0];
    return [1, 2].filter((k) => vec(tot)[k]! > 0 && this.book.speaksOf(S, k));
  }

  /**
   * Eligible to make room: by itself within its owner's guarantee, or within, with current usage, the
   * guarantee of some ancestor below the top; only the binding resources count (#1974 in Kueue).
   */
  eligible(S: number, tot: Resources, K: number[]): boolean {
    if (S < 0 || K.length === 0) return false;
    const t = vec(tot);
    if (K.every((k) => t[k]! <= this.book.guaranteed(S, k) + EPS)) return true;
    const path = this.tree.pathOf[S]!;
    for (let j = 1; j < path.length - 1; j++) {
      const a = path[j]!;
      if (K.every((k) => this.acc.used(a, k) + t[k]! <= this.book.guaranteed(a, k) + EPS)) return true;
    }
    return false;
  }

  private rootList?: number[];
  roots(): number[] {
    if (!this.rootList) {
      this.rootList = [];
      for (let i = 0; i < this.tree.size; i++) if (this.tree.parentOf[i]! < 0) this.rootList.push(i);
    }
    return this.rootList;
  }

  sortedOwn(V: number): Held[] {
    if (!this.ownSorted[V]) {
      this.own[V]!.sort(victimOrder);
      this.ownSorted[V] = 1;
    }
    return this.own[V]!;
  }

  private victimize(p: Chosen, r: Request, o: Option): void {
    this.epoch++;
    const vm = p.h.ms;
    vm.held = vm.held.filter((h) => h !== p.h);
    vm.dirty = true;
    const owner = this.tree.names[r.ms.scope]!;
    const victimScope = this.tree.names[p.h.scope]!;
    const k = RESOURCES.find((res) => p.h.total[res] > 0 && o.tot[res] > 0) ?? 'gpus';
    const ki = RESOURCES.indexOf(k);
    const ownFigures =
      p.reason === 'TakenBackForScope'
        ? `${victimScope} holds ${amount(k, this.start.acc.used(p.h.scope, ki))} against a guarantee of ` +
          `${amount(k, this.book.guaranteed(p.h.scope, ki))}`
        : undefined;
    const by = { model: r.ms.m.name, unitId: r.id, scope: owner, class: r.ms.cls };
    const message = victimMessage(p.reason, by, ownFigures);
    const behind = { model: r.ms.m.name, unitId: r.id };
    const entry = {
      reason: p.reason,
      message,
      binding: { kind: 'victim' as const, scope: owner },
      behind,
      ...(ownFigures ? { ownFigures } : {}),
    };
    this.addPending(vm, { ...entry, replicas: p.h.unit.replicas });
    this.recordTakenBack(vm, {
      reason: p.reason,
      message,
      replicas: p.h.unit.replicas,
      by,
      at: this.input.now,
      ...(ownFigures ? { ownFigures } : {}),
    });
    // It waits behind the request that took it: no retry in this pass.
    vm.blocked ??= entry;
    this.victims.push({
      model: vm.m.name,
      unitId: p.h.unit.id,
      scope: victimScope,
      replicas: p.h.unit.replicas,
      reason: p.reason,
      message,
      forModel: r.ms.m.name,
      forUnit: r.id,
    });
  }

  // ---------------------------------------------------------------------------------------------------------
  // Failure: the binding constraint, in words

  private fail(
    r: Request,
    o: Option,
    fitsHeadroom: boolean,
    headroomMessage: string | undefined,
    notEligible: boolean,
  ): void {
    const ms = r.ms;
    const order = { 'own-limit': 0, 'critical-guarantee': 1, 'ancestor-limit': 2 } as const;
    const v = [...o.viol].sort((a, b) => order[a.kind] - order[b.kind] || a.at - b.at || a.k - b.k)[0];
    let reason: PendingReason;
    let message: string;
    let binding: Binding;
    if (v) {
      const res = RESOURCES[v.k]!;
      const scope = this.tree.names[v.scope]!;
      binding = { kind: v.kind, scope, resource: res, needed: round(v.deficit) };
      const holds = v.kind === 'critical-guarantee' ? 'its critical models hold' : 'it holds';
      const need = `${amount(res, v.deficit)} more needed (${holds} ${round(v.usage)}, this needs ${round(vec(o.tot)[v.k]!)})`;
      if (v.kind === 'critical-guarantee') {
        reason = 'InsufficientQuota';
        message = `${scope} guarantees ${amount(res, v.cap)} and a critical model runs only within its owner's guarantee: ${need}`;
      } else {
        reason = v.kind === 'own-limit' ? 'LimitExceeded' : 'InsufficientQuota';
        message = `${scope} is at its limit of ${amount(res, v.cap)}; ${need}`;
      }
      // Another request of this pass took the room when the constraint held against the pass's starting
      // state; the owner's own limit is LimitExceeded whoever took it (it will not fit until a quota changes).
      if (
        reason !== 'LimitExceeded' &&
        this.violations(ms, o.tot, this.start.acc, this.start.crit).length === 0
      ) {
        reason = 'NoLongerFits';
        message = `another request in this pass took the room: ${message}`;
      }
    } else {
      binding = { kind: 'headroom' };
      message = headroomMessage ?? `no compute can take a ${o.p.name} replica`;
      reason = 'Headroom';
      if (!fitsHeadroom && this.probe(this.start.headroom, r, o.p)) {
        reason = 'NoLongerFits';
        message = `another request in this pass took the room: ${message}`;
      }
    }
    if (notEligible && ms.scope >= 0 && reason !== 'LimitExceeded' && !this.opts.alone) {
      message += `; ${ms.m.name} would borrow beyond ${this.tree.names[ms.scope]}'s guarantee, so it takes nothing back`;
    }
    ms.blocked = { reason, message, binding };
    this.addPending(ms, { reason, message, binding, replicas: r.replicas });
  }

  /** One record per request that took from the model in a pass: its units merge. */
  private recordTakenBack(ms: MState, t: TakenBack): void {
    const same = ms.takenBack.find(
      (x) =>
        x.reason === t.reason && x.at === t.at && x.by.model === t.by.model && x.by.unitId === t.by.unitId,
    );
    if (same) same.replicas += t.replicas;
    else ms.takenBack.push(t);
  }

  addPending(ms: MState, e: Omit<PendingEntry, 'since'>): void {
    const same = ms.pending.find((p) => p.reason === e.reason && p.message === e.message);
    if (same) same.replicas += e.replicas;
    else ms.pending.push({ ...e, since: ms.since });
  }

  // ---------------------------------------------------------------------------------------------------------
  // After the requests: a model below its min holds nothing, and each model's next state

  finish(): Decision {
    for (const ms of this.states) {
      if (!ms.active) continue;
      const hasMin = ms.held.some((h) => h.unit.kind === 'min');
      if (ms.min >= 1 && !hasMin) {
        for (const h of ms.held.filter((x) => x.unit.kind === 'extra')) {
          ms.held = ms.held.filter((x) => x !== h);
          h.alive = false;
          this.acc.charge(h.scope, h.total, -1);
          if (ms.cls === 'critical') this.crit.charge(h.scope, h.total, -1);
          this.headroom.release(h.unit.id);
          this.released.push({
            model: ms.m.name,
            unitId: h.unit.id,
            replicas: h.unit.replicas,
            why: 'min-not-admitted',
          });
          const b = ms.blocked ?? {
            reason: 'NoLongerFits' as const,
            message: 'its min replicas are not admitted',
          };
          this.addPending(ms, { ...b, replicas: h.unit.replicas });
          ms.dirty = true;
        }
      }
      for (const h of ms.held) {
        const tb = h.unit.takeBack;
        if (!tb) continue;
        this.addPending(ms, {
          reason: 'PendingTakeBack',
          message: heldMessage(tb.victims),
          replicas: h.unit.replicas,
          binding: { kind: 'take-back' },
        });
      }
    }
    const admissions: ModelAdmission[] = [];
    const changed: string[] = [];
    for (const ms of this.states) {
      const units = ms.held.map((h) => h.unit);
      // A model scaled down (or whose replicas all run) has nothing taken left waiting: no record outlives that.
      if (ms.active) consumeTakenBack(ms.takenBack, -missingReplicas(ms, units));
      const a: ModelAdmission = {
        model: ms.m.name,
        units,
        pending: ms.pending,
        ...(ms.takenBack.length > 0 ? { takenBack: ms.takenBack } : {}),
      };
      admissions.push(a);
      if (
        ms.dirty ||
        !samePending(ms.prev?.pending ?? [], a.pending) ||
        !sameTakenBack(ms.prev?.takenBack ?? [], ms.takenBack)
      )
        changed.push(ms.m.name);
    }
    const scopes = this.summaries();
    return {
      admissions,
      changed,
      removed: this.removed,
      admitted: this.admitted,
      released: this.released,
      victims: this.victims,
      scopes,
      atLimit: scopes.filter((s) => s.atLimit || s.refused).map((s) => s.scope),
      headroom: this.headroom,
    };
  }

  private summaries(): ScopeSummary[] {
    const pending: Partial<Record<PendingReason, number>>[] = Array.from(
      { length: this.tree.size },
      () => ({}),
    );
    for (const ms of this.states) {
      if (ms.scope < 0) continue;
      for (const p of ms.pending)
        pending[ms.scope]![p.reason] = (pending[ms.scope]![p.reason] ?? 0) + p.replicas;
    }
    const out: ScopeSummary[] = [];
    for (let i = 0; i < this.tree.size; i++) {
      const f = scopeFigures(this.acc, i);
      const p = pending[i]!;
      out.push({ ...f, pending: p, refused: (p.LimitExceeded ?? 0) > 0 || (p.Headroom ?? 0) > 0 });
    }
    return out;
  }
}

function samePending(a: readonly PendingEntry[], b: readonly PendingEntry[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.reason !== y.reason || x.message !== y.message || x.replicas !== y.replicas || x.since !== y.since)
      return false;
  }
  return true;
}

/**
 * Settles `n` replicas of the oldest take-backs first; a negative `n` keeps only that many replicas on record
 * (the newest), for a model that no longer waits for more.
 */
function consumeTakenBack(list: TakenBack[], n: number): void {
  if (n < 0) {
    const total = list.reduce((s, t) => s + t.replicas, 0);
    n = total + n;
  }
  while (n > 0 && list.length > 0) {
    const t = list[0]!;
    const k = Math.min(n, t.replicas);
    t.replicas -= k;
    n -= k;
    if (t.replicas === 0) list.shift();
  }
}

/** Replicas the model wants and does not hold: `target` (at least its min). */
function missingReplicas(ms: MState, units: readonly AdmittedUnit[]): number {
  return Math.max(0, ms.target - units.reduce((n, u) => n + u.replicas, 0));
}

function sameTakenBack(a: readonly TakenBack[], b: readonly TakenBack[]): boolean {
  return a.length === b.length && a.every((x, i) => JSON.stringify(x) === JSON.stringify(b[i]));
}

const round = (n: number) => Math.round(n * 1000) / 1000;

/**
 * One decision pass. Pure and deterministic for the same input; the only state it changes is the headroom
 * given in (returned as `headroom`, possibly a different object after a take-back plan).
 */
export function decide(input: DecideInput, opts: DecideOptions = {}): Decision {
  const pass = new Pass(input, opts);
  pass.load();
  for (const r of pass.requests()) pass.evaluate(r);
  return pass.finish();
}

// -------------------------------------------------------------------------------------------------------------
// The API's check of a start

export type StartCheck =
  | { ok: true; decision: Decision }
  | { ok: false; reason: 'LimitExceeded' | 'Headroom'; message: string; binding?: Binding };

/** A headroom with room for anything: the quota side of "could it ever fit" when no empty headroom is given. */
class UnboundedHeadroom implements Headroom {
  place(unit: ReplicaUnit): PlaceResult {
    const p = unit.profiles[0]!;
    return { ok: true, profile: p, placements: [] };
  }
  release(): void {}
  clone(): Headroom {
    return this;
  }
  candidateComputes(): string[] {
    return [];
  }
}

/**
 * The API's decision for a model's start (its `min`, all or none), before anything is stored:
 * - refused (409) when it could never fit: its owner's or an ancestor's limit, a critical model's guarantee,
 *   or any compute, even with nothing else running (`emptyHeadroom`: the computes with nothing placed);
 * - refused LimitExceeded when its owner's limit binds now and displacing its own lower classes cannot help;
 * - otherwise ok, with the decision for its min against the current state (admitted, or pending with the
 *   reason the next reconcile retries), to be stored together with any victims in one serializable write.
 */
export function checkStart(
  input: DecideInput & { emptyHeadroom?: Headroom },
  model: AdmissionModel,
): StartCheck {
  const tree = input.scopes instanceof ScopeTree ? input.scopes : new ScopeTree(input.scopes);
  const book = input.quotas instanceof QuotaBook ? input.quotas : new QuotaBook(tree, input.quotas);
  const only = { models: [model.name], kinds: ['min'] as const };
  if (model.spec.scaling.min >= 1) {
    const empty = decide(
      {
        scopes: tree,
        quotas: book,
        models: [model],
        admissions: [],
        headroom: input.emptyHeadroom?.clone() ?? new UnboundedHeadroom(),
        now: input.now,
      },
      { only, alone: true },
    );
    const never = empty.admissions[0]!.pending[0];
    if (never) {
      const headroom = never.binding?.kind === 'headroom';
      return {
        ok: false,
        reason: headroom ? 'Headroom' : 'LimitExceeded',
        message: `${never.message}, even with nothing else running`,
        ...(never.binding ? { binding: never.binding } : {}),
      };
    }
    if (!input.emptyHeadroom) {
      const unit = {
        id: `${model.name}#min`,
        model: model.name,
        profiles: model.spec.profiles,
        replicas: model.spec.scaling.min,
        reach: tree.reach(model.owner),
        onDemandOnly: effectiveClass(model.spec) === 'critical',
      };
      if (input.headroom.candidateComputes(unit).length === 0) {
        return {
          ok: false,
          reason: 'Headroom',
          message: `no compute can take a replica of ${model.name} with any of its profiles`,
        };
      }
    }
  }
  const models = [...input.models.filter((m) => m.name !== model.name), model];
  const decision = decide({ ...input, scopes: tree, quotas: book, models }, { only });
  const mine = decision.admissions.find((a) => a.model === model.name)!;
  const own = mine.pending.find((p) => p.binding?.kind === 'own-limit' || p.reason === 'LimitExceeded');
  if (own) {
    return {
      ok: false,
      reason: 'LimitExceeded',
      message: own.message,
      ...(own.binding ? { binding: own.binding } : {}),
    };
  }
  return { ok: true, decision };
}
