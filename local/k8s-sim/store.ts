import type { ResourceDef } from './resources';
import type { KObject } from './types';

/**
 * The objects of the simulated cluster (what etcd holds), with one resourceVersion counter for all of them,
 * as the API server has, an index of pods by node and of dependents by owner, and change listeners that the
 * controllers' work queues and watches hang on.
 */

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';
export type Listener = (type: ChangeType, def: ResourceDef, obj: KObject, old: KObject | undefined) => void;

const keyOf = (ns: string | undefined, name: string) => `${ns ?? ''}/${name}`;

export interface StoredRef {
  def: ResourceDef;
  namespace: string | undefined;
  name: string;
}

export class Store {
  private rv = 1000;
  private readonly tables = new Map<ResourceDef, Map<string, KObject>>();
  private readonly byNode = new Map<string, Set<string>>();
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

  private table(def: ResourceDef): Map<string, KObject> {
    let t = this.tables.get(def);
    if (!t) {
      t = new Map();
      this.tables.set(def, t);
    }
    return t;
  }

  get(def: ResourceDef, ns: string | undefined, name: string): KObject | undefined {
    return this.table(def).get(keyOf(def.namespaced ? ns : undefined, name));
  }

  /** Objects of a kind, in one namespace or all, sorted by namespace and name as etcd lists them. */
  list(def: ResourceDef, ns?: string): KObject[] {
    const out: KObject[] = [];
    for (const o of this.table(def).values()) if (ns === undefined || o.metadata?.namespace === ns) out.push(o);
    return out.sort((a, b) => {
      const ka = keyOf(a.metadata?.namespace, a.metadata?.name as string);
      const kb = keyOf(b.metadata?.namespace, b.metadata?.name as string);
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
  }

  count(def: ResourceDef): number {
    return this.table(def).size;
  }

  podsOnNode(podDef: ResourceDef, node: string): KObject[] {
    const out: KObject[] = [];
    for (const k of this.byNode.get(node) ?? []) {
      const o = this.table(podDef).get(k);
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
    const k = keyOf(def.namespaced ? meta.namespace : undefined, meta.name as string);
    const t = this.table(def);
    const old = t.get(k);
    this.rv++;
    meta.resourceVersion = String(this.rv);
    obj.metadata = meta;
    t.set(k, obj);
    this.index(def, k, old, obj);
    for (const l of this.listeners) l(old ? 'MODIFIED' : 'ADDED', def, obj, old);
    return obj;
  }

  remove(def: ResourceDef, ns: string | undefined, name: string): KObject | undefined {
    const k = keyOf(def.namespaced ? ns : undefined, name);
    const t = this.table(def);
    const old = t.get(k);
    if (!old) return undefined;
    t.delete(k);
    this.rv++;
    // A deleted object's last state carries the resourceVersion of its deletion, as a watch shows it.
    const gone = { ...old, metadata: { ...old.metadata, resourceVersion: String(this.rv) } };
    this.index(def, k, old, undefined);
    for (const l of this.listeners) l('DELETED', def, gone, old);
    return gone;
  }

  private index(def: ResourceDef, k: string, old: KObject | undefined, now: KObject | undefined): void {
    if (def.resource === 'pods' && def.group === '') {
      const before = (old?.spec as { nodeName?: string } | undefined)?.nodeName;
      const after = (now?.spec as { nodeName?: string } | undefined)?.nodeName;
      if (before && before !== after) this.byNode.get(before)?.delete(k);
      if (after) {
        let s = this.byNode.get(after);
        if (!s) {
          s = new Set();
          this.byNode.set(after, s);
        }
        s.add(k);
      }
    }
    const ref: StoredRef | undefined = now
      ? { def, namespace: now.metadata?.namespace, name: now.metadata?.name as string }
      : undefined;
    const indexKey = `${def.group}/${def.resource}/${k}`;
    if (old?.metadata?.uid && old.metadata.uid !== now?.metadata?.uid) this.byUid.delete(old.metadata.uid);
    if (now?.metadata?.uid && ref) this.byUid.set(now.metadata.uid, ref);
    for (const o of old?.metadata?.ownerReferences ?? []) this.byOwner.get(o.uid)?.delete(indexKey);
    for (const o of now?.metadata?.ownerReferences ?? []) {
      let m = this.byOwner.get(o.uid);
      if (!m) {
        m = new Map();
        this.byOwner.set(o.uid, m);
      }
      m.set(indexKey, ref as StoredRef);
    }
  }
}
