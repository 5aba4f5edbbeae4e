import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, testControlPlane } from '../../helpers/control-plane';
import { decided } from '../../helpers/passes';
import { roleArn } from '../../helpers/principals';

/**
 * Issue 17 §1 through the API and a reconcile pass: two tenants side by side (team:a and team:b, each under
 * its own org). team:b owns the cheapest L4 compute and the only A100 one; team:a's models may use neither,
 * and to team:a's admin every refusal reads exactly as if team:b's compute or model did not exist. A platform
 * admin, who sees both, is told what is true: whose it is, whose reach it is outside, and what to do.
 */

const A_ADMIN = roleArn('team-a-admin');

let cp: ControlPlane;
beforeAll(async () => {
  cp = await testControlPlane('tenants');
  for (const [name, parent] of [
    ['org:alpha'],
    ['team:a', 'org:alpha'],
    ['org:beta'],
    ['team:b', 'org:beta'],
  ] as const) {
    expect((await call('POST', '/v1/scopes', { name, ...(parent ? { parent } : {}) })).status).toBe(201);
  }
  const grant = await call('PUT', `/v1/scopes/team:a/members/${encodeURIComponent(A_ADMIN)}`, {
    role: 'admin',
  });
  expect(grant.status).toBe(200);
  // Cheaper per replica than the L4 built-in, so placement would prefer it if it were allowed to.
  const cheap = (await call('GET', '/v1/computes/gpu-l4-1x')).body;
  expect(
    (
      await call('POST', '/v1/computes', {
        apiVersion: 'llmcap/v1',
        kind: 'Compute',
        metadata: { name: 'b-l4', owner: 'team:b' },
        spec: { ...cheap.spec, cost: { perHour: 0.01 } },
      })
    ).status,
  ).toBe(201);
  expect((await call('POST', '/v1/models', model('b-model', 'team:b', { gpuType: 'L4' }))).status).toBe(201);
});
afterAll(() => cp.stop());

/** As the local admin, a platform admin. */
const call = (method: string, path: string, body?: unknown) => httpApi(cp)(method, path, body);

/** As team:a's admin, who cannot see team:b's computes and models. */
async function asA(method: string, path: string, body?: unknown) {
  const r = await fetch(`${cp.apiUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-llmcap-principal': A_ADMIN },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text ? (JSON.parse(text) as any) : undefined };
}

function model(
  name: string,
  owner: string,
  profile: { gpuType?: string; compute?: string } = {},
  opts: { min?: number; fallback?: string } = {},
) {
  return {
    apiVersion: 'llmcap/v1',
    kind: 'Model',
    metadata: { name, ...(owner ? { owner } : {}) },
    spec: {
      source: `hf://org/${name}`,
      engine: 'vllm',
      profiles: [{ name: 'gpu', gpus: 1, cpuCores: 4, minMemoryGb: 16, ...profile }],
      scaling: { min: opts.min ?? 0, max: Math.max(opts.min ?? 0, 1) },
      ...(opts.fallback ? { fallback: opts.fallback } : {}),
    },
  };
}

/** The refusal with `name` replaced, so two refusals can be compared word for word. */
const refusal = (r: { status: number; body: any }, name: string) => ({
  status: r.status,
  body: JSON.parse(JSON.stringify(r.body).replaceAll(name, '<name>')),
});

describe("a tenant's compute is its own", () => {
  it("refuses a pin to another tenant's compute exactly as a pin to one that does not exist", async () => {
    const other = await asA(
      'POST',
      '/v1/models',
      model('a-pin', 'team:a', { gpuType: 'L4', compute: 'b-l4' }),
    );
    const none = await asA(
      'POST',
      '/v1/models',
      model('a-pin', 'team:a', { gpuType: 'L4', compute: 'nope-l4' }),
    );
    expect(other.status).toBe(409);
    expect(refusal(other, 'b-l4')).toEqual(refusal(none, 'nope-l4'));
    expect((await call('GET', '/v1/models/a-pin')).status).toBe(404);
  });

  it("refuses a fallback to another tenant's model exactly as a fallback to one not in the catalog", async () => {
    const other = await asA('POST', '/v1/models', model('a-fb', 'team:a', {}, { fallback: 'b-model' }));
    const none = await asA('POST', '/v1/models', model('a-fb', 'team:a', {}, { fallback: 'no-model' }));
    expect(other.status).toBe(409);
    expect(refusal(other, 'b-model')).toEqual(refusal(none, 'no-model'));
  });

  it("tells a platform admin, who sees both tenants, that the pin or fallback is out of the owner's reach", async () => {
    const pin = await call(
      'POST',
      '/v1/models',
      model('a-pin', 'team:a', { gpuType: 'L4', compute: 'b-l4' }),
    );
    expect(pin.status).toBe(409);
    expect(pin.body.detail).toBe(
      'model a-pin: profile gpu pins compute b-l4, which is owned by scope team:b, outside the reach of its owner team:a (a model uses only shared computes and models and those of its owner or a scope above it); share it or give it to team:a or a scope above, give a-pin an owner at or beneath team:b, pin another compute, or drop the pin',
    );
    const fb = await call('POST', '/v1/models', model('a-fb', 'team:a', {}, { fallback: 'b-model' }));
    expect(fb.status).toBe(409);
    expect(fb.body.errors).toEqual([
      {
        path: 'spec.fallback',
        message:
          'model a-fb: fallback b-model is owned by scope team:b, outside the reach of its owner team:a (a model uses only shared computes and models and those of its owner or a scope above it); share it or give it to team:a or a scope above, give a-fb an owner at or beneath team:b, or drop the fallback',
      },
    ]);
    // Giving a model that a shared model falls back on to one tenant: the shared model's fallback leaves its reach.
    expect((await call('POST', '/v1/models', model('s-small', '', {}))).status).toBe(201);
    expect((await call('POST', '/v1/models', model('s-chat', '', {}, { fallback: 's-small' }))).status).toBe(
      201,
    );
    const given = await call('PUT', '/v1/models/s-small/owner', { owner: 'team:b' });
    expect(given.status).toBe(409);
    expect(given.body.detail).toBe(
      'model s-chat: fallback s-small is owned by scope team:b, outside the reach of a shared model (a shared model uses only shared computes and models); share it, give s-chat an owner at or beneath team:b, or drop the fallback',
    );
    expect((await call('GET', '/v1/models/s-small')).body.metadata.owner).toBeFalsy();
  });

  it("refuses a GPU type only another tenant's compute has, as if no compute had it", async () => {
    const before = await call('POST', '/v1/models', model('a-a100', 'team:a', { gpuType: 'A100' }));
    expect(before.status).toBe(409);
    // team:b gets the only A100s (p4d.24xlarge: 96 vCPUs, 1152 GiB, 8 × A100 40 GB, us-east-1 on demand).
    const base = (await call('GET', '/v1/computes/gpu-h100-8x')).body.spec;
    const a100 = {
      ...base,
      node: {
        ...base.node,
        instanceType: 'p4d.24xlarge',
        cpu: 96,
        memoryGb: 1152,
        gpu: { type: 'A100', count: 8, memoryGb: 40 },
      },
      cost: { perHour: 32.7726 },
    };
    const created = await call('POST', '/v1/computes', {
      apiVersion: 'llmcap/v1',
      kind: 'Compute',
      metadata: { name: 'b-a100', owner: 'team:b' },
      spec: a100,
    });
    expect(created.status).toBe(201);
    const after = await call('POST', '/v1/models', model('a-a100', 'team:a', { gpuType: 'A100' }));
    expect(after).toEqual(before);
    expect(JSON.stringify(after.body)).not.toContain('b-a100');
    expect((await call('POST', '/v1/models', model('b-a100', 'team:b', { gpuType: 'A100' }))).status).toBe(
      201,
    );
  });

  it("admission and reconcile place an unpinned replica on the platform's compute, never on team:b's cheaper one", async () => {
    const r = await call('POST', '/v1/models', model('a-chat', 'team:a', { gpuType: 'L4' }, { min: 1 }));
    expect(r.status).toBe(201);
    const admitted = await decided(() => call('GET', '/v1/models/a-chat'));
    expect(admitted.body.status.placements).toEqual([{ compute: 'gpu-l4-1x', profile: 'gpu', replicas: 1 }]);
    await cp.reconcile();
    expect((await call('GET', '/v1/models/a-chat')).body.status.placements).toEqual([
      { compute: 'gpu-l4-1x', profile: 'gpu', replicas: 1 },
    ]);
    expect((await call('GET', '/v1/computes/b-l4')).body.status.neededNodes ?? 0).toBe(0);
    // team:b's own model does go to its cheap compute.
    expect((await call('PUT', '/v1/models/b-model/scaling', { min: 1, max: 1 })).status).toBe(200);
    expect((await decided(() => call('GET', '/v1/models/b-model'))).body.status.placements).toEqual([
      { compute: 'b-l4', profile: 'gpu', replicas: 1 },
    ]);
  });
});
