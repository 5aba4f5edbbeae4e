import * as z from 'zod';
import { computeName, NAME_PATTERN, scopeName } from './compute';

/**
 * A model in the catalog: weights, an engine, and the hardware profiles it can run on, in order of
 * preference. Catalog rules (declared vs added, fallbacks, fit) live in catalog.ts; this file is the shape.
 */

export const ENGINES = ['vllm', 'sglang', 'tgi', 'llamacpp', 'ollama'] as const;
export const CLASSES = ['critical', 'standard', 'opportunistic'] as const;
export type ModelClass = (typeof CLASSES)[number];

export const modelName = z
  .string()
  .regex(
    NAME_PATTERN,
    'use 1 to 50 lowercase letters, digits and hyphens, starting and ending with a letter or digit',
  );

export const ProfileSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,30}$/, 'a profile name is 1 to 31 lowercase letters, digits and -'),
  gpus: z.number().int().min(0).max(64),
  gpuType: z.string().min(1).max(32).optional(),
  cpuCores: z.number().positive().max(1024),
  minMemoryGb: z.number().positive().max(32768).optional(),
  compute: computeName.optional(),
});
export type Profile = z.output<typeof ProfileSchema>;

export const ScalingSchema = z.strictObject({
  min: z.number().int().min(0).max(1000),
  max: z.number().int().min(0).max(1000),
  target: z.number().int().min(0).max(1000).optional(),
});
export type Scaling = z.output<typeof ScalingSchema>;

export const SourceSchema = z
  .string()
  .max(1024)
  .regex(
    /^(s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/[^\s]*)?|hf:\/\/[A-Za-z0-9][\w.-]*\/[\w.-]+)$/,
    'a weights source is s3://bucket/prefix or hf://org/repo',
  );

export const ModelSpecSchema = z.strictObject({
  source: SourceSchema,
  engine: z.enum(ENGINES),
  profiles: z.array(ProfileSchema).min(1).max(16),
  scaling: ScalingSchema,
  class: z.enum(CLASSES).optional(),
  fallback: modelName.optional(),
});
export type ModelSpec = z.output<typeof ModelSpecSchema>;

export const ModelManifestInput = z.strictObject({
  apiVersion: z.literal('llmcap/v1'),
  kind: z.literal('Model'),
  metadata: z.strictObject({
    name: modelName,
    owner: z.union([scopeName, z.literal('')]).optional(),
    version: z.number().int().min(1).optional(),
  }),
  spec: ModelSpecSchema,
  status: z.unknown().optional(),
});
export type ModelManifestIn = z.output<typeof ModelManifestInput>;

export interface Model {
  name: string;
  /** Empty for a shared model: it counts against no scope. */
  owner?: string;
  spec: ModelSpec;
  declared: boolean;
  version: number;
  createdAt: string;
  createdBy: string;
  updatedAt: string;
  updatedBy: string;
}

/** The class in force: set on purpose, or implied by scaling (min ≥ 1 standard, min 0 opportunistic). */
export function effectiveClass(spec: Pick<ModelSpec, 'class' | 'scaling'>): ModelClass {
  if (spec.class) return spec.class;
  return spec.scaling.min >= 1 ? 'standard' : 'opportunistic';
}

/** Replicas wanted: target, defaulting to min. */
export function targetReplicas(scaling: Scaling): number {
  return scaling.target ?? scaling.min;
}
