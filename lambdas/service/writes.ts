import type { Decide } from '../store/commit';

/** How a write use case runs: for real, or as a dry run (`?dryRun=All`) that decides everything and writes nothing. */
export interface WriteOptions {
  dryRun?: boolean;
}

/**
 * A decision that, in a dry run, keeps its result and drops its items: the rules and admission's preview run
 * against the loaded world exactly as for the write, and nothing is committed.
 */
export function committing<T>(opts: WriteOptions | undefined, decide: Decide<T>): Decide<T> {
  if (!opts?.dryRun) return decide;
  return async (age) => ({ items: [], result: (await decide(age)).result });
}
