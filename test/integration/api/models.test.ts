import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { defaultModelCheck, type ModelCheck } from '../../../lambdas/domain/catalog';
import { documentClient } from '../../../lambdas/shared/clients';
import { ADMIN_SESSION, callerArn, type TestApi, testApi } from '../../helpers/api';
import { l4Pool } from '../../helpers/l4-pool';

/** The model catalog over HTTP against DynamoDB Local: every rule, and that a refused change writes nothing. */

const EDITOR = 'arn:aws:iam::111111111111:role/ml-editor';
const VIEWER = 'arn:aws:iam::111111111111:role/ml-viewer';
const STRANGER = 'arn:aws:iam::111111111111:role/stranger';

const spec = (over: Record<string, unknown> = {}) => ({
  source: 'hf://mistralai/Mistral-7B-Instruct-v0.3',
  engine: 'vllm',
  profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 20 }],
  scaling: { min: 1, max: 2 },
  ...over,
});

const manifest = (
  name: string,
  over: Record<string, unknown> = {},
  metadata: Record<string, unknown> = {},
) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name, ...metadata },
  spec: spec(over),
});

async function scan(): Promise<Record<string, unknown>[]> {
  const out = await documentClient().send(new ScanCommand({ TableName: api.table, ConsistentRead: true }));
  // The ledger's version is compared (a refusal does not move it); its lease is a lock held while deciding.
  return (out.Items ?? [])
    .filter((i) => !(i.pk === 'LEDGER' && i.sk === 'LEASE'))
    .sort((a, b) => `${a.pk}#${a.sk}`.localeCompare(`${b.pk}#${b.sk}`));
}

/** Sends a request that must be refused with `status`, and checks the table is exactly as before. */
async function refused(status: number, send: () => Promise<{ status: number; body: any; headers: any }>) {
  const before = await scan();
  const r = await send();
  expect({ status: r.status, body: r.body }).toMatchObject({ status });
  expect(r.headers['content-type']).toBe('application/problem+json');
  expect(await scan()).toEqual(before);
  return r.body;
}

let api: TestApi;
beforeAll(async () => {
  api = await testApi({ deps: { modelCheck: (m, ctx) => modelCheck(m, ctx) } });
  // team:ml (under org:acme) has an editor and a viewer; nobody else holds a role (platform admins need none).
  expect((await api.call('POST', '/v1/scopes', { name: 'org:acme' })).status).toBe(201);
  expect((await api.call('POST', '/v1/scopes', { name: 'team:ml', parent: 'org:acme' })).status).toBe(201);
  await api.call('PUT', `/v1/scopes/team:ml/members/${encodeURIComponent(EDITOR)}`, { role: 'editor' });
  await api.call('PUT', `/v1/scopes/team:ml/members/${encodeURIComponent(VIEWER)}`, { role: 'viewer' });
  // Seeds the built-in computes, so later "writes nothing" scans start from a settled table.
  await api.call('GET', '/v1/healthz');
});
// The pre-add check this API is wired with; a test may replace it with a deployment's own.
let modelCheck: ModelCheck = defaultModelCheck;
afterEach(() => {
  modelCheck = defaultModelCheck;
});

describe('reading the catalog', () => {
  it('lists the declared models to everyone, marked declared, with their effective class', async () => {
    const r = await api.as(STRANGER).call('GET', '/v1/models');
    expect(r.status).toBe(200);
    const byName = Object.fromEntries(r.body.items.map((m: any) => [m.metadata.name, m]));
    expect(Object.keys(byName)).toEqual(
      expect.arrayContaining(['bge-m3', 'llama-3-3-70b', 'qwen2-5-1-5b-cpu', 'qwen3-8b']),
    );
    expect(byName['llama-3-3-70b']).toMatchObject({
      apiVersion: 'llmcap/v1',
      kind: 'Model',
      metadata: { declared: true, createdBy: 'config', version: 1 },
      spec: { fallback: 'qwen3-8b', engine: 'vllm' },
      status: { declared: true, effectiveClass: 'standard', targetReplicas: 0 },
    });
    // No class in the file: min 0 implies opportunistic.
    expect(byName['qwen2-5-1-5b-cpu'].status.effectiveClass).toBe('opportunistic');
    const one = await api.as(STRANGER).call('GET', '/v1/models/bge-m3');
    expect(one.status).toBe(200);
    expect(one.headers.etag).toBe('"1"');
  });

  it('says a missing model does not exist (404, problem+json)', async () => {
    const r = await api.call('GET', '/v1/models/nope');
    expect(r.status).toBe(404);
    expect(r.body.detail).toMatch(/model nope does not exist/);
  });
});

describe('add, and who may', () => {
  it('adds a model, recording who and when, with an etag and a location', async () => {
    const r = await api.call('POST', '/v1/models', manifest('mistral-7b', { scaling: { min: 0, max: 2 } }));
    expect(r.status).toBe(201);
    expect(r.headers).toMatchObject({ etag: '"1"', location: '/v1/models/mistral-7b' });
    expect(r.body.metadata).toMatchObject({
      name: 'mistral-7b',
      owner: '',
      version: 1,
      declared: false,
      createdBy: ADMIN_SESSION,
    });
    expect(Date.parse(r.body.metadata.createdAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(r.body.status).toEqual({
      declared: false,
      effectiveClass: 'opportunistic',
      targetReplicas: 0,
      admitted: 0,
      borrowed: 0,
      pending: 0,
      placements: [],
      reasons: [],
      takenBack: [],
    });
    const again = await refused(409, () => api.call('POST', '/v1/models', manifest('mistral-7b')));
    expect(again.reason).toBe('AlreadyExists');
  });

  it('a shared model needs a platform admin; a team model an editor of the team; a viewer only reads', async () => {
    const shared = await refused(403, () => api.as(EDITOR).call('POST', '/v1/models', manifest('shared-x')));
    expect(shared.detail).toMatch(/reserved to platform admins/);
    const ok = await api.as(EDITOR).call('POST', '/v1/models', manifest('ml-x', {}, { owner: 'team:ml' }));
    expect(ok.status).toBe(201);
    await refused(403, () => api.as(VIEWER).call('PUT', '/v1/models/ml-x/scaling', { min: 1, max: 1 }));
    expect((await api.as(VIEWER).call('GET', '/v1/models/ml-x')).status).toBe(200);
    // Someone outside the team cannot see it at all, and a change answers as if it did not exist.
    expect((await api.as(STRANGER).call('GET', '/v1/models/ml-x')).status).toBe(404);
    await refused(404, () => api.as(STRANGER).call('DELETE', '/v1/models/ml-x'));
    const list = await api.as(STRANGER).call('GET', '/v1/models');
    expect(list.body.items.map((m: any) => m.metadata.name)).not.toContain('ml-x');
  });

  it('lists every invalid field of a malformed manifest at once (400)', async () => {
    const body = await refused(400, () =>
      api.call(
        'POST',
        '/v1/models',
        manifest('bad', { engine: 'triton', source: 'ftp://x', scaling: { min: -1, max: 2 } }),
      ),
    );
    expect(body.errors.map((e: any) => e.path).sort()).toEqual([
      'spec.engine',
      'spec.scaling.min',
      'spec.source',
    ]);
  });
});

describe('configuration wins every conflict', () => {
  it('refuses to add a model with a declared name, saying where to edit', async () => {
    const body = await refused(409, () => api.call('POST', '/v1/models', manifest('qwen3-8b')));
    expect(body).toMatchObject({
      reason: 'Declared',
      detail:
        'qwen3-8b is declared in config/catalog.yaml; edit that file rather than adding a second definition',
    });
  });

  it('refuses to remove a declared model: it would come back on the next deploy', async () => {
    const body = await refused(409, () => api.call('DELETE', '/v1/models/bge-m3'));
    expect(body.detail).toBe(
      'bge-m3 is declared in config/catalog.yaml; remove it there, or it comes back on the next deploy',
    );
  });

  it('refuses every change to a declared model: it would revert on the next deploy', async () => {
    const reverts =
      'qwen3-8b is declared in config/catalog.yaml; change it there, or it reverts on the next deploy';
    // A replace names the fields that differ from config/catalog.yaml.
    expect(
      (await refused(409, () => api.call('PUT', '/v1/models/qwen3-8b', manifest('qwen3-8b')))).detail,
    ).toMatch(
      /^qwen3-8b is declared in config\/catalog\.yaml; .*spec\.source can only change there \(or it reverts on the next deploy\)$/,
    );
    for (const [path, body] of [
      ['/v1/models/qwen3-8b/scaling', { min: 0, max: 1 }],
      ['/v1/models/qwen3-8b/resources', { memoryGb: 20, cpuCores: 2 }],
      ['/v1/models/qwen3-8b/class', { class: 'critical' }],
      ['/v1/models/qwen3-8b/owner', { owner: 'team:ml' }],
    ] as const) {
      expect((await refused(409, () => api.call('PUT', path, body))).detail).toBe(reverts);
    }
  });
});

describe('the whole next catalog is validated before anything is written', () => {
  it('refuses an unknown fallback (409)', async () => {
    const body = await refused(409, () =>
      api.call('POST', '/v1/models', manifest('fb', { fallback: 'ghost' })),
    );
    expect(body).toMatchObject({
      reason: 'CatalogRule',
      detail: 'model fb: fallback ghost is not in the catalog; add ghost first, or drop the fallback',
      errors: [{ path: 'spec.fallback' }],
    });
  });

  it('refuses a fallback cycle (409)', async () => {
    expect((await api.call('POST', '/v1/models', manifest('cyc-a'))).status).toBe(201);
    expect((await api.call('POST', '/v1/models', manifest('cyc-b', { fallback: 'cyc-a' }))).status).toBe(201);
    const body = await refused(409, () =>
      api.call('PUT', '/v1/models/cyc-a', manifest('cyc-a', { fallback: 'cyc-b' })),
    );
    expect(body.detail).toBe(
      'model cyc-a: fallbacks form a cycle cyc-a → cyc-b → cyc-a; change one of these fallbacks to break it',
    );
  });

  it('refuses to remove a model another names as its fallback, then allows it once that changes', async () => {
    expect((await api.call('POST', '/v1/models', manifest('fb-target'))).status).toBe(201);
    expect(
      (await api.call('POST', '/v1/models', manifest('fb-user', { fallback: 'fb-target' }))).status,
    ).toBe(201);
    const body = await refused(409, () => api.call('DELETE', '/v1/models/fb-target'));
    expect(body).toMatchObject({
      reason: 'FallbackInUse',
      detail:
        'model fb-target is the fallback of fb-user; change their fallback first, then remove fb-target',
    });
    expect((await api.call('PUT', '/v1/models/fb-user', manifest('fb-user'))).status).toBe(200);
    expect((await api.call('DELETE', '/v1/models/fb-target')).status).toBe(204);
    expect((await api.call('GET', '/v1/models/fb-target')).status).toBe(404);
  });

  it('refuses duplicate profile names (400)', async () => {
    const p = { name: 'gpu', gpus: 1, gpuType: 'L4', cpuCores: 2, minMemoryGb: 8 };
    const body = await refused(400, () =>
      api.call('POST', '/v1/models', manifest('dup', { profiles: [p, { ...p, gpuType: 'A10G' }] })),
    );
    expect(body).toMatchObject({ reason: 'InvalidModel', errors: [{ path: 'spec.profiles[1].name' }] });
  });

  it('refuses a profile that fits no compute, or pins one that is missing or too small (409)', async () => {
    const tooBig = await refused(409, () =>
      api.call(
        'POST',
        '/v1/models',
        manifest('big', {
          profiles: [{ name: 'x', gpus: 16, gpuType: 'H100', cpuCores: 8, minMemoryGb: 64 }],
        }),
      ),
    );
    expect(tooBig.detail).toMatch(
      /no compute has a node that can hold a 16-gpu H100 replica; lower the request, or create a compute/,
    );
    const pinned = await refused(409, () =>
      api.call(
        'POST',
        '/v1/models',
        manifest('pin', {
          profiles: [
            { name: 'x', gpus: 1, gpuType: 'L4', cpuCores: 2, minMemoryGb: 8, compute: 'gpu-a10g-1x' },
          ],
        }),
      ),
    );
    expect(pinned.errors).toEqual([
      {
        path: 'spec.profiles[0].compute',
        message: expect.stringMatching(/pins compute gpu-a10g-1x, whose node .* cannot hold/),
      },
    ]);
  });

  it('refuses a critical model whose minimum could only run on Spot (409), and takes it as standard', async () => {
    const pool = l4Pool('spot-l4');
    pool.spec.node = { ...pool.spec.node, capacityType: 'SPOT' } as typeof pool.spec.node;
    expect((await api.call('POST', '/v1/computes', pool)).status).toBe(201);
    const pinned = (cls: string) =>
      manifest('spot-crit', {
        class: cls,
        profiles: [{ name: 'x', gpus: 1, gpuType: 'L4', cpuCores: 2, minMemoryGb: 8, compute: 'spot-l4' }],
      });
    const body = await refused(409, () => api.call('POST', '/v1/models', pinned('critical')));
    expect(body).toMatchObject({ reason: 'Headroom' });
    expect(body.detail).toMatch(
      /pins compute spot-l4, which is Spot, and a critical model keeps at least its minimum on On-Demand or reserved capacity .*; add an ON_DEMAND or CAPACITY_BLOCK compute that can hold it, or lower the model's class/,
    );
    const std = await api.call('POST', '/v1/models', pinned('standard'));
    expect(std.status).toBe(201);
    expect((await api.call('DELETE', '/v1/models/spot-crit')).status).toBeLessThan(300);
    expect((await api.call('DELETE', '/v1/computes/spot-l4')).status).toBeLessThan(300);
  });

  it('takes computes in order of preference, refusing one that does not exist (409) or both compute and computes (400)', async () => {
    const p = { name: 'x', gpus: 1, gpuType: 'L4', cpuCores: 2, minMemoryGb: 8 };
    const missing = await refused(409, () =>
      api.call(
        'POST',
        '/v1/models',
        manifest('ordered', { profiles: [{ ...p, computes: ['gpu-l4-1x', 'nowhere'] }] }),
      ),
    );
    expect(missing.errors).toEqual([
      {
        path: 'spec.profiles[0].computes',
        message: expect.stringMatching(
          /names compute nowhere, which does not exist; name computes that can hold it/,
        ),
      },
    ]);
    const both = await refused(400, () =>
      api.call(
        'POST',
        '/v1/models',
        manifest('ordered', { profiles: [{ ...p, compute: 'gpu-l4-1x', computes: ['gpu-l4-1x'] }] }),
      ),
    );
    expect(both.errors).toEqual([
      expect.objectContaining({
        path: 'spec.profiles[0].computes',
        message: expect.stringContaining('sets both compute and computes'),
      }),
    ]);
    const ok = await api.call(
      'POST',
      '/v1/models',
      manifest('ordered', { profiles: [{ ...p, computes: ['gpu-l4-1x'] }] }),
    );
    expect(ok.status).toBe(201);
    expect(ok.body.spec.profiles[0].computes).toEqual(['gpu-l4-1x']);
    expect((await api.call('DELETE', '/v1/models/ordered')).status).toBeLessThan(300);
  });

  it('refuses a CPU-only profile without minMemoryGb (400)', async () => {
    const body = await refused(400, () =>
      api.call(
        'POST',
        '/v1/models',
        manifest('cpu', {
          engine: 'llamacpp',
          source: 'hf://a/b-GGUF',
          profiles: [{ name: 'cpu', gpus: 0, cpuCores: 2 }],
        }),
      ),
    );
    expect(body.detail).toBe(
      'spec.profiles[0].minMemoryGb: profile cpu is CPU-only and has no minMemoryGb, so placement could not tell when a node is full; set minMemoryGb',
    );
  });

  it('refuses min > max and a target outside [min, max], on add and on scale (400)', async () => {
    await refused(400, () => api.call('POST', '/v1/models', manifest('mm', { scaling: { min: 3, max: 1 } })));
    expect((await api.call('POST', '/v1/models', manifest('sc'))).status).toBe(201);
    const minMax = await refused(400, () => api.call('PUT', '/v1/models/sc/scaling', { min: 3, max: 1 }));
    expect(minMax.detail).toBe(
      'spec.scaling.min: scaling.min (3) is above scaling.max (1); raise max or lower min',
    );
    const target = await refused(400, () =>
      api.call('PUT', '/v1/models/sc/scaling', { min: 0, max: 2, target: 5 }),
    );
    expect(target.errors).toEqual([
      { path: 'spec.scaling.target', message: expect.stringMatching(/outside \[0, 2\]/) },
    ]);
  });

  it('runs the pluggable check before add: by default the engine must be able to serve the profile', async () => {
    const cpuVllm = manifest('cpu-vllm', {
      profiles: [{ name: 'cpu', gpus: 0, cpuCores: 2, minMemoryGb: 4 }],
    });
    const body = await refused(400, () => api.call('POST', '/v1/models', cpuVllm));
    expect(body).toMatchObject({
      reason: 'CannotRun',
      detail: expect.stringMatching(/vllm needs a GPU and profile cpu asks for none/),
    });
    const gguf = await refused(400, () =>
      api.call('POST', '/v1/models', manifest('gguf', { engine: 'llamacpp' })),
    );
    expect(gguf.detail).toMatch(/loads GGUF weights/);
    // A deployment can plug its own check in.
    modelCheck = async (m) =>
      m.spec.source.includes('Mistral') ? ['the weights bucket has no such prefix; upload them first'] : [];
    const custom = await refused(400, () => api.call('POST', '/v1/models', manifest('custom')));
    expect(custom.detail).toBe(
      'model custom cannot run: the weights bucket has no such prefix; upload them first',
    );
  });
});

describe('the other verbs', () => {
  beforeAll(async () => {
    const p = [
      { name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 20 },
      { name: 'a10g', gpus: 1, gpuType: 'A10G', cpuCores: 4, minMemoryGb: 20 },
    ];
    expect((await api.call('POST', '/v1/models', manifest('verbs', { profiles: p }))).status).toBe(201);
  });

  it('replaces an added model with If-Match; a stale version is refused (409) and writes nothing', async () => {
    const cur = (await api.call('GET', '/v1/models/verbs')).body;
    const stale = await refused(409, () =>
      api.call(
        'PUT',
        '/v1/models/verbs',
        { ...cur, spec: { ...cur.spec, scaling: { min: 1, max: 3 } } },
        { headers: { 'if-match': '"9"' } },
      ),
    );
    expect(stale).toMatchObject({
      reason: 'VersionMismatch',
      detail: expect.stringMatching(/read it again and retry/),
    });
    // The manifest as read goes back as is: output-only metadata and status are ignored.
    const r = await api
      .as(EDITOR)
      .call('PUT', '/v1/models/verbs', { ...cur, spec: { ...cur.spec, scaling: { min: 1, max: 3 } } });
    expect(r.status).toBe(403); // shared: platform admins only
    const ok = await api.call('PUT', '/v1/models/verbs', {
      ...cur,
      spec: { ...cur.spec, scaling: { min: 1, max: 3 } },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.metadata).toMatchObject({
      version: cur.metadata.version + 1,
      createdAt: cur.metadata.createdAt,
    });
  });

  it('scales: min, max, target', async () => {
    const r = await api.call('PUT', '/v1/models/verbs/scaling', { min: 1, max: 4, target: 3 });
    expect(r.status).toBe(200);
    expect(r.body.spec.scaling).toEqual({ min: 1, max: 4, target: 3 });
    expect(r.body.status).toMatchObject({ effectiveClass: 'standard', targetReplicas: 3 });
  });

  it('sets the resources of one profile, or of all; an unknown profile is a 400', async () => {
    const one = await api.call('PUT', '/v1/models/verbs/resources', {
      profile: 'a10g',
      memoryGb: 16,
      cpuCores: 2,
    });
    expect(one.body.spec.profiles.map((p: any) => [p.name, p.cpuCores, p.minMemoryGb])).toEqual([
      ['l4', 4, 20],
      ['a10g', 2, 16],
    ]);
    const all = await api.call('PUT', '/v1/models/verbs/resources', { memoryGb: 12, cpuCores: 3 });
    expect(all.body.spec.profiles.map((p: any) => p.minMemoryGb)).toEqual([12, 12]);
    const unknown = await refused(400, () =>
      api.call('PUT', '/v1/models/verbs/resources', { profile: 'h100', memoryGb: 1, cpuCores: 1 }),
    );
    expect(unknown.detail).toBe('model verbs has no profile h100; its profiles are l4, a10g');
    // More memory than an L4 or A10G node holds: both profiles would fit no compute.
    const tooMuch = await refused(409, () =>
      api.call('PUT', '/v1/models/verbs/resources', { memoryGb: 64, cpuCores: 1 }),
    );
    expect(tooMuch.errors).toHaveLength(2);
  });

  it('sets the class, or clears it so that scaling implies it', async () => {
    const set = await api.call('PUT', '/v1/models/verbs/class', { class: 'critical' });
    expect(set.body.status.effectiveClass).toBe('critical');
    await api.call('PUT', '/v1/models/verbs/scaling', { min: 0, max: 2 });
    const cleared = await api.call('PUT', '/v1/models/verbs/class', { class: '' });
    expect(cleared.body.spec.class).toBeUndefined();
    expect(cleared.body.status.effectiveClass).toBe('opportunistic');
    await refused(400, () => api.call('PUT', '/v1/models/verbs/class', { class: 'vip' }));
  });

  it('hands a model to a team and back, needing the editor role on both sides', async () => {
    const r = await api.call('PUT', '/v1/models/verbs/owner', { owner: 'team:ml' });
    expect(r.body.metadata).toMatchObject({ owner: 'team:ml', updatedBy: ADMIN_SESSION });
    // The team's editor can change it now, but not make it shared (that takes a platform admin).
    expect(
      (await api.as(EDITOR).call('PUT', '/v1/models/verbs/scaling', { min: 0, max: 1 })).body.metadata
        .updatedBy,
    ).toBe(callerArn(EDITOR));
    await refused(403, () => api.as(EDITOR).call('PUT', '/v1/models/verbs/owner', { owner: '' }));
    const back = await api.call('PUT', '/v1/models/verbs/owner', { owner: null });
    expect(back.body.metadata.owner).toBe('');
  });

  it('removes an added model with If-Match', async () => {
    expect((await api.call('POST', '/v1/models', manifest('gone'))).status).toBe(201);
    await refused(409, () =>
      api.call('DELETE', '/v1/models/gone', undefined, { headers: { 'if-match': '"2"' } }),
    );
    expect(
      (await api.call('DELETE', '/v1/models/gone', undefined, { headers: { 'if-match': '"1"' } })).status,
    ).toBe(204);
    await refused(404, () => api.call('DELETE', '/v1/models/gone'));
  });
});

describe('sources and computes', () => {
  it('GET /v1/sources maps each weights source to the models that use it', async () => {
    const r = await api.call('GET', '/v1/sources');
    expect(r.status).toBe(200);
    const mistral = r.body.items.find((s: any) => s.source === 'hf://mistralai/Mistral-7B-Instruct-v0.3');
    expect(mistral.models).toEqual(expect.arrayContaining(['mistral-7b', 'verbs']));
    expect(r.body.items.find((s: any) => s.source === 'hf://Qwen/Qwen3-8B').models).toEqual(['qwen3-8b']);
    // A team's models are not listed to outsiders.
    const outsider = await api.as(STRANGER).call('GET', '/v1/sources');
    expect(outsider.body.items.flatMap((s: any) => s.models)).not.toContain('ml-x');
  });

  it('a compute a model pins cannot be deleted until the model moves', async () => {
    const compute = {
      apiVersion: 'llmcap/v1',
      kind: 'Compute',
      metadata: { name: 'cpu-pinned' },
      spec: { node: { instanceType: 'm7i.large', cpu: 2, memoryGb: 8 }, cost: { perHour: 0.1008 } },
    };
    expect((await api.call('POST', '/v1/computes', compute)).status).toBe(201);
    const model = manifest('pinner', {
      engine: 'llamacpp',
      source: 'hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF',
      profiles: [{ name: 'cpu', gpus: 0, cpuCores: 1, minMemoryGb: 2, compute: 'cpu-pinned' }],
    });
    expect((await api.call('POST', '/v1/models', model)).status).toBe(201);
    const body = await refused(409, () => api.call('DELETE', '/v1/computes/cpu-pinned'));
    expect(body).toMatchObject({
      reason: 'InUse',
      detail: expect.stringMatching(/used by model\(s\) pinner; move them/),
    });
    expect((await api.call('DELETE', '/v1/models/pinner')).status).toBe(204);
    expect((await api.call('DELETE', '/v1/computes/cpu-pinned')).status).toBe(204);
  });
});
