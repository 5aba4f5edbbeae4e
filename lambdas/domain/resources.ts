/** The three resources quotas and placement account for. Every quota rule applies to each separately. */
export const RESOURCES = ['gpus', 'cores', 'memoryGb'] as const;
export type Resource = (typeof RESOURCES)[number];
export type Resources = Record<Resource, number>;

export const ZERO: Resources = Object.freeze({ gpus: 0, cores: 0, memoryGb: 0 });

export function add(a: Resources, b: Resources): Resources {
  return { gpus: a.gpus + b.gpus, cores: a.cores + b.cores, memoryGb: a.memoryGb + b.memoryGb };
}

export function sub(a: Resources, b: Resources): Resources {
  return { gpus: a.gpus - b.gpus, cores: a.cores - b.cores, memoryGb: a.memoryGb - b.memoryGb };
}

export function scale(a: Resources, n: number): Resources {
  return { gpus: a.gpus * n, cores: a.cores * n, memoryGb: a.memoryGb * n };
}
