import { deepEqual } from './fieldset';
import { listType } from './schema';
import { badRequest } from './status';
import { isObject, type JsonObject } from './types';

/** The three PATCH formats besides apply: JSON Patch (RFC 6902), JSON merge patch (RFC 7386), strategic merge. */

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function unescapePointer(seg: string): string {
  return seg.replace(/~1/g, '/').replace(/~0/g, '~');
}

function pointer(path: unknown): string[] {
  if (typeof path !== 'string' || (path !== '' && !path.startsWith('/')))
    throw badRequest(
      `the server rejected our request due to an error in our request: invalid JSON pointer ${JSON.stringify(path)}`,
    );
  return path === '' ? [] : path.slice(1).split('/').map(unescapePointer);
}

function getAt(doc: unknown, segs: string[]): unknown {
  let cur = doc;
  for (const s of segs) {
    if (Array.isArray(cur)) cur = cur[Number(s)];
    else if (isObject(cur)) cur = cur[s];
    else return undefined;
  }
  return cur;
}

function parentOf(doc: unknown, segs: string[]): { parent: unknown; key: string } {
  const parent = getAt(doc, segs.slice(0, -1));
  if (!Array.isArray(parent) && !isObject(parent))
    throw new Error(`doc is missing path: "/${segs.join('/')}": missing value`);
  return { parent, key: segs[segs.length - 1] as string };
}

export function jsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops))
    throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let doc = structuredClone(target);
  const add = (segs: string[], value: unknown) => {
    if (segs.length === 0) {
      doc = value;
      return;
    }
    const { parent, key } = parentOf(doc, segs);
    if (Array.isArray(parent)) {
      const i = key === '-' ? parent.length : Number(key);
      if (!Number.isInteger(i) || i < 0 || i > parent.length)
        throw new Error(`add operation does not apply: index ${key} out of bounds`);
      parent.splice(i, 0, value);
    } else (parent as JsonObject)[key] = value;
  };
  const remove = (segs: string[]) => {
    const { parent, key } = parentOf(doc, segs);
    if (Array.isArray(parent)) {
      const i = Number(key);
      if (!(i >= 0 && i < parent.length))
        throw new Error(`remove operation does not apply: index ${key} out of bounds`);
      return parent.splice(i, 1)[0];
    }
    const p = parent as JsonObject;
    if (!(key in p))
      throw new Error(
        `remove operation does not apply: doc is missing path: "/${segs.join('/')}": missing value`,
      );
    const v = p[key];
    delete p[key];
    return v;
  };
  try {
    for (const raw of ops) {
      if (!isObject(raw)) throw new Error('each operation must be an object');
      const segs = pointer(raw.path);
      switch (raw.op) {
        case 'add':
          add(segs, structuredClone(raw.value));
          break;
        case 'remove':
          remove(segs);
          break;
        case 'replace':
          if (getAt(doc, segs) === undefined)
            throw new Error(
              `replace operation does not apply: doc is missing key: /${segs.join('/')}: missing value`,
            );
          if (segs.length === 0) doc = structuredClone(raw.value);
          else {
            remove(segs);
            add(segs, structuredClone(raw.value));
          }
          break;
        case 'move': {
          const v = remove(pointer(raw.from));
          add(segs, v);
          break;
        }
        case 'copy':
          add(segs, structuredClone(getAt(doc, pointer(raw.from))));
          break;
        case 'test':
          if (!deepEqual(getAt(doc, segs), raw.value))
            throw new Error(`testing value /${segs.join('/')} failed: test failed`);
          break;
        default:
          throw new Error(`Unexpected kind: ${String(raw.op)}`);
      }
    }
  } catch (e) {
    if ((e as { code?: number }).code) throw e;
    throw new PatchError((e as Error).message);
  }
  return doc;
}

/** A patch that cannot be applied: the API server answers 422 with the patcher's words. */
export class PatchError extends Error {}

/** Lists a strategic merge patch merges, and by which key (patchMergeKey); others are replaced. */
function smpList(path: string[]): { key?: string; primitive?: boolean } | undefined {
  const name = path[path.length - 1];
  if (name === 'containerStatuses' || name === 'initContainerStatuses') return undefined;
  const lt = listType(path);
  if (lt.type === 'map') return { key: lt.keys[0] };
  if (lt.type === 'set') return { primitive: true };
  return undefined;
}

export function strategicMergePatch(original: unknown, patch: unknown, path: string[] = []): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const directive = patch.$patch;
  if (directive === 'replace') {
    const { $patch: _, ...rest } = patch;
    return structuredClone(rest);
  }
  if (directive === 'delete') return undefined;
  const out: JsonObject = isObject(original) ? { ...original } : {};
  let retain: string[] | undefined;
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch') continue;
    if (k === '$retainKeys') {
      retain = v as string[];
      continue;
    }
    if (k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = out[field];
      if (Array.isArray(cur)) out[field] = cur.filter((x) => !(v as unknown[]).some((d) => deepEqual(d, x)));
      continue;
    }
    if (v === null) {
      delete out[k];
      continue;
    }
    const p = [...path, k];
    if (Array.isArray(v)) {
      out[k] = mergeList(out[k], v, p);
      continue;
    }
    if (isObject(v)) {
      const merged = strategicMergePatch(out[k], v, p);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
      continue;
    }
    out[k] = v;
  }
  if (retain) for (const k of Object.keys(out)) if (!retain.includes(k)) delete out[k];
  return out;
}

function mergeList(original: unknown, patch: unknown[], path: string[]): unknown[] {
  const how = smpList(path);
  if (!how || !Array.isArray(original))
    return structuredClone(patch).filter((x) => !(isObject(x) && x.$patch));
  if (how.primitive) {
    const out = [...original];
    for (const v of patch) if (!out.some((x) => deepEqual(x, v))) out.push(v);
    return out;
  }
  const key = how.key as string;
  if (patch.some((x) => isObject(x) && x.$patch === 'replace'))
    return structuredClone(patch).filter((x) => !(isObject(x) && x.$patch));
  let out = [...original];
  for (const item of patch) {
    if (!isObject(item)) continue;
    const i = out.findIndex((x) => isObject(x) && deepEqual(x[key], item[key]));
    if (item.$patch === 'delete') {
      if (i >= 0) out = out.filter((_, j) => j !== i);
      continue;
    }
    if (i >= 0) out[i] = strategicMergePatch(out[i], item, [...path, '[]']);
    else out.push(strategicMergePatch(undefined, item, [...path, '[]']));
  }
  return out;
}
