import { parse as parseYaml } from 'yaml';
import type { Rng } from '../cloud-sim/rng';
import { deepEqual } from './fieldset';
import { apply as applyFields, sameButVersion, update as updateFields } from './managed';
import { jsonPatch, mergePatch, PatchError, strategicMergePatch } from './patch';
import { apiVersionOf, NAMESPACES, nameErrors, type ResourceDef } from './resources';
import { matchesFields, matchesRequirements, parseFieldSelector, parseLabelSelector } from './selectors';
import {
  alreadyExists,
  badRequest,
  type FieldError,
  invalid,
  K8sError,
  notFound,
  staleConflict,
  unsupportedMediaType,
} from './status';
import type { Store } from './store';
import { isObject, type JsonObject, type KObject } from './types';

/**
 * The API server's generic REST logic for every resource: create, get, list (selectors, pagination), update,
 * the four patch types, delete with propagation, and the bookkeeping around them (uid, timestamps,
 * generation, resourceVersion preconditions, defaulting, validation, managedFields). Behaviour particular to
 * a resource (graceful pod deletion, eviction, binding) is in the cluster, through `hooks`.
 */

export interface WriteOptions {
  /** Field manager: the `fieldManager` parameter, else the User-Agent's product. */
  manager: string;
  subresource?: string;
  dryRun?: boolean;
}

export interface PatchOptions extends WriteOptions {
  force?: boolean;
}

export interface DeleteOptions {
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
}

export interface ListOptions {
  labelSelector?: string | null;
  fieldSelector?: string | null;
  limit?: number;
  continue?: string | null;
}

export interface ApiHooks {
  /**
   * A pod is being deleted with this grace period: true when the kubelet takes over (the pod stays, terminating,
   * until it has stopped), false to remove it at once.
   */
  gracefulPodDeletion?(pod: KObject, graceSeconds: number): boolean;
}

export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

const FINALIZER_FOREGROUND = 'foregroundDeletion';
const FINALIZER_ORPHAN = 'orphan';

export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export class ApiServer {
  hooks: ApiHooks = {};

  constructor(
    readonly store: Store,
    private readonly now: () => number,
    private readonly ids: Rng,
  ) {}

  uid(): string {
    const h = this.ids.hex(32).split('');
    h[12] = '4';
    h[16] = '89ab'[Number.parseInt(h[16] ?? '0', 16) & 3] ?? '8';
    const s = h.join('');
    return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
  }

  /** Five characters of the alphabet Kubernetes uses for generated names (no vowels, no look-alikes). */
  suffix(n = 5): string {
    const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(this.ids.next() * alphabet.length)];
    return s;
  }

  timestamp(): string {
    return rfc3339(this.now());
  }

  get(def: ResourceDef, ns: string | undefined, name: string): KObject {
    const o = this.store.get(def, ns, name);
    if (!o) throw notFound(def, name);
    return o;
  }

  list(def: ResourceDef, ns: string | undefined, opts: ListOptions = {}) {
    const labels = parseLabelSelector(opts.labelSelector ?? null);
    const supported = ['metadata.name', 'metadata.namespace', ...def.fieldSelectors];
    const fields = parseFieldSelector(opts.fieldSelector ?? null, supported);
    const node = fields.find((f) => f.field === 'spec.nodeName' && f.equal && f.value !== '');
    const equal = Object.fromEntries(
      labels.filter((r) => r.op === 'In' && r.values.length === 1).map((r) => [r.key, r.values[0] as string]),
    );
    let items =
      node && def.resource === 'pods'
        ? this.store
            .podsOnNode(def, node.value)
            .filter((p) => ns === undefined || p.metadata?.namespace === ns)
            .sort((a, b) => keyCmp(a, b))
        : ns !== undefined && Object.keys(equal).length > 0
          ? this.store.withLabels(def, ns, equal)
          : this.store.list(def, ns);
    items = items.filter((o) => matchesRequirements(labels, o.metadata?.labels) && matchesFields(fields, o));
    const rv = this.store.resourceVersion();
    let start = 0;
    if (opts.continue) {
      const after = decodeContinue(opts.continue);
      start = items.findIndex((o) => keyOf(o) > after);
      if (start < 0) start = items.length;
    }
    const limit = opts.limit && opts.limit > 0 ? opts.limit : undefined;
    const page = limit ? items.slice(start, start + limit) : items.slice(start);
    const more = limit !== undefined && start + limit < items.length;
    const last = page[page.length - 1];
    return {
      apiVersion: apiVersionOf(def),
      kind: `${def.kind}List`,
      metadata: {
        resourceVersion: rv,
        ...(more && last
          ? {
              continue: Buffer.from(JSON.stringify({ rv, start: keyOf(last) })).toString('base64url'),
              remainingItemCount: items.length - start - page.length,
            }
          : {}),
      },
      // Items of a typed list carry no apiVersion and kind, as the API server sends them.
      items: page.map(({ apiVersion: _a, kind: _k, ...rest }) => rest),
    };
  }

  private requireNamespace(def: ResourceDef, ns: string | undefined): void {
    if (!def.namespaced) return;
    if (!ns)
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    const n = this.store.get(NAMESPACES, undefined, ns);
    if (!n) throw notFound(NAMESPACES, ns);
  }

  private checkIdentity(def: ResourceDef, body: KObject, ns: string | undefined, name?: string): void {
    const wantVersion = apiVersionOf(def);
    if (body.apiVersion !== undefined && body.apiVersion !== wantVersion)
      throw badRequest(
        `the API version in the data (${body.apiVersion}) does not match the expected API version (${wantVersion})`,
      );
    if (body.kind !== undefined && body.kind !== def.kind)
      throw badRequest(`the kind in the data (${body.kind}) does not match the expected kind (${def.kind})`);
    const bodyNs = body.metadata?.namespace;
    if (def.namespaced && bodyNs && ns && bodyNs !== ns)
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    if (name !== undefined && body.metadata?.name && body.metadata.name !== name)
      throw badRequest(
        `the name of the object (${body.metadata.name}) does not match the name on the URL (${name})`,
      );
  }

  private finish(def: ResourceDef, obj: KObject, old: KObject | undefined): KObject {
    obj.apiVersion = apiVersionOf(def);
    obj.kind = def.kind;
    def.defaults?.(obj);
    const errors: FieldError[] = [];
    const name = obj.metadata?.name ?? '';
    for (const e of nameErrors(name, def.nameRule))
      errors.push({ type: 'FieldValueInvalid', field: 'metadata.name', value: name, detail: e });
    errors.push(...(def.validate?.(obj, old) ?? []));
    if (errors.length > 0) throw invalid(def.kind, def.group, name, errors);
    return obj;
  }

  create(def: ResourceDef, ns: string | undefined, body: KObject, opts: WriteOptions): KObject {
    if (!isObject(body)) throw badRequest('the body of the request must be an object');
    this.checkIdentity(def, body, ns);
    this.requireNamespace(def, ns);
    const meta = { ...(body.metadata ?? {}) };
    if (!meta.name) {
      if (!meta.generateName)
        throw invalid(def.kind, def.group, '', [
          { type: 'FieldValueRequired', field: 'metadata.name', detail: 'name or generateName is required' },
        ]);
      meta.name = `${meta.generateName}${this.suffix()}`;
    }
    if (this.store.get(def, ns, meta.name)) throw alreadyExists(def, meta.name);
    const obj = this.stamp(def, { ...structuredClone(body), metadata: meta }, ns);
    this.finish(def, obj, undefined);
    const written = updateFields(undefined, obj, this.ctx(def, opts));
    if (opts.dryRun) return written;
    return this.store.put(def, written);
  }

  private stamp(def: ResourceDef, obj: KObject, ns: string | undefined): KObject {
    const meta = obj.metadata ?? {};
    meta.uid = this.uid();
    meta.creationTimestamp = this.timestamp();
    if (def.namespaced) meta.namespace = ns;
    else delete meta.namespace;
    if (def.generation) meta.generation = 1;
    delete meta.resourceVersion;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    obj.metadata = meta;
    return obj;
  }

  private ctx(def: ResourceDef, opts: WriteOptions) {
    const status = opts.subresource === 'status';
    return {
      manager: opts.manager,
      apiVersion: apiVersionOf(def),
      now: this.timestamp(),
      ...(opts.subresource ? { subresource: opts.subresource } : {}),
      ignoreTop: status ? ['spec', 'metadata'] : def.statusSubresource ? ['status'] : [],
    };
  }

  /** What an update may change: status on /status, everything else on the object; identity never. */
  private carryOver(
    def: ResourceDef,
    live: KObject,
    next: KObject,
    subresource: string | undefined,
  ): KObject {
    let out: KObject;
    if (subresource === 'status') out = { ...structuredClone(live), status: structuredClone(next.status) };
    else {
      out = structuredClone(next);
      if (def.statusSubresource) {
        if (live.status === undefined) delete out.status;
        else out.status = structuredClone(live.status);
      }
    }
    const meta = { ...(out.metadata ?? {}) };
    const lm = live.metadata ?? {};
    for (const k of [
      'uid',
      'creationTimestamp',
      'namespace',
      'generation',
      'deletionTimestamp',
      'deletionGracePeriodSeconds',
      'name',
    ] as const) {
      if (lm[k] === undefined) delete meta[k];
      else (meta as Record<string, unknown>)[k] = lm[k];
    }
    if (subresource === 'status') meta.managedFields = lm.managedFields;
    out.metadata = meta;
    if (def.generation && !deepEqual(live.spec, out.spec)) meta.generation = (lm.generation ?? 1) + 1;
    return out;
  }

  /** Stores `next` as the new state of `live` unless nothing changed (then the resourceVersion stays). */
  private commit(
    def: ResourceDef,
    live: KObject,
    next: KObject,
    opts: WriteOptions,
    managed: KObject | null,
  ): KObject {
    const obj = managed ?? updateFields(live, next, this.ctx(def, opts));
    if (sameButVersion(live, obj)) return live;
    if (opts.dryRun) return obj;
    return this.store.put(def, obj);
  }

  update(def: ResourceDef, ns: string | undefined, name: string, body: KObject, opts: WriteOptions): KObject {
    if (!isObject(body)) throw badRequest('the body of the request must be an object');
    this.checkIdentity(def, body, ns, name);
    const live = this.get(def, ns, name);
    const rv = body.metadata?.resourceVersion;
    if (rv !== undefined && rv !== '' && rv !== live.metadata?.resourceVersion)
      throw staleConflict(def, name);
    if (!body.metadata?.name)
      throw invalid(def.kind, def.group, name, [
        { type: 'FieldValueRequired', field: 'metadata.name', detail: 'name or generateName is required' },
      ]);
    const next = this.finish(def, this.carryOver(def, live, body, opts.subresource), live);
    return this.commit(def, live, next, opts, null);
  }

  patch(
    def: ResourceDef,
    ns: string | undefined,
    name: string,
    contentType: string,
    raw: string,
    opts: PatchOptions,
  ): KObject {
    const type = contentType.split(';')[0]?.trim() ?? '';
    if (opts.force !== undefined && type !== PATCH_TYPES.apply)
      throw invalid('PatchOptions', 'meta.k8s.io', '', [
        { type: 'FieldValueForbidden', field: 'force', detail: 'may not be specified for non-apply patch' },
      ]);
    if (type === PATCH_TYPES.apply) return this.applyPatch(def, ns, name, raw, opts);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch (e) {
      throw badRequest(`error decoding patch: ${(e as Error).message}`);
    }
    const live = this.get(def, ns, name);
    const current = structuredClone(live) as JsonObject;
    let patched: unknown;
    try {
      if (type === PATCH_TYPES.json) patched = jsonPatch(current, body);
      else if (type === PATCH_TYPES.merge) patched = mergePatch(current, body);
      else if (type === PATCH_TYPES.strategic) patched = strategicMergePatch(current, body);
      else throw unsupportedMediaType(contentType);
    } catch (e) {
      if (e instanceof PatchError) throw new K8sError(422, 'Invalid', e.message);
      throw e;
    }
    if (!isObject(patched)) throw badRequest('the patch must leave an object');
    const obj = patched as KObject;
    this.checkIdentity(def, obj, ns, name);
    const rv = obj.metadata?.resourceVersion;
    if (rv !== undefined && rv !== live.metadata?.resourceVersion) throw staleConflict(def, name);
    const next = this.finish(def, this.carryOver(def, live, obj, opts.subresource), live);
    return this.commit(def, live, next, opts, null);
  }

  private applyPatch(
    def: ResourceDef,
    ns: string | undefined,
    name: string,
    raw: string,
    opts: PatchOptions,
  ): KObject {
    if (!opts.manager)
      throw invalid('PatchOptions', 'meta.k8s.io', '', [
        { type: 'FieldValueRequired', field: 'fieldManager', detail: 'is required for apply patch' },
      ]);
    let config: unknown;
    try {
      // Clients send apply configurations as JSON (which is YAML): JSON.parse reads them many times faster.
      config = jsonOrYaml(raw);
    } catch (e) {
      throw badRequest(`error decoding YAML: ${(e as Error).message}`);
    }
    if (!isObject(config)) throw badRequest('the apply configuration must be an object');
    const cfg = config as KObject;
    if (!cfg.apiVersion || !cfg.kind) throw badRequest(`Object 'Kind' is missing in '${raw.slice(0, 200)}'`);
    this.checkIdentity(def, cfg, ns, name);
    const live = this.store.get(def, ns, name);
    const rv = cfg.metadata?.resourceVersion;
    if (rv !== undefined && live && rv !== live.metadata?.resourceVersion) throw staleConflict(def, name);
    const stripped: KObject = { ...cfg, metadata: { ...(cfg.metadata ?? {}) } };
    for (const k of [
      'resourceVersion',
      'uid',
      'creationTimestamp',
      'managedFields',
      'generation',
      'selfLink',
    ] as const)
      delete (stripped.metadata as Record<string, unknown>)[k];
    if (stripped.metadata) stripped.metadata.name = name;
    const ctx = { ...this.ctx(def, opts), force: opts.force === true };
    if (!live) {
      this.requireNamespace(def, ns);
      const merged = applyFields(undefined, stripped, ctx);
      const obj = this.stamp(def, merged, ns);
      this.finish(def, obj, undefined);
      if (opts.dryRun) return obj;
      return this.store.put(def, obj);
    }
    const merged = applyFields(live, stripped, ctx);
    if (merged === live) return live;
    const next = this.finish(def, this.carryOver(def, live, merged, opts.subresource), live);
    next.metadata = { ...next.metadata, managedFields: merged.metadata?.managedFields };
    return this.commit(def, live, next, opts, next);
  }

  /** DELETE: the object (when it lingers, terminating) or a Success status. */
  delete(def: ResourceDef, ns: string | undefined, name: string, opts: DeleteOptions = {}): KObject {
    const live = this.get(def, ns, name);
    const meta = live.metadata ?? {};
    const pre = opts.preconditions;
    if (pre?.uid && pre.uid !== meta.uid)
      throw new K8sError(
        409,
        'Conflict',
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${meta.uid}`,
        {
          name,
          kind: def.resource,
        },
      );
    if (pre?.resourceVersion && pre.resourceVersion !== meta.resourceVersion)
      throw new K8sError(
        409,
        'Conflict',
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${meta.resourceVersion}`,
        { name, kind: def.resource },
      );
    if (opts.dryRun) return live;
    const policy = opts.propagationPolicy ?? (def.group === 'apps' ? 'Background' : 'Background');
    const finalizers = [...(meta.finalizers ?? [])];
    if (policy === 'Foreground' && this.store.dependents(meta.uid as string).length > 0)
      finalizers.push(FINALIZER_FOREGROUND);
    if (policy === 'Orphan') this.orphan(meta.uid as string);
    if (meta.deletionTimestamp) return live;
    if (def.resource === 'pods' && def.group === '') {
      const spec = (live.spec as JsonObject) ?? {};
      const grace = opts.gracePeriodSeconds ?? (spec.terminationGracePeriodSeconds as number) ?? 30;
      if (finalizers.length === 0 && this.hooks.gracefulPodDeletion?.(live, grace)) {
        return this.store.put(def, {
          ...live,
          metadata: {
            ...meta,
            deletionTimestamp: rfc3339(this.now() + grace * 1000),
            deletionGracePeriodSeconds: grace,
          },
        });
      }
    }
    if (finalizers.length > 0) {
      return this.store.put(def, {
        ...live,
        metadata: {
          ...meta,
          finalizers: [...new Set(finalizers)],
          deletionTimestamp: this.timestamp(),
          deletionGracePeriodSeconds: 0,
        },
      });
    }
    const gone = this.store.remove(def, ns, name) as KObject;
    return gone;
  }

  /** Removes an object at once (force deletion, or once its finalizers are gone). */
  removeNow(def: ResourceDef, ns: string | undefined, name: string): void {
    this.store.remove(def, ns, name);
  }

  private orphan(uid: string): void {
    for (const ref of this.store.dependents(uid)) {
      const o = this.store.get(ref.def, ref.namespace, ref.name);
      if (!o) continue;
      const meta = {
        ...o.metadata,
        ownerReferences: (o.metadata?.ownerReferences ?? []).filter((r) => r.uid !== uid),
      };
      if (meta.ownerReferences.length === 0) delete (meta as Record<string, unknown>).ownerReferences;
      this.store.put(ref.def, { ...o, metadata: meta });
    }
  }

  static finalizers = { foreground: FINALIZER_FOREGROUND, orphan: FINALIZER_ORPHAN };
}

function jsonOrYaml(raw: string): unknown {
  const t = raw.trimStart();
  if (t.startsWith('{'))
    try {
      return JSON.parse(raw);
    } catch {
      // YAML flow mappings start with { too.
    }
  return parseYaml(raw);
}

function keyOf(o: KObject): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;
}

function keyCmp(a: KObject, b: KObject): number {
  const ka = keyOf(a);
  const kb = keyOf(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

function decodeContinue(token: string): string {
  try {
    const v = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (typeof v.start === 'string') return v.start;
  } catch {
    // fall through
  }
  throw badRequest('continue key is not valid: illegal base64 data at input byte 0');
}
