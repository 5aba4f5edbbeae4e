import type { ComputeSpec } from '../../lambdas/domain/compute';
import { builtinComputes } from '../../lambdas/shared/builtin-config';

/**
 * The seven built-in computes of docs/design.md §3.1, read from config/computes.yaml and parsed exactly as in
 * production. Tests and the placement benchmark share them.
 */

export interface NamedCompute {
  name: string;
  spec: ComputeSpec;
}

export const BUILTIN_COMPUTES: readonly NamedCompute[] = Object.freeze(builtinComputes());

export function builtin(name: string): NamedCompute {
  const c = BUILTIN_COMPUTES.find((b) => b.name === name);
  if (!c) throw new Error(`no built-in compute ${name}`);
  return c;
}

/** The built-ins with another maxNodes (1..100), e.g. for benchmarks at scale. */
export function withMaxNodes(computes: readonly NamedCompute[], maxNodes: number): NamedCompute[] {
  return computes.map((c) => ({
    name: c.name,
    spec: { ...c.spec, nodeGroup: { ...c.spec.nodeGroup, maxNodes } },
  }));
}
