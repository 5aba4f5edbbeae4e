import { autoscalingIssues } from '../autoscaling';
import { DomainError, type FieldIssue } from '../errors';
import { deepFreeze } from '../freeze';
import { type Model, profileIssues, profileListIssues, scalingIssues } from '../model';
import {
  type ComputeInfo,
  type ComputeLike,
  computeInfos,
  mayUse,
  namedComputes,
  type Reach,
  rankCandidates,
} from '../placement';
import { fieldIssues } from '../rules';

/**
 * The owners whose computes and fallbacks a model of `owner` may use (the tenancy tree's `reach`). Without a
 * tree only the owner's own and platform ones: stricter, never wider.
 */
export type ReachOf = (owner: string | undefined) => Reach;
export const OWN_REACH: ReachOf = (owner) => (owner ? [owner] : []);

type Checked = Pick<Model, 'name' | 'spec' | 'owner'>;

/**
 * The rules of a catalog (docs/design.md, The model catalog): each model's own, and those of the whole catalog
 * against the computes. Every change is checked by validating the whole next catalog.
 */

/** A rule broken by a catalog: `invalid` when the model alone is wrong (400), `conflict` against the rest (409). */
export interface CatalogIssue {
  model: string;
  path: string;
  message: string;
  kind: 'invalid' | 'conflict';
  /** Every model the issue implicates, when more than `model` (the members of a fallback cycle). */
  involves?: string[];
  /**
   * The issue is a compute or model that exists but lies outside the reach of the model's owner. The message
   * reads as if it did not exist (so that a caller who cannot see it learns nothing); issuesError says what is
   * true to a caller who may see it.
   */
  outOfReach?: OutOfReach;
}

export interface OutOfReach {
  kind: 'compute' | 'model';
  name: string;
  /** The scope that owns it. */
  owner: string;
  /** The model whose reach it is outside, and that model's owner (absent: shared). */
  model: string;
  modelOwner?: string;
  /** The profile that pins the compute. */
  profile?: string;
}

function modelIssues(m: Checked, infos: readonly ComputeInfo[], reach: Reach): CatalogIssue[] {
  const issues: CatalogIssue[] = [];
  const at = (
    path: string,
    message: string,
    kind: CatalogIssue['kind'] = 'invalid',
    outOfReach?: OutOfReach,
  ) =>
    issues.push({
      model: m.name,
      path,
      message: `model ${m.name}: ${message}`,
      kind,
      ...(outOfReach ? { outOfReach } : {}),
    });
  // The rules the model's schema applies on input (model.ts), for models that did not come through it.
  const own = [
    ...fieldIssues(['spec', 'scaling'], scalingIssues(m.spec.scaling)),
    ...fieldIssues(['spec'], profileListIssues(m.spec)),
    // A scale to min ≥ 1 (PUT .../scaling) must not leave scaleToZeroAfterSeconds behind.
    ...fieldIssues(['spec'], autoscalingIssues(m.spec)),
    ...m.spec.profiles.flatMap((p, i) => fieldIssues(['spec', 'profiles', i], profileIssues(p))),
  ];
  for (const i of own) at(i.path, i.message);
  m.spec.profiles.forEach((p, i) => {
    const path = `spec.profiles[${i}]`;
    const fit = rankCandidates(infos, p, reach);
    if (!fit.ok) {
      const named = namedComputes(p);
      const todo =
        p.compute !== undefined
          ? `pin a compute that can hold it (GET /v1/computes lists them), or drop the pin`
          : p.computes
            ? 'name computes that can hold it (GET /v1/computes lists them), or drop computes'
            : 'lower the request, or create a compute whose node can hold it';
      const pinned = named
        ?.map((n) => infos.find((c) => c.name === n))
        .find((c) => c?.owner !== undefined && !mayUse(c.owner, reach));
      const hidden = pinned ? outOfReach('compute', pinned.name, pinned.owner!, m, p.name) : undefined;
      const field = p.compute !== undefined ? `${path}.compute` : p.computes ? `${path}.computes` : path;
      at(field, `${fit.reason}; ${todo}`, 'conflict', hidden);
    }
  });
  return issues;
}

/** The rules one model must meet on its own and against the computes; messages say what to do. */
export function validateModel(
  m: Checked,
  computes: readonly ComputeLike[],
  reachOf: ReachOf = OWN_REACH,
): CatalogIssue[] {
  return modelIssues(m, computeInfos(computes), reachOf(m.owner));
}

/** Every rule of the whole catalog: each model's own, unique names, fallbacks that exist and form no cycle. */
// A model's own issues depend only on the model, what placement knows of the computes and its owner's reach.
// Shared readings are frozen and never change (store/shared-read.ts): every write validates the whole next
// catalog, and each unchanged model is checked again only when the computes or its reach differ. Keyed by the
// frozen model itself, with the computes and the reach as they were, so an answer is never reused for others.
const issuesOf = new WeakMap<Checked, { computesKey: string; reach: Reach; issues: CatalogIssue[] }>();

function issuesFor(
  m: Checked,
  infos: readonly ComputeInfo[],
  computesKey: string,
  reach: Reach,
): CatalogIssue[] {
  if (!Object.isFrozen(m)) return modelIssues(m, infos, reach);
  // Compared in place rather than joined into one key: every write checks every model, and building a key
  // string per model per check cost more than the checks it saved.
  const known = issuesOf.get(m);
  if (known && known.computesKey === computesKey && sameReach(known.reach, reach)) return known.issues;
  const issues = deepFreeze(modelIssues(m, infos, reach));
  issuesOf.set(m, { computesKey, reach, issues });
  return issues;
}

function sameReach(a: Reach, b: Reach): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// What placement knows of one list of computes, and its key: a write validates the catalog before and after its
// change against the same list, so the second and third checks reuse the first's.
const infosOf = new WeakMap<readonly ComputeLike[], { infos: ComputeInfo[]; key: string }>();

function infosAndKey(computes: readonly ComputeLike[]): { infos: ComputeInfo[]; key: string } {
  const known = infosOf.get(computes);
  if (known) return known;
  const infos = computeInfos(computes);
  const out = { infos, key: JSON.stringify(infos) };
  // Only a list that cannot change under the memo is kept.
  if (Object.isFrozen(computes)) infosOf.set(computes, out);
  return out;
}

export function validateCatalog(
  models: readonly Checked[],
  computes: readonly ComputeLike[],
  reachOf: ReachOf = OWN_REACH,
): CatalogIssue[] {
  const { infos, key: computesKey } = infosAndKey(computes);
  const issues: CatalogIssue[] = [];
  const byName = new Map<string, Checked>();
  for (const m of models) {
    if (byName.has(m.name)) {
      issues.push({
        model: m.name,
        path: 'metadata.name',
        message: `model ${m.name} is defined more than once; keep one definition`,
        kind: 'conflict',
      });
    }
    byName.set(m.name, m);
  }
  for (const m of models) issues.push(...issuesFor(m, infos, computesKey, reachOf(m.owner)));
  const cycles = new Set<string>();
  for (const m of models) {
    const fb = m.spec.fallback;
    if (fb === undefined) continue;
    const target = byName.get(fb);
    // Another tenant's model is not in this model's catalog: the same refusal as a name that does not exist.
    if (!target || !mayUse(target.owner, reachOf(m.owner))) {
      issues.push({
        model: m.name,
        path: 'spec.fallback',
        message: `model ${m.name}: fallback ${fb} is not in the catalog; add ${fb} first, or drop the fallback`,
        kind: 'conflict',
        ...(target?.owner ? { outOfReach: outOfReach('model', fb, target.owner, m) } : {}),
      });
      continue;
    }
    // Follow the chain from m; it is a cycle through m exactly when it comes back to m.
    const chain = [m.name];
    let cur: string | undefined = fb;
    const visited = new Set<string>([m.name]);
    while (cur !== undefined && !visited.has(cur)) {
      visited.add(cur);
      chain.push(cur);
      cur = byName.get(cur)?.spec.fallback;
    }
    const cycleKey = [...chain].sort().join(' ');
    if (cur === m.name && !cycles.has(cycleKey)) {
      // One issue per cycle, on its first member in catalog order, naming every member.
      cycles.add(cycleKey);
      issues.push({
        involves: chain,
        model: m.name,
        path: 'spec.fallback',
        message: `model ${m.name}: fallbacks form a cycle ${[...chain, m.name].join(' → ')}; change one of these fallbacks to break it`,
        kind: 'conflict',
      });
    }
  }
  return issues;
}

const issueKey = (i: CatalogIssue) => `${i.model}\u0000${i.path}\u0000${i.message}`;

/**
 * The issues `after` has that `before` did not. A change is refused for what it breaks, never for a problem
 * that was there already (say a declared model no longer fits an admin-shrunk built-in compute).
 */
export function newIssues(before: readonly CatalogIssue[], after: readonly CatalogIssue[]): CatalogIssue[] {
  const known = new Set(before.map(issueKey));
  return after.filter((i) => !known.has(issueKey(i)));
}

function outOfReach(
  kind: OutOfReach['kind'],
  name: string,
  owner: string,
  m: Checked,
  profile?: string,
): OutOfReach {
  return {
    kind,
    name,
    owner,
    model: m.name,
    ...(m.owner ? { modelOwner: m.owner } : {}),
    ...(profile !== undefined ? { profile } : {}),
  };
}

/**
 * What is true of a compute or model out of a model's reach, for a caller who may see it: who owns it, whose
 * reach it is outside, and the ways out.
 */
export function outOfReachMessage(r: OutOfReach): string {
  const whose = r.modelOwner
    ? `the reach of its owner ${r.modelOwner} (a model uses only shared computes and models and those of its owner or a scope above it)`
    : 'the reach of a shared model (a shared model uses only shared computes and models)';
  const to = r.modelOwner ? `share it or give it to ${r.modelOwner} or a scope above` : 'share it';
  const what =
    r.kind === 'compute'
      ? `profile ${r.profile} pins compute ${r.name}, which is owned by scope ${r.owner}`
      : `fallback ${r.name} is owned by scope ${r.owner}`;
  const other = r.kind === 'compute' ? 'pin another compute, or drop the pin' : 'or drop the fallback';
  return `model ${r.model}: ${what}, outside ${whose}; ${to}, give ${r.model} an owner at or beneath ${r.owner}, ${other}`;
}

/**
 * A refusal listing every issue: 400 when some model is invalid on its own, else 409. An issue about a compute
 * or model out of reach keeps its does-not-exist wording unless `access` may see what it names (or the
 * caller is trusted: no `access`).
 */
export function issuesError(
  found: readonly CatalogIssue[],
  access?: { canSee(owner: string | undefined): boolean },
): DomainError {
  const issues = found.map((i) =>
    i.outOfReach && (!access || access.canSee(i.outOfReach.owner))
      ? { ...i, message: outOfReachMessage(i.outOfReach) }
      : i,
  );
  const invalid = issues.some((i) => i.kind === 'invalid');
  const detail =
    issues.length === 1
      ? issues[0]!.message
      : `the change would leave ${issues.length} problems in the catalog; fix each one listed in errors`;
  const errors: FieldIssue[] = issues.map((i) => ({ path: i.path, message: i.message }));
  return new DomainError(invalid ? 'invalid' : 'conflict', detail, {
    reason: invalid ? 'InvalidModel' : 'CatalogRule',
    errors,
  });
}
