import * as z from 'zod';
import { scopeName } from '../compute';
import { deepFreeze } from '../freeze';
import { type Model, ModelSpecSchema, modelName } from '../model';
import { nameOf } from '../names';
import type { ComputeLike } from '../placement';
import { DECLARED_FILE } from './declared';
import { type CatalogIssue, OWN_REACH, type ReachOf, validateCatalog } from './validation';

/**
 * The catalog in force, built from the declared models and the stored rows: a row that does not parse, collides
 * with a declared name, or breaks a rule is left out with the reason, one at a time.
 */

/** A stored row left out of the catalog in force, with what is wrong in words. */
export interface SkippedModel {
  name: string;
  problem: string;
  /** Known when the row parsed: so that only its owner's editors (or a platform admin) may fix or remove it. */
  owner?: string;
  version?: number;
}

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

type Row = Record<string, unknown>;
const isRow = (v: unknown): v is Row => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A row keyed by twin keys (domain/names.ts) is parsed as the names its keys stand for, since the schema is the
 * manifest's, and keeps its keys: the name, the owner scope, and the pins and fallback it resolved to when written.
 */
function spoken(raw: Row): Row {
  const spec = isRow(raw.spec) ? raw.spec : undefined;
  const profiles = spec && Array.isArray(spec.profiles) ? spec.profiles : undefined;
  const speak = (v: unknown) => (typeof v === 'string' ? nameOf(v) : v);
  return {
    ...raw,
    name: speak(raw.name),
    ...('owner' in raw ? { owner: speak(raw.owner) } : {}),
    ...(spec
      ? {
          spec: {
            ...spec,
            ...(profiles
              ? {
                  profiles: profiles.map((p) =>
                    !isRow(p)
                      ? p
                      : {
                          ...p,
                          ...('compute' in p ? { compute: speak(p.compute) } : {}),
                          ...(Array.isArray(p.computes) ? { computes: p.computes.map(speak) } : {}),
                        },
                  ),
                }
              : {}),
            ...('fallback' in spec ? { fallback: speak(spec.fallback) } : {}),
          },
        }
      : {}),
  };
}

function keyed(data: z.output<typeof StoredModelSchema>, raw: Row): z.output<typeof StoredModelSchema> {
  const spec = raw.spec as Row;
  const profiles = spec.profiles as Row[];
  return {
    ...data,
    name: raw.name as string,
    ...(data.owner ? { owner: raw.owner as string } : {}),
    spec: {
      ...data.spec,
      profiles: data.spec.profiles.map((p, i) => ({
        ...p,
        ...(p.compute ? { compute: profiles[i]!.compute as string } : {}),
        ...(p.computes ? { computes: profiles[i]!.computes as string[] } : {}),
      })),
      ...(data.spec.fallback ? { fallback: spec.fallback as string } : {}),
    },
  };
}

function parseRow(raw: Record<string, unknown>): Parsed {
  const name = typeof raw.name === 'string' ? raw.name : typeof raw.sk === 'string' ? raw.sk : '(unnamed)';
  const version = typeof raw.version === 'number' ? raw.version : undefined;
  const owner = typeof raw.owner === 'string' ? raw.owner : undefined;
  const parsed = StoredModelSchema.safeParse(spoken(raw));
  const r = parsed.success ? { success: true as const, data: keyed(parsed.data, raw) } : parsed;
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
  reach: ReachOf = OWN_REACH,
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
    const issues = validateCatalog(models, computes, reach);
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
