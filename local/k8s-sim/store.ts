import type { ResourceDef } from './resources';
import type { KObject } from './types';

/**
 * The objects of the simulated cluster (what etcd holds), with one resourceVersion counter for all of them,
 * as the API server has; indexes by namespace, label, node, owner and uid, so that a cluster of thousands
 * of Deployments answers a selector or a controller's lookup without a scan; and change listeners that the
 * controllers' work queues hang on.
 */

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';
export type Listener = (type: ChangeType, def: ResourceDef, obj: KObject, old: KObject | undefined) => void;

export interface StoredRef {
  def: ResourceDef;
  namespace: string | undefined;
  name: string;
}

interface Table {
  /** namespace ('' for cluster-scoped) → name → object. */
  byNs: Map<string, Map<string, KObject>>;
  /** namespace → `key=value` → names with that label. */
  byLabel: Map<string, Map<string, Set<string>>>;
  size: number;
}

const pair = (k: string, v: string) => `${k}=${v}`;

export class Store {
  private rv = 1000;
  private readonly tables = new Map<ResourceDef, Table>();
  private readonly byNode = new Map<string, Map<string, StoredRef>>();
  private readonly byOwner = new Map<string, Map<string, StoredRef>>();
  private readonly byUid = new Map<string, StoredRef>();
  private readonly listeners: Listener[] = [];

  onChange(l: Listener): void {
    this.listeners.push(l);
  }

  resourceVersion(): string {
    return String(this.rv);
  }

  clear(): void {
    this.tables.clear();
    this.byNode.clear();
    this.byOwner.clear();
    this.byUid.clear();
  }

  /** The object with this uid, of any kind. */
  byUidGet(uid: string): KObject | undefined {
    const ref = this.byUid.get(uid);
    return ref ? this.get(ref.def, ref.namespace, ref.name) : undefined;
  }

  refOfUid(uid: string): StoredRef | undefined {
    return this.byUid.get(uid);
  }

  private table(def: ResourceDef): Table {
    let t = this.tables.get(def);
    if (!t) {
      t = { byNs: new Map(), byLabel: new Map(), size: 0 };
      this.tables.set(def, t);
    }
    return t;
  }

  private nsOf(def: ResourceDef, ns: string | undefined): string {
    return def.namespaced ? (ns ?? '') : '';
  }

  get(def: ResourceDef, ns: string | undefined, name: string): KObject | undefined {
    return this.table(def).byNs.get(this.nsOf(def, ns))?.get(name);
  }

  /** Objects of a kind, in one namespace or all, sorted by namespace and name as etcd lists them. */
  list(def: ResourceDef, ns?: string): KObject[] {
    const t = this.table(def);
    const spaces = ns === undefined ? [...t.byNs.keys()].sort() : [this.nsOf(def, ns)];
    const out: KObject[] = [];
    for (const s of spaces) {
      const m = t.byNs.get(s);
      if (!m) continue;
      for (const name of [...m.keys()].sort()) out.push(m.get(name) as KObject);
    }
    return out;
  }

  /** Objects of a namespace carrying every one of these labels, sorted by name. */
  withLabels(def: ResourceDef, ns: string, labels: Record<string, string>): KObject[] {
    const t = this.table(def);
    const idx = t.byLabel.get(this.nsOf(def, ns));
    const m = t.byNs.get(this.nsOf(def, ns));
    if (!idx || !m) return [];
    let smallest: Set<string> | undefined;
    for (const [k, v] of Object.entries(labels)) {
      const s = idx.get(pair(k, v));
      if (!s) return [];
      if (!smallest || s.size < smallest.size) smallest = s;
    }
    const names = smallest ? [...smallest] : [...m.keys()];
    return names
      .sort()
      .map((n) => m.get(n) as KObject)
      .filter((o) => Object.entries(labels).every(([k, v]) => o.metadata?.labels?.[k] === v));
  }

  count(def: ResourceDef): number {
    return this.table(def).size;
  }

  podsOnNode(podDef: ResourceDef, node: string): KObject[] {
    const out: KObject[] = [];
    for (const ref of this.byNode.get(node)?.values() ?? []) {
      const o = this.get(podDef, ref.namespace, ref.name);
      if (o) out.push(o);
    }
    return out;
  }

  dependents(ownerUid: string): StoredRef[] {
    return [...(this.byOwner.get(ownerUid)?.values() ?? [])];
  }

  /** Stores the object with a new resourceVersion and tells the listeners. */
  put(def: ResourceDef, obj: KObject): KObject {
    const meta = obj.metadata ?? {};
    const t = this.table(def);
    const ns = this.nsOf(def, meta.namespace);
    let m = t.byNs.get(ns);
    if (!m) {
      m = new Map();
      t.byNs.set(ns, m);
    }
    const name = meta.name as string;
    const old = m.get(name);
    this.rv++;
    meta.resourceVersion = String(this.rv);
    obj.metadata = meta;
    m.set(name, obj);
    if (!old) t.size++;
    this.index(def, ns, name, old, obj);
    for (const l of this.listeners) l(old ? 'MODIFIED' : 'ADDED', def, obj, old);
    return obj;
  }

  remove(def: ResourceDef, namespace: string | undefined, name: string): KObject | undefined {
    const t = this.table(def);
    const ns = this.nsOf(def, namespace);
    const m = t.byNs.get(ns);
    const old = m?.get(name);
    if (!m || !old) return undefined;
    m.delete(name);
    if (m.size === 0) t.byNs.delete(ns);
    t.size--;
    this.rv++;
    // A deleted object's last state carries the resourceVersion of its deletion, as a watch shows it.
    const gone = { ...old, metadata: { ...old.metadata, resourceVersion: String(this.rv) } };
    this.index(def, ns, name, old, undefined);
    for (const l of this.listeners) l('DELETED', def, gone, old);
    return gone;
  }

  private index(
    def: ResourceDef,
    ns: string,
    name: string,
    old: KObject | undefined,
    now: KObject | undefined,
  ): void {
    const t = this.table(def);
    const ref: StoredRef = { def, namespace: def.namespaced ? ns : undefined, name };
    const k = `${def.group}/${def.resource}/${ns}/${name}`;
    // Labels.
    let idx = t.byLabel.get(ns);
    if (!idx) {
      idx = new Map();
      t.byLabel.set(ns, idx);
    }
    for (const [lk, lv] of Object.entries(old?.metadata?.labels ?? {})) idx.get(pair(lk, lv))?.delete(name);
    for (const [lk, lv] of Object.entries(now?.metadata?.labels ?? {})) {
      const p = pair(lk, lv);
      let s = idx.get(p);
      if (!s) {
        s = new Set();
        idx.set(p, s);
      }
      s.add(name);
    }
    // Pods by node.
    if (def.resource === 'pods' && def.group === '') {
      const before = (old?.spec as { nodeName?: string } | undefined)?.nodeName;
      const after = (now?.spec as { nodeName?: string } | undefined)?.nodeName;
      if (before && before !== after) this.byNode.get(before)?.delete(k);
      if (after) {
        let s = this.byNode.get(after);
        if (!s) {
          s = new Map();
          this.byNode.set(after, s);
        }
        s.set(k, ref);
      }
    }
    // Uids and owners.
    if (old?.metadata?.uid && old.metadata.uid !== now?.metadata?.uid) this.byUid.delete(old.metadata.uid);
    if (now?.metadata?.uid) this.byUid.set(now.metadata.uid, ref);
    for (const o of old?.metadata?.ownerReferences ?? []) this.byOwner.get(o.uid)?.delete(k);
    for (const o of now?.metadata?.ownerReferences ?? []) {
      let m = this.byOwner.get(o.uid);
      if (!m) {
        m = new Map();
        this.byOwner.set(o.uid, m);
      }
      m.set(k, ref);
    }
  }
}
