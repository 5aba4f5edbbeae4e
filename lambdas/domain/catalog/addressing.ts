import type { Model, ModelSpec } from '../model';
import { keyForNew, type Lineage, nameOf, resolveName, resolveReference } from '../names';
import { mayUse } from '../placement';
import type { CatalogChange, CatalogState, ChangeContext, ChangeResult } from './transitions';

/**
 * From the names a request speaks to the keys the catalog holds (domain/names.ts): the model a route names,
 * among those the caller sees (its `?owner=` when it sees two); the key a new model is stored under; and the
 * compute a pin and the model a fallback mean, within the reach of the model's owner. Pure.
 */

/** Without a tree no scope is above another: only the same owner, or shared, share a line. */
const FLAT: Lineage = { above: () => false };

function visible(ctx: ChangeContext) {
  return (m: Pick<Model, 'declared' | 'owner'>) => !ctx.access || m.declared || ctx.access.canSee(m.owner);
}

/**
 * The key the route's name means, or the name itself when the caller sees none (the transition's 404). A PUT's
 * manifest names its owner (`orOwner`): that says which of two the caller means, as ?owner= would.
 */
function located(state: CatalogState, name: string, ctx: ChangeContext, orOwner?: string): string {
  const all = [...state.models, ...state.skipped.map((s) => ({ ...s, declared: false }))];
  return resolveName('model', name, ctx.ownerParam, all, visible(ctx), orOwner)?.name ?? name;
}

/** The spec with each pin and fallback as the key it means for a model of `owner`. */
export function resolveSpec(state: CatalogState, spec: ModelSpec, owner: string | undefined): ModelSpec {
  const reach = state.reach?.(owner) ?? (owner ? [owner] : []);
  const usable = (o: string | undefined) => mayUse(o, reach);
  const profiles = spec.profiles.map((p) =>
    p.compute ? { ...p, compute: resolveReference(p.compute, state.computes, usable) } : p,
  );
  return {
    ...spec,
    profiles,
    ...(spec.fallback ? { fallback: resolveReference(spec.fallback, state.models, usable) } : {}),
  };
}

function newKey(
  state: CatalogState,
  m: { name: string; owner: string | undefined; what: string },
  ctx: ChangeContext,
) {
  // Only an editor of the owner learns what its line holds (and sees all of it): ask first, as the verb will.
  ctx.access?.requireEditor(m.owner, m.what);
  const existing = [...state.models, ...state.skipped];
  return keyForNew('model', m.name, m.owner, existing, state.lineage ?? FLAT, {
    hint: `use PUT /v1/models/${m.name} to replace it, or choose another name`,
  });
}

/**
 * A model handed to another owner (after its transition has checked the caller edits both): its name must be
 * free on the new owner's line, as a new model's must.
 */
export function checkLine(state: CatalogState, r: ChangeResult): void {
  if (!r.before || !r.after || (r.before.owner ?? '') === (r.after.owner ?? '')) return;
  const existing = [...state.models, ...state.skipped];
  keyForNew('model', nameOf(r.after.name), r.after.owner, existing, state.lineage ?? FLAT, {
    except: r.after.name,
    hint: 'rename one of them first, or choose another owner',
  });
}

/** The change with keys for names; a new model gets its key here, a clash on the owner's line is a 409. */
export function address(state: CatalogState, c: CatalogChange, ctx: ChangeContext): CatalogChange {
  switch (c.verb) {
    case 'add':
    case 'replace': {
      const key = located(state, c.name, ctx, c.verb === 'replace' ? (c.owner ?? 'shared') : undefined);
      const spec = resolveSpec(state, c.spec, c.owner);
      const model = state.models.find((m) => m.name === key);
      const skipped = state.skipped.find((s) => s.name === key);
      const current = model ?? (skipped && { ...skipped, declared: false });
      // One the caller sees (declared ones are seen by all) keeps its key, and its transition speaks for it.
      if (current && visible(ctx)(current)) return { ...c, name: key, spec };
      const what = `add model ${c.name}${c.owner ? ` owned by ${c.owner}` : ' (shared)'}`;
      return { ...c, name: newKey(state, { name: c.name, owner: c.owner, what }, ctx), spec };
    }
    default:
      return { ...c, name: located(state, c.name, ctx) };
  }
}
