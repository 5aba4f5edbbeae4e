import { notFound } from '../errors';
import type { Model, ModelSpec } from '../model';
import { keyForNew, type Lineage, nameOf, resolveName, resolveReference, sameLine } from '../names';
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

/** The catalog's models and skipped rows, as names are resolved among them. */
const rows = (state: CatalogState) => [
  ...state.models,
  ...state.skipped.map((s) => ({ ...s, declared: false })),
];

/**
 * The key the route's name means among the models the caller sees (its `?owner=`'s when given), or undefined:
 * never another model of that name, whoever owns it. A PUT's manifest names its owner (`orOwner`): that says
 * which of two the caller means, as ?owner= would.
 */
function located(state: CatalogState, name: string, ctx: ChangeContext, orOwner?: string) {
  return resolveName('model', name, ctx.ownerParam, rows(state), visible(ctx), orOwner)?.name;
}

/**
 * What a route that changes a model answers when the caller sees none of that name (or none of its ?owner=):
 * one answer whether the name is free or held where the caller cannot see, so the answer tells nothing.
 */
export const missingModel = (name: string) =>
  notFound(`model ${name} does not exist; GET /v1/models lists the catalog`);

/** The spec with each pin and fallback as the key it means for a model of `owner`. */
export function resolveSpec(state: CatalogState, spec: ModelSpec, owner: string | undefined): ModelSpec {
  const reach = state.reach?.(owner) ?? (owner ? [owner] : []);
  const usable = (o: string | undefined) => mayUse(o, reach);
  const profiles = spec.profiles.map((p) => ({
    ...p,
    ...(p.compute ? { compute: resolveReference(p.compute, state.computes, usable) } : {}),
    ...(p.computes ? { computes: p.computes.map((c) => resolveReference(c, state.computes, usable)) } : {}),
  }));
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
      const spec = resolveSpec(state, c.spec, c.owner);
      // A POST creates: only a model of that name on the new owner's line (or declared) is in its way, so a
      // platform admin who sees a model of that name in an unrelated tenant gets a twin, as its editor would.
      const key =
        c.verb === 'replace'
          ? located(state, c.name, ctx, c.owner ?? 'shared')
          : rows(state).find(
              (m) =>
                nameOf(m.name) === c.name &&
                visible(ctx)(m) &&
                (m.declared || sameLine(state.lineage ?? FLAT, m.owner, c.owner)),
            )?.name;
      // One the caller sees (declared ones are seen by all) keeps its key, and its transition speaks for it.
      if (key !== undefined) return { ...c, name: key, spec };
      const what = `add model ${c.name}${c.owner ? ` owned by ${c.owner}` : ' (shared)'}`;
      return { ...c, name: newKey(state, { name: c.name, owner: c.owner, what }, ctx), spec };
    }
    default: {
      const key = located(state, c.name, ctx);
      if (key === undefined) throw missingModel(c.name);
      return { ...c, name: key };
    }
  }
}
