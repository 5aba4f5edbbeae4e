import { type Handler, problem, stubServer } from './run';

/**
 * A stand-in for the routes docs/design.md §4 defines but the local control plane does not serve yet (scopes,
 * quotas, capacity), answering as the contract says, so the CLI verbs can be tested now. Once
 * the real routes land, these tests should move to the control plane (control-plane.test.ts).
 */

const SCOPE = /^(org|team|project):[a-z0-9][a-z0-9-]*$/;
const ROLES = ['admin', 'editor', 'viewer'];

interface ScopeRec {
  name: string;
  parent?: string;
  members: Record<string, string>;
  version: number;
}

interface QuotaRec {
  guarantee: Record<string, number>;
  limit?: Record<string, number>;
  version: number;
}

const scopeManifest = (s: ScopeRec) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Scope',
  metadata: { name: s.name, version: s.version },
  spec: {
    ...(s.parent ? { parent: s.parent } : {}),
    members: Object.entries(s.members).map(([principal, role]) => ({ principal, role })),
  },
});

const quotaManifest = (scope: string, q: QuotaRec) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Quota',
  metadata: { name: scope, version: q.version },
  spec: { guarantee: q.guarantee, ...(q.limit ? { limit: q.limit } : {}) },
});

/** What GET /v1/capacity answers: one scope over its guarantee with replicas waiting, the cluster headroom. */
export const CAPACITY = {
  items: [
    {
      scope: 'org:acme',
      hasQuota: true,
      guarantee: { gpus: 16, cores: 128, memoryGb: 1024 },
      limit: { gpus: 24 },
      usage: { gpus: 12, cores: 96, memoryGb: 512 },
      borrowed: { gpus: 0, cores: 0, memoryGb: 0 },
      atLimit: false,
      pending: {},
    },
    {
      scope: 'team:ml',
      parent: 'org:acme',
      hasQuota: true,
      guarantee: { gpus: 8, cores: 64, memoryGb: 512 },
      limit: { gpus: 12 },
      usage: { gpus: 12, cores: 80, memoryGb: 400 },
      borrowed: { gpus: 4, cores: 16, memoryGb: 0 },
      atLimit: true,
      pending: { InsufficientQuota: 2 },
    },
    {
      scope: 'team:search',
      parent: 'org:acme',
      hasQuota: false,
      guarantee: { gpus: 0, cores: 0, memoryGb: 0 },
      limit: {},
      usage: { gpus: 0, cores: 16, memoryGb: 112 },
      borrowed: { gpus: 0, cores: 16, memoryGb: 112 },
      atLimit: false,
      pending: { Headroom: 1 },
    },
  ],
  cluster: {
    computes: [
      { compute: 'gpu-l40s-4x', nodes: 1, maxNodes: 1, free: { gpus: 0, cores: 8, memoryGb: 64 } },
      { compute: 'gpu-l4-1x', nodes: 2, maxNodes: 4, free: { gpus: 2, cores: 14, memoryGb: 58 } },
    ],
  },
};

export const MODELS = {
  items: [
    {
      apiVersion: 'llmcap/v1',
      kind: 'Model',
      metadata: { name: 'llama-70b', owner: 'team:ml', version: 1 },
      spec: { scaling: { min: 1, max: 4, target: 3 }, profiles: [{ name: 'l40sx4' }], engine: 'vllm' },
      status: {
        admitted: 1,
        pending: 2,
        reasons: [
          {
            reason: 'InsufficientQuota',
            message: 'team:ml is at its limit of 12 gpus; 8 more needed',
            replicas: 2,
          },
        ],
      },
    },
    {
      apiVersion: 'llmcap/v1',
      kind: 'Model',
      metadata: { name: 'embedder', owner: 'team:search', version: 1 },
      spec: { scaling: { min: 2, max: 2 }, profiles: [{ name: 'cpu' }], engine: 'llamacpp' },
      status: {
        admitted: 1,
        pending: 1,
        reasons: [
          {
            reason: 'Headroom',
            message: 'no compute can take the replica: cpu-small is at its maxNodes 4',
            replicas: 1,
          },
        ],
      },
    },
  ],
};

export async function startContractStub() {
  const scopes = new Map<string, ScopeRec>();
  const quotas = new Map<string, QuotaRec>();
  const resources = new Map<string, any>();
  const handler: Handler = (req) => {
    const url = new URL(req.path, 'http://stub');
    const parts = url.pathname.split('/').slice(2).map(decodeURIComponent);
    const [coll, name, sub, member] = parts;
    const m = req.method;
    if (coll === 'scopes') {
      if (!name && m === 'GET')
        return { status: 200, body: { items: [...scopes.values()].map(scopeManifest) } };
      if (!name && m === 'POST') {
        const errors = [];
        if (typeof req.body?.name !== 'string' || !SCOPE.test(req.body.name)) {
          errors.push({ path: 'name', message: 'a scope is org:<id>, team:<id> or project:<id>' });
        }
        if (req.body?.parent !== undefined && !SCOPE.test(req.body.parent)) {
          errors.push({ path: 'parent', message: 'a scope is org:<id>, team:<id> or project:<id>' });
        }
        if (errors.length)
          return problem(400, `the request has ${errors.length} invalid field(s)`, { errors });
        if (scopes.has(req.body.name)) {
          return problem(409, `scope ${req.body.name} already exists`, { reason: 'AlreadyExists' });
        }
        if (req.body.parent && !scopes.has(req.body.parent)) {
          return problem(409, `parent ${req.body.parent} does not exist; create it first`, {
            reason: 'UnknownParent',
          });
        }
        const s = { name: req.body.name, parent: req.body.parent, members: {}, version: 1 };
        scopes.set(s.name, s);
        return { status: 201, body: scopeManifest(s) };
      }
      const s = name ? scopes.get(name) : undefined;
      if (!s) return problem(404, `scope ${name} does not exist`);
      if (!sub && m === 'GET') return { status: 200, body: scopeManifest(s) };
      if (!sub && m === 'DELETE') {
        scopes.delete(s.name);
        return { status: 204 };
      }
      if (sub === 'members' && member && m === 'PUT') {
        if (!ROLES.includes(req.body?.role)) {
          return problem(400, 'the request has 1 invalid field(s)', {
            errors: [{ path: 'role', message: `must be one of ${ROLES.join(', ')}` }],
          });
        }
        s.members[member] = req.body.role;
        s.version++;
        return { status: 200, body: scopeManifest(s) };
      }
      // All the members at once, as a scope manifest applies them; an unchanged set keeps the version.
      if (sub === 'members' && !member && m === 'PUT') {
        const ifMatch = req.headers['if-match'];
        if (ifMatch && ifMatch !== `"${s.version}"`) {
          return problem(409, `scope ${s.name} is at version ${s.version}, not ${ifMatch}`, {
            reason: 'VersionMismatch',
          });
        }
        const next = req.body?.members ?? {};
        if (JSON.stringify(next) !== JSON.stringify(s.members)) {
          s.members = { ...next };
          s.version++;
        }
        return { status: 200, body: scopeManifest(s) };
      }
      if (sub === 'members' && member && m === 'DELETE') {
        if (!(member in s.members)) return problem(404, `${member} is not a member of ${s.name}`);
        delete s.members[member];
        return { status: 204 };
      }
    }
    if (coll === 'quotas') {
      if (!name && m === 'GET') {
        return { status: 200, body: { items: [...quotas].map(([k, q]) => quotaManifest(k, q)) } };
      }
      const q = name ? quotas.get(name) : undefined;
      if (name && m === 'GET')
        return q ? { status: 200, body: quotaManifest(name, q) } : problem(404, `${name} has no quota`);
      if (name && m === 'DELETE') {
        if (!q) return problem(404, `${name} has no quota`);
        quotas.delete(name);
        return { status: 204 };
      }
      if (name && m === 'PUT') {
        const g = req.body?.guarantee;
        if (!g || typeof g !== 'object') {
          return problem(400, 'the request has 1 invalid field(s)', {
            errors: [{ path: 'guarantee', message: 'Invalid input: expected object, received undefined' }],
          });
        }
        const ifMatch = req.headers['if-match'];
        if (ifMatch && q && ifMatch !== `"${q.version}"`) {
          return problem(409, `quota of ${name} is at version ${q.version}, not ${ifMatch}`, {
            reason: 'VersionMismatch',
          });
        }
        const l = req.body.limit ?? {};
        const errors = Object.entries(l)
          .filter(([k, v]) => typeof g[k] === 'number' && (v as number) < g[k])
          .map(([k]) => ({ path: `limit.${k}`, message: `below the guarantee of ${g[k]}` }));
        // As the API answers it: a limit below its own guarantee is the body's own fault, a 400.
        if (errors.length) return problem(400, `${name}: a limit is at least the guarantee`, { errors });
        const spec = { guarantee: g, ...(req.body.limit ? { limit: req.body.limit } : {}) };
        // What is stored already: nothing written, the version stays (apply is declarative).
        if (
          q &&
          JSON.stringify({ guarantee: q.guarantee, ...(q.limit ? { limit: q.limit } : {}) }) ===
            JSON.stringify(spec)
        )
          return { status: 200, body: quotaManifest(name, q) };
        const next = { ...spec, version: (q?.version ?? 0) + 1 };
        quotas.set(name, next);
        return { status: q ? 200 : 201, body: quotaManifest(name, next) };
      }
    }
    if ((coll === 'computes' || coll === 'models') && name && !sub) {
      const key = `${coll}/${name}`;
      if (m === 'GET')
        return resources.has(key)
          ? { status: 200, body: resources.get(key) }
          : problem(404, `${name} does not exist`);
      if (m === 'PUT') {
        const existed = resources.has(key);
        resources.set(key, req.body);
        return { status: existed ? 200 : 201, body: req.body };
      }
    }
    if (coll === 'models' && !name && m === 'GET') return { status: 200, body: MODELS };
    if (coll === 'capacity' && m === 'GET') {
      if (name === 'team:broken') return problem(500, 'an unexpected error occurred');
      if (!name) return { status: 200, body: CAPACITY };
      const items = CAPACITY.items.filter((i) => i.scope === name || i.parent === name);
      return items.length ? { status: 200, body: { items } } : problem(404, `scope ${name} does not exist`);
    }
    return problem(404, `no route ${m} ${url.pathname}`);
  };
  return { ...(await stubServer(handler)), scopes, quotas };
}
