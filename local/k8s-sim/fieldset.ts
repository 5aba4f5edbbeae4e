import { isAtomicObject, isFreeMap, keyDefault, listType } from './schema';
import { isObject, type JsonObject } from './types';

/**
 * Field sets as structured-merge-diff keeps them for server-side apply, in the FieldsV1 form that
 * metadata.managedFields carries: a tree whose edges are `f:<field>`, `k:<key JSON>` (an item of an
 * associative list), `v:<value JSON>` (an item of a set) and whose `.` marks a node that is itself owned.
 */

export class FieldSet {
  member = false;
  readonly children = new Map<string, FieldSet>();

  static fromFieldsV1(json: unknown): FieldSet {
    const s = new FieldSet();
    if (!isObject(json)) return s;
    for (const [k, v] of Object.entries(json)) {
      if (k === '.') {
        s.member = true;
        continue;
      }
      const c = FieldSet.fromFieldsV1(v);
      if (!isObject(v) || Object.keys(v).length === 0) c.member = true;
      s.children.set(k, c);
    }
    return s;
  }

  toFieldsV1(): JsonObject {
    const out: JsonObject = {};
    if (this.member && this.children.size > 0) out['.'] = {};
    for (const k of [...this.children.keys()].sort())
      out[k] = (this.children.get(k) as FieldSet).toFieldsV1();
    return out;
  }

  child(el: string): FieldSet {
    let c = this.children.get(el);
    if (!c) {
      c = new FieldSet();
      this.children.set(el, c);
    }
    return c;
  }

  /** True when nothing in the tree is owned. */
  empty(): boolean {
    if (this.member) return false;
    for (const c of this.children.values()) if (!c.empty()) return false;
    return true;
  }

  union(o: FieldSet): FieldSet {
    const s = new FieldSet();
    s.member = this.member || o.member;
    for (const k of new Set([...this.children.keys(), ...o.children.keys()])) {
      const a = this.children.get(k);
      const b = o.children.get(k);
      s.children.set(k, a && b ? a.union(b) : (a ?? b)!.clone());
    }
    return s;
  }

  intersect(o: FieldSet): FieldSet {
    const s = new FieldSet();
    s.member = this.member && o.member;
    for (const [k, a] of this.children) {
      const b = o.children.get(k);
      if (!b) continue;
      const c = a.intersect(b);
      if (!c.empty()) s.children.set(k, c);
    }
    return s;
  }

  difference(o: FieldSet): FieldSet {
    const s = new FieldSet();
    s.member = this.member && !o.member;
    for (const [k, a] of this.children) {
      const b = o.children.get(k);
      const c = b ? a.difference(b) : a.clone();
      if (!c.empty()) s.children.set(k, c);
    }
    return s;
  }

  clone(): FieldSet {
    const s = new FieldSet();
    s.member = this.member;
    for (const [k, c] of this.children) s.children.set(k, c.clone());
    return s;
  }

  /** Every owned path, as its elements, in sorted order. */
  paths(prefix: string[] = []): string[][] {
    const out: string[][] = [];
    if (this.member) out.push(prefix);
    for (const k of [...this.children.keys()].sort())
      out.push(...(this.children.get(k) as FieldSet).paths([...prefix, k]));
    return out;
  }
}

/** A path as the API server prints it in conflicts: `.spec.template.spec.containers[name="vllm"].image`. */
export function pathString(elements: string[]): string {
  return elements
    .map((e) => {
      const body = e.slice(2);
      if (e.startsWith('f:')) return `.${body}`;
      if (e.startsWith('k:')) {
        const key = JSON.parse(body) as Record<string, unknown>;
        return `[${Object.keys(key)
          .sort()
          .map((k) => `${k}=${JSON.stringify(key[k])}`)
          .join(',')}]`;
      }
      if (e.startsWith('v:')) return `[=${body}]`;
      return `[${body}]`;
    })
    .join('');
}

function sortedJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(sortedJson).join(',')}]`;
  if (isObject(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${sortedJson(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}

/** The key of an associative list item, with the schema's defaults for missing key fields. */
export function itemKey(item: unknown, keys: string[]): string {
  const k: JsonObject = {};
  for (const name of keys) {
    const v = isObject(item) && item[name] !== undefined ? item[name] : keyDefault(name);
    if (v !== undefined) k[name] = v;
  }
  return `k:${sortedJson(k)}`;
}

export function setItem(v: unknown): string {
  return `v:${sortedJson(v)}`;
}

/** What structured-merge-diff's ToFieldSet gives for a value at a schema path. */
function walk(value: unknown, path: string[]): FieldSet {
  const s = new FieldSet();
  if (Array.isArray(value)) {
    const lt = listType(path);
    if (lt.type === 'atomic') {
      s.member = true;
      return s;
    }
    for (const item of value) {
      if (lt.type === 'set') {
        s.child(setItem(item)).member = true;
        continue;
      }
      const c = walk(item, [...path, '[]']);
      c.member = true;
      s.children.set(itemKey(item, lt.keys), c);
    }
    return s;
  }
  if (isObject(value)) {
    if (isAtomicObject(path)) {
      s.member = true;
      return s;
    }
    const free = isFreeMap(path);
    for (const [k, v] of Object.entries(value)) {
      if (v === undefined) continue;
      const c = walk(v, [...path, k]);
      if (free || v === null || (isObject(v) && Object.keys(v).length === 0)) c.member = true;
      s.children.set(`f:${k}`, c);
    }
    return s;
  }
  s.member = true;
  return s;
}

/** Fields the API server never tracks ownership of (its strip-meta manager). */
const STRIPPED_META = [
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'selfLink',
  'managedFields',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
];

/** The owned field set of an object, without apiVersion, kind, identity metadata and the given top fields. */
export function toFieldSet(obj: JsonObject, ignoreTop: readonly string[] = []): FieldSet {
  const s = walk(obj, []);
  s.member = false;
  for (const k of ['apiVersion', 'kind', ...ignoreTop]) s.children.delete(`f:${k}`);
  const meta = s.children.get('f:metadata');
  if (meta) {
    for (const k of STRIPPED_META) meta.children.delete(`f:${k}`);
    meta.member = false;
    if (meta.empty()) s.children.delete('f:metadata');
  }
  return s;
}

/** The child value an element names: a field, the list item with that key, or the set item. */
export function childValue(value: unknown, el: string, path: string[]): unknown {
  if (el.startsWith('f:')) return isObject(value) ? value[el.slice(2)] : undefined;
  if (!Array.isArray(value)) return undefined;
  if (el.startsWith('v:')) return value.find((v) => setItem(v) === el);
  const lt = listType(path);
  if (lt.type !== 'map') return undefined;
  return value.find((v) => itemKey(v, lt.keys) === el);
}

function childPath(path: string[], el: string): string[] {
  return el.startsWith('f:') ? [...path, el.slice(2)] : [...path, '[]'];
}

/** Structural equality of JSON values; key order does not matter, undefined members do not count. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (isObject(a) && isObject(b)) {
    let n = 0;
    for (const k in a) {
      if (a[k] === undefined) continue;
      n++;
      if (!deepEqual(a[k], b[k])) return false;
    }
    for (const k in b) if (b[k] !== undefined) n--;
    return n === 0;
  }
  return false;
}

export interface Comparison {
  added: FieldSet;
  removed: FieldSet;
  modified: FieldSet;
}

/** Added, removed and modified fields between two versions of an object. */
export function compare(
  oldObj: JsonObject,
  newObj: JsonObject,
  ignoreTop: readonly string[] = [],
): Comparison {
  const a = toFieldSet(oldObj, ignoreTop);
  const b = toFieldSet(newObj, ignoreTop);
  const modified = new FieldSet();
  const both = a.intersect(b);
  const visit = (node: FieldSet, out: FieldSet, va: unknown, vb: unknown, path: string[]) => {
    for (const [el, c] of node.children) {
      const ca = childValue(va, el, path);
      const cb = childValue(vb, el, path);
      const cp = childPath(path, el);
      if (c.member && c.children.size === 0) {
        if (!deepEqual(ca, cb)) out.child(el).member = true;
        continue;
      }
      const sub = new FieldSet();
      visit(c, sub, ca, cb, cp);
      if (!sub.empty()) out.children.set(el, sub);
    }
  };
  visit(both, modified, oldObj, newObj, []);
  return { added: b.difference(a), removed: a.difference(b), modified };
}

/** Merges an applied configuration into the live object, list items by their keys. */
export function merge(live: unknown, config: unknown, path: string[] = []): unknown {
  if (config === undefined) return live;
  if (Array.isArray(config)) {
    const lt = listType(path);
    if (lt.type === 'atomic' || !Array.isArray(live)) return structuredClone(config);
    if (lt.type === 'set') {
      const out = [...live];
      for (const v of config) if (!out.some((x) => deepEqual(x, v))) out.push(structuredClone(v));
      return out;
    }
    const out = live.map((item) => {
      const k = itemKey(item, lt.keys);
      const c = config.find((x) => itemKey(x, lt.keys) === k);
      return c === undefined ? item : merge(item, c, [...path, '[]']);
    });
    for (const c of config)
      if (!live.some((x) => itemKey(x, lt.keys) === itemKey(c, lt.keys))) out.push(structuredClone(c));
    return out;
  }
  if (isObject(config) && isObject(live) && !isAtomicObject(path)) {
    const out: JsonObject = { ...live };
    for (const [k, v] of Object.entries(config)) {
      if (v === null) delete out[k];
      else out[k] = merge(live[k], v, [...path, k]);
    }
    return out;
  }
  return structuredClone(config);
}

/**
 * Removes from `value` the fields an applier stopped applying (`drop`), unless someone still owns them or
 * something under them (`owned`). A struct the applier had fields in goes whole once nothing in it is owned,
 * so a dropped probe does not linger as its defaults alone; `metadata` itself always stays.
 */
export function prune(value: unknown, drop: FieldSet, owned: FieldSet, path: string[] = []): unknown {
  if (Array.isArray(value)) {
    const lt = listType(path);
    const out: unknown[] = [];
    for (const item of value) {
      const el = lt.type === 'set' ? setItem(item) : lt.type === 'map' ? itemKey(item, lt.keys) : undefined;
      const d = el ? drop.children.get(el) : undefined;
      if (!el || !d) {
        out.push(item);
        continue;
      }
      const o = owned.children.get(el);
      if (!o || o.empty()) continue;
      if (lt.type !== 'map') {
        out.push(item);
        continue;
      }
      // The item stays for what others own in it; its key fields stay with it, whoever applied them.
      const kept = prune(item, d, o, [...path, '[]']) as JsonObject;
      for (const k of lt.keys) if (isObject(item) && item[k] !== undefined) kept[k] = item[k];
      out.push(kept);
    }
    return out;
  }
  if (!isObject(value)) return value;
  const out: JsonObject = { ...value };
  for (const [el, d] of drop.children) {
    if (!el.startsWith('f:')) continue;
    const k = el.slice(2);
    if (!(k in out)) continue;
    const o = owned.children.get(el);
    const whole = path.length > 0 || k !== 'metadata';
    if (whole && (!o || o.empty())) {
      delete out[k];
      continue;
    }
    if (d.children.size > 0) out[k] = prune(out[k], d, o ?? new FieldSet(), [...path, k]);
  }
  return out;
}
