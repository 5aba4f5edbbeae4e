import type { Model } from '../model';
import type { ComputeLike } from '../placement';
import { type CatalogIssue, newIssues, OWN_REACH, type ReachOf, validateModel } from './validation';

/** Questions asked of the catalog in force: sources, and who depends on a compute. */

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
  models: readonly Pick<Model, 'name' | 'spec' | 'owner'>[],
  computes: readonly ComputeLike[],
  name: string,
  reach: ReachOf = OWN_REACH,
): string[] {
  const users = new Set(
    models.filter((m) => m.spec.profiles.some((p) => p.compute === name)).map((m) => m.name),
  );
  const without = computes.filter((c) => c.name !== name);
  const fitIssue = (i: CatalogIssue) => i.kind === 'conflict' && i.path.startsWith('spec.profiles');
  const before = models.flatMap((m) => validateModel(m, computes, reach)).filter(fitIssue);
  const after = models.flatMap((m) => validateModel(m, without, reach)).filter(fitIssue);
  for (const i of newIssues(before, after)) users.add(i.model);
  return [...users].sort();
}
