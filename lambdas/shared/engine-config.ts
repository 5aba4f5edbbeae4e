import { type EnginesConfig, EnginesConfigSchema } from '../domain/workloads';
import { readConfigFile } from './builtin-config';

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
