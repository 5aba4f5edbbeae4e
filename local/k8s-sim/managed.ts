import { compare, deepEqual, FieldSet, merge, pathString, prune, toFieldSet } from './fieldset';
import { K8sError } from './status';
import type { JsonObject, KObject } from './types';

/**
 * metadata.managedFields: who owns which field, kept the way the API server's field manager keeps it.
 * Apply (server-side apply) owns exactly what was applied, conflicts with other owners of changed fields
 * unless forced, and drops what it stopped applying; any other write (create, update, patch) takes over the
 * fields it changed. Conflict errors read as the API server's.
 */

export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time?: string;
  fieldsType: 'FieldsV1';
  fieldsV1: JsonObject;
  subresource?: string;
}

interface Owner {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  subresource?: string;
  time?: string;
  set: FieldSet;
}

type Owners = Map<string, Owner>;

/** The identity of an owner: an applier is the same owner whatever the API version it applies with. */
function identity(o: Pick<Owner, 'manager' | 'operation' | 'apiVersion' | 'subresource'>): string {
  return JSON.stringify([
    o.manager,
    o.operation,
    o.operation === 'Apply' ? '' : o.apiVersion,
    o.subresource ?? '',
  ]);
}

export function decode(entries: unknown): Owners {
  const out: Owners = new Map();
  if (!Array.isArray(entries)) return out;
  for (const e of entries as Partial<ManagedFieldsEntry>[]) {
    if (!e || typeof e.manager !== 'string' || (e.operation !== 'Apply' && e.operation !== 'Update'))
      continue;
    const o: Owner = {
      manager: e.manager,
      operation: e.operation,
      apiVersion: e.apiVersion ?? '',
      ...(e.subresource ? { subresource: e.subresource } : {}),
      ...(e.time ? { time: e.time } : {}),
      set: FieldSet.fromFieldsV1(e.fieldsV1),
    };
    out.set(identity(o), o);
  }
  return out;
}

export function encode(owners: Owners): ManagedFieldsEntry[] {
  const list = [...owners.values()].filter((o) => !o.set.empty());
  list.sort(
    (p, q) =>
      cmp(p.operation, q.operation) ||
      cmp(p.time ?? '', q.time ?? '') ||
      cmp(p.manager, q.manager) ||
      cmp(p.apiVersion, q.apiVersion) ||
      cmp(p.subresource ?? '', q.subresource ?? ''),
  );
  return list.map((o) => ({
    apiVersion: o.apiVersion,
    fieldsType: 'FieldsV1',
    fieldsV1: o.set.toFieldsV1(),
    manager: o.manager,
    operation: o.operation,
    ...(o.subresource ? { subresource: o.subresource } : {}),
    ...(o.time ? { time: o.time } : {}),
  }));
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** How a conflict names an owner: `"kubectl-edit" using apps/v1`, `"llmcap"`, with its subresource if any. */
function describeOwner(o: Owner): string {
  let s = JSON.stringify(o.manager);
  if (o.subresource) s += ` with subresource ${JSON.stringify(o.subresource)}`;
  if (o.operation === 'Update') s += ` using ${o.apiVersion}`;
  return s;
}

function conflictError(conflicts: { owner: Owner; paths: string[] }[]): K8sError {
  const causes = conflicts.flatMap((c) =>
    c.paths.map((p) => ({
      reason: 'FieldManagerConflict',
      message: `conflict with ${describeOwner(c.owner)}`,
      field: p,
    })),
  );
  let message: string;
  if (causes.length === 1) {
    const only = conflicts[0] as { owner: Owner; paths: string[] };
    message = `Apply failed with 1 conflict: conflict with ${describeOwner(only.owner)}: ${only.paths[0]}`;
  } else {
    const lines: string[] = [];
    for (const c of [...conflicts].sort((a, b) => cmp(identity(a.owner), identity(b.owner)))) {
      lines.push(`conflicts with ${describeOwner(c.owner)}:`);
      for (const p of c.paths) lines.push(`- ${p}`);
    }
    message = `Apply failed with ${causes.length} conflicts: ${lines.join('\n')}`;
  }
  return new K8sError(409, 'Conflict', message, { causes });
}

export interface WriteContext {
  manager: string;
  apiVersion: string;
  /** RFC 3339 time of the write, on the simulator's clock. */
  now: string;
  /** `status` for a status subresource write. */
  subresource?: string;
  /** Top-level fields this endpoint does not own (status on the main resource, all but status on /status). */
  ignoreTop: readonly string[];
}

function removeEverywhere(owners: Owners, removed: FieldSet): void {
  for (const [k, o] of owners) {
    o.set = o.set.difference(removed);
    if (o.set.empty()) owners.delete(k);
  }
}

/** Server-side apply: the merged object and its managedFields, or a 409 listing every conflict. */
export function apply(
  live: KObject | undefined,
  config: KObject,
  ctx: WriteContext & { force: boolean },
): KObject {
  const owners = decode(live?.metadata?.managedFields);
  const cfg: JsonObject = { ...config };
  for (const k of ctx.ignoreTop) delete cfg[k];
  const configSet = toFieldSet(cfg, ctx.ignoreTop);
  const base = (live ?? {}) as JsonObject;
  let merged = merge(base, cfg) as JsonObject;
  const me: Owner = {
    manager: ctx.manager,
    operation: 'Apply',
    apiVersion: ctx.apiVersion,
    ...(ctx.subresource ? { subresource: ctx.subresource } : {}),
    time: ctx.now,
    set: configSet,
  };
  const id = identity(me);
  const last = owners.get(id)?.set;
  owners.set(id, me);
  if (last) {
    let everyone = new FieldSet();
    for (const o of owners.values()) everyone = everyone.union(o.set);
    merged = prune(merged, last.difference(configSet), everyone) as JsonObject;
  }
  const change = compare(base, merged, ctx.ignoreTop);
  const touched = change.modified.union(change.added);
  const conflicts: { owner: Owner; set: FieldSet; paths: string[] }[] = [];
  for (const [k, o] of owners) {
    if (k === id) continue;
    const c = o.set.intersect(touched);
    if (!c.empty()) conflicts.push({ owner: o, set: c, paths: c.paths().map(pathString) });
  }
  if (conflicts.length > 0 && !ctx.force) throw conflictError(conflicts);
  for (const c of conflicts) c.owner.set = c.owner.set.difference(c.set);
  removeEverywhere(owners, change.removed);
  const unchanged = live !== undefined && deepEqual(stripManaged(base), stripManaged(merged));
  if (unchanged && last && deepEqual(last.toFieldsV1(), configSet.toFieldsV1())) {
    // A no-op apply writes nothing, not even a new time: the object keeps its resourceVersion.
    return live as KObject;
  }
  const meta = { ...((merged.metadata as JsonObject) ?? {}) };
  meta.managedFields = encode(owners);
  return { ...merged, metadata: meta } as KObject;
}

/** Any other write: the writer owns what it changed, and everyone loses what it changed or removed. */
export function update(live: KObject | undefined, next: KObject, ctx: WriteContext): KObject {
  const sent = next.metadata?.managedFields;
  const kept = live?.metadata?.managedFields;
  // A client may rewrite managedFields (e.g. clear them with [{}]); otherwise the live ones stand.
  const owners = decode(sent !== undefined && !deepEqual(sent, kept) ? sent : kept);
  const base = (live ?? {}) as JsonObject;
  const change = compare(base, next as JsonObject, ctx.ignoreTop);
  const touched = change.modified.union(change.added);
  const me: Owner = {
    manager: ctx.manager,
    operation: 'Update',
    apiVersion: ctx.apiVersion,
    ...(ctx.subresource ? { subresource: ctx.subresource } : {}),
    set: new FieldSet(),
  };
  const id = identity(me);
  const mine = owners.get(id);
  for (const [k, o] of owners) if (k !== id) o.set = o.set.difference(touched);
  removeEverywhere(owners, change.removed);
  const set = (owners.get(id)?.set ?? mine?.set ?? new FieldSet()).difference(change.removed).union(touched);
  if (!touched.empty() || !mine) me.time = ctx.now;
  else if (mine.time) me.time = mine.time;
  me.set = set;
  owners.set(id, me);
  const meta = { ...((next.metadata as JsonObject) ?? {}) };
  meta.managedFields = encode(owners);
  return { ...next, metadata: meta } as KObject;
}

function stripManaged(o: JsonObject): JsonObject {
  const meta = { ...((o.metadata as JsonObject) ?? {}) };
  delete meta.managedFields;
  return { ...o, metadata: meta };
}

/** Equal but for the resourceVersion and the times in managedFields: a write that changes nothing. */
export function sameButVersion(a: KObject, b: KObject): boolean {
  const strip = (o: KObject) => {
    const m = { ...(o.metadata ?? {}) } as Record<string, unknown>;
    delete m.resourceVersion;
    m.managedFields = ((m.managedFields as JsonObject[]) ?? []).map(({ time: _t, ...rest }) => rest);
    return { ...o, metadata: m };
  };
  return deepEqual(strip(a), strip(b));
}
