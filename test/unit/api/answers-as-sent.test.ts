import * as fc from 'fast-check';
import { answer } from '../../../lambdas/api/app';
import { type ComputeSpec, ComputeSpecSchema, toManifest } from '../../../lambdas/domain/compute';
import { type Model, modelManifest } from '../../../lambdas/domain/model';
import { asSent } from '../../../lambdas/domain/names';

/**
 * Answers are never rewritten as text (issue 30 §5): what a caller sent comes back exactly as sent, however much
 * it looks like a twin key (`llama3~abcdefgh`), while the keys llmcap itself writes into an answer (names,
 * owners, pins, messages) still read as names. Arbitrary strings go into every free-text field of a model's,
 * a compute's and a scope's answer, through the one function that sends every answer.
 */

/** Strings of every kind, and many shaped like a key with its twin mark, alone or inside a path. */
const text = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc
    .tuple(fc.stringMatching(/^[a-z0-9]{1,10}$/), fc.stringMatching(/^[a-z2-7]{8}$/), fc.string())
    .map(([name, mark, rest]) => `${name}~${mark}${rest}`),
  fc.constant('s3://my-bucket/llama3~abcdefgh/weights'),
);

const sent = (body: unknown) => JSON.parse(answer({ status: 200, body }).body as string);

/** Every string leaf of `value` replaced, in order, by the strings drawn (cycled). */
function fill<T>(value: T, strings: string[]): T {
  let i = 0;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return strings[i++ % strings.length];
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}

const model = (spec: Model['spec']): Model => ({
  name: 'chat~abcdefgh',
  owner: 'project:a~bcdefghi',
  spec,
  declared: false,
  version: 3,
  createdAt: '2026-12-06T00:00:00.000Z',
  createdBy: 'arn:aws:iam::111111111111:role/a-dev',
  updatedAt: '2026-12-06T00:00:00.000Z',
  updatedBy: 'arn:aws:iam::111111111111:role/a-dev',
});

const computeSpec: ComputeSpec = ComputeSpecSchema.parse({
  node: { instanceType: 'g6.2xlarge', cpu: 8, memoryGb: 32, gpu: { type: 'L4', count: 1, memoryGb: 24 } },
  nodeGroup: { maxNodes: 3 },
  cost: { perHour: 0.9776 },
});

describe('an answer', () => {
  it("hands a model's source and every other free-text field back unchanged; its own keys read as names", () => {
    fc.assert(
      fc.property(text, text, text, (source, gpuType, profile) => {
        const spec = {
          source,
          engine: 'vllm',
          profiles: [
            { name: profile, gpus: 1, gpuType, cpuCores: 4, compute: 'l4~cdefghij' },
            { name: 'b', gpus: 0, cpuCores: 2 },
          ],
          scaling: { min: 0, max: 1 },
          fallback: 'small~defghijk',
        } as Model['spec'];
        const out = sent(modelManifest(model(spec)));
        expect(out.spec).toEqual({
          ...spec,
          profiles: [{ ...spec.profiles[0], compute: 'l4' }, spec.profiles[1]],
          fallback: 'small',
        });
        expect(out.metadata).toMatchObject({ name: 'chat', owner: 'project:a' });
      }),
    );
  });

  it("hands every string of a compute's spec back unchanged", () => {
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 8 }), (strings) => {
        const spec = fill(computeSpec, strings);
        const c = {
          name: 'l4~abcdefgh',
          owner: 'team:ml',
          builtin: false,
          spec,
          version: 1,
          createdAt: 'x',
          createdBy: 'x',
          updatedAt: 'x',
          updatedBy: 'x',
          status: { nodegroupStatus: 'ABSENT', desiredNodes: 0, readyNodes: 0 },
          generation: 1,
        } as unknown as Parameters<typeof toManifest>[1];
        const out = sent(toManifest('local', c));
        expect(out.spec).toEqual(spec);
        expect(out.metadata.name).toBe('l4');
      }),
    );
  });

  it("hands a scope's members back as granted, principals of any path included", () => {
    fc.assert(
      fc.property(fc.dictionary(text, text), (members) => {
        const out = sent({ metadata: { name: 'team:ml~abcdefgh' }, spec: { members: asSent(members) } });
        expect(out.spec.members).toEqual(members);
        expect(out.metadata.name).toBe('team:ml');
      }),
    );
  });

  it('reads keys as names in what llmcap composed: messages, map keys, headers', () => {
    const res = answer({
      status: 409,
      body: { detail: 'model chat~abcdefgh of project:a~bcdefghi', usage: { 'project:a~bcdefghi': 2 } },
      headers: { location: '/v1/models/chat~abcdefgh' },
    });
    expect(JSON.parse(res.body as string)).toEqual({
      detail: 'model chat of project:a',
      usage: { 'project:a': 2 },
    });
    expect(res.headers?.location).toBe('/v1/models/chat');
  });
});
