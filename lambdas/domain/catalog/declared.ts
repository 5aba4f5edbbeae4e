import * as z from 'zod';
import { scopeName } from '../compute';
import { type Model, type ModelSpec, ModelSpecSchema, modelName } from '../model';

/**
 * The models declared in config/catalog.yaml: in the catalog on every start, whatever the table holds, so a
 * team keeps its production set reviewed and in version control (docs/design.md, The model catalog).
 */

export const DECLARED_FILE = 'config/catalog.yaml';

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
