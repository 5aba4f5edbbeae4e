import * as z from 'zod';
import { AutoscalingSchema, autoscalingIssues } from './autoscaling';
import { computeName, NAME_PATTERN, scopeRef } from './compute';
import { asSent, nameOf } from './names';
import { numberAt, type RuleIssue, refineWith, repeats, stringAt, whenParsed } from './rules';

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

/** A profile's own cross-field rules (paths relative to the profile); `p` may hold type errors elsewhere. */
export function profileIssues(p: unknown): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const name = stringAt(p, 'name') ?? '(unnamed)';
  const row = p as Record<string, unknown>;
  if (row.compute !== undefined && row.computes !== undefined) {
    issues.push({
      path: ['computes'],
      message: `profile ${name} sets both compute and computes; name one compute, or several in order of preference`,
    });
  }
  if (Array.isArray(row.computes)) {
    for (const { index, first, key } of repeats(row.computes, (c) =>
      typeof c === 'string' ? c : undefined,
    )) {
      issues.push({
        path: ['computes', index],
        message: `compute ${key} is already computes[${first}]; name each compute once`,
      });
    }
  }
  if (numberAt(p, 'gpus') !== 0) return issues;
  if ((p as Record<string, unknown>).minMemoryGb === undefined) {
    issues.push({
      path: ['minMemoryGb'],
      message: `profile ${name} is CPU-only and has no minMemoryGb, so placement could not tell when a node is full; set minMemoryGb`,
    });
  }
  const gpuType = (p as Record<string, unknown>).gpuType;
  if (gpuType !== undefined) {
    issues.push({
      path: ['gpuType'],
      message: `profile ${name} names gpuType ${String(gpuType)} but asks for 0 gpus; set gpus or drop gpuType`,
    });
  }
  return issues;
}

export const ProfileSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]{0,30}$/, 'a profile name is 1 to 31 lowercase letters, digits and -'),
    gpus: z.number().int().min(0).max(64),
    gpuType: z.string().min(1).max(32).optional(),
    cpuCores: z.number().positive().max(1024),
    minMemoryGb: z.number().positive().max(32768).optional(),
    compute: computeName.optional(),
    /**
     * Several computes in order of preference (issue 32 §3): replicas go to the first with room, then the next;
     * one short of capacity has no room, so the next takes them. Instead of `compute`.
     */
    computes: z.array(computeName).min(1).max(8).optional(),
  })
  .superRefine(...refineWith(profileIssues, whenParsed('gpus', 'gpuType', 'minMemoryGb')));
export type Profile = z.output<typeof ProfileSchema>;

/** Scaling's cross-field rules (paths relative to scaling): min ≤ max, and a target between them. */
export function scalingIssues(s: unknown): RuleIssue[] {
  const [min, max, target] = [numberAt(s, 'min'), numberAt(s, 'max'), numberAt(s, 'target')];
  if (min === undefined || max === undefined) return [];
  if (min > max)
    return [
      {
        path: ['min'],
        message: `scaling.min (${min}) is above scaling.max (${max}); raise max or lower min`,
      },
    ];
  if (target !== undefined && (target < min || target > max)) {
    return [
      {
        path: ['target'],
        message: `scaling.target (${target}) is outside [${min}, ${max}]; choose a target between min and max, or leave it out to mean min`,
      },
    ];
  }
  return [];
}

export const ScalingSchema = z
  .strictObject({
    min: z.number().int().min(0).max(1000),
    max: z.number().int().min(0).max(1000),
    target: z.number().int().min(0).max(1000).optional(),
  })
  .superRefine(...refineWith(scalingIssues, whenParsed('min', 'max')));
export type Scaling = z.output<typeof ScalingSchema>;

/** Rules across a spec's profiles (paths relative to the spec): each profile has its own name. */
export function profileListIssues(spec: unknown): RuleIssue[] {
  const profiles = (spec as { profiles?: unknown })?.profiles;
  if (!Array.isArray(profiles)) return [];
  return repeats(profiles, (p) => stringAt(p, 'name')).map(({ index, first, key }) => ({
    path: ['profiles', index, 'name'],
    message: `profile name ${key} is already the name of spec.profiles[${first}]; give each profile its own name`,
  }));
}

// hf:// may name one file inside the repository (hf://org/repo/model-q4_k_m.gguf), as llama.cpp loads one file.
export const SourceSchema = z
  .string()
  .max(1024)
  .regex(
    /^(s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/[^\s]*)?|hf:\/\/[A-Za-z0-9][\w.-]*\/[\w.-]+(\/[\w.-]+)*)$/,
    'a weights source is s3://bucket/prefix or hf://org/repo (optionally hf://org/repo/file)',
  );

/** `class` may be sent empty to mean "implied by scaling"; it is stored absent then. */
export const ClassSchema = z
  .union([z.enum(CLASSES), z.literal('')])
  .optional()
  .transform((v) => v || undefined);

export const ModelSpecSchema = z
  .strictObject({
    source: SourceSchema,
    engine: z.enum(ENGINES),
    profiles: z.array(ProfileSchema).min(1).max(16),
    scaling: ScalingSchema,
    class: ClassSchema,
    fallback: modelName.optional(),
    /** Replicas that follow the model servers' load within scaling's bounds (domain/autoscaling.ts). */
    autoscaling: AutoscalingSchema.optional(),
  })
  // Names are compared even when a profile has a type error elsewhere: stringAt reads only those that parsed.
  .superRefine(...refineWith(profileListIssues))
  .superRefine(...refineWith(autoscalingIssues, whenParsed('engine', 'autoscaling', 'scaling')));
// `class` is optional on output too: a transform makes zod type it as present-but-undefined.
export type ModelSpec = Omit<z.output<typeof ModelSpecSchema>, 'class'> & { class?: ModelClass };

/** `org:<id>`, `team:<id>`, `project:<id>`, or empty (or absent) for a shared model. */
export const ModelOwnerSchema = z.union([scopeRef, z.literal('')]).optional();

/** The payload of POST /v1/models and PUT /v1/models/{name}. */
export const ModelManifestInput = z.strictObject({
  apiVersion: z.literal('llmcap/v1'),
  kind: z.literal('Model'),
  metadata: z.strictObject({
    name: modelName,
    owner: ModelOwnerSchema,
    version: z.number().int().min(1).optional(),
    // Output-only fields a client may send back from a GET; they are ignored, so a read manifest re-applies.
    declared: z.unknown().optional(),
    createdAt: z.unknown().optional(),
    createdBy: z.unknown().optional(),
    updatedAt: z.unknown().optional(),
    updatedBy: z.unknown().optional(),
  }),
  spec: ModelSpecSchema,
  // Clients often send back what they read; status is output only and ignored on input.
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

/**
 * What admission decided for a model, summarized for its status. Filled by the admission module from its
 * record (keys.admission(model)); absent until then, and the status then shows the catalog fields only.
 */
export interface AdmissionSummary {
  admitted: number;
  borrowed: number;
  pending: number;
  placements: { compute: string; profile: string; replicas: number }[];
  reasons: { reason: string; message: string; replicas: number }[];
  /** Replicas taken back or displaced that have not run again (docs/quotas.md). */
  takenBack?: {
    reason: string;
    message: string;
    replicas: number;
    /** What took them; absent when the caller may not see its scope (domain/quota/telling.ts). */
    by?: { model: string; unitId: string; scope: string; class: string };
    at: string;
  }[];
}

/** A model's status: catalog facts always; admission facts when the caller has an admission summary. */
export function modelStatus(m: Pick<Model, 'declared' | 'spec'>, admission?: AdmissionSummary) {
  return {
    declared: m.declared,
    effectiveClass: effectiveClass(m.spec),
    targetReplicas: targetReplicas(m.spec.scaling),
    ...(admission ?? {}),
  };
}

export function modelManifest(m: Model, admission?: AdmissionSummary) {
  return {
    apiVersion: 'llmcap/v1' as const,
    kind: 'Model' as const,
    metadata: {
      name: m.name,
      owner: m.owner ?? '',
      version: m.version,
      declared: m.declared,
      createdAt: m.createdAt,
      createdBy: m.createdBy,
      updatedAt: m.updatedAt,
      updatedBy: m.updatedBy,
    },
    spec: specAsSent(m.spec),
    status: modelStatus(m, admission),
  };
}

/**
 * The spec as its writer sent it: a pin or fallback stored as a key reads as the name sent, and nothing else
 * in it (the source above all) is touched by the rendering of keys (names.ts speakValue).
 */
function specAsSent(spec: ModelSpec): ModelSpec {
  return asSent({
    ...spec,
    profiles: spec.profiles.map((p) => ({
      ...p,
      ...(p.compute ? { compute: nameOf(p.compute) } : {}),
      ...(p.computes ? { computes: p.computes.map(nameOf) } : {}),
    })),
    ...(spec.fallback ? { fallback: nameOf(spec.fallback) } : {}),
  });
}

/** What a status needs for Queued to be added to it. */
interface DecidedStatus {
  admitted: number;
  pending: number;
  reasons: { reason: string; message: string; replicas: number }[];
}

/**
 * A model's admission status with what still waits for the admitter (service/admitter.ts): the API stores a write
 * as intent and the admitter decides it moments later. `observedVersion` is the model version the figures are of,
 * as Kubernetes' observedGeneration; while it is behind `version`, the replicas wanted beyond those the last
 * decision admitted or left pending wait with reason Queued. An admission stored before versions were stamped counts as current.
 */
export function queuedStatus<S extends DecidedStatus>(
  m: Pick<Model, 'version' | 'spec'>,
  decidedVersion: number | undefined,
  decided: boolean,
  status: S,
): S & { observedVersion?: number } {
  if (decided && (decidedVersion === undefined || decidedVersion === m.version))
    return { ...status, observedVersion: m.version };
  const s = m.spec.scaling;
  const wanted = Math.max(s.min, Math.min(targetReplicas(s), s.max));
  const queued = Math.max(0, wanted - status.admitted - status.pending);
  const of = decidedVersion === undefined ? {} : { observedVersion: decidedVersion };
  if (queued === 0) return { ...status, ...of };
  return {
    ...status,
    ...of,
    pending: status.pending + queued,
    reasons: [
      {
        reason: 'Queued',
        message: `version ${m.version} waits for the admitter, which decides within seconds of a write; ${
          decidedVersion === undefined
            ? 'nothing was decided for this model yet'
            : `the other figures are of version ${decidedVersion}`
        }`,
        replicas: queued,
      },
      ...status.reasons,
    ],
  };
}
