import {
  applyChange,
  buildCatalog,
  type CatalogAccess,
  type CatalogState,
  type ChangeContext,
  declaredToModel,
  defaultModelCheck,
  engineProblems,
  modelsUsingCompute,
  sourcesIndex,
  validateCatalog,
} from '../../../lambdas/domain/catalog';
import { DomainError } from '../../../lambdas/domain/errors';
import { effectiveClass, type Model, type ModelSpec, modelManifest } from '../../../lambdas/domain/model';
import { declaredModels, parseDeclaredModels } from '../../../lambdas/shared/builtin-config';
import { BUILTIN_COMPUTES } from '../../helpers/computes';

const computes = BUILTIN_COMPUTES;
const NOW = '2025-01-01T00:00:00.000Z';
const ctx = { by: 'alice', now: NOW };

const l4: ModelSpec = {
  source: 'hf://Qwen/Qwen3-8B',
  engine: 'vllm',
  profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 24 }],
  scaling: { min: 1, max: 2 },
};

function added(name: string, spec: Partial<ModelSpec> = {}, extra: Partial<Model> = {}): Model {
  return {
    name,
    spec: { ...l4, ...spec },
    declared: false,
    version: 1,
    createdAt: NOW,
    createdBy: 'bob',
    updatedAt: NOW,
    updatedBy: 'bob',
    ...extra,
  };
}

const declared = (name: string, spec: Partial<ModelSpec> = {}) => ({ ...added(name, spec), declared: true });

function state(models: Model[], skipped: CatalogState['skipped'] = []): CatalogState {
  return { models, skipped, computes };
}

/** Runs a change and returns the DomainError it throws (failing the test if it does not throw). */
function refusal(
  s: CatalogState,
  change: Parameters<typeof applyChange>[1],
  c: ChangeContext = ctx,
): DomainError {
  try {
    applyChange(s, change, c);
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
  throw new Error(`expected ${change.verb} to be refused`);
}

describe('config/catalog.yaml', () => {
  it('declares a valid starter set that the default check accepts', async () => {
    const d = declaredModels();
    expect(d.map((m) => m.name)).toEqual(['qwen3-8b', 'llama-3-3-70b', 'qwen2-5-1-5b-cpu', 'bge-m3']);
    expect(validateCatalog(d, computes)).toEqual([]);
    for (const m of d) expect(await defaultModelCheck(m, { verb: 'add', computes })).toEqual([]);
  });

  it('fails loudly, naming the rule, when a declared model could never be placed', () => {
    const bad = [
      {
        name: 'big',
        spec: { ...l4, profiles: [{ name: 'x', gpus: 16, gpuType: 'L4', cpuCores: 1, minMemoryGb: 1 }] },
      },
    ];
    expect(() => parseDeclaredModels(bad, computes)).toThrow(
      /config\/catalog.yaml is invalid .*no compute has a node/,
    );
    expect(() => parseDeclaredModels([{ name: 'Bad Name', spec: l4 }], computes)).toThrow(/0\.name/);
  });
});

describe('validateCatalog: one rule each, with a message that says what to do', () => {
  const messages = (models: Model[]) => validateCatalog(models, computes).map((i) => i.message);

  it('refuses an unknown fallback', () => {
    expect(messages([added('a', { fallback: 'ghost' })])).toEqual([
      'model a: fallback ghost is not in the catalog; add ghost first, or drop the fallback',
    ]);
  });

  it('refuses a fallback cycle, also of length one', () => {
    expect(
      messages([added('a', { fallback: 'b' }), added('b', { fallback: 'c' }), added('c', { fallback: 'a' })]),
    ).toEqual(['model a: fallbacks form a cycle a → b → c → a; change one of these fallbacks to break it']);
    expect(messages([added('a', { fallback: 'a' })])[0]).toMatch(/cycle a → a/);
    // A chain that ends is no cycle.
    expect(messages([added('a', { fallback: 'b' }), added('b', { fallback: 'c' }), added('c')])).toEqual([]);
  });

  it('refuses duplicate profile names', () => {
    const p = l4.profiles[0]!;
    expect(messages([added('a', { profiles: [p, { ...p, gpuType: 'A10G' }] })])).toEqual([
      'model a: profile name l4 is already the name of spec.profiles[0]; give each profile its own name',
    ]);
  });

  it('refuses a profile that fits no compute: too big, wrong GPU type, pinned elsewhere', () => {
    const big = messages([
      added('a', { profiles: [{ name: 'x', gpus: 2, gpuType: 'L4', cpuCores: 4, minMemoryGb: 8 }] }),
    ]);
    expect(big).toEqual([
      expect.stringMatching(
        /^model a: no compute has a node that can hold a 2-gpu L4 replica; lower the request, or create a compute/,
      ),
    ]);
    const tpu = messages([
      added('a', { profiles: [{ name: 'x', gpus: 1, gpuType: 'TPU', cpuCores: 1, minMemoryGb: 1 }] }),
    ]);
    expect(tpu).toHaveLength(1);
    const missing = messages([
      added('a', {
        profiles: [{ name: 'x', gpus: 1, gpuType: 'L4', cpuCores: 1, minMemoryGb: 1, compute: 'nope' }],
      }),
    ]);
    expect(missing[0]).toMatch(/pins compute nope, which does not exist; pin a compute that can hold it/);
    const tooSmall = messages([
      added('a', { profiles: [{ name: 'x', gpus: 0, cpuCores: 4, minMemoryGb: 1, compute: 'cpu-small' }] }),
    ]);
    expect(tooSmall[0]).toMatch(/pins compute cpu-small, whose node .* cannot hold/);
    // Memory in GiB is checked against allocatable MiB: 30.4 GiB fits an L4 node (31203 MiB by EKS's formula), 30.5 does not.
    const at = (gb: number) =>
      messages([
        added('a', {
          profiles: [
            { name: 'x', gpus: 1, gpuType: 'L4', cpuCores: 1, minMemoryGb: gb, compute: 'gpu-l4-1x' },
          ],
        }),
      ]);
    expect(at(30.4)).toEqual([]);
    expect(at(30.5)).toHaveLength(1);
  });

  it('refuses a CPU-only profile without minMemoryGb, and gpuType without gpus', () => {
    expect(
      messages([added('a', { engine: 'llamacpp', profiles: [{ name: 'cpu', gpus: 0, cpuCores: 2 }] })]),
    ).toEqual([
      'model a: profile cpu is CPU-only and has no minMemoryGb, so placement could not tell when a node is full; set minMemoryGb',
    ]);
    expect(
      messages([
        added('a', { profiles: [{ name: 'c', gpus: 0, gpuType: 'L4', cpuCores: 2, minMemoryGb: 2 }] }),
      ])[0],
    ).toMatch(/names gpuType L4 but asks for 0 gpus/);
  });

  it('refuses min > max and a target outside [min, max]', () => {
    expect(messages([added('a', { scaling: { min: 3, max: 2 } })])).toEqual([
      'model a: scaling.min (3) is above scaling.max (2); raise max or lower min',
    ]);
    expect(messages([added('a', { scaling: { min: 1, max: 2, target: 3 } })])[0]).toMatch(
      /target \(3\) is outside \[1, 2\]/,
    );
    expect(messages([added('a', { scaling: { min: 1, max: 2, target: 0 } })])).toHaveLength(1);
    expect(messages([added('a', { scaling: { min: 0, max: 2, target: 2 } })])).toEqual([]);
  });
});

describe('transitions', () => {
  const base = () => state([declared('decl'), added('a'), added('b', { fallback: 'a' })]);

  it('configuration wins: add, remove or change a declared model is refused and says where to edit', () => {
    const add = refusal(base(), { verb: 'add', name: 'decl', spec: l4 });
    expect([add.kind, add.details.reason]).toEqual(['conflict', 'Declared']);
    expect(add.message).toBe(
      'decl is declared in config/catalog.yaml; edit that file rather than adding a second definition',
    );
    expect(refusal(base(), { verb: 'remove', name: 'decl' }).message).toBe(
      'decl is declared in config/catalog.yaml; remove it there, or it comes back on the next deploy',
    );
    // Its own manifest applies as unchanged, writing nothing; a field that differs is named.
    expect(applyChange(base(), { verb: 'replace', name: 'decl', spec: l4 }, ctx)).toMatchObject({
      unchanged: true,
    });
    const changed = { ...l4, engine: 'sglang' as const };
    const r = refusal(base(), { verb: 'replace', name: 'decl', spec: changed });
    expect(r.message).toBe(
      'decl is declared in config/catalog.yaml; spec.engine can only change there (or it reverts on the next deploy)',
    );
    for (const change of [
      { verb: 'scale', name: 'decl', scaling: { min: 0, max: 1 } },
      { verb: 'resources', name: 'decl', memoryGb: 8, cpuCores: 2 },
      { verb: 'class', name: 'decl', class: 'critical' },
      { verb: 'owner', name: 'decl', owner: 'team:ml' },
    ] as const) {
      expect(refusal(base(), change).message).toBe(
        'decl is declared in config/catalog.yaml; change it there, or it reverts on the next deploy',
      );
    }
  });

  it('adds a model, recording who and when, and refuses a second one of the same name', () => {
    const r = applyChange(base(), { verb: 'add', name: 'c', owner: 'team:ml', spec: l4 }, ctx);
    expect(r.after).toMatchObject({
      name: 'c',
      owner: 'team:ml',
      version: 1,
      createdBy: 'alice',
      createdAt: NOW,
      updatedBy: 'alice',
    });
    expect(r.next.map((m) => m.name)).toEqual(['decl', 'a', 'b', 'c']);
    expect(refusal(base(), { verb: 'add', name: 'a', spec: l4 }).details.reason).toBe('AlreadyExists');
  });

  it('builds the whole next catalog: an add with an unknown fallback is a 409, with min > max a 400', () => {
    const fb = refusal(base(), { verb: 'add', name: 'c', spec: { ...l4, fallback: 'ghost' } });
    expect([fb.kind, fb.details.reason]).toEqual(['conflict', 'CatalogRule']);
    const both = refusal(base(), {
      verb: 'add',
      name: 'c',
      spec: { ...l4, fallback: 'ghost', scaling: { min: 2, max: 1 } },
    });
    expect(both.kind).toBe('invalid');
    expect(both.details.errors?.map((e) => e.path)).toEqual(['spec.scaling.min', 'spec.fallback']);
  });

  it('refuses a replace that closes a fallback cycle', () => {
    const e = refusal(base(), { verb: 'replace', name: 'a', spec: { ...l4, fallback: 'b' } });
    expect(e.message).toMatch(/fallbacks form a cycle/);
  });

  it('refuses to remove a model another names as its fallback', () => {
    const e = refusal(base(), { verb: 'remove', name: 'a' });
    expect(e.details.reason).toBe('FallbackInUse');
    expect(e.message).toBe('model a is the fallback of b; change their fallback first, then remove a');
    const r = applyChange(base(), { verb: 'remove', name: 'b' }, ctx);
    expect(r.next.map((m) => m.name)).toEqual(['decl', 'a']);
  });

  it('refuses a stale If-Match version, and a change to an unknown model with not-found', () => {
    const e = refusal(base(), { verb: 'scale', name: 'a', scaling: { min: 0, max: 1 }, expectedVersion: 7 });
    expect([e.kind, e.details.reason]).toEqual(['precondition', 'VersionMismatch']);
    expect(refusal(base(), { verb: 'remove', name: 'zzz' }).kind).toBe('not-found');
  });

  it('scales, bumping the version; target outside [min, max] is refused', () => {
    const r = applyChange(
      base(),
      { verb: 'scale', name: 'a', scaling: { min: 0, max: 3, target: 2 }, expectedVersion: 1 },
      ctx,
    );
    expect(r.after?.spec.scaling).toEqual({ min: 0, max: 3, target: 2 });
    expect(r.after).toMatchObject({ version: 2, updatedBy: 'alice', createdBy: 'bob' });
    expect(refusal(base(), { verb: 'scale', name: 'a', scaling: { min: 0, max: 3, target: 4 } }).kind).toBe(
      'invalid',
    );
  });

  it('sets resources of one profile or of all, and refuses an unknown profile', () => {
    const two = state([
      added('m', {
        profiles: [
          { name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 24 },
          { name: 'a10g', gpus: 1, gpuType: 'A10G', cpuCores: 4, minMemoryGb: 24 },
        ],
      }),
    ]);
    const one = applyChange(
      two,
      { verb: 'resources', name: 'm', profile: 'a10g', memoryGb: 16, cpuCores: 2 },
      ctx,
    );
    expect(one.after?.spec.profiles.map((p) => [p.cpuCores, p.minMemoryGb])).toEqual([
      [4, 24],
      [2, 16],
    ]);
    const all = applyChange(two, { verb: 'resources', name: 'm', memoryGb: 16, cpuCores: 2 }, ctx);
    expect(all.after?.spec.profiles.map((p) => p.minMemoryGb)).toEqual([16, 16]);
    expect(
      refusal(two, { verb: 'resources', name: 'm', profile: 'h100', memoryGb: 1, cpuCores: 1 }).message,
    ).toMatch(/has no profile h100; its profiles are l4, a10g/);
    // More memory than any L4 or A10G node has: the profile would fit no compute.
    expect(
      refusal(two, { verb: 'resources', name: 'm', memoryGb: 64, cpuCores: 2 }).details.errors,
    ).toHaveLength(2);
  });

  it('class: set on purpose, or cleared so that scaling implies it', () => {
    const s = state([added('a', { scaling: { min: 0, max: 2 } })]);
    expect(effectiveClass(s.models[0]!.spec)).toBe('opportunistic');
    const set = applyChange(s, { verb: 'class', name: 'a', class: 'critical' }, ctx).after!;
    expect(effectiveClass(set.spec)).toBe('critical');
    const cleared = applyChange(state([set]), { verb: 'class', name: 'a' }, ctx).after!;
    expect('class' in cleared.spec).toBe(false);
    expect(effectiveClass({ scaling: { min: 1, max: 1 } })).toBe('standard');
    expect(modelManifest(cleared).status).toEqual({
      declared: false,
      effectiveClass: 'opportunistic',
      targetReplicas: 0,
    });
  });

  it('owner: hands a model over or makes it shared, checking the editor role on both sides', () => {
    const required: (string | undefined)[] = [];
    const access: CatalogAccess = { canSee: () => true, requireEditor: (o) => void required.push(o) };
    const s = state([added('a', {}, { owner: 'team:a' })]);
    const r = applyChange(s, { verb: 'owner', name: 'a', owner: 'team:b' }, { ...ctx, access });
    expect(r.after?.owner).toBe('team:b');
    expect(required).toEqual(['team:a', 'team:b']);
    const shared = applyChange(s, { verb: 'owner', name: 'a' }, ctx);
    expect('owner' in shared.after!).toBe(false);
  });

  it('an unchanged replace still needs the editor role of an added model, and none for a declared one', () => {
    const required: (string | undefined)[] = [];
    const access: CatalogAccess = { canSee: () => true, requireEditor: (o) => void required.push(o) };
    const a = added('a', {}, { owner: 'team:a' });
    const s = state([declared('decl'), a]);
    const decl = s.models.find((m) => m.name === 'decl')!;
    const same = applyChange(
      s,
      { verb: 'replace', name: 'a', owner: 'team:a', spec: a.spec },
      { ...ctx, access },
    );
    expect(same).toMatchObject({ unchanged: true, after: { version: a.version, updatedBy: a.updatedBy } });
    expect(required).toEqual(['team:a']);
    expect(
      applyChange(s, { verb: 'replace', name: 'decl', spec: decl.spec }, { ...ctx, access }).unchanged,
    ).toBe(true);
    expect(required).toEqual(['team:a']);
  });

  it('a model the caller cannot see answers as missing; a declared one is visible to all', () => {
    const access: CatalogAccess = { canSee: (o) => !o, requireEditor: () => undefined };
    const s = state([declared('decl'), added('hidden', {}, { owner: 'team:x' })]);
    expect(
      refusal(s, { verb: 'scale', name: 'hidden', scaling: { min: 0, max: 1 } }, { ...ctx, access }).kind,
    ).toBe('not-found');
    expect(refusal(s, { verb: 'remove', name: 'decl' }, { ...ctx, access }).details.reason).toBe('Declared');
  });

  it('a problem that was there already (a declared model) does not block an unrelated change', () => {
    const broken = declared('decl', { fallback: 'ghost' });
    const r = applyChange(state([broken]), { verb: 'add', name: 'c', spec: l4 }, ctx);
    expect(r.next.map((m) => m.name)).toEqual(['decl', 'c']);
  });

  it('PUT of a missing model adds it; PUT with a version on a missing model is not-found', () => {
    expect(applyChange(base(), { verb: 'replace', name: 'new', spec: l4 }, ctx).before).toBeUndefined();
    expect(refusal(base(), { verb: 'replace', name: 'new', spec: l4, expectedVersion: 1 }).kind).toBe(
      'not-found',
    );
  });

  it('a skipped row can be replaced or removed, and refuses the other verbs with what to do', () => {
    const s = state([], [{ name: 'bad', problem: 'the stored row does not parse (spec: bad)' }]);
    expect(applyChange(s, { verb: 'remove', name: 'bad' }, ctx).replacesSkipped?.name).toBe('bad');
    expect(applyChange(s, { verb: 'replace', name: 'bad', spec: l4 }, ctx).after?.name).toBe('bad');
    expect(refusal(s, { verb: 'scale', name: 'bad', scaling: { min: 0, max: 1 } }).message).toMatch(
      /stored but left out .* replace it with PUT \/v1\/models\/bad or remove it with DELETE/,
    );
    expect(refusal(s, { verb: 'add', name: 'bad', spec: l4 }).details.reason).toBe('Skipped');
  });
});

describe('buildCatalog', () => {
  const row = (m: Model) => {
    const { declared: _d, ...rest } = m;
    return { pk: 'MODEL', sk: m.name, ...rest } as Record<string, unknown>;
  };

  it('skips a corrupt row, a declared name and a no-longer-valid row, one at a time; declared ones survive', () => {
    const decl = declared('decl');
    const rows = [
      { pk: 'MODEL', sk: 'corrupt', name: 'corrupt', spec: 'not a spec', version: 1 },
      row(added('decl')),
      row(
        added('gone-compute', {
          profiles: [{ name: 'x', gpus: 1, gpuType: 'L4', cpuCores: 1, minMemoryGb: 1, compute: 'deleted' }],
        }),
      ),
      row(added('depends', { fallback: 'gone-compute' })),
      row(added('fine')),
    ];
    const built = buildCatalog([decl], rows, computes);
    expect(built.models.map((m) => m.name)).toEqual(['decl', 'fine']);
    expect(built.models[0]!.declared).toBe(true);
    expect(built.skipped.map((s) => s.name)).toEqual(['corrupt', 'decl', 'gone-compute', 'depends']);
    expect(built.skipped[0]!.problem).toMatch(/does not parse \(spec: /);
    expect(built.skipped[2]!.problem).toMatch(/no longer validates: .*pins compute deleted/);
    expect(built.skipped[3]!.problem).toMatch(/fallback gone-compute is not in the catalog/);
  });

  it('breaks a stored fallback cycle by skipping the most recently changed member first', () => {
    const rows = [
      row(added('a', { fallback: 'b' }, { updatedAt: '2025-01-02T00:00:00.000Z' })),
      row(added('b', { fallback: 'a' }, { updatedAt: '2025-01-03T00:00:00.000Z' })),
    ];
    const built = buildCatalog([], rows, computes);
    // b goes first (changed last); then a names a fallback that is gone, so it goes too, in a second step.
    expect(built.skipped.map((s) => [s.name, s.problem])).toEqual([
      ['b', expect.stringMatching(/cycle a → b → a/)],
      ['a', expect.stringMatching(/fallback b is not in the catalog/)],
    ]);
    const three = buildCatalog([], [...rows, row(added('c'))], computes);
    expect(three.models.map((m) => m.name)).toEqual(['c']);
  });

  it('keeps declared models that break a rule (configuration wins) and reports them as issues', () => {
    const built = buildCatalog([declared('decl', { fallback: 'ghost' })], [], computes);
    expect(built.models.map((m) => m.name)).toEqual(['decl']);
    expect(built.issues).toHaveLength(1);
  });

  it('turns declared entries into models readable as such', () => {
    const m = declaredToModel({ name: 'x', spec: l4 }, NOW);
    expect(modelManifest(m).metadata).toMatchObject({
      name: 'x',
      owner: '',
      declared: true,
      createdBy: 'config',
    });
  });
});

describe('the default pre-add check', () => {
  const p = (spec: Partial<ModelSpec>) => engineProblems({ spec: { ...l4, ...spec } });

  it('llama.cpp and Ollama need GGUF weights; TGI refuses them; vLLM takes one GGUF file', () => {
    const cpu = [{ name: 'cpu', gpus: 0, cpuCores: 2, minMemoryGb: 4 }];
    expect(p({ engine: 'llamacpp', profiles: cpu })[0]).toMatch(
      /loads GGUF weights and hf:\/\/Qwen\/Qwen3-8B names none/,
    );
    expect(p({ engine: 'ollama', source: 'hf://Qwen/Qwen3-8B-GGUF', profiles: cpu })).toEqual([]);
    expect(p({ engine: 'tgi', source: 's3://weights/q/model.gguf' })[0]).toMatch(/tgi cannot load GGUF/);
    expect(p({ source: 'hf://Qwen/Qwen3-8B-GGUF' })[0]).toMatch(/GGUF only as one file/);
    expect(p({ source: 'hf://Qwen/Qwen3-8B-GGUF/qwen3-8b-q4_k_m.gguf' })).toEqual([]);
  });

  it('vLLM, SGLang and TGI need a GPU in every profile; an s3 source names a prefix', () => {
    const cpu = [{ name: 'cpu', gpus: 0, cpuCores: 2, minMemoryGb: 4 }];
    expect(p({ engine: 'sglang', profiles: cpu })[0]).toMatch(
      /sglang needs a GPU and profile cpu asks for none/,
    );
    expect(p({ source: 's3://weights' })[0]).toMatch(/names a whole bucket/);
    expect(p({ source: 's3://weights/llama' })).toEqual([]);
  });
});

describe('queries', () => {
  it('maps each source to the models that use it', () => {
    const models = [added('b'), added('a'), added('c', { source: 's3://w/x' })];
    expect(sourcesIndex(models)).toEqual([
      { source: 'hf://Qwen/Qwen3-8B', models: ['a', 'b'] },
      { source: 's3://w/x', models: ['c'] },
    ]);
  });

  it('a compute is used by models that pin it or with a profile no other compute can hold', () => {
    const pinned = added('p', {
      profiles: [{ name: 'x', gpus: 1, gpuType: 'L4', cpuCores: 1, minMemoryGb: 1, compute: 'gpu-l4-1x' }],
    });
    const onlyL4 = added('o');
    // One GPU of any type: every GPU compute can hold it.
    const anyGpu = added('g', { profiles: [{ name: 'any', gpus: 1, cpuCores: 1, minMemoryGb: 1 }] });
    expect(modelsUsingCompute([pinned, onlyL4, anyGpu], computes, 'gpu-l4-1x')).toEqual(['o', 'p']);
    expect(modelsUsingCompute([pinned, onlyL4, anyGpu], computes, 'gpu-a10g-1x')).toEqual([]);
  });
});
