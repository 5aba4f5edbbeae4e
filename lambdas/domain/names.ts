import { randomBytes } from 'node:crypto';
import { conflict, DomainError } from './errors';

/**
 * Names per owner (docs/security.md, What names tell). A compute or model is stored under a key: its name, or,
 * when that key is already held by a resource in an unrelated part of the tenancy tree, its name followed by a
 * twin mark (`~` and eight random characters). Names are unique along every line of the tree: no two
 * resources of one kind with one name may be owned by scopes one of which is above the other (or shared), so
 * a name means one resource within any owner's reach, and whoever may create one sees every resource its name
 * could clash with. The mark never reaches a caller: answers speak names (`speakValue`, the parts a caller sent
 * excepted), and callers address a resource by name and, when they see two, its owner. Pure.
 */

export const TWIN_MARK = '~';
const TWIN_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const TWIN_LENGTH = 8;
/** A twin mark in text: names use only [a-z0-9-], so `~` and eight of the alphabet after one is never else. */
const TWIN_IN_TEXT = /(?<=[a-z0-9])~[a-z2-7]{8}(?![a-z0-9])/g;

/** The name a key stands for. */
export function nameOf(key: string): string {
  const i = key.indexOf(TWIN_MARK);
  return i < 0 ? key : key.slice(0, i);
}

export function isTwinKey(key: string): boolean {
  return key.includes(TWIN_MARK);
}

/** A fresh twin key for `name`: random, so nobody can guess or take it in advance. */
export function newTwinKey(name: string, random: (n: number) => Uint8Array = randomBytes): string {
  const bytes = random(TWIN_LENGTH);
  let mark = '';
  for (let i = 0; i < TWIN_LENGTH; i++) mark += TWIN_ALPHABET[(bytes[i] as number) & 31];
  return `${name}${TWIN_MARK}${mark}`;
}

/**
 * A key as a Kubernetes label or taint value and an AWS tag value (neither allows `~`): the mark as `.`, which
 * names never hold, so `keyFromLabel` reads the key back.
 */
export function labelValue(key: string): string {
  return key.replace(TWIN_MARK, '.');
}

export function keyFromLabel(value: string): string {
  return value.replace('.', TWIN_MARK);
}

/**
 * Text llmcap wrote as a caller reads it: every key in it as the name it stands for. Only for text llmcap
 * composed (messages, reasons): text a caller sent is theirs and is never rewritten (see `asSent`).
 */
export function speakNames(text: string): string {
  return text.includes(TWIN_MARK) ? text.replace(TWIN_IN_TEXT, '') : text;
}

/** Marks a part of an answer that holds what a caller sent (a spec): `speakValue` hands it back as it is. */
const AS_SENT = Symbol('llmcap.asSent');

/**
 * A copy of `value` (a spec, members) marked as the caller's own data, whose keys its view has already
 * rendered (a pin, a fallback): the answer carries it unchanged, `s3://b/llama3~abcdefgh/w` included. The mark
 * is a hidden property, so neither JSON nor the store sees it.
 */
export function asSent<T extends object>(value: T): T {
  const copy = (Array.isArray(value) ? [...value] : { ...value }) as T;
  Object.defineProperty(copy, AS_SENT, { value: true, enumerable: false });
  return copy;
}

/**
 * An answer as a caller reads it, built once where it is sent: keys as names in everything llmcap composed
 * (names, owners, scopes, messages, map keys), and the parts its views marked `asSent` exactly as sent.
 */
export function speakValue(value: unknown): unknown {
  if (typeof value === 'string') return speakNames(value);
  if (value === null || typeof value !== 'object') return value;
  if ((value as Record<symbol, unknown>)[AS_SENT]) return value;
  if (Array.isArray(value)) return value.map(speakValue);
  // Dates and the like stay as JSON would write them.
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null)
    return value;
  const out: Record<string, unknown> = {};
  const from = value as Record<string, unknown>;
  for (const k of Object.keys(from)) {
    const v = from[k];
    if (v === undefined) continue;
    const name = speakNames(k);
    // Assigned, which is several times faster than defining, but for the one key assignment would take as the
    // object's prototype; every answer passes through here.
    if (name === '__proto__')
      Object.defineProperty(out, name, { value: speakValue(v), enumerable: true, writable: true });
    else out[name] = speakValue(v);
  }
  return out;
}

/** How names relate in the tenancy tree (ScopeTree satisfies it). */
export interface Lineage {
  /** True if `a` is `b` or a scope above it. */
  above(a: string, b: string): boolean;
}

/** Two owners are on one line of the tree when one is the other or above it; shared is above everyone. */
export function sameLine(lineage: Lineage, a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return true;
  return a === b || lineage.above(a, b) || lineage.above(b, a);
}

export interface Named {
  /** The key (the store's and the domain's identity). */
  name: string;
  owner?: string;
}

/**
 * The key a new resource of `name` owned by `owner` is stored under: 409 AlreadyExists when a resource of that
 * name is on the owner's line (the creator may see it), else the name itself when free, else a twin key.
 * `except` is the resource being moved or renamed, which does not clash with itself.
 */
export function keyForNew(
  kind: 'compute' | 'model',
  name: string,
  owner: string | undefined,
  existing: readonly Named[],
  lineage: Lineage,
  opts: { except?: string; hint?: string; random?: (n: number) => Uint8Array } = {},
): string {
  const same = existing.filter((r) => r.name !== opts.except && nameOf(r.name) === name);
  const clash = same.find((r) => sameLine(lineage, r.owner, owner));
  if (clash) {
    throw conflict(
      `${kind} ${name} already exists${clash.owner ? ` (owned by ${clash.owner})` : ''}; ${opts.hint ?? 'choose another name'}`,
      'AlreadyExists',
    );
  }
  if (!same.some((r) => r.name === name)) return name;
  const taken = new Set(same.map((r) => r.name));
  for (;;) {
    const key = newTwinKey(name, opts.random);
    if (!taken.has(key)) return key;
  }
}

/**
 * The resource a caller means by `name` (and `owner`, when given): among those it may see, the one of that
 * name. Two that it sees (owned in unrelated scopes) need the owner: 409 AmbiguousName naming the owners,
 * unless `orOwner` (a PUT manifest's owner, `shared` for none) says which. None is `undefined` (the caller's
 * 404, worded by the use case).
 */
export function resolveName<T extends Named>(
  kind: 'compute' | 'model',
  name: string,
  owner: string | undefined,
  items: readonly T[],
  canSee: (r: T) => boolean,
  orOwner?: string,
): T | undefined {
  // A twin key itself (what alarms, metrics and node groups carry, for operators) means that one.
  if (isTwinKey(name)) return items.find((r) => r.name === name && canSee(r));
  const seen = items.filter((r) => nameOf(r.name) === name && canSee(r));
  const found = owner === undefined ? seen : seen.filter((r) => (r.owner ?? '') === ownerKey(owner));
  if (found.length <= 1) return found[0];
  if (owner === undefined && orOwner !== undefined) return resolveName(kind, name, orOwner, items, canSee);
  const owners = found.map((r) => r.owner ?? 'shared').sort();
  throw new DomainError(
    'conflict',
    `${found.length} ${kind}s named ${name} are visible to you, owned by ${owners.join(' and ')}; add ?owner=<scope> (llmcap: --owner <scope>) to say which`,
    { reason: 'AmbiguousName' },
  );
}

/** `?owner=shared` (or empty) means the shared resource of that name. */
function ownerKey(owner: string): string {
  return owner === 'shared' ? '' : owner;
}

/**
 * The key a reference (a pin, a fallback) made by a resource of `owner` means: the one of that name within
 * the owner's reach (names are unique along a line, so there is at most one). A name with no resource in reach
 * stays as it is, for the catalog rules to refuse with their own wording.
 */
export function resolveReference(
  name: string,
  items: readonly Named[],
  mayUse: (owner: string | undefined) => boolean,
): string {
  if (isTwinKey(name)) return name;
  const inReach = items.filter((r) => nameOf(r.name) === name && mayUse(r.owner));
  return inReach.length === 1 ? inReach[0]!.name : name;
}

/**
 * Scopes follow the same rule (docs/security.md, What names tell). A scope's line is its parent's: the parent,
 * the scopes above it and every scope beneath it, all of which the creator (an admin of the parent or above)
 * sees. An org's line is the whole tree (only platform admins create orgs, and they see it all).
 */
export interface ScopeLineage extends Lineage {
  readonly names: readonly string[];
  parent(key: string): string | undefined;
}

const under = (tree: ScopeLineage, key: string) => {
  const p = tree.parent(key);
  return p ? ` (under ${p})` : '';
};

/** The key a new scope of `name` under `parent` (a key) is stored under; 409 when the name is on its line. */
export function scopeKeyForNew(
  name: string,
  parent: string | undefined,
  tree: ScopeLineage,
  random?: (n: number) => Uint8Array,
): string {
  const same = tree.names.filter((k) => nameOf(k) === name);
  const clash = same.find((k) => parent === undefined || tree.above(parent, k) || tree.above(k, parent));
  if (clash)
    throw conflict(`scope ${name} already exists${under(tree, clash)}; choose another name`, 'AlreadyExists');
  if (!same.includes(name)) return name;
  for (;;) {
    const key = newTwinKey(name, random);
    if (!same.includes(key)) return key;
  }
}

/**
 * The scope a reference means among those the caller sees: a name, a key, or `<scope>/<scope>...` (each within
 * the one before it) for a caller who sees two of a name: 409 AmbiguousName says which parents to write.
 * None is `undefined` (the caller's "does not exist").
 */
export function resolveScopeRef(
  ref: string,
  tree: ScopeLineage,
  canSee: (key: string) => boolean,
): string | undefined {
  let within: string | undefined;
  for (const part of ref.split('/')) {
    const found = tree.names.filter(
      (k) =>
        (isTwinKey(part) ? k === part : nameOf(k) === part) &&
        canSee(k) &&
        (within === undefined || (k !== within && tree.above(within, k))),
    );
    if (found.length === 0) return undefined;
    if (found.length > 1) {
      const parents = found.map((k) => tree.parent(k) ?? '(the top)').sort();
      throw new DomainError(
        'conflict',
        `${found.length} scopes named ${part} are visible to you, under ${parents.join(' and ')}; write ${parents[0]}/${part} to say which`,
        { reason: 'AmbiguousName' },
      );
    }
    within = found[0];
  }
  return within;
}
