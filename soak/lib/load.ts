import { listAdmissions } from '../../lambdas/store/admissions';
import { expectOk, l4Model, P, setupTenancy } from './fixture';
import { type Invoke, jsonClient, listAll } from './invoke';

/**
 * Load: many concurrent clients for a bounded time, mixing reads and writes on shared and private resources.
 * Allowed refusals are 409s (a concurrent update, a limit); every other non-2xx is an error. Afterwards the
 * catalog, the quotas and the admissions must add up: every create that answered 201 and was not deleted is
 * there, every delete that answered 204 is gone, each shared resource's version grew by exactly the number of
 * writes that succeeded on it (no lost update), no admission without its model, no scope over its limit.
 */

export interface LoadOptions {
  /** Resolves once the admitter has decided every write made so far (before the checks). */
  settle?: () => Promise<void>;
  invoke: Invoke;
  clients: number;
  seconds: number;
  log?: (line: string) => void;
}

export interface LoadReport {
  clients: number;
  seconds: number;
  requests: number;
  throughputPerSecond: number;
  byStatus: Record<string, number>;
  expected409: number;
  errors: string[];
  errorCount: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  byOp: Record<string, { n: number; p50: number; p99: number }>;
  inconsistencies: string[];
  /** Writes answered 5xx whose effect may or may not have been committed. */
  ambiguousWrites: number;
  durationMs: number;
  /** CPU milliseconds per request by process, and the rate and mean latency they allow (soak/load.ts). */
  cpu?: {
    controlPlaneMs: number;
    dynamodbMs?: number;
    clientsMs: number;
    cores: number;
    maxPerSecond: number;
    leastMeanLatencyMs: number;
  };
}

const pct = (xs: number[], p: number) => {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 10) / 10;
};

export async function runLoad(o: LoadOptions): Promise<LoadReport> {
  const admin = jsonClient(o.invoke, P.platform);
  await setupTenancy(admin);
  expectOk('ld-shared', await admin('POST', '/v1/models', l4Model('ld-shared', 'project:a', 0)), 201);
  const v0 = {
    model: (await admin('GET', '/v1/models/ld-shared')).body.metadata.version as number,
    quota: (await admin('GET', '/v1/quotas/project:a')).body.metadata.version as number,
  };
  // Versions the acknowledged writes answered with: a write that changed something has a version of its own,
  // an unchanged one (apply is declarative) answers a version already counted, so distinct versions count changes.
  const okVersions = { model: new Set<number>(), quota: new Set<number>() };
  const created = new Set<string>();
  /** Writes answered 5xx or not at all: they may or may not have been committed (a timeout is ambiguous). */
  const ambiguous = { creates: new Set<string>(), deletes: new Set<string>(), model: 0, quota: 0 };
  const deleted = new Set<string>();
  const lat: number[] = [];
  const byOp: Record<string, number[]> = {};
  const byStatus: Record<string, number> = {};
  const errors: string[] = [];
  let errorCount = 0;
  let expected409 = 0;
  const t0 = Date.now();
  const end = t0 + o.seconds * 1000;

  const client = async (k: number) => {
    const who = [P.platform, P.teamAdmin, P.editor, P.viewer][k % 4]!;
    const call = jsonClient(o.invoke, who);
    const writer = who !== P.viewer;
    let seq = 0;
    const mine: string[] = [];
    while (Date.now() < end) {
      const x = Math.random();
      let op: string;
      let method: string;
      let path: string;
      let body: unknown;
      if (x < 0.25) [op, method, path] = ['list-models', 'GET', '/v1/models'];
      else if (x < 0.35) [op, method, path] = ['get-model', 'GET', '/v1/models/ld-shared'];
      else if (x < 0.45) [op, method, path] = ['list-computes', 'GET', '/v1/computes'];
      else if (x < 0.55) [op, method, path] = ['capacity', 'GET', '/v1/capacity'];
      else if (x < 0.6) [op, method, path] = ['quotas', 'GET', '/v1/quotas'];
      else if (!writer) [op, method, path] = ['get-scope', 'GET', '/v1/scopes/project:a'];
      else if (x < 0.72) {
        const name = `ld-${k}-${seq++}`;
        [op, method, path, body] = [
          'add-model',
          'POST',
          '/v1/models',
          l4Model(name, 'project:a', Math.random() < 0.5 ? 1 : 0),
        ];
      } else if (x < 0.82 && mine.length) {
        [op, method, path] = ['remove-model', 'DELETE', `/v1/models/${mine[0]}`];
      } else if (x < 0.92) {
        const max = 1 + Math.floor(Math.random() * 4);
        [op, method, path, body] = ['scale-shared', 'PUT', '/v1/models/ld-shared/scaling', { min: 0, max }];
      } else if (who === P.platform || who === P.teamAdmin) {
        const gpus = 2 + Math.floor(Math.random() * 3);
        [op, method, path, body] = [
          'set-quota',
          'PUT',
          '/v1/quotas/project:a',
          { guarantee: { gpus }, limit: { gpus: 8 } },
        ];
      } else [op, method, path] = ['get-model', 'GET', '/v1/models/ld-shared'];
      const t = performance.now();
      let status: number;
      let detail = '';
      let version: number | undefined;
      try {
        const r = await call(method, path, body);
        status = r.status;
        version = r.body?.metadata?.version;
        if (status >= 400) detail = r.body?.detail ?? '';
      } catch (e) {
        status = 599;
        detail = (e as Error).message;
      }
      const ms = performance.now() - t;
      lat.push(ms);
      const list = byOp[op];
      if (list) list.push(ms);
      else byOp[op] = [ms];
      byStatus[status] = (byStatus[status] ?? 0) + 1;
      if (status === 409 && method !== 'GET') expected409++;
      else if (status >= 300) {
        errorCount++;
        if (errors.length < 20) errors.push(`${op} ${method} ${path} → ${status} ${detail}`);
      }
      if (status >= 500 && method !== 'GET') {
        if (op === 'add-model') ambiguous.creates.add((body as { metadata: { name: string } }).metadata.name);
        if (op === 'remove-model') ambiguous.deletes.add(mine.shift()!);
        if (op === 'scale-shared') ambiguous.model++;
        if (op === 'set-quota') ambiguous.quota++;
      }
      if (op === 'add-model' && status === 201) {
        const n = (body as { metadata: { name: string } }).metadata.name;
        created.add(n);
        mine.push(n);
      }
      if (op === 'remove-model' && status === 204) deleted.add(mine.shift()!);
      if (op === 'scale-shared' && status === 200 && version !== undefined) okVersions.model.add(version);
      if (op === 'set-quota' && status === 200 && version !== undefined) okVersions.quota.add(version);
    }
  };
  await Promise.all(Array.from({ length: o.clients }, (_, k) => client(k)));
  const durationMs = Date.now() - t0;

  // Consistency afterwards, once the admitter has decided what the last writes asked for.
  await o.settle?.();
  const inconsistencies: string[] = [];
  const models = (await listAll(admin, '/v1/models')) as any[];
  const have = new Map(models.map((m) => [m.metadata.name as string, m]));
  if (have.size !== models.length) inconsistencies.push('a model is listed twice');
  for (const n of created)
    if (!deleted.has(n) && !ambiguous.deletes.has(n) && !have.has(n))
      inconsistencies.push(`${n} was created (201) but is missing`);
  for (const n of deleted) if (have.has(n)) inconsistencies.push(`${n} was deleted (204) but is still there`);
  for (const m of models) {
    const n = m.metadata.name as string;
    if (n.startsWith('ld-') && n !== 'ld-shared' && !created.has(n) && !ambiguous.creates.has(n))
      inconsistencies.push(`${n} exists but nobody created it`);
  }
  // Each resource's version grew by the writes acknowledged, plus at most the ambiguous ones.
  const within = (v: number, base: number, ok: number, maybe: number) =>
    v >= base + ok && v <= base + ok + maybe;
  const okWrites = {
    model: [...okVersions.model].filter((v) => v > v0.model).length,
    quota: [...okVersions.quota].filter((v) => v > v0.quota).length,
  };
  const shared = have.get('ld-shared');
  if (!within(shared?.metadata.version, v0.model, okWrites.model, ambiguous.model))
    inconsistencies.push(
      `ld-shared is at version ${shared?.metadata.version}, expected ${v0.model} + ${okWrites.model} (+${ambiguous.model} ambiguous)`,
    );
  const quota = (await admin('GET', '/v1/quotas/project:a')).body;
  if (!within(quota.metadata.version, v0.quota, okWrites.quota, ambiguous.quota))
    inconsistencies.push(
      `quota project:a is at version ${quota.metadata.version}, expected ${v0.quota} + ${okWrites.quota} (+${ambiguous.quota} ambiguous)`,
    );
  for (const a of await listAdmissions())
    if (!have.has(a.model)) inconsistencies.push(`admission of ${a.model}, which does not exist`);
  for (const m of models) {
    const target = m.spec.scaling.target ?? m.spec.scaling.min;
    if ((m.status?.admitted ?? 0) > Math.max(target, m.spec.scaling.max))
      inconsistencies.push(`${m.metadata.name}: admitted ${m.status.admitted} over its scaling`);
  }
  const cap = (await admin('GET', '/v1/capacity')).body;
  for (const s of cap.scopes as any[])
    for (const r of ['gpus', 'cores', 'memoryGb'])
      if (s.limit?.[r] !== undefined && s.usage?.[r] > s.limit[r] + 1e-9)
        inconsistencies.push(`${s.scope}: ${r} usage ${s.usage[r]} over limit ${s.limit[r]}`);

  const ops: LoadReport['byOp'] = {};
  for (const [k, v] of Object.entries(byOp)) ops[k] = { n: v.length, p50: pct(v, 50), p99: pct(v, 99) };
  return {
    clients: o.clients,
    seconds: o.seconds,
    requests: lat.length,
    throughputPerSecond: Math.round((lat.length / durationMs) * 10000) / 10,
    byStatus,
    expected409,
    errors,
    errorCount,
    latencyMs: { p50: pct(lat, 50), p90: pct(lat, 90), p99: pct(lat, 99), max: pct(lat, 100) },
    byOp: ops,
    inconsistencies,
    ambiguousWrites: ambiguous.creates.size + ambiguous.deletes.size + ambiguous.model + ambiguous.quota,
    durationMs,
  };
}
