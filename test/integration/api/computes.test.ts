import { ADMIN_SESSION, type TestApi, testApi } from '../../helpers/api';
import { dumpTable, setNodegroupStatus } from '../../helpers/dump';

const manifest = (
  name: string,
  over: Record<string, unknown> = {},
  metadata: Record<string, unknown> = {},
) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Compute',
  metadata: { name, ...metadata },
  spec: {
    node: { instanceType: 'g6.2xlarge', cpu: 8, memoryGb: 32, gpu: { type: 'L4', count: 1, memoryGb: 24 } },
    nodeGroup: { maxNodes: 3 },
    cost: { perHour: 0.9776 },
    ...over,
  },
});

let api: TestApi;
beforeAll(async () => {
  api = await testApi();
});

describe('built-in computes', () => {
  it('lists the seven built-ins with their derived fields', async () => {
    const r = await api.call('GET', '/v1/computes');
    expect(r.status).toBe(200);
    const builtins = r.body.items.filter((c: any) => c.metadata.builtin);
    expect(builtins.map((c: any) => c.metadata.name).sort()).toEqual([
      'cpu-medium',
      'cpu-small',
      'gpu-a10g-1x',
      'gpu-h100-8x',
      'gpu-l4-1x',
      'gpu-l40s-1x',
      'gpu-l40s-4x',
    ]);
    const l4 = builtins.find((c: any) => c.metadata.name === 'gpu-l4-1x');
    expect(l4.status).toMatchObject({
      nodegroupStatus: 'ABSENT',
      nodegroupName: 'llmcap-test-gpu-l4-1x',
      taint: 'nvidia.com/gpu=true:NO_SCHEDULE',
      allocatable: { millicores: 7910, memoryMiB: 31203, gpus: 1 },
      allocatableSource: 'formula',
    });
  });

  it('are visible to anyone but changed only by platform admins', async () => {
    const someone = api.as('arn:aws:iam::111111111111:role/someone');
    expect((await someone.call('GET', '/v1/computes/cpu-small')).status).toBe(200);
    const cur = (await api.call('GET', '/v1/computes/cpu-small')).body;
    const put = await someone.call('PUT', '/v1/computes/cpu-small', {
      ...cur,
      spec: { ...cur.spec, nodeGroup: { maxNodes: 2 } },
    });
    expect(put.status).toBe(403);
    expect(put.headers['content-type']).toBe('application/problem+json');
    const byAdmin = await api.call('PUT', '/v1/computes/cpu-small', {
      ...cur,
      spec: { ...cur.spec, nodeGroup: { maxNodes: 2 } },
    });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body.spec.nodeGroup.maxNodes).toBe(2);
    expect(byAdmin.body.metadata.updatedBy).toBe(ADMIN_SESSION);
  });
});

describe('create, apply, clone, rename, delete', () => {
  it('creates a compute with defaults and refuses a second create with 409', async () => {
    const r = await api.call('POST', '/v1/computes', manifest('l4-a'));
    expect(r.status).toBe(201);
    expect(r.headers.etag).toBe('"1"');
    expect(r.body.spec.node.diskSizeGb).toBe(100);
    expect(r.body.metadata).toMatchObject({ version: 1, createdBy: ADMIN_SESSION });
    const again = await api.call('POST', '/v1/computes', manifest('l4-a'));
    expect(again.status).toBe(409);
    expect(again.body.reason).toBe('AlreadyExists');
  });

  it('applies with PUT (create, then replace) and bumps the version', async () => {
    expect((await api.call('PUT', '/v1/computes/l4-b', manifest('l4-b'))).status).toBe(201);
    const r = await api.call('PUT', '/v1/computes/l4-b', manifest('l4-b', { nodeGroup: { maxNodes: 5 } }));
    expect(r.status).toBe(200);
    expect(r.body.metadata.version).toBe(2);
    expect(r.body.spec.nodeGroup.maxNodes).toBe(5);
  });

  it('refuses a stale If-Match with 409 and writes nothing', async () => {
    await api.call('PUT', '/v1/computes/l4-c', manifest('l4-c'));
    await api.call('PUT', '/v1/computes/l4-c', manifest('l4-c', { nodeGroup: { maxNodes: 2 } }));
    const before = await dumpTable();
    const r = await api.call('PUT', '/v1/computes/l4-c', manifest('l4-c', { nodeGroup: { maxNodes: 9 } }), {
      headers: { 'if-match': '"1"' },
    });
    expect(r.status).toBe(409);
    expect(r.body.reason).toBe('VersionMismatch');
    expect(await dumpTable()).toEqual(before);
    const ok = await api.call('PUT', '/v1/computes/l4-c', manifest('l4-c', { nodeGroup: { maxNodes: 9 } }), {
      headers: { 'if-match': '"2"' },
    });
    expect(ok.status).toBe(200);
  });

  it('freezes node.* and subnetIds while the node group exists, but lets maxNodes and cost change', async () => {
    await api.call('POST', '/v1/computes', manifest('l4-d'));
    await setNodegroupStatus('l4-d', 'ACTIVE');
    const before = await dumpTable();
    const bigger = manifest('l4-d', {
      node: {
        instanceType: 'g6.4xlarge',
        cpu: 16,
        memoryGb: 64,
        gpu: { type: 'L4', count: 1, memoryGb: 24 },
      },
    });
    const r = await api.call('PUT', '/v1/computes/l4-d', bigger);
    expect(r.status).toBe(409);
    expect(r.body.reason).toBe('NodegroupExists');
    expect(r.body.errors.map((e: any) => e.path)).toEqual(
      expect.arrayContaining(['spec.node.instanceType', 'spec.node.cpu', 'spec.node.memoryGb']),
    );
    expect(await dumpTable()).toEqual(before);
    const ok = await api.call(
      'PUT',
      '/v1/computes/l4-d',
      manifest('l4-d', { nodeGroup: { maxNodes: 4 }, cost: { perHour: 0.8 } }),
    );
    expect(ok.status).toBe(200);
    expect(ok.body.status.nodegroupStatus).toBe('ACTIVE');
  });

  it('clones the spec only, never the node group or its status', async () => {
    await api.call('POST', '/v1/computes', manifest('l4-e'));
    await setNodegroupStatus('l4-e', 'ACTIVE');
    const r = await api.call('POST', '/v1/computes/l4-e/clone', { name: 'l4-e2' });
    expect(r.status).toBe(201);
    expect(r.body.status.nodegroupStatus).toBe('ABSENT');
    expect(r.body.spec.node.instanceType).toBe('g6.2xlarge');
    const builtinClone = await api.call('POST', '/v1/computes/gpu-h100-8x/clone', { name: 'h100-mine' });
    expect(builtinClone.status).toBe(201);
    expect(builtinClone.body.metadata.builtin).toBe(false);
  });

  it('renames a compute without a node group, and refuses while one exists', async () => {
    await api.call('POST', '/v1/computes', manifest('l4-f'));
    const r = await api.call('POST', '/v1/computes/l4-f/rename', { name: 'l4-g' });
    expect(r.status).toBe(201);
    expect((await api.call('GET', '/v1/computes/l4-f')).status).toBe(404);
    expect((await api.call('GET', '/v1/computes/l4-g')).body.metadata.name).toBe('l4-g');
    await setNodegroupStatus('l4-g', 'CREATING');
    const refused = await api.call('POST', '/v1/computes/l4-g/rename', { name: 'l4-h' });
    expect(refused.status).toBe(409);
    expect(refused.body.reason).toBe('NodegroupExists');
    expect(refused.body.detail).toMatch(/clone it under l4-h instead/);
  });

  it('refuses a rename onto an existing name and a rename of a built-in', async () => {
    await api.call('POST', '/v1/computes', manifest('l4-i'));
    expect((await api.call('POST', '/v1/computes/l4-i/rename', { name: 'cpu-small' })).body.reason).toBe(
      'AlreadyExists',
    );
    expect((await api.call('POST', '/v1/computes/cpu-small/rename', { name: 'cpu-s' })).body.reason).toBe(
      'BuiltIn',
    );
  });

  it('deletes a compute with no node group (204) and marks one with a node group for deletion (202)', async () => {
    await api.call('POST', '/v1/computes', manifest('l4-j'));
    expect((await api.call('DELETE', '/v1/computes/l4-j')).status).toBe(204);
    expect((await api.call('GET', '/v1/computes/l4-j')).status).toBe(404);
    await api.call('POST', '/v1/computes', manifest('l4-k'));
    await setNodegroupStatus('l4-k', 'ACTIVE');
    const r = await api.call('DELETE', '/v1/computes/l4-k');
    expect(r.status).toBe(202);
    expect(r.body.status.deletionRequested).toBe(true);
  });

  it('gives each compute an id it keeps on every change, and a new one on rename or when created again', async () => {
    const created = (await api.call('POST', '/v1/computes', manifest('l4-id'))).body;
    expect(created.metadata.uid).toMatch(/^[0-9a-hjkmnp-tv-z]{12}$/);
    // A manifest read back, id included, can be applied again; the id is not the caller's to change.
    const put = await api.call('PUT', '/v1/computes/l4-id', {
      ...created,
      spec: { ...created.spec, nodeGroup: { maxNodes: 4 } },
    });
    expect(put.status).toBe(200);
    expect(put.body.metadata.uid).toBe(created.metadata.uid);
    const renamed = (await api.call('POST', '/v1/computes/l4-id/rename', { name: 'l4-id2' })).body;
    expect(renamed.metadata.uid).not.toBe(created.metadata.uid);
    expect((await api.call('DELETE', '/v1/computes/l4-id2')).status).toBe(204);
    const again = (await api.call('POST', '/v1/computes', manifest('l4-id2'))).body;
    expect(again.metadata.uid).not.toBe(renamed.metadata.uid);
  });

  it("treats a compute whose name is held by someone else's group (FOREIGN) as having no group of its own", async () => {
    await api.call('POST', '/v1/computes', manifest('l4-f1'));
    await setNodegroupStatus('l4-f1', 'FOREIGN');
    // Its hardware can change (no group of its own exists), and it can be renamed out of the way.
    const changed = await api.call(
      'PUT',
      '/v1/computes/l4-f1',
      manifest('l4-f1', {
        node: {
          instanceType: 'g6.4xlarge',
          cpu: 16,
          memoryGb: 64,
          gpu: { type: 'L4', count: 1, memoryGb: 24 },
        },
      }),
    );
    expect(changed.status).toBe(200);
    const renamed = await api.call('POST', '/v1/computes/l4-f1/rename', { name: 'l4-f2' });
    expect(renamed.status).toBe(201);
    // And deleting it removes the item at once: the other group is not llmcap's to delete.
    await setNodegroupStatus('l4-f2', 'FOREIGN');
    expect((await api.call('DELETE', '/v1/computes/l4-f2')).status).toBe(204);
    expect((await api.call('GET', '/v1/computes/l4-f2')).status).toBe(404);
  });

  it('refuses to delete or rename a compute that models use', async () => {
    await api.call('POST', '/v1/computes', manifest('l4-l'));
    // A model that pins the compute in one of its profiles.
    const pinned = await api.call('POST', '/v1/models', {
      apiVersion: 'llmcap/v1',
      kind: 'Model',
      metadata: { name: 'pins-l4-l' },
      spec: {
        source: 'hf://mistralai/Mistral-7B-Instruct-v0.3',
        engine: 'vllm',
        profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 20, compute: 'l4-l' }],
        scaling: { min: 0, max: 1 },
      },
    });
    expect(pinned.status).toBe(201);
    const before = await dumpTable();
    const del = await api.call('DELETE', '/v1/computes/l4-l');
    expect(del.status).toBe(409);
    expect(del.body.detail).toMatch(/used by model\(s\) pins-l4-l/);
    expect((await api.call('POST', '/v1/computes/l4-l/rename', { name: 'l4-m' })).status).toBe(409);
    expect(await dumpTable()).toEqual(before);
  });
});

describe('bad input', () => {
  it('answers malformed JSON with 400 problem+json and writes nothing', async () => {
    const before = await dumpTable();
    const r = await api.call('POST', '/v1/computes', undefined, { raw: '{"apiVersion": "llmcap/v1",' });
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.body.detail).toMatch(/not valid JSON/);
    expect(await dumpTable()).toEqual(before);
  });

  it('lists every invalid field: unknown fields, wrong types, out-of-range values', async () => {
    const before = await dumpTable();
    const bad = manifest('bad', { nodeGroup: { maxNodes: 0, color: 'red' }, cost: { perHour: 'cheap' } });
    (bad.spec as any).node.gpu.count = 17;
    const r = await api.call('POST', '/v1/computes', bad);
    expect(r.status).toBe(400);
    expect(r.body.errors).toEqual(
      expect.arrayContaining([
        { path: 'spec.node.gpu.count', message: expect.stringMatching(/16/) },
        { path: 'spec.nodeGroup', message: "unknown field(s) 'color'" },
        { path: 'spec.nodeGroup.maxNodes', message: expect.stringMatching(/1/) },
        { path: 'spec.cost.perHour', message: expect.stringMatching(/number/) },
      ]),
    );
    expect(await dumpTable()).toEqual(before);
  });

  it("answers a schema fault and EC2's faults of the node together, not one after the other", async () => {
    const before = await dumpTable();
    const wrongCpu = manifest('faults', { nodeGroup: { maxNodes: 500 } });
    (wrongCpu.spec as any).node.cpu = 7;
    const a = await api.call('PUT', '/v1/computes/faults', wrongCpu);
    expect(a.status).toBe(400);
    expect(a.body.errors.map((e: any) => e.path).sort()).toEqual([
      'spec.node.cpu',
      'spec.nodeGroup.maxNodes',
    ]);
    expect(a.body.errors.find((e: any) => e.path === 'spec.node.cpu').message).toMatch(/8 vCPUs, not 7/);

    const unknownType = manifest('faults', {
      node: { instanceType: 'g6.2xlarg', cpu: 8 },
      nodeGroup: { maxNodes: 0 },
    });
    const b = await api.call('POST', '/v1/computes', unknownType);
    expect(b.status).toBe(400);
    expect(b.body.errors.map((e: any) => e.path).sort()).toEqual([
      'spec.node.instanceType',
      'spec.nodeGroup.maxNodes',
    ]);
    expect(b.body.errors.find((e: any) => e.path === 'spec.node.instanceType').message).toMatch(
      /did you mean g6\.2xlarge/,
    );
    expect(await dumpTable()).toEqual(before);
  });

  it('answers 413 above 256 KiB, 404 for unknown routes and 405 with Allow for a wrong method', async () => {
    const big = await api.call('POST', '/v1/computes', undefined, {
      raw: JSON.stringify({ pad: 'x'.repeat(300 * 1024) }),
    });
    expect(big.status).toBe(413);
    expect((await api.call('GET', '/v1/nothing')).status).toBe(404);
    const wrong = await api.call('PATCH', '/v1/computes/cpu-small');
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toContain('PUT');
  });

  it('refuses a PUT whose body names another compute than the path', async () => {
    const r = await api.call('PUT', '/v1/computes/one', manifest('two'));
    expect(r.status).toBe(400);
    expect(r.body.errors[0].path).toBe('metadata.name');
  });
});

describe('idempotency', () => {
  it('replays the first response for a repeated Idempotency-Key and refuses the key for another body', async () => {
    const headers = { 'idempotency-key': 'create-l4-idem' };
    const a = await api.call('POST', '/v1/computes', manifest('l4-idem'), { headers });
    const b = await api.call('POST', '/v1/computes', manifest('l4-idem'), { headers });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers['idempotent-replayed']).toBe('true');
    const c = await api.call('POST', '/v1/computes', manifest('l4-other'), { headers });
    expect(c.status).toBe(409);
    expect(c.body.reason).toBe('IdempotencyKeyReused');
  });
});

describe('visibility and roles', () => {
  it('refuses a compute owned by a scope that does not exist, naming the scope', async () => {
    const r = await api.call('POST', '/v1/computes', manifest('ml-l4', {}, { owner: 'team:ml' }));
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({
      reason: 'UnknownScope',
      detail: expect.stringMatching(/scope team:ml does not exist/),
    });
    expect((await api.call('GET', '/v1/computes/ml-l4')).status).toBe(404);
  });

  it('hides a scope-owned compute from non-members and refuses writes by non-admins', async () => {
    expect((await api.call('POST', '/v1/scopes', { name: 'org:acme' })).status).toBe(201);
    expect((await api.call('POST', '/v1/scopes', { name: 'team:ml', parent: 'org:acme' })).status).toBe(201);
    const r = await api.call('POST', '/v1/computes', manifest('ml-l4', {}, { owner: 'team:ml' }));
    expect(r.status).toBe(201);
    const stranger = api.as('arn:aws:iam::111111111111:role/stranger');
    expect((await stranger.call('GET', '/v1/computes/ml-l4')).status).toBe(404);
    const list = await stranger.call('GET', '/v1/computes');
    expect(list.body.items.map((c: any) => c.metadata.name)).not.toContain('ml-l4');
    expect((await stranger.call('POST', '/v1/computes', manifest('mine'))).status).toBe(403);
  });

  it('refuses a request without an IAM identity with 401', async () => {
    const r = await api.call('GET', '/v1/computes', undefined, { principal: '' });
    expect(r.status).toBe(401);
  });
});

describe('races', () => {
  it('lets exactly one of many concurrent creates of the same name win', async () => {
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        api.call('POST', '/v1/computes', manifest('raced', { cost: { perHour: i } })),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(11);
  });

  it('loses no update when concurrent PUTs carry the same If-Match: one wins, the rest get 409', async () => {
    await api.call('POST', '/v1/computes', manifest('raced-put'));
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        api.call('PUT', '/v1/computes/raced-put', manifest('raced-put', { nodeGroup: { maxNodes: i + 4 } }), {
          headers: { 'if-match': '"1"' },
        }),
      ),
    );
    const winners = results.filter((r) => r.status === 200);
    expect(winners).toHaveLength(1);
    const now = await api.call('GET', '/v1/computes/raced-put');
    expect(now.body.metadata.version).toBe(2);
    expect(now.body.spec.nodeGroup.maxNodes).toBe(winners[0]!.body.spec.nodeGroup.maxNodes);
  });
});
