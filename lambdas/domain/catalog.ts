import * as z from 'zod';
import { scopeName } from './compute';
import { DomainError, type FieldIssue, notFound } from './errors';
import { deepFreeze } from './freeze';
import {
  type Model,
  type ModelClass,
  type ModelSpec,
  ModelSpecSchema,
  modelName,
  type Scaling,
} from './model';
import { type ComputeInfo, type ComputeLike, computeInfos, rankCandidates } from './placement';

/**
 * The model catalog (DESIGN.md §3.2): declared models (config/catalog.yaml) plus models added at runtime.
 * Everything here is pure: the store reads the state, calls a transition, and writes the one model it
 * returns together with the ledger bump, so the catalog in force is always one that validated as a whole.
 */

export const DECLARED_FILE = 'config/catalog.yaml';

/** A rule broken by a catalog: `invalid` when the model alone is wrong (400), `conflict` against the rest (409). */
export interface CatalogIssue {
  model: string;
  path: string;
  message: string;
  kind: 'invalid' | 'conflict';
  /** Every model the issue implicates, when more than `model` (the members of a fallback cycle). */
  involves?: string[];
}

/** A stored row left out of the catalog in force, with what is wrong in words. */
export interface SkippedModel {
  name: string;
  problem: string;
  /** Known when the row parsed: so that only its owner's editors (or a platform admin) may fix or remove it. */
  owner?: string;
  version?: number;
}

/** A model entry of config/catalog.yaml. */
export interface DeclaredModel {
  name: string;
  owner?: string;
  spec: ModelSpec;
}

export const DeclaredModelSchema = z.strictObject({
  name: modelName,
  owner: z
    .union([scopeName, z.literal('')])
    .optional()
    .transform((v) => v || undefined),
  spec: ModelSpecSchema,
});

/** Declared models carry no stored history: they are as old as the configuration that was loaded. */
export function declaredToModel(d: DeclaredModel, loadedAt: string): Model {
  return {
    name: d.name,
    ...(d.owner ? { owner: d.owner } : {}),
    spec: d.spec,
    declared: true,
    version: 1,
    createdAt: loadedAt,
    createdBy: 'config',
    updatedAt: loadedAt,
    updatedBy: 'config',
  };
}

// ---------------------------------------------------------------------------------------------------------
// Validation

const list = (xs: readonly string[]) =>
  xs.length <= 5 ? xs.join(', ') : `${xs.slice(0, 5).join(', ')} and ${xs.length - 5} more`;

function modelIssues(m: Pick<Model, 'name' | 'spec'>, infos: readonly ComputeInfo[]): CatalogIssue[] {
  const issues: CatalogIssue[] = [];
  const at = (path: string, message: string, kind: CatalogIssue['kind'] = 'invalid') =>
    issues.push({ model: m.name, path, message: `model ${m.name}: ${message}`, kind });
  const { min, max, target } = m.spec.scaling;
  if (min > max)
    at('spec.scaling.min', `scaling.min (${min}) is above scaling.max (${max}); raise max or lower min`);
  else if (target !== undefined && (target < min || target > max)) {
    at(
      'spec.scaling.target',
      `scaling.target (${target}) is outside [${min}, ${max}]; choose a target between min and max, or leave it out to mean min`,
    );
  }
  const seen = new Set<string>();
  m.spec.profiles.forEach((p, i) => {
    const path = `spec.profiles[${i}]`;
    if (seen.has(p.name)) {
      at(`${path}.name`, `profile name ${p.name} appears more than once; give each profile its own name`);
    }
    seen.add(p.name);
    if (p.gpus === 0 && p.minMemoryGb === undefined) {
      at(
        `${path}.minMemoryGb`,
        `profile ${p.name} is CPU-only and has no minMemoryGb, so placement could not tell when a node is full; set minMemoryGb`,
      );
    }
    if (p.gpus === 0 && p.gpuType !== undefined) {
      at(
        `${path}.gpuType`,
        `profile ${p.name} names gpuType ${p.gpuType} but asks for 0 gpus; set gpus or drop gpuType`,
      );
    }
    const fit = rankCandidates(infos, p);
    if (!fit.ok) {
      const todo =
        p.compute !== undefined
          ? `pin a compute that can hold it (GET /v1/computes lists them), or drop the pin`
          : 'lower the request, or create a compute whose node can hold it';
      at(p.compute !== undefined ? `${path}.compute` : path, `${fit.reason}; ${todo}`, 'conflict');
    }
  });
  return issues;
}

/** The rules one model must meet on its own and against the computes; messages say what to do. */
export function validateModel(
  m: Pick<Model, 'name' | 'spec'>,
  computes: readonly ComputeLike[],
): CatalogIssue[] {
  return modelIssues(m, computeInfos(computes));
}

/** Every rule of the whole catalog: each model's own, unique names, fallbacks that exist and form no cycle. */
export function validateCatalog(
  models: readonly Pick<Model, 'name' | 'spec'>[],
  computes: readonly ComputeLike[],
): CatalogIssue[] {
  const infos = computeInfos(computes);
  const issues: CatalogIssue[] = [];
  const byName = new Map<string, Pick<Model, 'name' | 'spec'>>();
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
  for (const m of models) issues.push(...modelIssues(m, infos));
  const cycles = new Set<string>();
  for (const m of models) {
    const fb = m.spec.fallback;
    if (fb === undefined) continue;
    if (!byName.has(fb)) {
      issues.push({
        model: m.name,
        path: 'spec.fallback',
        message: `model ${m.name}: fallback ${fb} is not in the catalog; add ${fb} first, or drop the fallback`,
        kind: 'conflict',
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

/** A refusal listing every issue: 400 when some model is invalid on its own, else 409. */
export function issuesError(issues: readonly CatalogIssue[]): DomainError {
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

// ---------------------------------------------------------------------------------------------------------
// Loading

const StoredModelSchema = z.object({
  name: modelName,
  owner: scopeName.optional(),
  spec: ModelSpecSchema,
  version: z.number().int().min(1),
  createdAt: z.string(),
  createdBy: z.string(),
  updatedAt: z.string(),
  updatedBy: z.string(),
});

/** A stored row as a Model, or what is wrong with it. */
type Parsed = { model: Model } | { skipped: SkippedModel };

// Rows the store shares between requests are frozen and never change: each is parsed once, not on every read.
const parsedRows = new WeakMap<object, Parsed>();

export function parseStoredModel(raw: Record<string, unknown>): Parsed {
  if (!Object.isFrozen(raw)) return parseRow(raw);
  let p = parsedRows.get(raw);
  if (!p) {
    p = deepFreeze(parseRow(raw));
    parsedRows.set(raw, p);
  }
  return p;
}

function parseRow(raw: Record<string, unknown>): Parsed {
  const name = typeof raw.name === 'string' ? raw.name : typeof raw.sk === 'string' ? raw.sk : '(unnamed)';
  const version = typeof raw.version === 'number' ? raw.version : undefined;
  const owner = typeof raw.owner === 'string' ? raw.owner : undefined;
  const r = StoredModelSchema.safeParse(raw);
  if (!r.success) {
    const what = r.error.issues.map((i) => `${i.path.join('.') || '(row)'}: ${i.message}`).join('; ');
    return { skipped: { name, version, owner, problem: `the stored row does not parse (${what})` } };
  }
  if (typeof raw.sk === 'string' && raw.sk !== r.data.name) {
    return {
      skipped: {
        name,
        version,
        owner,
        problem: `the stored row is keyed ${raw.sk} but named ${r.data.name}`,
      },
    };
  }
  const { owner: o, ...rest } = r.data;
  return { model: { ...rest, ...(o ? { owner: o } : {}), declared: false } };
}

export interface BuiltCatalog {
  models: Model[];
  skipped: SkippedModel[];
  /** Problems of declared models (kept whatever happens): for a warning, since configuration wins. */
  issues: CatalogIssue[];
}

/**
 * The catalog in force from the declared models and the stored rows. Declared models always survive. A
 * stored row that does not parse, collides with a declared name, or breaks a rule is skipped, one at a time
 * (the most recently changed offender first, then everything is checked again), so one bad row costs only
 * itself and the models that depend on it.
 */
export function buildCatalog(
  declared: readonly Model[],
  stored: readonly Record<string, unknown>[],
  computes: readonly ComputeLike[],
): BuiltCatalog {
  const skipped: SkippedModel[] = [];
  const declaredNames = new Set(declared.map((d) => d.name));
  const kept: Model[] = [];
  for (const row of stored) {
    const p = parseStoredModel(row);
    if ('skipped' in p) {
      skipped.push(p.skipped);
    } else if (declaredNames.has(p.model.name)) {
      skipped.push({
        name: p.model.name,
        owner: p.model.owner,
        version: p.model.version,
        problem: `${p.model.name} is declared in ${DECLARED_FILE}, which wins; the stored copy is ignored`,
      });
    } else {
      kept.push(p.model);
    }
  }
  kept.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let models: Model[] = [...declared, ...kept];
  for (;;) {
    const issues = validateCatalog(models, computes);
    const offenders = new Map<string, CatalogIssue[]>();
    for (const i of issues) {
      for (const name of i.involves ?? [i.model]) {
        if (!declaredNames.has(name)) offenders.set(name, [...(offenders.get(name) ?? []), i]);
      }
    }
    if (offenders.size === 0) return { models, skipped, issues };
    const victim = models
      .filter((m) => offenders.has(m.name))
      .sort((a, b) =>
        a.updatedAt > b.updatedAt ? -1 : a.updatedAt < b.updatedAt ? 1 : a.name < b.name ? 1 : -1,
      )[0]!;
    skipped.push({
      name: victim.name,
      owner: victim.owner,
      version: victim.version,
      problem: `it no longer validates: ${offenders
        .get(victim.name)!
        .map((i) => i.message)
        .join('; ')}`,
    });
    models = models.filter((m) => m !== victim);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Transitions

export interface CatalogState {
  models: readonly Model[];
  skipped: readonly SkippedModel[];
  computes: readonly ComputeLike[];
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
      throw notFound(`model ${name} does not exist`);
    }
    return { model };
  }
  const skipped = state.skipped.find((s) => s.name === name);
  if (skipped && (!ctx.access || ctx.access.canSee(skipped.owner))) return { skipped };
  return {};
}

/** Validates the next catalog as a whole and refuses it for anything it breaks. */
function commit(state: CatalogState, next: Model[], result: Omit<ChangeResult, 'next'>): ChangeResult {
  const fresh = newIssues(
    validateCatalog(state.models, state.computes),
    validateCatalog(next, state.computes),
  );
  if (fresh.length) throw issuesError(fresh);
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
  if (!model) throw notFound(`model ${name} does not exist; GET /v1/models lists the catalog`);
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
  return commit(state, [...state.models, after], { after });
}

/** PUT: replaces an added model (or a skipped row of that name); a missing one is added, as apply does. */
export function replaceModel(
  state: CatalogState,
  m: NewModel,
  ctx: ChangeContext,
  expectedVersion?: number,
): ChangeResult {
  const { model, skipped } = locate(state, m.name, ctx);
  if (model?.declared) throw declaredRefusal(m.name, 'change');
  if (!model && !skipped) {
    if (expectedVersion !== undefined) {
      throw notFound(`model ${m.name} does not exist, so version ${expectedVersion} cannot match`);
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
    return commit(state, replaceIn(state.models, after), { before: model, after });
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
  return commit(state, [...state.models, after], { replacesSkipped: skipped, after });
}

export function removeModel(
  state: CatalogState,
  name: string,
  ctx: ChangeContext,
  expectedVersion?: number,
): ChangeResult {
  const { model, skipped } = locate(state, name, ctx);
  if (model?.declared) throw declaredRefusal(name, 'remove');
  if (!model && !skipped) throw notFound(`model ${name} does not exist; GET /v1/models lists the catalog`);
  const was = model ?? skipped!;
  ctx.access?.requireEditor(was.owner, `remove model ${name}`);
  checkVersion(was, expectedVersion);
  if (!model) return { next: [...state.models], replacesSkipped: skipped };
  const dependents = state.models.filter((m) => m.spec.fallback === name).map((m) => m.name);
  if (dependents.length) {
    throw new DomainError(
      'conflict',
      `model ${name} is the fallback of ${list(dependents)}; change their fallback first, then remove ${name}`,
      { reason: 'FallbackInUse' },
    );
  }
  return commit(
    state,
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
  return commit(state, replaceIn(state.models, after), { before, after });
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
      `model ${name} has no profile ${r.profile}; its profiles are ${list(before.spec.profiles.map((p) => p.name))}`,
      { errors: [{ path: 'profile', message: `not a profile of ${name}` }] },
    );
  }
  const profiles = before.spec.profiles.map((p) =>
    r.profile === undefined || p.name === r.profile
      ? { ...p, minMemoryGb: r.memoryGb, cpuCores: r.cpuCores }
      : p,
  );
  const after = touched(before, ctx, { spec: { ...before.spec, profiles } });
  return commit(state, replaceIn(state.models, after), { before, after });
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
  return commit(state, replaceIn(state.models, after), { before, after });
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
  return commit(state, replaceIn(state.models, after), { before, after });
}

/** One entry point for every verb, so the store wraps each the same way. */
export function applyChange(state: CatalogState, c: CatalogChange, ctx: ChangeContext): ChangeResult {
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

// ---------------------------------------------------------------------------------------------------------
// Queries

/** Each weights source and the models that use it, sorted, for GET /v1/sources. */
export function sourcesIndex(
  models: readonly Pick<Model, 'name' | 'spec'>[],
): { source: string; models: string[] }[] {
  const by = new Map<string, string[]>();
  for (const m of models) by.set(m.spec.source, [...(by.get(m.spec.source) ?? []), m.name]);
  return [...by.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([source, names]) => ({ source, models: names.sort() }));
}

/**
 * The models a compute cannot go without: those that pin it, and those with a profile no other compute can
 * hold. Deleting or renaming the compute is refused while this is not empty.
 */
export function modelsUsingCompute(
  models: readonly Pick<Model, 'name' | 'spec'>[],
  computes: readonly ComputeLike[],
  name: string,
): string[] {
  const users = new Set(
    models.filter((m) => m.spec.profiles.some((p) => p.compute === name)).map((m) => m.name),
  );
  const without = computes.filter((c) => c.name !== name);
  const fitIssue = (i: CatalogIssue) => i.kind === 'conflict' && i.path.startsWith('spec.profiles');
  const before = models.flatMap((m) => validateModel(m, computes)).filter(fitIssue);
  const after = models.flatMap((m) => validateModel(m, without)).filter(fitIssue);
  for (const i of newIssues(before, after)) users.add(i.model);
  return [...users].sort();
}

// ---------------------------------------------------------------------------------------------------------
// The pluggable pre-add check

export interface ModelCheckContext {
  verb: 'add' | 'replace' | 'resources';
  computes: readonly ComputeLike[];
}

/**
 * Refuses a model that cannot run, before it is written: returns problems in words (empty when it can run).
 * Deployments replace the default (setModelCheck in the store), e.g. to check that the weights exist.
 */
export type ModelCheck = (model: NewModel, ctx: ModelCheckContext) => Promise<string[]>;

const GPU_ENGINES = new Set(['vllm', 'sglang', 'tgi']);
const GGUF_ENGINES = new Set(['llamacpp', 'ollama']);

/** A GGUF source names a .gguf file, or a repository or prefix whose name says GGUF (hf://Qwen/Qwen3-8B-GGUF). */
export function isGgufSource(source: string): boolean {
  return /gguf/i.test(source);
}

/**
 * The default check, from what the engines load and where they run:
 * - llama.cpp and Ollama load GGUF weights only; TGI never loads GGUF; vLLM and SGLang load safetensors, or
 *   GGUF as one file (so a GGUF source for them must name the .gguf file).
 * - vLLM, SGLang and TGI need a GPU in every profile; llama.cpp and Ollama run on CPU or GPU.
 * - an s3:// source names a prefix, not a whole bucket.
 */
export function engineProblems(m: Pick<NewModel, 'spec'>): string[] {
  const { source, engine, profiles } = m.spec;
  const problems: string[] = [];
  if (/^s3:\/\/[^/]+\/?$/.test(source)) {
    problems.push(`source ${source} names a whole bucket; point it at the prefix that holds the weights`);
  }
  const gguf = isGgufSource(source);
  if (GGUF_ENGINES.has(engine) && !gguf) {
    problems.push(
      `engine ${engine} loads GGUF weights and ${source} names none; point source at a .gguf file or a *-GGUF repository, or use vllm, sglang or tgi`,
    );
  }
  if (engine === 'tgi' && gguf) {
    problems.push(
      `engine tgi cannot load GGUF weights (${source}); use llamacpp or ollama, or safetensors weights`,
    );
  }
  if ((engine === 'vllm' || engine === 'sglang') && gguf && !/\.gguf$/i.test(source)) {
    problems.push(
      `engine ${engine} loads GGUF only as one file; name the .gguf file in source, not ${source}`,
    );
  }
  if (GPU_ENGINES.has(engine)) {
    for (const p of profiles.filter((x) => x.gpus === 0)) {
      problems.push(
        `engine ${engine} needs a GPU and profile ${p.name} asks for none; give it gpus and gpuType, or use llamacpp or ollama to serve on CPU`,
      );
    }
  }
  return problems;
}

export const defaultModelCheck: ModelCheck = async (m) => engineProblems(m);

export function checkRefusal(name: string, problems: readonly string[]): DomainError {
  return new DomainError(
    'invalid',
    problems.length === 1
      ? `model ${name} cannot run: ${problems[0]}`
      : `model ${name} cannot run; fix each problem in errors`,
    { reason: 'CannotRun', errors: problems.map((message) => ({ path: 'spec', message })) },
  );
}
