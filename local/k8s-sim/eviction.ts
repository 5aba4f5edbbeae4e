import type { Cluster } from './cluster';
import { DISRUPTED_TIMEOUT_MS, pdbCounts, podReady } from './controllers';
import { PDBS, PODS } from './resources';
import { matchesSelector } from './selectors';
import { badRequest, K8sError, tooManyRequests } from './status';
import { isObject, type JsonObject, type KObject } from './types';

/**
 * POST pods/<name>/eviction (policy/v1 Eviction), as the API server's eviction REST decides it: pods that are
 * not running go at once; a running pod covered by one PodDisruptionBudget goes only if the budget allows a
 * disruption, which the eviction then uses up (disruptedPods); else 429 with the budget's numbers.
 */
export function evict(c: Cluster, ns: string, name: string, body: unknown): JsonObject {
  if (!isObject(body)) throw badRequest('the body of the request must be a policy/v1 Eviction');
  const meta = (body.metadata as JsonObject) ?? {};
  if (meta.name !== undefined && meta.name !== name)
    throw badRequest('name in URL does not match name in Eviction object');
  if (meta.namespace !== undefined && meta.namespace !== ns)
    throw badRequest('namespace in URL does not match namespace in Eviction object');
  const pod = c.api.get(PODS, ns, name);
  const options = (body.deleteOptions as JsonObject) ?? {};
  const del = () => {
    c.delete(PODS, ns, name, {
      ...(typeof options.gracePeriodSeconds === 'number'
        ? { gracePeriodSeconds: options.gracePeriodSeconds }
        : {}),
    });
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
  };
  if (pod.metadata?.deletionTimestamp)
    return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 200 };
  const phase = (pod.status as JsonObject)?.phase;
  if (phase === 'Pending' || phase === 'Succeeded' || phase === 'Failed') return del();
  const pdbs = c.store
    .list(PDBS, ns)
    .filter((p) => matchesSelector((p.spec as JsonObject)?.selector, pod.metadata?.labels));
  if (pdbs.length === 0) return del();
  if (pdbs.length > 1)
    throw new K8sError(
      500,
      'InternalError',
      'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
    );
  const pdb = pdbs[0] as KObject;
  const status = (pdb.status as JsonObject) ?? {};
  const spec = (pdb.spec as JsonObject) ?? {};
  const policy = spec.unhealthyPodEvictionPolicy ?? 'IfHealthyBudget';
  if (!podReady(pod)) {
    if (policy === 'AlwaysAllow') return del();
    const { desired } = pdbCounts(c, pdb);
    if (((status.currentHealthy as number) ?? 0) >= desired && desired > 0) return del();
  }
  if (((status.observedGeneration as number) ?? 0) < (pdb.metadata?.generation ?? 1))
    throw tooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", [
      {
        reason: 'DisruptionBudget',
        message: `The disruption budget ${pdb.metadata?.name} is still being processed by the server.`,
      },
    ]);
  const allowed = (status.disruptionsAllowed as number) ?? 0;
  if (allowed < 0)
    throw new K8sError(
      403,
      'Forbidden',
      `poddisruptionbudgets.policy "${pdb.metadata?.name}" is forbidden: pdb disruptions allowed is negative`,
    );
  if (allowed === 0)
    throw tooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", [
      {
        reason: 'DisruptionBudget',
        message: `The disruption budget ${pdb.metadata?.name} needs ${status.desiredHealthy ?? 0} healthy pods and has ${status.currentHealthy ?? 0} currently`,
      },
    ]);
  const disrupted = { ...((status.disruptedPods as Record<string, string>) ?? {}), [name]: c.ts() };
  c.write(
    PDBS,
    { ...pdb, status: { ...status, disruptionsAllowed: allowed - 1, disruptedPods: disrupted } },
    'kube-apiserver',
    'status',
  );
  const key = `${ns}/${pdb.metadata?.name}`;
  c.checkLater(`${key}: disrupted pods expire`, DISRUPTED_TIMEOUT_MS, () => c.dirty.pdbs.add(key));
  return del();
}
