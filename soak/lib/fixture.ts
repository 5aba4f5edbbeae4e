import type { JsonClient } from './invoke';

/**
 * The tenancy every hardening suite starts from: org:acme → team:ml → project:a, with a team admin, a project
 * editor and viewer, a stranger, and a platform admin (the one LLMCAP_ADMINS names).
 */
export const P = {
  platform: 'arn:aws:iam::111111111111:role/platform-admin',
  teamAdmin: 'arn:aws:iam::111111111111:role/ml-lead',
  editor: 'arn:aws:iam::111111111111:role/a-dev',
  viewer: 'arn:aws:iam::111111111111:role/a-reader',
  stranger: 'arn:aws:iam::222222222222:role/stranger',
} as const;
export type PrincipalKey = keyof typeof P;
export const PRINCIPALS = Object.keys(P) as PrincipalKey[];

export function expectOk(what: string, r: { status: number; body?: unknown }, ...ok: number[]): void {
  if (!ok.includes(r.status)) {
    throw new Error(`${what}: expected ${ok.join('/')}, got ${r.status} ${JSON.stringify(r.body)}`);
  }
}

export const enc = encodeURIComponent;

type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; body?: unknown }>;

/** Creates scopes (parents first) and grants roles in them, failing loudly on any refusal. */
export async function createTenancy(
  call: Call,
  scopes: readonly (readonly [name: string, parent?: string])[],
  members: readonly (readonly [scope: string, principal: string, role: string])[] = [],
): Promise<void> {
  for (const [name, parent] of scopes)
    expectOk(
      `create ${name}`,
      await call('POST', '/v1/scopes', { name, ...(parent ? { parent } : {}) }),
      201,
    );
  for (const [scope, who, role] of members)
    expectOk(
      `${role} ${who} in ${scope}`,
      await call('PUT', `/v1/scopes/${enc(scope)}/members/${enc(who)}`, { role }),
      200,
    );
}

/** A model on the L4 built-in (or a pinned compute); min 0 unless told, so it fits any quota. */
export function l4Model(name: string, owner: string | undefined, replicas = 0, compute?: string) {
  return {
    apiVersion: 'llmcap/v1',
    kind: 'Model',
    metadata: { name, ...(owner ? { owner } : {}) },
    spec: {
      source: `hf://org/${name}`,
      engine: 'vllm',
      profiles: [
        {
          name: 'l4',
          gpus: 1,
          gpuType: 'L4',
          cpuCores: 4,
          minMemoryGb: 16,
          ...(compute ? { compute } : {}),
        },
      ],
      scaling: { min: replicas, max: Math.max(replicas, 1) },
    },
  };
}

export function l4Compute(name: string, owner?: string, maxNodes = 4) {
  return {
    apiVersion: 'llmcap/v1',
    kind: 'Compute',
    metadata: { name, ...(owner ? { owner } : {}) },
    spec: {
      node: {
        instanceType: 'g6.2xlarge',
        cpu: 8,
        memoryGb: 32,
        gpu: { type: 'L4', count: 1, memoryGb: 24 },
      },
      nodeGroup: { maxNodes },
      cost: { perHour: 0.9776 },
    },
  };
}

/** Creates the tree, its members and quotas as the platform admin. */
export async function setupTenancy(admin: JsonClient): Promise<void> {
  for (const [name, parent] of [
    ['org:acme', undefined],
    ['team:ml', 'org:acme'],
    ['project:a', 'team:ml'],
  ] as const) {
    expectOk(
      `create ${name}`,
      await admin('POST', '/v1/scopes', { name, ...(parent ? { parent } : {}) }),
      201,
    );
  }
  for (const [scope, who, role] of [
    ['team:ml', P.teamAdmin, 'admin'],
    ['project:a', P.editor, 'editor'],
    ['project:a', P.viewer, 'viewer'],
  ] as const) {
    expectOk(
      `member ${who} in ${scope}`,
      await admin('PUT', `/v1/scopes/${enc(scope)}/members/${enc(who)}`, { role }),
      200,
    );
  }
  expectOk(
    'quota org:acme',
    await admin('PUT', '/v1/quotas/org:acme', { guarantee: { gpus: 32 }, limit: { gpus: 64 } }),
    200,
  );
  expectOk(
    'quota team:ml',
    await admin('PUT', '/v1/quotas/team:ml', { guarantee: { gpus: 24 }, limit: { gpus: 48 } }),
    200,
  );
  expectOk(
    'quota project:a',
    await admin('PUT', '/v1/quotas/project:a', { guarantee: { gpus: 2 }, limit: { gpus: 8 } }),
    200,
  );
}
