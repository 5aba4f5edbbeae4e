/**
 * What a node of an instance type offers: vCPUs, memory, NVIDIA GPUs, architecture and the pod limit EKS
 * gives it (ENI-based max pods). A small table of the types llmcap's computes and tests use, and a guess from
 * the name for the rest. When the simulator's EC2 instance-type snapshot lands (DescribeInstanceTypes),
 * `nodeFacts` is the one place to switch to it.
 */

export interface NodeFacts {
  vcpus: number;
  memoryMiB: number;
  gpus: number;
  /** e.g. `L4`, `H100`; undefined without GPUs. */
  gpuModel?: string;
  arch: 'amd64' | 'arm64';
  maxPods: number;
}

const G = 1024;
const KNOWN: Record<string, NodeFacts> = {
  't3.medium': { vcpus: 2, memoryMiB: 4 * G, gpus: 0, arch: 'amd64', maxPods: 17 },
  't3.large': { vcpus: 2, memoryMiB: 8 * G, gpus: 0, arch: 'amd64', maxPods: 35 },
  'm7i.large': { vcpus: 2, memoryMiB: 8 * G, gpus: 0, arch: 'amd64', maxPods: 29 },
  'm7i.xlarge': { vcpus: 4, memoryMiB: 16 * G, gpus: 0, arch: 'amd64', maxPods: 58 },
  'm7i.2xlarge': { vcpus: 8, memoryMiB: 32 * G, gpus: 0, arch: 'amd64', maxPods: 58 },
  'm7i.4xlarge': { vcpus: 16, memoryMiB: 64 * G, gpus: 0, arch: 'amd64', maxPods: 234 },
  'm7g.xlarge': { vcpus: 4, memoryMiB: 16 * G, gpus: 0, arch: 'arm64', maxPods: 58 },
  'g5.xlarge': { vcpus: 4, memoryMiB: 16 * G, gpus: 1, gpuModel: 'A10G', arch: 'amd64', maxPods: 58 },
  'g5.2xlarge': { vcpus: 8, memoryMiB: 32 * G, gpus: 1, gpuModel: 'A10G', arch: 'amd64', maxPods: 58 },
  'g5.12xlarge': { vcpus: 48, memoryMiB: 192 * G, gpus: 4, gpuModel: 'A10G', arch: 'amd64', maxPods: 234 },
  'g5.48xlarge': { vcpus: 192, memoryMiB: 768 * G, gpus: 8, gpuModel: 'A10G', arch: 'amd64', maxPods: 345 },
  'g6.xlarge': { vcpus: 4, memoryMiB: 16 * G, gpus: 1, gpuModel: 'L4', arch: 'amd64', maxPods: 58 },
  'g6.2xlarge': { vcpus: 8, memoryMiB: 32 * G, gpus: 1, gpuModel: 'L4', arch: 'amd64', maxPods: 58 },
  'g6.12xlarge': { vcpus: 48, memoryMiB: 192 * G, gpus: 4, gpuModel: 'L4', arch: 'amd64', maxPods: 234 },
  'g6e.xlarge': { vcpus: 4, memoryMiB: 32 * G, gpus: 1, gpuModel: 'L40S', arch: 'amd64', maxPods: 58 },
  'g6e.2xlarge': { vcpus: 8, memoryMiB: 64 * G, gpus: 1, gpuModel: 'L40S', arch: 'amd64', maxPods: 58 },
  'g6e.12xlarge': { vcpus: 48, memoryMiB: 384 * G, gpus: 4, gpuModel: 'L40S', arch: 'amd64', maxPods: 234 },
  'p4d.24xlarge': { vcpus: 96, memoryMiB: 1152 * G, gpus: 8, gpuModel: 'A100', arch: 'amd64', maxPods: 737 },
  'p5.48xlarge': { vcpus: 192, memoryMiB: 2048 * G, gpus: 8, gpuModel: 'H100', arch: 'amd64', maxPods: 100 },
};

const MEM_PER_VCPU: Record<string, number> = { c: 2, m: 4, r: 8, t: 2, x: 16, g: 4, p: 8, i: 8, z: 8 };

/** A guess from `<family><generation><attributes>.<size>` for a type the table lacks. */
function guess(type: string): NodeFacts {
  const m = /^([a-z]+?)(\d+)([a-z-]*)\.(\d*)(nano|micro|small|medium|large|xlarge|metal)$/.exec(type);
  if (!m) return { vcpus: 2, memoryMiB: 4 * G, gpus: 0, arch: 'amd64', maxPods: 17 };
  const [, family = 'm', , attrs = '', mult = '', size = 'large'] = m;
  let vcpus = size === 'xlarge' ? 4 * (mult ? Number(mult) : 1) : size === 'metal' ? 96 : 2;
  if (size === 'nano' || size === 'micro' || size === 'small') vcpus = 2;
  const perVcpu = MEM_PER_VCPU[family[0] as string] ?? 4;
  const gpuFamily = family === 'g' || family === 'p';
  const gpus = !gpuFamily ? 0 : vcpus >= 192 ? 8 : vcpus >= 96 && family === 'p' ? 8 : vcpus >= 48 ? 4 : 1;
  return {
    vcpus,
    memoryMiB: vcpus * perVcpu * G,
    gpus,
    ...(gpus > 0 ? { gpuModel: 'GPU' } : {}),
    arch: attrs.includes('g') ? 'arm64' : 'amd64',
    maxPods: vcpus <= 2 ? 29 : vcpus <= 8 ? 58 : 234,
  };
}

export function nodeFacts(instanceType: string): NodeFacts {
  return KNOWN[instanceType] ?? guess(instanceType);
}
