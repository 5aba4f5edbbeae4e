import type { Cluster } from './cluster';
import { PODS, type ResourceDef } from './resources';
import { K8sError, methodNotAllowed } from './status';
import type { JsonObject, KObject } from './types';

/**
 * The API server's pod proxy (`/api/v1/namespaces/{ns}/pods/{[scheme:]name[:port]}/proxy/{path}`), as
 * kube-apiserver serves it: the pod's server answers, its status and content type passed through; a pod
 * without an address is refused ("address not allowed"), and one whose server does not listen (not started,
 * another port) fails as the dial fails. The only server simulated is the model server's `/metrics`
 * (traffic.ts); any other path answers 404 as the engine would.
 */

export interface ProxyAnswer {
  status: number;
  contentType: string;
  body: string;
}

const TEXT = 'text/plain; charset=utf-8';
// What Prometheus client libraries answer with: the exposition format, version 0.0.4.
const PROMETHEUS = 'text/plain; version=0.0.4; charset=utf-8';

export function podProxy(
  c: Cluster,
  method: string,
  r: { def: ResourceDef; namespace?: string; name?: string; proxyPath?: string },
): ProxyAnswer {
  if (method !== 'GET') throw methodNotAllowed('the simulated model servers answer GET only');
  const parts = (r.name ?? '').split(':');
  // `https:name:port`, `name:port` or `name`.
  const [name, port] = parts.length === 3 ? [parts[1]!, parts[2]] : [parts[0]!, parts[1]];
  const pod = c.store.get(PODS, r.namespace, name);
  if (!pod) throw new K8sError(404, 'NotFound', `pods "${name}" not found`, { name, kind: 'pods' });
  const status = (pod.status ?? {}) as JsonObject;
  const ip = status.podIP as string | undefined;
  if (!ip) throw new K8sError(400, 'BadRequest', 'address not allowed');
  const container = ((pod.spec as JsonObject)?.containers as JsonObject[] | undefined)?.[0];
  const ports = ((container?.ports as JsonObject[] | undefined) ?? []).map((p) => String(p.containerPort));
  const target = port || ports[0] || '80';
  const listening =
    ports.includes(target) &&
    ((status.containerStatuses as JsonObject[] | undefined) ?? []).some((s) => s.ready === true) &&
    !(pod.metadata as JsonObject)?.deletionTimestamp;
  if (!listening)
    throw new K8sError(
      503,
      'ServiceUnavailable',
      `error trying to reach service: dial tcp ${ip}:${target}: connect: connection refused`,
    );
  const path = r.proxyPath ?? '/';
  if (path !== '/metrics') return { status: 404, contentType: TEXT, body: '404 page not found\n' };
  const text = c.traffic.metricsText(pod, readyPeers(c, pod), c.now());
  if (text === undefined) return { status: 404, contentType: TEXT, body: '404 page not found\n' };
  return { status: 200, contentType: PROMETHEUS, body: text };
}

/** The Ready pods serving the same model (across namespaces of the stage): who shares its traffic. */
function readyPeers(c: Cluster, pod: KObject): number {
  const model = ((pod.metadata as JsonObject)?.labels as JsonObject)?.['llmcap.dev/model'];
  let n = 0;
  for (const p of c.store.list(PODS)) {
    const labels = (p.metadata as JsonObject)?.labels as JsonObject | undefined;
    if (labels?.['llmcap.dev/model'] !== model || (p.metadata as JsonObject)?.deletionTimestamp) continue;
    const conds = ((p.status as JsonObject)?.conditions as JsonObject[] | undefined) ?? [];
    if (conds.some((x) => x.type === 'Ready' && x.status === 'True')) n++;
  }
  return n;
}
