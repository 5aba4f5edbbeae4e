import type { Cluster } from '../../local/k8s-sim/cluster';
import { podReady } from '../../local/k8s-sim/controllers';
import { PODS } from '../../local/k8s-sim/resources';

/**
 * The lowest number of Ready, not terminating pods each model had at any moment: counted on every change the
 * simulated cluster's store makes to a pod, so no dip between two samples goes unseen. Counting starts at the
 * call; stop() returns the lowest per model.
 */
export function watchReady(cluster: Cluster, models: readonly string[]) {
  const lowest = new Map<string, number>();
  let on = true;
  const count = () => {
    const now = new Map<string, number>();
    for (const p of cluster.store.list(PODS)) {
      if (p.metadata?.deletionTimestamp || !podReady(p)) continue;
      const m = p.metadata?.labels?.['llmcap.dev/model'] ?? '';
      now.set(m, (now.get(m) ?? 0) + 1);
    }
    for (const m of models)
      lowest.set(m, Math.min(lowest.get(m) ?? Number.POSITIVE_INFINITY, now.get(m) ?? 0));
  };
  count();
  cluster.store.onChange((_type, def) => {
    if (on && def === PODS) count();
  });
  return {
    stop(): Record<string, number> {
      on = false;
      return Object.fromEntries(lowest);
    },
  };
}
