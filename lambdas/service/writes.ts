import type { TxItem } from '../store/ledger';

/** How a write use case runs: for real, or as a dry run (`?dryRun=All`) that decides everything and writes nothing. */
export interface WriteOptions {
  dryRun?: boolean;
}

type Decide<T> = () => Promise<{ items: TxItem[]; result: T }>;

/**
 * A ledger decision that, in a dry run, keeps its result and drops its items: the rules and admission run
 * against the loaded world exactly as for the write, and the ledger commits nothing.
 */
export function committing<T>(opts: WriteOptions | undefined, decide: Decide<T>): Decide<T> {
  if (!opts?.dryRun) return decide;
  return async () => ({ items: [], result: (await decide()).result });
}
