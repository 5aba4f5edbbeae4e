import { isRole, RANK, type Role, type Tenancy } from '../access';
import { SCOPE_PATTERN } from '../compute';
import { DomainError, invalid, notFound } from '../errors';
import { scopeKeyForNew } from '../names';
import { type Identity, PrincipalMap, parsePrincipal, principalKey } from '../principal';
import { listed } from '../text';

/**
 * The tenancy tree (org / team / project), its members and its changes. Pure: the store loads the scopes, this
 * module answers; who may do what in the tree is domain/access.ts. Scopes get dense integer ids so that accounting can keep usage in typed arrays.
 */

export type ScopeKind = 'org' | 'team' | 'project';

export interface Scope {
  name: string;
  /** Absent for an org. */
  parent?: string;
  /** principal ARN → role held in this scope (and, by inheritance, in every scope beneath). */
  members?: Readonly<Record<string, Role>>;
  /**
   * The instance families (g6, p5, ...) the computes this scope and the scopes beneath own may use, set by a
   * platform admin; absent: any (domain/hardware.ts familyLimits).
   */
  instanceFamilies?: readonly string[];
  /**
   * Its Kubernetes namespace, fixed when it is created (domain/workloads.ts newScopeNamespace); absent for a
   * scope stored before namespaces were stored, whose namespace follows from its name (namespaceFor).
   */
  namespace?: string;
  /** The stored item's version, where the tree was read from the table: what a write's lineage check names. */
  version?: number;
}

/**
 * Members per scope. A scope is one DynamoDB item, and its members one map in it: 200 of the longest
 * principals (a role ARN with a 512-character path, ~620 bytes) stay under a third of the 400 KB item limit.
 * Beyond a few dozen, grant a role the people share (an IAM Identity Center permission set) instead.
 */
export const MAX_MEMBERS_PER_SCOPE = 200;

export function scopeKind(name: string): ScopeKind {
  return name.slice(0, name.indexOf(':')) as ScopeKind;
}

/** The kinds a scope of each kind may sit under (docs/reference/quota-semantics.md §1). */
const PARENT_KINDS: Record<ScopeKind, ScopeKind[]> = { org: [], team: ['org'], project: ['team', 'org'] };

/**
 * An immutable index over the scope tree. Build it once per request or pass; every query is O(depth) or O(1).
 * It is the permission model's `Tenancy` (domain/access.ts).
 */
export class ScopeTree implements Tenancy {
  readonly names: string[] = [];
  readonly ids = new Map<string, number>();
  /** parent id, -1 for a root. */
  readonly parentOf: Int32Array;
  readonly depthOf: Int32Array;
  readonly childrenOf: number[][];
  /** Ancestors of each scope, self first, root last. */
  readonly pathOf: Int32Array[];
  private readonly members: (Readonly<Record<string, Role>> | undefined)[] = [];
  private readonly versions: (number | undefined)[] = [];
  /** Who holds which role where, built on the first question about a caller (admission never asks). */
  private memberships?: PrincipalMap<{ scope: number; role: Role }>;

  constructor(scopes: readonly Scope[]) {
    for (const s of scopes) {
      if (this.ids.has(s.name)) throw invalid(`scope ${s.name} is listed twice`);
      this.ids.set(s.name, this.names.length);
      this.names.push(s.name);
      this.members.push(s.members);
      this.versions.push(s.version);
    }
    const n = this.names.length;
    this.parentOf = new Int32Array(n).fill(-1);
    this.depthOf = new Int32Array(n).fill(-1);
    this.childrenOf = Array.from({ length: n }, () => []);
    scopes.forEach((s, i) => {
      if (s.parent === undefined) return;
      const p = this.ids.get(s.parent);
      if (p === undefined) throw invalid(`scope ${s.name} names parent ${s.parent}, which does not exist`);
      this.parentOf[i] = p;
      this.childrenOf[p]!.push(i);
    });
    this.pathOf = new Array(n);
    for (let i = 0; i < n; i++) this.depth(i, 0);
    for (let i = 0; i < n; i++) {
      const path = new Int32Array(this.depthOf[i]! + 1);
      for (let j = i, k = 0; j >= 0; j = this.parentOf[j]!, k++) path[k] = j;
      this.pathOf[i] = path;
    }
  }

  private depth(i: number, guard: number): number {
    const known = this.depthOf[i]!;
    if (known >= 0) return known;
    if (guard > this.names.length) throw invalid(`the scope tree has a cycle through ${this.names[i]}`);
    const p = this.parentOf[i]!;
    const d = p < 0 ? 0 : this.depth(p, guard + 1) + 1;
    this.depthOf[i] = d;
    return d;
  }

  get size(): number {
    return this.names.length;
  }

  has(name: string): boolean {
    return this.ids.has(name);
  }

  id(name: string): number {
    const i = this.ids.get(name);
    if (i === undefined) throw notFound(`scope ${name} does not exist`);
    return i;
  }

  parent(name: string): string | undefined {
    const p = this.parentOf[this.id(name)]!;
    return p < 0 ? undefined : this.names[p];
  }

  children(name: string): string[] {
    return this.childrenOf[this.id(name)]!.map((c) => this.names[c]!);
  }

  /**
   * The owners whose computes and fallbacks a model owned by `owner` may use (placement's Reach): the owner and
   * every scope above it. A shared model reaches none; an owner that is not a scope only itself.
   */
  reach(owner: string | undefined): string[] {
    if (!owner) return [];
    return this.has(owner) ? this.ancestors(owner) : [owner];
  }

  /** Self first, root last. */
  ancestors(name: string): string[] {
    return Array.from(this.pathOf[this.id(name)]!, (i) => this.names[i]!);
  }

  /** True if scope `a` is scope `b` or above it (domain/names.ts Lineage); false for a name not in the tree. */
  above(a: string, b: string): boolean {
    const i = this.ids.get(a);
    const j = this.ids.get(b);
    return i !== undefined && j !== undefined && this.isAncestorOrSelf(i, j);
  }

  /** True if `a` is `b` or above it. */
  isAncestorOrSelf(a: number, b: number): boolean {
    const da = this.depthOf[a]!;
    const path = this.pathOf[b]!;
    return da < path.length && path[path.length - 1 - da] === a;
  }

  /** The ancestor of `i` at depth `d` (d ≤ depth(i)). */
  atDepth(i: number, d: number): number {
    const path = this.pathOf[i]!;
    return path[path.length - 1 - d]!;
  }

  /** Lowest common ancestor, or -1 when the two are in different orgs. */
  lca(a: number, b: number): number {
    let da = this.depthOf[a]!;
    let db = this.depthOf[b]!;
    while (da > db) {
      a = this.parentOf[a]!;
      da--;
    }
    while (db > da) {
      b = this.parentOf[b]!;
      db--;
    }
    while (a !== b) {
      a = this.parentOf[a]!;
      b = this.parentOf[b]!;
      if (a < 0 || b < 0) return -1;
    }
    return a;
  }

  /**
   * The roles the caller holds, by scope. Only own entries count (a member named `constructor` is a key like
   * any other), and a stored member that is not a valid principal, from before they were checked, names nobody.
   */
  private held(who: Identity): { scope: number; role: Role }[] {
    if (!this.memberships) {
      const m = new PrincipalMap<{ scope: number; role: Role }>();
      this.members.forEach((members, scope) => {
        for (const [arn, role] of Object.entries(members ?? {})) {
          const p = parsePrincipal(arn);
          if (p.ok && isRole(role)) m.add(p.value, { scope, role });
        }
      });
      this.memberships = m;
    }
    return this.memberships.matching(who);
  }

  /** The strongest role held in `scope` or any scope above it (roles inherit down the tree). */
  roleIn(who: Identity, scope: string): Role | undefined {
    const i = this.ids.get(scope);
    if (i === undefined) return undefined;
    let best: Role | undefined;
    for (const h of this.held(who)) {
      if (this.isAncestorOrSelf(h.scope, i) && (!best || RANK[h.role] > RANK[best])) best = h.role;
    }
    return best;
  }

  /**
   * The version of each scope from `scope` up to its org, as read: a role there is what an editor's write leans
   * on, so a write decided on this tree commits only while they are unchanged (store/tenancy.ts lineageChecks).
   */
  lineageVersions(scope: string): { scope: string; version: number }[] {
    const i = this.ids.get(scope);
    if (i === undefined) return [];
    return [...this.pathOf[i]!].flatMap((j) => {
      const version = this.versions[j];
      return version === undefined ? [] : [{ scope: this.names[j]!, version }];
    });
  }

  /** True if the caller holds a role in `scope` or beneath it: members of a project see what its team owns. */
  isMemberAtOrBelow(who: Identity, scope: string): boolean {
    const i = this.ids.get(scope);
    if (i === undefined) return false;
    return this.held(who).some((h) => this.isAncestorOrSelf(i, h.scope));
  }
}

// ---------------------------------------------------------------------------------------------------------
// Members

/** What a member change does to a scope's members map: keys to remove, and the entry to set. */
export interface MemberWrite {
  remove: string[];
  set?: { principal: string; role: Role };
}

/**
 * Plans granting `role` to `principal` (or, with no role, removing it). One identity holds one entry: another
 * spelling of the same principal (a role ARN with or without its path) is replaced, and removed with it.
 * Throws 400 when the grant would take the scope past MAX_MEMBERS_PER_SCOPE.
 */
export function planMemberWrite(
  scope: string,
  members: Readonly<Record<string, Role>>,
  principal: string,
  role: Role | undefined,
): MemberWrite {
  const p = parsePrincipal(principal);
  const key = p.ok ? principalKey(p.value) : undefined;
  const present = Object.keys(members);
  const others = present.filter((k) => {
    if (k === principal || key === undefined) return false;
    const q = parsePrincipal(k);
    return q.ok && principalKey(q.value) === key;
  });
  if (!role) return { remove: Object.hasOwn(members, principal) ? [principal, ...others] : others };
  const after = present.length - others.length + (Object.hasOwn(members, principal) ? 0 : 1);
  // Only a write that adds an entry is refused, so a scope over the limit (from before it) can still change.
  if (after > present.length && after > MAX_MEMBERS_PER_SCOPE) {
    throw invalid(
      `${scope} has ${present.length} members, and a scope holds at most ${MAX_MEMBERS_PER_SCOPE}; grant a role ` +
        'these people share (an IAM Identity Center permission set) instead, or remove members first',
      [{ path: 'principal', message: `${scope} is full (${MAX_MEMBERS_PER_SCOPE} members)` }],
    );
  }
  return { remove: others, set: { principal, role } };
}

// ---------------------------------------------------------------------------------------------------------
// Tree changes

/**
 * Validates creating `{name, parent}` and answers the key it is stored under (names per owner, domain/names.ts);
 * throws 400 for a bad shape, 409 for a conflict with the tree.
 */
export function validateScopeCreate(tree: ScopeTree, s: { name: string; parent?: string }): string {
  if (!SCOPE_PATTERN.test(s.name)) {
    throw invalid(
      'a scope is org:<id>, team:<id> or project:<id>, with a lowercase id (letters, digits, -)',
      [{ path: 'name', message: 'not a scope name' }],
    );
  }
  const kind = scopeKind(s.name);
  const allowed = PARENT_KINDS[kind];
  if (s.parent === undefined) {
    if (allowed.length > 0) {
      throw invalid(`a ${kind} needs a parent (${allowed.join(' or ')})`, [
        { path: 'parent', message: 'required' },
      ]);
    }
    return scopeKeyForNew(s.name, undefined, tree);
  }
  if (allowed.length === 0) {
    throw invalid('an org is at the top of the tree and has no parent', [
      { path: 'parent', message: 'not allowed' },
    ]);
  }
  if (!allowed.includes(scopeKind(s.parent))) {
    throw invalid(
      `a ${kind} sits under ${allowed.map((k) => `an ${k}`.replace('an t', 'a t')).join(' or ')}`,
      [{ path: 'parent', message: `${s.parent} cannot hold a ${kind}` }],
    );
  }
  if (!tree.has(s.parent)) throw notFound(`parent scope ${s.parent} does not exist`);
  return scopeKeyForNew(s.name, s.parent, tree);
}

/** A scope with children or models cannot be deleted: say which, so the caller knows what to move first. */
export function validateScopeDelete(
  tree: ScopeTree,
  name: string,
  ownedModels: readonly string[],
  ownedComputes: readonly string[] = [],
): void {
  const children = tree.children(name);
  if (children.length > 0 || ownedModels.length > 0 || ownedComputes.length > 0) {
    const parts: string[] = [];
    if (children.length > 0) parts.push(`scopes ${listed(children)}`);
    if (ownedModels.length > 0) parts.push(`models ${listed(ownedModels)}`);
    if (ownedComputes.length > 0) parts.push(`computes ${listed(ownedComputes)}`);
    throw new DomainError(
      'conflict',
      `${name} still holds ${parts.join(' and ')}; move or delete them first`,
    );
  }
}
