import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Compute } from '../domain/compute';
import { conflict } from '../domain/errors';
import type { Model } from '../domain/model';
import { PlacementHeadroom } from '../domain/placement';
import {
  checkStart,
  type Decision,
  decide,
  type ModelAdmission,
  modelStatus,
  type Quota,
  type Scope,
  ScopeTree,
} from '../domain/quota';
import { unitProfile } from '../domain/resources';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { keys } from './keys';
import type { TxItem } from './ledger';
import { type LoadedCatalog, loadCatalog, setAdmissionHook } from './models';
import { admissionItems, listAdmissions, listQuotas, listScopes } from './tenancy';

/**
 * Admission, wired to the store: everything a decision reads is loaded inside a ledger transaction, and what
 * it decides is written in that same transaction, so decisions are serializable (quota-semantics.md §7).
 * The API decides the changed model alone; reconcile decides every pending request.
 */

export interface World {
  computes: Compute[];
  models: Model[];
  scopes: Scope[];
  quotas: Quota[];
  admissions: ModelAdmission[];
}

export async function loadWorld(catalog?: LoadedCatalog): Promise<World> {
  const [cat, scopes, quotas, admissions] = await Promise.all([
    catalog ?? loadCatalog(),
    listScopes(),
    listQuotas(),
    listAdmissions(),
  ]);
  return { computes: cat.computes, models: cat.models, scopes, quotas, admissions };
}

/**
 * The cluster as admitted so far: every unit put back where it was placed. A unit that no longer fits there
 * (its compute was removed or shrunk) is dropped from the admission, so the pass places it again.
 */
export function restoreHeadroom(
  computes: readonly Compute[],
  admissions: readonly ModelAdmission[],
  models: readonly Pick<Model, 'name' | 'spec'>[],
): { headroom: PlacementHeadroom; admissions: ModelAdmission[] } {
  const headroom = PlacementHeadroom.create(computes);
  const byModel = new Map(models.map((m) => [m.name, m.spec.profiles]));
  const kept = admissions.map((a) => {
    const units = a.units.filter((u) =>
      headroom.restore(u.id, unitProfile(byModel.get(a.model), u), u.placements),
    );
    return units.length === a.units.length ? a : { ...a, units };
  });
  return { headroom, admissions: kept };
}

/** One decision over the world; `only` restricts it to some models' requests (the API's case). */
export function decideWorld(world: World, now: string, only?: string[]): Decision {
  const tree = new ScopeTree(world.scopes);
  const restored = restoreHeadroom(world.computes, world.admissions, world.models);
  return decide(
    {
      scopes: tree,
      quotas: world.quotas,
      models: world.models,
      admissions: restored.admissions,
      headroom: restored.headroom,
      now,
    },
    only ? { only: { models: only } } : {},
  );
}

/** The items that store a decision: changed admissions written, those of removed models deleted. */
export function decisionItems(d: Decision): TxItem[] {
  const changed = new Set(d.changed);
  return admissionItems(
    d.admissions.filter((a) => changed.has(a.model)),
    d.removed,
  );
}

/**
 * Runs inside every catalog change's ledger transaction: refuses a start that can never fit (409
 * LimitExceeded or Headroom, nothing stored) and otherwise writes the changed model's admission with it.
 */
setAdmissionHook(async ({ state, result }) => {
  const [scopes, quotas, admissions] = await Promise.all([listScopes(), listQuotas(), listAdmissions()]);
  const now = new Date().toISOString();
  const after = result.after;
  const name = (after ?? result.before ?? result.replacesSkipped)!.name;
  const tree = new ScopeTree(scopes);
  if (after?.owner && !tree.has(after.owner)) {
    throw conflict(
      `scope ${after.owner} does not exist; create it (POST /v1/scopes) before it owns models`,
      'UnknownScope',
    );
  }
  const restored = restoreHeadroom(state.computes, admissions, result.next);
  const world = { scopes: tree, quotas, models: result.next, admissions: restored.admissions, now };
  if (after) {
    const check = checkStart(
      {
        ...world,
        headroom: restored.headroom.clone(),
        emptyHeadroom: PlacementHeadroom.create(state.computes),
      },
      after,
    );
    if (!check.ok) throw conflict(check.message, check.reason);
  }
  const d = decide({ ...world, headroom: restored.headroom }, { only: { models: [name] } });
  const items = decisionItems(d);
  if (items.length > 98) {
    throw conflict(
      `this change would move ${items.length} admissions at once; split it and retry`,
      'TooLarge',
    );
  }
  return items;
});

export async function getAdmission(model: string): Promise<ModelAdmission | undefined> {
  const out = await documentClient().send(
    new GetCommand({ TableName: config().table, Key: keys.admission(model) }),
  );
  if (!out.Item) return undefined;
  const { pk: _pk, sk: _sk, ...rest } = out.Item;
  return rest as ModelAdmission;
}

/**
 * The admission part of each model's status, for the models API: one read of the admission record for a single
 * model, the (cached) admission partition for a list, never one read per model.
 */
export async function admissionSummaries(models: readonly Model[]) {
  if (models.length === 1) return [modelStatus(models[0]!, await getAdmission(models[0]!.name))];
  const byModel = new Map((await listAdmissions()).map((a) => [a.model, a]));
  return models.map((m) => modelStatus(m, byModel.get(m.name)));
}
