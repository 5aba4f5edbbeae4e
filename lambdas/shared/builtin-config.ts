import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { DECLARED_FILE, type DeclaredModel, DeclaredModelSchema, validateCatalog } from '../domain/catalog';
import { type ComputeSpec, computeName } from '../domain/compute';
import { BUILTINS_FILE, DeclaredComputeSpecSchema, type DeclaredSpec } from '../domain/hardware';
import { type EnginesConfig, EnginesConfigSchema } from '../domain/workloads';
import { config } from './config';

/**
 * Configuration files under config/ are YAML for people. At deploy, CDK validates them and inlines them into
 * the bundle as JSON (esbuild `define` of LLMCAP_CONFIG_*), so a Lambda never parses YAML nor reads files;
 * locally and in tests they are read from the repository.
 */

declare const process: NodeJS.Process;

/**
 * A built-in is declared as a compute manifest's spec is: the instance type is the truth, and cpu, memoryGb, gpu
 * and cost may be left out (resolved from EC2 and the Price List when the built-ins are loaded, see
 * service/computes.ts seedBuiltins).
 */
const BuiltinsSchema = z.array(z.strictObject({ name: computeName, spec: DeclaredComputeSpecSchema }));

export interface DeclaredBuiltin {
  name: string;
  spec: DeclaredSpec;
}

export function configDir(): string {
  return config().configDir ?? join(__dirname, '..', '..', 'config');
}

/** Reads and parses one config file; exported for CDK, which inlines the result. */
export function readConfigFile(file: string): unknown {
  return parseYaml(join(configDir(), file));
}

function parseYaml(path: string): unknown {
  // Required lazily so that the Lambda bundle, which always has the inlined JSON, never includes the parser.
  const { parse } = require('yaml') as typeof import('yaml');
  return parse(readFileSync(path, 'utf8'));
}

export function parseBuiltins(raw: unknown): DeclaredBuiltin[] {
  const r = BuiltinsSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`${BUILTINS_FILE} is invalid: ${lines}`);
  }
  return r.data;
}

let builtins: DeclaredBuiltin[] | undefined;

/** The built-ins as config/computes.yaml declares them (not yet resolved against AWS). */
export function builtinComputes(): DeclaredBuiltin[] {
  if (!builtins) {
    const inlined = process.env.LLMCAP_CONFIG_COMPUTES;
    builtins = parseBuiltins(inlined ? JSON.parse(inlined) : readConfigFile('computes.yaml'));
  }
  return builtins;
}

/**
 * The declared models of config/catalog.yaml (LLMCAP_CONFIG_CATALOG at deploy). Checked as a whole catalog
 * against the built-in computes, so that a declared model that could never be placed fails the deploy (CDK
 * calls this) or the start, not a request.
 */
export function parseDeclaredModels(
  raw: unknown,
  computes: readonly { name: string; spec: ComputeSpec }[] = builtinSketches(),
  file = DECLARED_FILE,
): DeclaredModel[] {
  const r = z.array(DeclaredModelSchema).safeParse(raw ?? []);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`${file} is invalid: ${lines}`);
  }
  const issues = validateCatalog(r.data, computes);
  if (issues.length) {
    throw new Error(
      `${file} is invalid against the built-in computes: ${issues.map((i) => i.message).join('; ')}`,
    );
  }
  return r.data;
}

/**
 * The built-ins whose file states their hardware, as the declared models are checked against them before any
 * AWS call (at deploy and start). Whether a model fits does not depend on the price, so none is needed; a
 * built-in that leaves its hardware to EC2 is checked when the catalog loads against the stored (resolved) one.
 */
export function builtinSketches(): { name: string; spec: ComputeSpec }[] {
  return builtinComputes().flatMap(({ name, spec }) => {
    const { cpu, memoryGb, gpu } = spec.node;
    if (cpu === undefined || memoryGb === undefined) return [];
    if (gpu && (gpu.type === undefined || gpu.count === undefined || gpu.memoryGb === undefined)) return [];
    return [
      {
        name,
        spec: {
          ...spec,
          node: {
            ...spec.node,
            cpu,
            memoryGb,
            ...(gpu ? { gpu: gpu as NonNullable<ComputeSpec['node']['gpu']> } : {}),
          },
          cost: { perHour: spec.cost?.perHour ?? 0, currency: 'USD' },
        } as ComputeSpec,
      },
    ];
  });
}

let declared: DeclaredModel[] | undefined;

export function declaredModels(): DeclaredModel[] {
  if (!declared) {
    const inlined = process.env.LLMCAP_CONFIG_CATALOG;
    declared = parseDeclaredModels(inlined ? JSON.parse(inlined) : readConfigFile('catalog.yaml'));
  }
  return declared;
}

/**
 * config/engines.yaml: the image, args and health endpoint of each engine, and per-model overrides
 * (docs/workloads.md). Inlined at deploy as LLMCAP_CONFIG_ENGINES, like the other config files; read from the
 * repository locally and in tests.
 */

export const ENGINES_FILE = 'config/engines.yaml';

export function parseEngines(raw: unknown): EnginesConfig {
  const r = EnginesConfigSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`${ENGINES_FILE} is invalid: ${lines}`);
  }
  return r.data;
}

let engines: EnginesConfig | undefined;

export function enginesConfig(): EnginesConfig {
  if (!engines) {
    const inlined = process.env.LLMCAP_CONFIG_ENGINES;
    engines = parseEngines(inlined ? JSON.parse(inlined) : readConfigFile('engines.yaml'));
  }
  return engines;
}

/**
 * The config files as the deploy inlines them into each bundle (see LlmcapFunction `inline`). A stage may
 * declare its own models (the stage config's `catalog`, a path from the repository root): checked here as
 * config/catalog.yaml is, and named in the error.
 */
export function inlinedConfig(catalog?: { path: string; shown: string }): Record<string, string> {
  const models = catalog
    ? parseDeclaredModels(parseYaml(catalog.path), builtinSketches(), catalog.shown)
    : declaredModels();
  return {
    LLMCAP_CONFIG_COMPUTES: JSON.stringify(builtinComputes()),
    LLMCAP_CONFIG_CATALOG: JSON.stringify(models),
    LLMCAP_CONFIG_ENGINES: JSON.stringify(enginesConfig()),
  };
}
