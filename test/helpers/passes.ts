import { inLedgerTurn } from '../../lambdas/store/turn';

/**
 * Holds the ledger turn until `release()`, as a long API write would: a reconcile pass started meanwhile
 * blocks in its admission, so a test can see it RUNNING for as long as it likes, with no clock involved.
 */
export async function holdLedger(): Promise<{ release(): Promise<void> }> {
  let open!: () => void;
  const gate = new Promise<void>((r) => {
    open = r;
  });
  let entered!: () => void;
  const inside = new Promise<void>((r) => {
    entered = r;
  });
  const held = inLedgerTurn(
    async () => {
      entered();
      await gate;
    },
    { by: 'test', waitMs: 10_000, leaseMs: 300_000 },
  );
  await inside;
  return {
    release: async () => {
      open();
      await held;
    },
  };
}

/** Polls `read` until `ok` holds (state changes happen in the background); fails after `timeoutMs`. */
export async function until<T>(
  read: () => Promise<T>,
  ok: (v: T) => boolean,
  timeoutMs = 30_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`still not there after ${timeoutMs} ms: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
