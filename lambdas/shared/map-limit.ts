/**
 * Runs `fn` over `items` with at most `limit` at once, results in input order: how llmcap bounds its calls to AWS
 * and the cluster. Here rather than in an adapter, so that a service using it pulls no SDK client into a bundle.
 */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
