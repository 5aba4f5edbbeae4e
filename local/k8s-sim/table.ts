import type { ResourceDef } from './resources';
import type { JsonObject, KObject } from './types';

/**
 * Server-side printing: `kubectl get` asks for a meta.k8s.io/v1 Table and prints its cells, so the columns
 * (and the way each cell is worded, READY 1/1, STATUS CrashLoopBackOff, AGE 5m) are the API server's.
 */

interface Column {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

const col = (name: string, type = 'string', priority = 0, format = ''): Column => ({
  name,
  type,
  format,
  description: name,
  priority,
});

/** k8s.io/apimachinery duration.HumanDuration. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8)
    return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 365 * 8)
    return days % 365 === 0 ? `${Math.floor(days / 365)}y` : `${Math.floor(days / 365)}y${days % 365}d`;
  return `${Math.floor(days / 365)}y`;
}

function age(ts: unknown, now: number): string {
  if (typeof ts !== 'string') return '<unknown>';
  return humanDuration(now - Date.parse(ts));
}

const spec = (o: KObject) => (o.spec as JsonObject) ?? {};
const status = (o: KObject) => (o.status as JsonObject) ?? {};
const none = (v: unknown) => (v === undefined || v === null || v === '' ? '<none>' : String(v));

function podStatus(pod: KObject): { ready: string; reason: string; restarts: string } {
  const st = status(pod);
  const cs = (st.containerStatuses as JsonObject[]) ?? [];
  const total = ((spec(pod).containers as unknown[]) ?? []).length;
  let reason = (st.reason as string) || (st.phase as string) || 'Pending';
  let ready = 0;
  let restarts = 0;
  let lastRestart: string | undefined;
  for (const c of [...cs].reverse()) {
    restarts += (c.restartCount as number) ?? 0;
    const term = ((c.lastState as JsonObject)?.terminated as JsonObject) ?? undefined;
    if (term?.finishedAt && (!lastRestart || (term.finishedAt as string) > lastRestart))
      lastRestart = term.finishedAt as string;
    const state = (c.state as JsonObject) ?? {};
    const waiting = state.waiting as JsonObject | undefined;
    const terminated = state.terminated as JsonObject | undefined;
    if (waiting?.reason) reason = waiting.reason as string;
    else if (terminated?.reason) reason = terminated.reason as string;
    else if (state.running && c.ready) ready++;
  }
  if (pod.metadata?.deletionTimestamp) reason = 'Terminating';
  return {
    ready: `${ready}/${total}`,
    reason,
    restarts: lastRestart ? `${restarts} (%AGO%${lastRestart} ago)` : String(restarts),
  };
}

function nodeStatus(node: KObject): string {
  const ready = ((status(node).conditions as JsonObject[]) ?? []).find((c) => c.type === 'Ready');
  let s = ready?.status === 'True' ? 'Ready' : ready?.status === 'False' ? 'NotReady' : 'Unknown';
  if (spec(node).unschedulable) s += ',SchedulingDisabled';
  return s;
}

function containersAndImages(podSpec: JsonObject): [string, string] {
  const cs = (podSpec.containers as JsonObject[]) ?? [];
  return [cs.map((c) => c.name).join(','), cs.map((c) => c.image).join(',')];
}

function selectorText(sel: unknown): string {
  const s = (sel as JsonObject) ?? {};
  const parts = Object.entries((s.matchLabels as Record<string, string>) ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of (s.matchExpressions as JsonObject[]) ?? [])
    parts.push(`${e.key} ${String(e.operator).toLowerCase()} (${((e.values as string[]) ?? []).join(',')})`);
  return parts.length > 0 ? parts.join(',') : '<none>';
}

interface Printer {
  columns: Column[];
  row(o: KObject, now: number): unknown[];
}

/** Deployments and ReplicaSets print alike: name, their own replica counts, age, then the pod template's. */
function workloadPrinter(counts: Column[], countsOf: (o: KObject) => unknown[]): Printer {
  return {
    columns: [
      col('Name', 'string', 0, 'name'),
      ...counts,
      col('Age'),
      col('Containers', 'string', 1),
      col('Images', 'string', 1),
      col('Selector', 'string', 1),
    ],
    row(o, now) {
      const [c, i] = containersAndImages(((spec(o).template as JsonObject)?.spec as JsonObject) ?? {});
      return [
        o.metadata?.name,
        ...countsOf(o),
        age(o.metadata?.creationTimestamp, now),
        c,
        i,
        selectorText(spec(o).selector),
      ];
    },
  };
}

const PRINTERS: Record<string, Printer> = {
  pods: {
    columns: [
      col('Name', 'string', 0, 'name'),
      col('Ready'),
      col('Status'),
      col('Restarts'),
      col('Age'),
      col('IP', 'string', 1),
      col('Node', 'string', 1),
      col('Nominated Node', 'string', 1),
      col('Readiness Gates', 'string', 1),
    ],
    row(o, now) {
      const s = podStatus(o);
      const restarts = s.restarts.replace(/%AGO%(\S+) ago/, (_, t) => `${age(t, now)} ago`);
      return [
        o.metadata?.name,
        s.ready,
        s.reason,
        restarts,
        age(o.metadata?.creationTimestamp, now),
        none(status(o).podIP),
        none(spec(o).nodeName),
        '<none>',
        '<none>',
      ];
    },
  },
  nodes: {
    columns: [
      col('Name', 'string', 0, 'name'),
      col('Status'),
      col('Roles'),
      col('Age'),
      col('Version'),
      col('Internal-IP', 'string', 1),
      col('External-IP', 'string', 1),
      col('OS-Image', 'string', 1),
      col('Kernel-Version', 'string', 1),
      col('Container-Runtime', 'string', 1),
    ],
    row(o, now) {
      const info = (status(o).nodeInfo as JsonObject) ?? {};
      const addr = (type: string) =>
        ((status(o).addresses as JsonObject[]) ?? []).find((a) => a.type === type)?.address;
      const roles = Object.keys(o.metadata?.labels ?? {})
        .filter((k) => k.startsWith('node-role.kubernetes.io/'))
        .map((k) => k.slice('node-role.kubernetes.io/'.length));
      return [
        o.metadata?.name,
        nodeStatus(o),
        roles.length ? roles.join(',') : '<none>',
        age(o.metadata?.creationTimestamp, now),
        info.kubeletVersion,
        none(addr('InternalIP')),
        none(addr('ExternalIP')),
        info.osImage,
        info.kernelVersion,
        info.containerRuntimeVersion,
      ];
    },
  },
  deployments: workloadPrinter(
    [col('Ready'), col('Up-to-date', 'integer'), col('Available', 'integer')],
    (o) => [
      `${status(o).readyReplicas ?? 0}/${spec(o).replicas ?? 0}`,
      status(o).updatedReplicas ?? 0,
      status(o).availableReplicas ?? 0,
    ],
  ),
  replicasets: workloadPrinter(
    [col('Desired', 'integer'), col('Current', 'integer'), col('Ready', 'integer')],
    (o) => [spec(o).replicas ?? 0, status(o).replicas ?? 0, status(o).readyReplicas ?? 0],
  ),
  services: {
    columns: [
      col('Name', 'string', 0, 'name'),
      col('Type'),
      col('Cluster-IP'),
      col('External-IP'),
      col('Port(s)'),
      col('Age'),
      col('Selector', 'string', 1),
    ],
    row(o, now) {
      const ports = ((spec(o).ports as JsonObject[]) ?? [])
        .map((p) => `${p.port}/${p.protocol ?? 'TCP'}`)
        .join(',');
      const sel = Object.entries((spec(o).selector as Record<string, string>) ?? {}).map(
        ([k, v]) => `${k}=${v}`,
      );
      return [
        o.metadata?.name,
        spec(o).type,
        none(spec(o).clusterIP),
        '<none>',
        ports || '<none>',
        age(o.metadata?.creationTimestamp, now),
        sel.length ? sel.join(',') : '<none>',
      ];
    },
  },
  poddisruptionbudgets: {
    columns: [
      col('Name', 'string', 0, 'name'),
      col('Min Available'),
      col('Max Unavailable'),
      col('Allowed Disruptions', 'integer'),
      col('Age'),
    ],
    row(o, now) {
      return [
        o.metadata?.name,
        spec(o).minAvailable === undefined ? 'N/A' : String(spec(o).minAvailable),
        spec(o).maxUnavailable === undefined ? 'N/A' : String(spec(o).maxUnavailable),
        status(o).disruptionsAllowed ?? 0,
        age(o.metadata?.creationTimestamp, now),
      ];
    },
  },
  namespaces: {
    columns: [col('Name', 'string', 0, 'name'), col('Status'), col('Age')],
    row(o, now) {
      return [o.metadata?.name, status(o).phase, age(o.metadata?.creationTimestamp, now)];
    },
  },
  events: {
    columns: [
      col('Last Seen'),
      col('Type'),
      col('Reason'),
      col('Object'),
      col('Subobject', 'string', 1),
      col('Source', 'string', 1),
      col('Message'),
      col('First Seen', 'string', 1),
      col('Count', 'integer', 1),
      col('Name', 'string', 1, 'name'),
    ],
    row(o, now) {
      const inv = (o.involvedObject as JsonObject) ?? {};
      const src = (o.source as JsonObject) ?? {};
      return [
        age(o.lastTimestamp ?? o.eventTime, now),
        o.type,
        o.reason,
        `${String(inv.kind).toLowerCase()}/${inv.name}`,
        (inv.fieldPath as string) ?? '',
        src.host ? `${src.component}, ${src.host}` : (src.component ?? ''),
        o.message,
        age(o.firstTimestamp ?? o.eventTime, now),
        o.count ?? 1,
        o.metadata?.name,
      ];
    },
  },
};

const DEFAULT: Printer = {
  columns: [col('Name', 'string', 0, 'name'), col('Created At', 'date')],
  row: (o) => [o.metadata?.name, o.metadata?.creationTimestamp],
};

export function toTable(
  def: ResourceDef,
  items: KObject[],
  listMeta: JsonObject,
  now: number,
  includeObject: string,
) {
  const p = PRINTERS[def.resource] ?? DEFAULT;
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMeta,
    columnDefinitions: p.columns,
    rows: items.map((o) => ({
      cells: p.row(o, now),
      object:
        includeObject === 'None'
          ? undefined
          : includeObject === 'Object'
            ? { ...o, apiVersion: o.apiVersion, kind: o.kind }
            : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata },
    })),
  };
}
