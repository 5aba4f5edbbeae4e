import { ApiServer } from './api';
import type { Cluster } from './cluster';
import { deepEqual } from './fieldset';
import { LABELS, MANAGERS } from './names';
import { DEPLOYMENTS, NAMESPACES, PDBS, PODS, REPLICASETS, RESOURCES } from './resources';
import { matchesSelector } from './selectors';
import { isObject, type JsonObject, type KObject } from './types';

/**
 * kube-controller-manager, the parts llmcap's objects need: the deployment controller (a ReplicaSet per pod
 * template, rolling updates), the replica set controller, the disruption controller (PDB status), the
 * garbage collector (owner references, propagation policies) and the namespace controller.
 */

const CM = MANAGERS.controllers;

export function runControllers(c: Cluster): boolean {
  let worked = false;
  for (const [queue, fn] of [
    [c.dirty.gc, (k: string) => collectGarbage(c, k)],
    [c.dirty.namespaces, (k: string) => syncNamespace(c, k)],
    [c.dirty.deployments, (k: string) => syncDeployment(c, k)],
    [c.dirty.replicasets, (k: string) => syncReplicaSet(c, k)],
    [c.dirty.pdbs, (k: string) => syncPdb(c, k)],
  ] as const) {
    if (queue.size === 0) continue;
    const keys = [...queue];
    queue.clear();
    for (const k of keys) fn(k);
    worked = true;
  }
  return worked;
}

const split = (key: string) => {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)] as const;
};

function controllerOf(o: KObject | undefined) {
  return o?.metadata?.ownerReferences?.find((r) => r.controller);
}

function isActive(pod: KObject): boolean {
  const phase = (pod.status as JsonObject)?.phase;
  return !pod.metadata?.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed';
}

export function podReady(pod: KObject): boolean {
  const conds = ((pod.status as JsonObject)?.conditions as JsonObject[]) ?? [];
  return conds.some((x) => x.type === 'Ready' && x.status === 'True');
}

// ---- garbage collector ----

function collectGarbage(c: Cluster, uid: string): void {
  const ownerAlive = findByUid(c, uid);
  for (const ref of c.store.dependents(uid)) {
    const dep = c.store.get(ref.def, ref.namespace, ref.name);
    if (!dep || dep.metadata?.deletionTimestamp) continue;
    const owners = dep.metadata?.ownerReferences ?? [];
    const deleting = ownerAlive?.metadata?.deletionTimestamp !== undefined;
    const foreground = (ownerAlive?.metadata?.finalizers ?? []).includes(ApiServer.finalizers.foreground);
    if (ownerAlive && !(deleting && foreground)) continue;
    // Another owner that still exists keeps the dependent alive.
    const others = owners.filter((o) => o.uid !== uid && findByUid(c, o.uid));
    if (others.length > 0) continue;
    c.api.delete(ref.def, ref.namespace, ref.name, {
      propagationPolicy: foreground ? 'Foreground' : 'Background',
    });
  }
  // A foreground deletion completes once the owner has no dependents left.
  if (ownerAlive?.metadata?.deletionTimestamp) {
    const fins = ownerAlive.metadata.finalizers ?? [];
    const def = c.store.refOfUid(uid)?.def;
    if (!def) return;
    if (fins.includes(ApiServer.finalizers.foreground) && c.store.dependents(uid).length === 0) {
      const rest = fins.filter((f) => f !== ApiServer.finalizers.foreground);
      if (rest.length === 0)
        c.api.removeNow(def, ownerAlive.metadata.namespace, ownerAlive.metadata.name as string);
      else c.store.put(def, { ...ownerAlive, metadata: { ...ownerAlive.metadata, finalizers: rest } });
    }
  }
}

function findByUid(c: Cluster, uid: string): KObject | undefined {
  return c.store.byUidGet(uid);
}

// ---- namespace controller ----

function syncNamespace(c: Cluster, name: string): void {
  const ns = c.store.get(NAMESPACES, undefined, name);
  if (!ns?.metadata?.deletionTimestamp) return;
  let left = 0;
  for (const def of RESOURCES) {
    if (!def.namespaced) continue;
    for (const o of c.store.list(def, name)) {
      left++;
      if (!o.metadata?.deletionTimestamp) c.api.delete(def, name, o.metadata?.name as string);
    }
  }
  if (left === 0) c.api.removeNow(NAMESPACES, undefined, name);
}

// ---- deployment controller ----

/** FNV-1a over the template, encoded with the name alphabet, as pod-template-hash looks. */
export function templateHash(template: unknown, collisionCount = 0): string {
  let h = 0x811c9dc5;
  const s = `${stable(template)}${collisionCount}`;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  return String(h)
    .split('')
    .map((ch) => alphabet[ch.charCodeAt(0) % alphabet.length])
    .join('');
}

function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (isObject(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${k}:${stable(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

function withoutHash(template: unknown): unknown {
  const t = structuredClone(template) as JsonObject;
  const meta = (t.metadata as JsonObject) ?? {};
  const labels = { ...((meta.labels as JsonObject) ?? {}) };
  delete labels[LABELS.podTemplateHash];
  t.metadata = { ...meta, labels };
  return t;
}

/** An int-or-percent of a total: `25%` of 4 rounds up (surge) or down (unavailable). */
export function scaled(v: unknown, total: number, roundUp: boolean): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.endsWith('%')) {
    const x = (Number(v.slice(0, -1)) * total) / 100;
    return roundUp ? Math.ceil(x) : Math.floor(x);
  }
  return Number(v) || 0;
}

function rsReplicas(rs: KObject): number {
  return ((rs.spec as JsonObject).replicas as number) ?? 0;
}

function rsStatus(rs: KObject, field: string): number {
  return ((rs.status as JsonObject)?.[field] as number) ?? 0;
}

function setReplicas(c: Cluster, rs: KObject, n: number, d: KObject): void {
  if (rsReplicas(rs) === n) return;
  const annotations = { ...(rs.metadata?.annotations ?? {}) };
  annotations['deployment.kubernetes.io/desired-replicas'] = String((d.spec as JsonObject).replicas);
  const surge = scaled(
    ((d.spec as JsonObject).strategy as JsonObject)?.rollingUpdate
      ? (((d.spec as JsonObject).strategy as JsonObject).rollingUpdate as JsonObject).maxSurge
      : 0,
    (d.spec as JsonObject).replicas as number,
    true,
  );
  annotations['deployment.kubernetes.io/max-replicas'] = String(
    ((d.spec as JsonObject).replicas as number) + surge,
  );
  const old = n < rsReplicas(rs);
  c.write(
    REPLICASETS,
    { ...rs, metadata: { ...rs.metadata, annotations }, spec: { ...(rs.spec as JsonObject), replicas: n } },
    CM,
  );
  c.event(
    d,
    'Normal',
    'ScalingReplicaSet',
    `Scaled ${old ? 'down' : 'up'} replica set ${rs.metadata?.name} from ${rsReplicas(rs)} to ${n}`,
    'deployment-controller',
  );
}

function condition(
  type: string,
  status: string,
  reason: string,
  message: string,
  now: string,
  prev?: JsonObject,
) {
  const same = prev && prev.status === status;
  return {
    type,
    status,
    lastUpdateTime:
      prev && same && prev.reason === reason && prev.message === message ? prev.lastUpdateTime : now,
    lastTransitionTime: same ? prev.lastTransitionTime : now,
    reason,
    message,
  };
}

function syncDeployment(c: Cluster, key: string): void {
  const [ns, name] = split(key);
  const d = c.store.get(DEPLOYMENTS, ns, name);
  if (!d || d.metadata?.deletionTimestamp) return;
  const spec = d.spec as JsonObject;
  const uid = d.metadata?.uid;
  const ownedRs = () =>
    c.store
      .dependents(uid as string)
      .filter((r) => r.def === REPLICASETS)
      .map((r) => c.store.get(REPLICASETS, r.namespace, r.name))
      .filter(
        (rs): rs is KObject =>
          rs !== undefined && controllerOf(rs)?.uid === uid && !rs.metadata?.deletionTimestamp,
      );
  const owned = ownedRs().sort((a, b) =>
    (a.metadata?.creationTimestamp ?? '') < (b.metadata?.creationTimestamp ?? '') ? -1 : 1,
  );
  const template = withoutHash(spec.template);
  let newRs = owned.find((rs) => deepEqual(withoutHash((rs.spec as JsonObject).template), template));
  const olds = owned.filter((rs) => rs !== newRs);
  const replicas = (spec.replicas as number) ?? 1;
  const strategy = (spec.strategy as JsonObject) ?? {};
  const rolling = strategy.type !== 'Recreate';
  const ru = (strategy.rollingUpdate as JsonObject) ?? {};
  const maxSurge = rolling ? scaled(ru.maxSurge ?? '25%', replicas, true) : 0;
  let maxUnavailable = rolling ? scaled(ru.maxUnavailable ?? '25%', replicas, false) : replicas;
  if (rolling && maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
  const revision = Math.max(
    0,
    ...owned.map((rs) => Number(rs.metadata?.annotations?.['deployment.kubernetes.io/revision'] ?? 0)),
  );
  const paused = spec.paused === true;
  const now = c.ts();
  let created = false;
  if (!newRs && !paused) {
    const collision = ((d.status as JsonObject)?.collisionCount as number) ?? 0;
    const hash = templateHash(template, collision);
    const tpl = structuredClone(spec.template) as JsonObject;
    const tmeta = (tpl.metadata as JsonObject) ?? {};
    tpl.metadata = {
      ...tmeta,
      labels: { ...((tmeta.labels as JsonObject) ?? {}), [LABELS.podTemplateHash]: hash },
    };
    const sel = structuredClone(spec.selector) as JsonObject;
    sel.matchLabels = { ...((sel.matchLabels as JsonObject) ?? {}), [LABELS.podTemplateHash]: hash };
    const totalSpec = olds.reduce((n, rs) => n + rsReplicas(rs), 0);
    const start = rolling
      ? olds.every((rs) => rsReplicas(rs) === 0)
        ? replicas
        : Math.max(0, Math.min(replicas, replicas + maxSurge - totalSpec))
      : olds.every((rs) => rsReplicas(rs) === 0 && rsStatus(rs, 'replicas') === 0)
        ? replicas
        : 0;
    const rsName = `${name}-${hash}`;
    newRs = c.api.create(
      REPLICASETS,
      ns,
      {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        metadata: {
          name: rsName,
          namespace: ns,
          labels: { ...((tmeta.labels as Record<string, string>) ?? {}), [LABELS.podTemplateHash]: hash },
          annotations: {
            'deployment.kubernetes.io/desired-replicas': String(replicas),
            'deployment.kubernetes.io/max-replicas': String(replicas + maxSurge),
            'deployment.kubernetes.io/revision': String(revision + 1),
          },
          ownerReferences: [
            {
              apiVersion: 'apps/v1',
              kind: 'Deployment',
              name,
              uid: uid as string,
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: {
          replicas: start,
          minReadySeconds: spec.minReadySeconds ?? 0,
          selector: sel,
          template: tpl,
        },
      },
      { manager: CM },
    );
    created = true;
    c.event(
      d,
      'Normal',
      'ScalingReplicaSet',
      `Scaled up replica set ${rsName} from 0 to ${start}`,
      'deployment-controller',
    );
  }
  if (newRs && !paused && !created) {
    if (rolling) {
      const totalSpec = owned.reduce((n, rs) => n + rsReplicas(rs), 0);
      if (olds.every((rs) => rsReplicas(rs) === 0)) setReplicas(c, newRs, replicas, d);
      else if (rsReplicas(newRs) < replicas) {
        const room = replicas + maxSurge - totalSpec;
        if (room > 0) setReplicas(c, newRs, Math.min(replicas, rsReplicas(newRs) + room), d);
      } else if (rsReplicas(newRs) > replicas) setReplicas(c, newRs, replicas, d);
      // Old replica sets shrink as far as availability allows: unhealthy pods first, then healthy ones.
      const available = owned.reduce((n, rs) => n + rsStatus(rs, 'availableReplicas'), 0);
      let canDown = available - (replicas - maxUnavailable);
      for (const rs of olds) {
        const have = rsReplicas(rs);
        if (have === 0) continue;
        const unhealthy = Math.max(0, have - rsStatus(rs, 'availableReplicas'));
        const down = Math.min(have, unhealthy + Math.max(0, canDown));
        canDown -= Math.max(0, down - unhealthy);
        if (down > 0) setReplicas(c, rs, have - down, d);
      }
    } else {
      for (const rs of olds) setReplicas(c, rs, 0, d);
      const oldPods = olds.reduce((n, rs) => n + rsStatus(rs, 'replicas'), 0);
      if (oldPods === 0) setReplicas(c, newRs, replicas, d);
    }
  }
  // Revision history: old, empty replica sets beyond revisionHistoryLimit go.
  const limit = (spec.revisionHistoryLimit as number) ?? 10;
  const empty = olds.filter((rs) => rsReplicas(rs) === 0 && rsStatus(rs, 'replicas') === 0);
  for (const rs of empty.slice(0, Math.max(0, empty.length - limit)))
    c.api.delete(REPLICASETS, ns, rs.metadata?.name as string);

  // The deployment carries the revision of its newest replica set.
  const rev = newRs
    ? c.store.get(REPLICASETS, ns, newRs.metadata?.name as string)?.metadata?.annotations?.[
        'deployment.kubernetes.io/revision'
      ]
    : undefined;
  const dNow = c.store.get(DEPLOYMENTS, ns, name) as KObject;
  if (rev && dNow.metadata?.annotations?.['deployment.kubernetes.io/revision'] !== rev)
    c.write(
      DEPLOYMENTS,
      {
        ...dNow,
        metadata: {
          ...dNow.metadata,
          annotations: { ...(dNow.metadata?.annotations ?? {}), 'deployment.kubernetes.io/revision': rev },
        },
      },
      CM,
    );

  // Status.
  const all = ownedRs();
  const cur = newRs ? c.store.get(REPLICASETS, ns, newRs.metadata?.name as string) : undefined;
  const sum = (f: string) => all.reduce((n, rs) => n + rsStatus(rs, f), 0);
  const totalSpec = all.reduce((n, rs) => n + rsReplicas(rs), 0);
  const available = sum('availableReplicas');
  const updated = cur ? rsStatus(cur, 'replicas') : 0;
  const prev = (d.status as JsonObject) ?? {};
  const prevConds = (prev.conditions as JsonObject[]) ?? [];
  const prevAvail = prevConds.find((x) => x.type === 'Available');
  const prevProg = prevConds.find((x) => x.type === 'Progressing');
  const availOk = available >= replicas - maxUnavailable;
  const availCond = availOk
    ? condition(
        'Available',
        'True',
        'MinimumReplicasAvailable',
        'Deployment has minimum availability.',
        now,
        prevAvail,
      )
    : condition(
        'Available',
        'False',
        'MinimumReplicasUnavailable',
        'Deployment does not have minimum availability.',
        now,
        prevAvail,
      );
  const rsName = cur?.metadata?.name ?? '';
  const complete =
    cur !== undefined &&
    updated === replicas &&
    rsStatus(cur, 'availableReplicas') === replicas &&
    sum('replicas') === replicas &&
    rsReplicas(cur) === replicas;
  let progCond: ReturnType<typeof condition>;
  const deadline = (spec.progressDeadlineSeconds as number) ?? 600;
  if (complete)
    progCond = condition(
      'Progressing',
      'True',
      'NewReplicaSetAvailable',
      `ReplicaSet "${rsName}" has successfully progressed.`,
      now,
      prevProg,
    );
  else if (created)
    progCond = condition(
      'Progressing',
      'True',
      'NewReplicaSetCreated',
      `Created new replica set "${rsName}"`,
      now,
      prevProg,
    );
  else {
    // A count of 0 is left out of the status (below), so an absent one is 0: read as different, a Deployment
    // with no Ready pod "progressed" on every sync, never reached its deadline, and was synced again each
    // scaled progressDeadlineSeconds for ever (2,000 of them starved the API server in the workloads bench).
    const was = (f: string) => (prev[f] as number | undefined) ?? 0;
    const progressed =
      !prev.observedGeneration ||
      prev.observedGeneration !== d.metadata?.generation ||
      was('updatedReplicas') !== updated ||
      was('availableReplicas') !== available ||
      was('readyReplicas') !== sum('readyReplicas');
    const since = prevProg && !progressed ? Date.parse(prevProg.lastUpdateTime as string) : c.now();
    if (prevProg?.reason === 'ProgressDeadlineExceeded' && !progressed) progCond = prevProg as never;
    else if (c.now() - since >= c.sim.scaled(deadline * 1000) && prevProg)
      progCond = condition(
        'Progressing',
        'False',
        'ProgressDeadlineExceeded',
        `ReplicaSet "${rsName}" has timed out progressing.`,
        now,
        prevProg,
      );
    else {
      progCond = condition(
        'Progressing',
        'True',
        'ReplicaSetUpdated',
        `ReplicaSet "${rsName}" is progressing.`,
        now,
        prevProg,
      );
      if (progressed) progCond.lastUpdateTime = now;
      c.checkLater(`${key}: progress deadline`, deadline * 1000, () => c.dirty.deployments.add(key));
    }
  }
  const status: JsonObject = {
    observedGeneration: d.metadata?.generation,
    replicas: sum('replicas'),
    updatedReplicas: updated,
    readyReplicas: sum('readyReplicas'),
    availableReplicas: available,
    ...(totalSpec - available > 0 ? { unavailableReplicas: totalSpec - available } : {}),
    conditions: [availCond, progCond],
    ...(prev.collisionCount ? { collisionCount: prev.collisionCount } : {}),
  };
  for (const k of ['replicas', 'updatedReplicas', 'readyReplicas', 'availableReplicas'])
    if (status[k] === 0) delete status[k];
  const latest = c.store.get(DEPLOYMENTS, ns, name) as KObject;
  if (!deepEqual(latest.status, status)) c.write(DEPLOYMENTS, { ...latest, status }, CM, 'status');
}

// ---- replica set controller ----

/** `controller.kubernetes.io/pod-deletion-cost`: an int32; a missing or malformed value counts as 0. */
export const DELETION_COST = 'controller.kubernetes.io/pod-deletion-cost';

function deletionCost(p: KObject): number {
  const raw = p.metadata?.annotations?.[DELETION_COST];
  if (raw === undefined || !/^-?\d+$/.test(raw)) return 0;
  const n = Number(raw);
  return n >= -2147483648 && n <= 2147483647 ? n : 0;
}

function readySince(p: KObject): number {
  const conds = ((p.status as JsonObject)?.conditions as JsonObject[]) ?? [];
  const ready = conds.find((x) => x.type === 'Ready' && x.status === 'True');
  return ready ? Date.parse(String(ready.lastTransitionTime ?? '')) || 0 : 0;
}

function restarts(p: KObject): number {
  const cs = ((p.status as JsonObject)?.containerStatuses as JsonObject[]) ?? [];
  return cs.reduce((n, x) => n + ((x.restartCount as number) ?? 0), 0);
}

/**
 * The pods a scale-down deletes, as the replica set controller ranks them (controller.ActivePodsWithRanks,
 * Kubernetes 1.32): unscheduled first, then Pending before Running, not ready before ready, the lower
 * pod-deletion-cost, the pod doubled up with more of its Deployment's pods on its node, the one ready for the
 * shorter time, the more restarts, and the newer. (Kubernetes' LogarithmicScaleDown compares the last two in
 * powers of two; here they are exact.)
 */
function victimOrder(related: readonly KObject[]) {
  const onNode = new Map<string, number>();
  for (const p of related) {
    const n = (p.spec as JsonObject)?.nodeName as string | undefined;
    if (n) onNode.set(n, (onNode.get(n) ?? 0) + 1);
  }
  const key = (p: KObject): number[] => {
    const node = (p.spec as JsonObject)?.nodeName as string | undefined;
    const phase = (p.status as JsonObject)?.phase;
    return [
      node ? 1 : 0,
      phase === 'Pending' ? 0 : phase === 'Running' ? 2 : 1,
      podReady(p) ? 1 : 0,
      deletionCost(p),
      -(node ? (onNode.get(node) ?? 0) : 0),
      -readySince(p),
      -restarts(p),
      -Date.parse(p.metadata?.creationTimestamp ?? '0'),
    ];
  };
  return (a: KObject, b: KObject) => {
    const ka = key(a);
    const kb = key(b);
    for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return (ka[i] as number) - (kb[i] as number);
    return 0;
  };
}

/** The active pods of every replica set of the same Deployment: what "doubled up" on a node counts. */
function relatedPods(c: Cluster, rs: KObject, own: readonly KObject[]): KObject[] {
  const owner = controllerOf(rs);
  if (!owner) return [...own];
  return c.store
    .dependents(owner.uid as string)
    .filter((r) => r.def === REPLICASETS)
    .flatMap((r) => {
      const sib = c.store.get(REPLICASETS, r.namespace, r.name);
      return sib ? c.store.dependents(sib.metadata?.uid as string) : [];
    })
    .filter((r) => r.def === PODS)
    .map((r) => c.store.get(PODS, r.namespace, r.name))
    .filter((p): p is KObject => p !== undefined && isActive(p));
}

function syncReplicaSet(c: Cluster, key: string): void {
  const [ns, name] = split(key);
  const rs = c.store.get(REPLICASETS, ns, name);
  if (!rs || rs.metadata?.deletionTimestamp) return;
  const uid = rs.metadata?.uid;
  const spec = rs.spec as JsonObject;
  const pods = c.store
    .dependents(uid as string)
    .filter((r) => r.def === PODS)
    .map((r) => c.store.get(PODS, r.namespace, r.name))
    .filter((p): p is KObject => p !== undefined && controllerOf(p)?.uid === uid);
  const active = pods.filter(isActive);
  const want = (spec.replicas as number) ?? 1;
  const tpl = (spec.template as JsonObject) ?? {};
  if (active.length < want) {
    for (let i = active.length; i < want; i++) {
      const tmeta = (tpl.metadata as JsonObject) ?? {};
      const pod = c.api.create(
        PODS,
        ns,
        {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            generateName: `${name}-`,
            namespace: ns,
            labels: { ...((tmeta.labels as Record<string, string>) ?? {}) },
            ...(tmeta.annotations
              ? { annotations: { ...(tmeta.annotations as Record<string, string>) } }
              : {}),
            ownerReferences: [
              {
                apiVersion: 'apps/v1',
                kind: 'ReplicaSet',
                name,
                uid: uid as string,
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          },
          spec: structuredClone(tpl.spec) as JsonObject,
        },
        { manager: CM },
      );
      c.event(
        rs,
        'Normal',
        'SuccessfulCreate',
        `Created pod: ${pod.metadata?.name}`,
        'replicaset-controller',
      );
    }
  } else if (active.length > want) {
    const victims = [...active].sort(victimOrder(relatedPods(c, rs, active)));
    for (const p of victims.slice(0, active.length - want)) {
      c.api.delete(PODS, ns, p.metadata?.name as string);
      c.event(rs, 'Normal', 'SuccessfulDelete', `Deleted pod: ${p.metadata?.name}`, 'replicaset-controller');
    }
  }
  const current = c.store
    .dependents(uid as string)
    .filter((r) => r.def === PODS)
    .map((r) => c.store.get(PODS, r.namespace, r.name))
    .filter((p): p is KObject => !!p && isActive(p));
  const labels = ((tpl.metadata as JsonObject)?.labels as Record<string, string>) ?? {};
  const ready = current.filter(podReady);
  const status: JsonObject = {
    replicas: current.length,
    fullyLabeledReplicas: current.filter((p) =>
      Object.entries(labels).every(([k, v]) => p.metadata?.labels?.[k] === v),
    ).length,
    readyReplicas: ready.length,
    availableReplicas: ready.length,
    observedGeneration: rs.metadata?.generation,
  };
  for (const k of ['fullyLabeledReplicas', 'readyReplicas', 'availableReplicas'])
    if (status[k] === 0) delete status[k];
  const latest = c.store.get(REPLICASETS, ns, name) as KObject;
  if (!deepEqual(latest.status, status)) c.write(REPLICASETS, { ...latest, status }, CM, 'status');
}

// ---- disruption controller ----

export const DISRUPTED_TIMEOUT_MS = 2 * 60_000;

/** The pods a PDB covers and the replicas their controllers want, as the disruption controller counts them. */
export function pdbCounts(c: Cluster, pdb: KObject) {
  const ns = pdb.metadata?.namespace;
  const spec = (pdb.spec as JsonObject) ?? {};
  const sel = (spec.selector as JsonObject) ?? {};
  const pods = c.store
    .withLabels(PODS, ns as string, (sel.matchLabels as Record<string, string>) ?? {})
    .filter((p) => matchesSelector(spec.selector, p.metadata?.labels));
  const expectedScale = () => {
    const seen = new Map<string, number>();
    for (const p of pods) {
      const ref = controllerOf(p);
      if (!ref) continue;
      const rs = c.store.get(REPLICASETS, ns, ref.name);
      const dref = controllerOf(rs);
      const d = dref ? c.store.get(DEPLOYMENTS, ns, dref.name) : undefined;
      if (d) seen.set(d.metadata?.uid as string, ((d.spec as JsonObject).replicas as number) ?? 1);
      else if (rs) seen.set(rs.metadata?.uid as string, rsReplicas(rs));
    }
    return [...seen.values()].reduce((a, b) => a + b, 0);
  };
  let expected = pods.length;
  let desired = 0;
  if (spec.maxUnavailable !== undefined) {
    expected = expectedScale();
    desired = Math.max(0, expected - scaled(spec.maxUnavailable, expected, true));
  } else if (spec.minAvailable !== undefined) {
    if (typeof spec.minAvailable === 'number') desired = spec.minAvailable;
    else {
      expected = expectedScale();
      desired = scaled(spec.minAvailable, expected, true);
    }
  }
  return { pods, expected, desired };
}

function syncPdb(c: Cluster, key: string): void {
  const [ns, name] = split(key);
  const pdb = c.store.get(PDBS, ns, name);
  if (!pdb) return;
  const { pods, expected, desired } = pdbCounts(c, pdb);
  const prev = (pdb.status as JsonObject) ?? {};
  const nowMs = c.now();
  const disrupted: Record<string, string> = {};
  for (const [pod, at] of Object.entries((prev.disruptedPods as Record<string, string>) ?? {})) {
    const p = pods.find((x) => x.metadata?.name === pod);
    if (p && !p.metadata?.deletionTimestamp && nowMs - Date.parse(at) < DISRUPTED_TIMEOUT_MS)
      disrupted[pod] = at;
  }
  const healthy = pods.filter(
    (p) => !p.metadata?.deletionTimestamp && podReady(p) && !disrupted[p.metadata?.name as string],
  ).length;
  const allowed = Math.max(0, healthy - desired);
  const prevCond = ((prev.conditions as JsonObject[]) ?? [])[0];
  const condStatus = allowed > 0 ? 'True' : 'False';
  const status: JsonObject = {
    observedGeneration: pdb.metadata?.generation,
    ...(Object.keys(disrupted).length > 0 ? { disruptedPods: disrupted } : {}),
    disruptionsAllowed: allowed,
    currentHealthy: healthy,
    desiredHealthy: desired,
    expectedPods: expected,
    conditions: [
      {
        type: 'DisruptionAllowed',
        status: condStatus,
        reason: allowed > 0 ? 'SufficientPods' : 'InsufficientPods',
        message: '',
        observedGeneration: pdb.metadata?.generation,
        lastTransitionTime: prevCond?.status === condStatus ? prevCond.lastTransitionTime : c.ts(),
      },
    ],
  };
  if (!deepEqual(pdb.status, status)) c.write(PDBS, { ...pdb, status }, CM, 'status');
}
