import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, testControlPlane } from '../../helpers/control-plane';

/**
 * Issue 17 §1 through the API and a reconcile pass: two tenants side by side (team:a and team:b, each under
 * its own org). team:b owns the cheapest L4 compute and the only A100 one; team:a's models may use neither,
 * and every refusal reads exactly as if team:b's compute or model did not exist.
 */

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

const call = (method: string, path: string, body?: unknown) => httpApi(cp)(method, path, body);

function model(
  name: string,
  owner: string,
  profile: { gpuType?: string; compute?: string } = {},
  opts: { min?: number; fallback?: string } = {},
) {
  return {
    apiVersion: 'llmcap/v1',
    kind: 'Model',
    metadata: { name, owner },
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
    const other = await call(
      'POST',
      '/v1/models',
      model('a-pin', 'team:a', { gpuType: 'L4', compute: 'b-l4' }),
    );
    const none = await call(
      'POST',
      '/v1/models',
      model('a-pin', 'team:a', { gpuType: 'L4', compute: 'nope-l4' }),
    );
    expect(other.status).toBe(409);
    expect(refusal(other, 'b-l4')).toEqual(refusal(none, 'nope-l4'));
    expect((await call('GET', '/v1/models/a-pin')).status).toBe(404);
  });

  it("refuses a fallback to another tenant's model exactly as a fallback to one not in the catalog", async () => {
    const other = await call('POST', '/v1/models', model('a-fb', 'team:a', {}, { fallback: 'b-model' }));
    const none = await call('POST', '/v1/models', model('a-fb', 'team:a', {}, { fallback: 'no-model' }));
    expect(other.status).toBe(409);
    expect(refusal(other, 'b-model')).toEqual(refusal(none, 'no-model'));
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
    expect(r.body.status.placements).toEqual([{ compute: 'gpu-l4-1x', profile: 'gpu', replicas: 1 }]);
    await cp.reconcile();
    expect((await call('GET', '/v1/models/a-chat')).body.status.placements).toEqual([
      { compute: 'gpu-l4-1x', profile: 'gpu', replicas: 1 },
    ]);
    expect((await call('GET', '/v1/computes/b-l4')).body.status.neededNodes ?? 0).toBe(0);
    // team:b's own model does go to its cheap compute.
    expect((await call('PUT', '/v1/models/b-model/scaling', { min: 1, max: 1 })).status).toBe(200);
    expect((await call('GET', '/v1/models/b-model')).body.status.placements).toEqual([
      { compute: 'b-l4', profile: 'gpu', replicas: 1 },
    ]);
  });
});
