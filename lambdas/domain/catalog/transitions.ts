import { changedPaths, sameValue } from '../compute';
import { DomainError, notFound } from '../errors';
import type { Model, ModelClass, ModelSpec, Scaling } from '../model';
import { type Lineage, nameOf } from '../names';
import type { ComputeLike } from '../placement';
import { listed } from '../text';
import { address, checkLine, missingModel } from './addressing';
import { DECLARED_FILE } from './declared';
import type { SkippedModel } from './loading';
import { type CatalogIssue, issuesError, newIssues, type ReachOf, validateCatalog } from './validation';

/**
 * The catalog's transitions: each verb takes the catalog in force and returns the whole next catalog, validated,
 * with the one model it changes before and after, or refuses (nothing is written). Pure: the catalog service
 * loads the state, calls a transition, and writes what it returns in one conditional write (store/commit.ts).
 */

export interface CatalogState {
  models: readonly Model[];
  skipped: readonly SkippedModel[];
  computes: readonly ComputeLike[];
  /** Whose computes and fallbacks each owner's models may use (the tenancy tree's reach). */
  reach?: ReachOf;
  /** Which scopes are above which, for names per owner (domain/names.ts); absent: none is above another. */
  lineage?: Lineage;
  /**
   * What validating `models` against these computes and reach finds, when the caller already knows (buildCatalog
   * returns it): a change only refuses issues it adds, and a write need not validate the whole catalog twice.
   */
  issues?: readonly CatalogIssue[];
}

/** What a transition needs to know about the caller; the API's Caller satisfies it. */
export interface CatalogAccess {
  canSee(owner: string | undefined): boolean;
  requireEditor(owner: string | undefined, what: string): void;
}

export interface ChangeContext {
  by: string;
  now: string;
  /** Absent for trusted callers (tests, seeding); the API always passes the caller. */
  access?: CatalogAccess;
  /** The request's `?owner=`: whose model the name means when the caller sees two. */
  ownerParam?: string;
}

export interface ChangeResult {
  /** The whole next catalog, validated. */
  next: Model[];
  /** The model as it was (absent when added). */
  before?: Model;
  /** A skipped stored row this change replaces or removes. */
  replacesSkipped?: SkippedModel;
  /** The model as it will be (absent when removed). */
  after?: Model;
  /** The change asks for what is already there: nothing is written (no version bump, no new updatedBy). */
  unchanged?: boolean;
}

export interface NewModel {
  name: string;
  owner?: string;
  spec: ModelSpec;
}

export type CatalogChange =
  | ({ verb: 'add' } & NewModel)
  | ({ verb: 'replace'; expectedVersion?: number } & NewModel)
  | { verb: 'remove'; name: string; expectedVersion?: number }
  | { verb: 'scale'; name: string; scaling: Scaling; expectedVersion?: number }
  | {
      verb: 'resources';
      name: string;
      profile?: string;
      memoryGb: number;
      cpuCores: number;
      expectedVersion?: number;
    }
  | { verb: 'class'; name: string; class?: ModelClass; expectedVersion?: number }
  | { verb: 'owner'; name: string; owner?: string; expectedVersion?: number };

function declaredRefusal(name: string, verb: 'add' | 'remove' | 'change'): DomainError {
  const msg =
    verb === 'add'
      ? `${name} is declared in ${DECLARED_FILE}; edit that file rather than adding a second definition`
      : verb === 'remove'
        ? `${name} is declared in ${DECLARED_FILE}; remove it there, or it comes back on the next deploy`
        : `${name} is declared in ${DECLARED_FILE}; change it there, or it reverts on the next deploy`;
  return new DomainError('conflict', msg, { reason: 'Declared' });
}

/** A replace of a declared model that differs: 409 naming the file and each field that would change. */
function declaredFieldRefusal(model: Model, m: NewModel): DomainError {
  const paths = [
    ...((m.owner ?? '') !== (model.owner ?? '') ? ['metadata.owner'] : []),
    ...changedPaths(model.spec, m.spec, 'spec'),
  ];
  return new DomainError(
    'conflict',
    `${model.name} is declared in ${DECLARED_FILE}; ${listed(paths)} can only change there (or it reverts on the next deploy)`,
    {
      reason: 'Declared',
      errors: paths.map((path) => ({ path, message: `set in ${DECLARED_FILE}` })),
    },
  );
}

function skippedRefusal(s: SkippedModel): DomainError {
  return new DomainError(
    'conflict',
    `model ${s.name} is stored but left out of the catalog because ${s.problem}; replace it with PUT /v1/models/${s.name} or remove it with DELETE`,
    { reason: 'Skipped' },
  );
}

function checkVersion(m: { name: string; version?: number }, expected: number | undefined): void {
  if (expected !== undefined && m.version !== expected) {
    throw new DomainError(
      'precondition',
      `model ${m.name} is at version ${m.version ?? 'unknown'}, not ${expected}; read it again and retry`,
      { reason: 'VersionMismatch' },
    );
  }
}

/** The model to change, or the skipped row of that name; a model the caller cannot see answers as missing. */
function locate(
  state: CatalogState,
  name: string,
  ctx: ChangeContext,
): { model?: Model; skipped?: SkippedModel } {
  const model = state.models.find((m) => m.name === name);
  if (model) {
    if (!model.declared && ctx.access && !ctx.access.canSee(model.owner)) {
      throw missingModel(nameOf(name));
    }
    return { model };
  }
  const skipped = state.skipped.find((s) => s.name === name);
  if (skipped && (!ctx.access || ctx.access.canSee(skipped.owner))) return { skipped };
  return {};
}

/** Validates the next catalog as a whole and refuses it for anything it breaks. */
function commit(
  state: CatalogState,
  ctx: ChangeContext,
  next: Model[],
  result: Omit<ChangeResult, 'next'>,
): ChangeResult {
  const fresh = newIssues(
    state.issues ?? validateCatalog(state.models, state.computes, state.reach),
    validateCatalog(next, state.computes, state.reach),
  );
  if (fresh.length) throw issuesError(fresh, ctx.access);
  return { next, ...result };
}

function touched(before: Model, ctx: ChangeContext, patch: Partial<Model>): Model {
  return { ...before, ...patch, version: before.version + 1, updatedAt: ctx.now, updatedBy: ctx.by };
}

function replaceIn(models: readonly Model[], after: Model): Model[] {
  return models.map((m) => (m.name === after.name ? after : m));
}

function existing(
  state: CatalogState,
  name: string,
  ctx: ChangeContext,
  what: string,
  expected?: number,
): Model {
  const { model, skipped } = locate(state, name, ctx);
  if (skipped) throw skippedRefusal(skipped);
  if (!model) throw missingModel(nameOf(name));
  if (model.declared) throw declaredRefusal(name, 'change');
  ctx.access?.requireEditor(model.owner, `${what} model ${name}`);
  checkVersion(model, expected);
  return model;
}

export function addModel(state: CatalogState, m: NewModel, ctx: ChangeContext): ChangeResult {
  const current = state.models.find((x) => x.name === m.name);
  if (current?.declared) throw declaredRefusal(m.name, 'add');
  ctx.access?.requireEditor(m.owner, `add model ${m.name}${m.owner ? ` owned by ${m.owner}` : ' (shared)'}`);
  if (current) {
    throw new DomainError(
      'conflict',
      `model ${m.name} already exists; use PUT /v1/models/${m.name} to replace it, or choose another name`,
      { reason: 'AlreadyExists' },
    );
  }
  const skipped = state.skipped.find((s) => s.name === m.name);
  if (skipped) throw skippedRefusal(skipped);
  const after: Model = {
    name: m.name,
    ...(m.owner ? { owner: m.owner } : {}),
    spec: m.spec,
    declared: false,
    version: 1,
    createdAt: ctx.now,
    createdBy: ctx.by,
    updatedAt: ctx.now,
    updatedBy: ctx.by,
  };
  return commit(state, ctx, [...state.models, after], { after });
}

/** PUT: replaces an added model (or a skipped row of that name); a missing one is added, as apply does. */
export function replaceModel(
  state: CatalogState,
  m: NewModel,
  ctx: ChangeContext,
  expectedVersion?: number,
): ChangeResult {
  const { model, skipped } = locate(state, m.name, ctx);
  // What apply sends back after `get -o yaml` is what is there: unchanged, declared or not, writing nothing.
  if (model && (m.owner ?? '') === (model.owner ?? '') && sameValue(model.spec, m.spec)) {
    // Nobody may change a declared model, so its own manifest needs no role; an added one needs the editor's.
    if (!model.declared) ctx.access?.requireEditor(model.owner, `change model ${m.name}`);
    checkVersion(model, expectedVersion);
    return { next: [...state.models], before: model, after: model, unchanged: true };
  }
  if (model?.declared) throw declaredFieldRefusal(model, m);
  if (!model && !skipped) {
    if (expectedVersion !== undefined) {
      throw notFound(`model ${nameOf(m.name)} does not exist, so version ${expectedVersion} cannot match`);
    }
    return addModel(state, m, ctx);
  }
  const was = model ?? skipped!;
  ctx.access?.requireEditor(was.owner, `change model ${m.name}`);
  if (m.owner !== was.owner)
    ctx.access?.requireEditor(m.owner, `hand model ${m.name} to ${m.owner ?? 'shared'}`);
  checkVersion(was, expectedVersion);
  if (model) {
    const { owner: _drop, ...base } = model;
    const after = touched(base, ctx, { spec: m.spec, ...(m.owner ? { owner: m.owner } : {}) });
    return commit(state, ctx, replaceIn(state.models, after), { before: model, after });
  }
  const after: Model = {
    name: m.name,
    ...(m.owner ? { owner: m.owner } : {}),
    spec: m.spec,
    declared: false,
    version: (skipped!.version ?? 0) + 1,
    createdAt: ctx.now,
    createdBy: ctx.by,
    updatedAt: ctx.now,
    updatedBy: ctx.by,
  };
  return commit(state, ctx, [...state.models, after], { replacesSkipped: skipped, after });
}

export function removeModel(
  state: CatalogState,
  name: string,
  ctx: ChangeContext,
  expectedVersion?: number,
): ChangeResult {
  const { model, skipped } = locate(state, name, ctx);
  if (model?.declared) throw declaredRefusal(name, 'remove');
  if (!model && !skipped) throw missingModel(nameOf(name));
  const was = model ?? skipped!;
  ctx.access?.requireEditor(was.owner, `remove model ${name}`);
  checkVersion(was, expectedVersion);
  if (!model) return { next: [...state.models], replacesSkipped: skipped };
  const dependents = state.models.filter((m) => m.spec.fallback === name).map((m) => m.name);
  if (dependents.length) {
    throw new DomainError(
      'conflict',
      `model ${name} is the fallback of ${listed(dependents)}; change their fallback first, then remove ${name}`,
      { reason: 'FallbackInUse' },
    );
  }
  return commit(
    state,
    ctx,
    state.models.filter((m) => m.name !== name),
    { before: model },
  );
}

export function scaleModel(
  state: CatalogState,
  name: string,
  scaling: Scaling,
  ctx: ChangeContext,
  expectedVersion?: number,
): ChangeResult {
  const before = existing(state, name, ctx, 'scale', expectedVersion);
  const after = touched(before, ctx, { spec: { ...before.spec, scaling } });
  return commit(state, ctx, replaceIn(state.models, after), { before, after });
}

/** Memory and cores of one profile (by name) or of every profile; GPUs are the profile's identity and stay. */
export function setResources(
  state: CatalogState,
  name: string,
  r: { profile?: string; memoryGb: number; cpuCores: number },
  ctx: ChangeContext,
  expectedVersion?: number,
): ChangeResult {
  const before = existing(state, name, ctx, 'change resources of', expectedVersion);
  if (r.profile !== undefined && !before.spec.profiles.some((p) => p.name === r.profile)) {
    throw new DomainError(
      'invalid',
      `model ${name} has no profile ${r.profile}; its profiles are ${listed(before.spec.profiles.map((p) => p.name))}`,
      { errors: [{ path: 'profile', message: `not a profile of ${name}` }] },
    );
  }
  const profiles = before.spec.profiles.map((p) =>
    r.profile === undefined || p.name === r.profile
      ? { ...p, minMemoryGb: r.memoryGb, cpuCores: r.cpuCores }
      : p,
  );
  const after = touched(before, ctx, { spec: { ...before.spec, profiles } });
  return commit(state, ctx, replaceIn(state.models, after), { before, after });
}

/** Sets the class, or clears it (undefined) so that scaling implies it again. */
export function setClass(
  state: CatalogState,
  name: string,
  cls: ModelClass | undefined,
  ctx: ChangeContext,
  expectedVersion?: number,
): ChangeResult {
  const before = existing(state, name, ctx, 'change the class of', expectedVersion);
  const { class: _old, ...rest } = before.spec;
  const after = touched(before, ctx, { spec: cls ? { ...rest, class: cls } : rest });
  return commit(state, ctx, replaceIn(state.models, after), { before, after });
}

/** Hands a model to another scope (or makes it shared): the caller must edit in both the old and new owner. */
export function setOwner(
  state: CatalogState,
  name: string,
  owner: string | undefined,
  ctx: ChangeContext,
  expectedVersion?: number,
): ChangeResult {
  const before = existing(state, name, ctx, 'hand over', expectedVersion);
  ctx.access?.requireEditor(owner, `hand model ${name} to ${owner ?? 'shared'}`);
  const { owner: _old, ...rest } = before;
  const after = touched(rest, ctx, owner ? { owner } : {});
  return commit(state, ctx, replaceIn(state.models, after), { before, after });
}

/** One entry point for every verb, so the store wraps each the same way. */
export function applyChange(state: CatalogState, named: CatalogChange, ctx: ChangeContext): ChangeResult {
  const r = transition(state, address(state, named, ctx), ctx);
  checkLine(state, r);
  return r;
}

function transition(state: CatalogState, c: CatalogChange, ctx: ChangeContext): ChangeResult {
  switch (c.verb) {
    case 'add':
      return addModel(state, c, ctx);
    case 'replace':
      return replaceModel(state, c, ctx, c.expectedVersion);
    case 'remove':
      return removeModel(state, c.name, ctx, c.expectedVersion);
    case 'scale':
      return scaleModel(state, c.name, c.scaling, ctx, c.expectedVersion);
    case 'resources':
      return setResources(state, c.name, c, ctx, c.expectedVersion);
    case 'class':
      return setClass(state, c.name, c.class, ctx, c.expectedVersion);
    case 'owner':
      return setOwner(state, c.name, c.owner, ctx, c.expectedVersion);
  }
}
