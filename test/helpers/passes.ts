import type { ControlPlane } from '../../local/control-plane';

/**
 * Holds the admitter busy until `release()`, as a long run of it would (reserved concurrency 1): a reconcile pass
 * started meanwhile waits in its admission, so a test can see it RUNNING for as long as it likes, with no clock.
 */
export async function holdAdmitter(cp: Pick<ControlPlane, 'lambda' | 'admitterFunction'>): Promise<{
  release(): Promise<void>;
}> {
  const held = cp.lambda.occupy(cp.admitterFunction);
  return { release: async () => held.release() };
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

/**
 * Reads a model (an API answer with the manifest as body) until the admitter has decided its version: its status
 * is of that version and nothing waits Queued, as `llmcap apply --wait` waits.
 */
export function decided<T extends { body: any }>(read: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  return until(
    read,
    (r) =>
      r.body?.status?.observedVersion === r.body?.metadata?.version &&
      !(r.body?.status?.reasons ?? []).some((x: { reason: string }) => x.reason === 'Queued'),
    timeoutMs,
  );
}
