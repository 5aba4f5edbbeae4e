import { badRequest } from './status';
import { isObject, type KObject } from './types';

/** Label and field selectors as the API server parses them (`?labelSelector=`, `?fieldSelector=`). */

export interface Requirement {
  key: string;
  op: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values: string[];
}

export type Labels = Record<string, string> | undefined;

export function matchesRequirements(reqs: Requirement[], labels: Labels): boolean {
  const l = labels ?? {};
  return reqs.every((r) => {
    const has = Object.hasOwn(l, r.key);
    const v = l[r.key];
    switch (r.op) {
      case 'In':
        return has && r.values.includes(v as string);
      case 'NotIn':
        return !has || !r.values.includes(v as string);
      case 'Exists':
        return has;
      case 'DoesNotExist':
        return !has;
      case 'Gt':
        return has && Number(v) > Number(r.values[0]);
      case 'Lt':
        return has && Number(v) < Number(r.values[0]);
    }
    return false;
  });
}

/** Splits on commas that are not inside `( )`. */
function splitTop(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out.map((x) => x.trim()).filter((x) => x !== '');
}

export function parseLabelSelector(s: string | null): Requirement[] {
  if (!s) return [];
  return splitTop(s).map((part) => {
    let m = /^(!)?\s*([A-Za-z0-9._/-]+)$/.exec(part);
    if (m) return { key: m[2] as string, op: m[1] ? 'DoesNotExist' : 'Exists', values: [] };
    m = /^([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)$/.exec(part);
    if (m) return { key: m[1] as string, op: m[2] === '!=' ? 'NotIn' : 'In', values: [m[3] as string] };
    m = /^([A-Za-z0-9._/-]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part);
    if (m)
      return {
        key: m[1] as string,
        op: m[2] === 'in' ? 'In' : 'NotIn',
        values: (m[3] as string)
          .split(',')
          .map((x) => x.trim())
          .filter((x) => x !== ''),
      };
    m = /^([A-Za-z0-9._/-]+)\s*(>|<)\s*(\d+)$/.exec(part);
    if (m) return { key: m[1] as string, op: m[2] === '>' ? 'Gt' : 'Lt', values: [m[3] as string] };
    throw badRequest(`unable to parse requirement: found '${part}', expected: identifier`);
  });
}

/** A metav1.LabelSelector (matchLabels, matchExpressions); an empty selector matches everything. */
export function selectorRequirements(sel: unknown): Requirement[] {
  if (!isObject(sel)) return [];
  const out: Requirement[] = [];
  for (const [k, v] of Object.entries((sel.matchLabels as Record<string, string>) ?? {}))
    out.push({ key: k, op: 'In', values: [v] });
  for (const e of (sel.matchExpressions as { key: string; operator: string; values?: string[] }[]) ?? [])
    out.push({ key: e.key, op: e.operator as Requirement['op'], values: e.values ?? [] });
  return out;
}

export function matchesSelector(sel: unknown, labels: Labels): boolean {
  return matchesRequirements(selectorRequirements(sel), labels);
}

export interface FieldRequirement {
  field: string;
  equal: boolean;
  value: string;
}

export function parseFieldSelector(s: string | null, supported: readonly string[]): FieldRequirement[] {
  if (!s) return [];
  return splitTop(s).map((part) => {
    const m = /^([A-Za-z0-9._]+)\s*(==|=|!=)\s*(.*)$/.exec(part);
    if (!m) throw badRequest(`invalid selector: '${s}'; can't understand '${part}'`);
    const field = m[1] as string;
    if (!supported.includes(field)) throw badRequest(`field label not supported: ${field}`);
    return { field, equal: m[2] !== '!=', value: (m[3] as string).trim() };
  });
}

/** The value of a dotted field path on an object, as a string ('' when absent), for field selectors. */
export function fieldValue(obj: KObject, path: string): string {
  let cur: unknown = obj;
  for (const seg of path.split('.')) {
    if (!isObject(cur)) return '';
    cur = cur[seg];
  }
  if (cur === undefined || cur === null) return path === 'spec.unschedulable' ? 'false' : '';
  return String(cur);
}

export function matchesFields(reqs: FieldRequirement[], obj: KObject): boolean {
  return reqs.every((r) => (fieldValue(obj, r.field) === r.value) === r.equal);
}
