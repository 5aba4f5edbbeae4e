import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ComputeSpecSchema } from '../../../../lambdas/domain/compute';
import type { Profile } from '../../../../lambdas/domain/model';
import {
  computeInfos,
  describeReplicas,
  rankCandidates,
  replicaRequest,
} from '../../../../lambdas/domain/placement';
import { BUILTIN_COMPUTES } from '../../../helpers/computes';

const infos = computeInfos(BUILTIN_COMPUTES);
const ranked = (p: Profile) => {
  const r = rankCandidates(infos, p);
  return r.ok ? r.computes.map((c) => c.name) : r.reason;
};

describe('the built-in fixture', () => {
  it('matches config/computes.yaml', () => {
    const raw = parse(readFileSync(join(__dirname, '../../../../config/computes.yaml'), 'utf8')) as {
      name: string;
      spec: unknown;
    }[];
    // The file states the hardware; the price is the snapshot's us-east-1 on-demand one.
    expect(BUILTIN_COMPUTES.map((b) => ({ name: b.name, node: b.spec.node }))).toEqual(
      raw.map((r) => ({
        name: r.name,
        node: ComputeSpecSchema.parse({ ...(r.spec as object), cost: { perHour: 0 } }).node,
      })),
    );
  });
});

describe('replicaRequest', () => {
  it('turns cores and GiB into millicores and MiB, rounding up without float noise', () => {
    expect(replicaRequest({ gpus: 1, cpuCores: 1.1, minMemoryGb: 0.5 })).toEqual({
      gpus: 1,
      millicores: 1100,
      memoryMiB: 512,
    });
    expect(replicaRequest({ gpus: 0, cpuCores: 0.0005 })).toEqual({ gpus: 0, millicores: 1, memoryMiB: 0 });
  });
});

describe('rankCandidates', () => {
  it('ranks by cost per replica: one L40S GPU is cheaper on the 1-GPU node than a quarter of the 4-GPU one', () => {
    expect(ranked({ name: 'p', gpus: 1, gpuType: 'L40S', cpuCores: 4, minMemoryGb: 16 })).toEqual([
      'gpu-l40s-1x',
      'gpu-l40s-4x',
    ]);
  });

  it('counts how many replicas share a node: small CPU replicas are cheaper on the 4-GPU node than alone', () => {
    // 1-gpu L40S, 2 cores: gpu-l40s-1x holds 1 (2.24/replica), gpu-l40s-4x holds 4 (2.62/replica).
    expect(ranked({ name: 'p', gpus: 1, gpuType: 'L40S', cpuCores: 2 })[0]).toBe('gpu-l40s-1x');
    // A 1-GPU replica of any type goes to the cheapest GPU node first.
    expect(ranked({ name: 'p', gpus: 1, cpuCores: 4, minMemoryGb: 16 })).toEqual([
      'gpu-l4-1x',
      'gpu-a10g-1x',
      'gpu-l40s-1x',
      'gpu-l40s-4x',
      'gpu-h100-8x',
    ]);
  });

  it('excludes computes whose allocatable node cannot hold one replica', () => {
    // 8 vCPU nodes have 7.34 allocatable cores: an 8-core replica needs the bigger nodes.
    expect(ranked({ name: 'p', gpus: 1, cpuCores: 8 })).toEqual(['gpu-l40s-4x', 'gpu-h100-8x']);
    expect(ranked({ name: 'p', gpus: 2, gpuType: 'H100', cpuCores: 8, minMemoryGb: 64 })).toEqual([
      'gpu-h100-8x',
    ]);
  });

  it('puts CPU-only replicas on CPU computes first, GPU computes after', () => {
    expect(ranked({ name: 'p', gpus: 0, cpuCores: 2, minMemoryGb: 4 })).toEqual([
      'cpu-medium',
      'cpu-small',
      // 3 per node on the 8-vCPU GPU nodes, 23 on gpu-l40s-4x, 93 on gpu-h100-8x: per replica in that order.
      'gpu-l4-1x',
      'gpu-a10g-1x',
      'gpu-l40s-4x',
      'gpu-h100-8x',
      'gpu-l40s-1x',
    ]);
  });

  it('matches GPU types without case and honours a pinned compute', () => {
    expect(ranked({ name: 'p', gpus: 1, gpuType: 'l4', cpuCores: 1 })).toEqual(['gpu-l4-1x']);
    expect(ranked({ name: 'p', gpus: 1, gpuType: 'L40S', cpuCores: 1, compute: 'gpu-l40s-4x' })).toEqual([
      'gpu-l40s-4x',
    ]);
  });

  it('says in words why nothing fits', () => {
    expect(ranked({ name: 'p', gpus: 1, gpuType: 'B200', cpuCores: 1 })).toBe(
      'no compute has a node that can hold a 1-gpu B200 replica',
    );
    expect(ranked({ name: 'p', gpus: 1, cpuCores: 1, compute: 'nope' })).toBe(
      'profile p pins compute nope, which does not exist',
    );
    expect(ranked({ name: 'p', gpus: 2, gpuType: 'L4', cpuCores: 1, compute: 'gpu-l4-1x' })).toBe(
      'profile p pins compute gpu-l4-1x, whose node (1 × L4, 7.91 cores and 30.47 GiB allocatable) cannot hold a 2-gpu L4 replica',
    );
  });

  it('describes replicas for messages', () => {
    expect(describeReplicas({ gpus: 4, gpuType: 'L40S', cpuCores: 16 }, 1)).toBe('a 4-gpu L40S replica');
    expect(describeReplicas({ gpus: 4, cpuCores: 16 }, 2)).toBe('2 replicas of 4-gpu');
    expect(describeReplicas({ gpus: 0, cpuCores: 2, minMemoryGb: 4 }, 3)).toBe(
      '3 CPU-only replicas of 2 cores and 4 GiB',
    );
  });
});
