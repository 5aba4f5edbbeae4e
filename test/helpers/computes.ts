import type { ComputeSpec } from '../../lambdas/domain/compute';
import { resolveBuiltins } from '../../lambdas/domain/hardware';
import { builtinComputes } from '../../lambdas/shared/builtin-config';
import { instanceFacts, snapshotPrice } from '../../local/cloud-sim/aws-snapshot';

/**
 * The seven built-in computes of docs/design.md §3.1, read from config/computes.yaml and resolved against the
 * AWS snapshot (us-east-1) exactly as seeding resolves them. Tests and the placement benchmark share them.
 */

export interface NamedCompute {
  name: string;
  spec: ComputeSpec;
}

export const BUILTIN_COMPUTES: readonly NamedCompute[] = Object.freeze(
  resolveBuiltins(
    builtinComputes(),
    builtinComputes().map((b) => ({
      facts: instanceFacts(b.spec.node.instanceType),
      price: snapshotPrice('us-east-1', b.spec.node.instanceType),
      nearNames: [],
    })),
    'us-east-1',
  ).map(({ name, spec }) => ({ name, spec })),
);

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
