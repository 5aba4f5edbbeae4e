import type { Profile } from './model';

/** The three resources quotas and placement account for. Every quota rule applies to each separately. */
export const RESOURCES = ['gpus', 'cores', 'memoryGb'] as const;
export type Resource = (typeof RESOURCES)[number];
export type Resources = Record<Resource, number>;

export function add(a: Resources, b: Resources): Resources {
  return { gpus: a.gpus + b.gpus, cores: a.cores + b.cores, memoryGb: a.memoryGb + b.memoryGb };
}

export function sub(a: Resources, b: Resources): Resources {
  return { gpus: a.gpus - b.gpus, cores: a.cores - b.cores, memoryGb: a.memoryGb - b.memoryGb };
}

export function scale(a: Resources, n: number): Resources {
  return { gpus: a.gpus * n, cores: a.cores * n, memoryGb: a.memoryGb * n };
}

/**
 * What one replica of a profile holds (docs/reference/quota-semantics.md §2): its GPUs, its cores and its minimum memory. The
 * one conversion between a model's profiles and the resources quotas count; `profileOf` is its inverse.
 */
export function perReplica(p: Pick<Profile, 'gpus' | 'cpuCores' | 'minMemoryGb'>): Resources {
  return { gpus: p.gpus, cores: p.cpuCores, memoryGb: p.minMemoryGb ?? 0 };
}

/** The profile whose replica holds `r` (no memory held: none asked for). */
export function profileOf(name: string, r: Resources): Profile {
  return { name, gpus: r.gpus, cpuCores: r.cores, ...(r.memoryGb > 0 ? { minMemoryGb: r.memoryGb } : {}) };
}

/**
 * The profile an admitted unit runs with: the model's own of that name while it has one (placement matches GPU
 * types by it), else the one the unit's resources describe.
 */
export function unitProfile(
  profiles: readonly Profile[] | undefined,
  unit: { profile: string; resources: Resources },
): Profile {
  return profiles?.find((p) => p.name === unit.profile) ?? profileOf(unit.profile, unit.resources);
}
