/**
 * An L4 pool (g6.48xlarge, 8 L4 GPUs a node) and a one-GPU model placed on it, as API manifests. Plenty of
 * GPUs by default (10 nodes × 8), so that quotas, not headroom, bind in the tests that use them.
 */

export function l4Pool(name: string, maxNodes = 10) {
  return {
    apiVersion: 'llmcap/v1',
    kind: 'Compute',
    metadata: { name },
    spec: {
      node: {
        instanceType: 'g6.48xlarge',
        cpu: 192,
        memoryGb: 768,
        gpu: { type: 'L4', count: 8, memoryGb: 24 },
      },
      nodeGroup: { maxNodes },
      cost: { perHour: 13.35 },
    },
  };
}

export interface Scaling {
  min: number;
  max: number;
  target?: number;
}

/** A vLLM model whose one profile ('l4') takes one L4 GPU on `compute`; `spec` adds or overrides fields. */
export function l4Model(
  compute: string,
  name: string,
  owner: string,
  scaling: Scaling,
  spec: Record<string, unknown> = {},
) {
  return {
    apiVersion: 'llmcap/v1',
    kind: 'Model',
    metadata: { name, owner },
    spec: {
      source: `hf://org/${name}`,
      engine: 'vllm',
      ...spec,
      profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute }],
      scaling,
    },
  };
}

/** scaling for l4Model: min, max (default min) and a target only when given. */
export const scale = (min: number, max = min, target?: number): Scaling => ({
  min,
  max,
  ...(target !== undefined ? { target } : {}),
});
