import type * as z from 'zod';
import type { FieldIssue } from './errors';

/**
 * Cross-field rules of a payload, run inside its zod schema so that one answer lists them beside the type
 * errors (issue 18 §3): zod skips a refinement once anything in the object failed, so each rule says with
 * `whenParsed` which fields it reads and runs as soon as those parsed, reading the rest defensively.
 */

export type PathPart = string | number;
export interface RuleIssue {
  /** Relative to the value the rule checks; zod prefixes where that value sits in the payload. */
  path: PathPart[];
  message: string;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * The one path format of every issue, zod's and the domain's: `spec.profiles[0].gpus`, and a key that is not
 * a plain name in brackets, as JSONPath writes it (`members["arn:aws:iam::111111111111:role/x"]`).
 */
export function formatPath(parts: readonly PropertyKey[]): string {
  let out = '';
  for (const p of parts) {
    if (typeof p === 'number') out += `[${p}]`;
    else if (typeof p === 'string' && IDENTIFIER.test(p)) out += out ? `.${p}` : p;
    else out += `[${JSON.stringify(String(p))}]`;
  }
  return out;
}

/** A rule's issues as field issues under `prefix` (the path of the checked value in the payload). */
export function fieldIssues(prefix: readonly PathPart[], issues: readonly RuleIssue[]): FieldIssue[] {
  return issues.map((i) => ({ path: formatPath([...prefix, ...i.path]), message: i.message }));
}

type Payload = { issues: readonly { path?: readonly PropertyKey[] }[] };

/** zod's `when`: run the rule unless one of `fields` (top-level keys of the checked value) failed to parse. */
export function whenParsed(...fields: PathPart[]): (payload: Payload) => boolean {
  return (payload) => !payload.issues.some((i) => i.path?.length && fields.includes(i.path[0] as PathPart));
}

/** A refinement that adds a rule's issues, run by `when`'s decision (every field parsed when absent). */
export function refineWith<T>(
  rule: (value: T) => RuleIssue[],
  when: (payload: Payload) => boolean = () => true,
): [(value: T, ctx: z.RefinementCtx) => void, { when: (payload: Payload) => boolean }] {
  return [
    (value, ctx) => {
      for (const i of rule(value)) ctx.addIssue({ code: 'custom', path: i.path, message: i.message });
    },
    { when },
  ];
}

/**
 * Entries of a list that repeat an earlier one, by `keyOf` (undefined: not comparable, e.g. a type error):
 * each repeat at its own index, naming the index of the entry it repeats.
 */
export function repeats<T>(
  items: readonly T[],
  keyOf: (item: T, index: number) => string | undefined,
): { index: number; first: number; key: string }[] {
  const firstAt = new Map<string, number>();
  const out: { index: number; first: number; key: string }[] = [];
  items.forEach((item, index) => {
    const key = keyOf(item, index);
    if (key === undefined) return;
    const first = firstAt.get(key);
    if (first === undefined) firstAt.set(key, index);
    else out.push({ index, first, key });
  });
  return out;
}

/** A field of a value that may not have parsed, if it has the type the rule needs. */
export const numberAt = (o: unknown, k: string): number | undefined => {
  const v = o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined;
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
};
export const stringAt = (o: unknown, k: string): string | undefined => {
  const v = o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined;
  return typeof v === 'string' ? v : undefined;
};
