import { instanceFacts } from '../cloud-sim/aws-snapshot';

/**
 * What a node of an instance type offers: vCPUs, memory, NVIDIA GPUs, architecture and the pod limit EKS
 * gives it (VPC CNI: ENIs × (IPv4 per ENI − 1) + 2, capped at the 110 / 250 that EKS's max-pods calculator
 * recommends below / from 30 vCPUs). From the simulator's EC2 snapshot (the same facts
 * DescribeInstanceTypes answers); a guess from the name only for a type outside it.
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
  const f = instanceFacts(instanceType);
  if (!f) return guess(instanceType);
  const n = f.network;
  const eni = n ? n.maxInterfaces * (n.ipv4PerInterface - 1) + 2 : 58;
  return {
    vcpus: f.vcpus,
    memoryMiB: f.memoryMiB,
    gpus: f.accelerator.kind === 'nvidia' ? f.accelerator.count : 0,
    ...(f.accelerator.kind === 'nvidia' ? { gpuModel: f.accelerator.name } : {}),
    arch: f.architectures.includes('arm64') ? 'arm64' : 'amd64',
    maxPods: Math.min(eni, f.vcpus < 30 ? 110 : 250),
  };
}
