import { type ComputeSpec, type ComputeSpecInput, ComputeSpecSchema } from '../../lambdas/domain/compute';

/**
 * The seven built-in computes of DESIGN.md §3.1 (config/computes.yaml), parsed through the schema so that
 * defaults apply exactly as in production. Tests and the placement benchmark share them.
 */

export interface NamedCompute {
  name: string;
  spec: ComputeSpec;
}

const gpu = (type: string, count: number, memoryGb: number) => ({ type, count, memoryGb });

const RAW: { name: string; spec: ComputeSpecInput }[] = [
  {
    name: 'cpu-small',
    spec: {
      node: { instanceType: 'm7i.xlarge', cpu: 4, memoryGb: 16 },
      nodeGroup: { maxNodes: 4 },
      cost: { perHour: 0.2016 },
    },
  },
  {
    name: 'cpu-medium',
    spec: {
      node: { instanceType: 'm7i.2xlarge', cpu: 8, memoryGb: 32 },
      nodeGroup: { maxNodes: 4 },
      cost: { perHour: 0.4032 },
    },
  },
  {
    name: 'gpu-l4-1x',
    spec: {
      node: { instanceType: 'g6.2xlarge', cpu: 8, memoryGb: 32, gpu: gpu('L4', 1, 24) },
      nodeGroup: { maxNodes: 4 },
      cost: { perHour: 0.9776 },
    },
  },
  {
    name: 'gpu-a10g-1x',
    spec: {
      node: { instanceType: 'g5.2xlarge', cpu: 8, memoryGb: 32, gpu: gpu('A10G', 1, 24) },
      nodeGroup: { maxNodes: 4 },
      cost: { perHour: 1.212 },
    },
  },
  {
    name: 'gpu-l40s-1x',
    spec: {
      node: { instanceType: 'g6e.2xlarge', cpu: 8, memoryGb: 64, gpu: gpu('L40S', 1, 48) },
      nodeGroup: { maxNodes: 2 },
      cost: { perHour: 2.24208 },
    },
  },
  {
    name: 'gpu-l40s-4x',
    spec: {
      node: { instanceType: 'g6e.12xlarge', cpu: 48, memoryGb: 384, gpu: gpu('L40S', 4, 48) },
      nodeGroup: { maxNodes: 1 },
      cost: { perHour: 10.49264 },
    },
  },
  {
    name: 'gpu-h100-8x',
    spec: {
      node: { instanceType: 'p5.48xlarge', cpu: 192, memoryGb: 2048, gpu: gpu('H100', 8, 80) },
      nodeGroup: { maxNodes: 1 },
      cost: { perHour: 55.04 },
    },
  },
];

export const BUILTIN_COMPUTES: readonly NamedCompute[] = Object.freeze(
  RAW.map(({ name, spec }) => ({ name, spec: ComputeSpecSchema.parse(spec) })),
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
