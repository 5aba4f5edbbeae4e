import { HttpError, parseBody } from '../../../lambdas/api/http';
import { ModelBody, ScalingBody } from '../../../lambdas/api/routes/models';
import { InstanceFamiliesBody, MembersBody, QuotaBody } from '../../../lambdas/api/routes/tenancy';
import { DeclaredComputeManifestSchema } from '../../../lambdas/domain/hardware';
import { formatPath, repeats } from '../../../lambdas/domain/rules';

/**
 * Every issue of a body in one answer (issue 18 §3): type errors and cross-field rules together, with one path
 * format, duplicates named with the entry they repeat.
 */

/** The field issues parseBody answers for `body`, or [] when it parses. */
function issuesOf(schema: Parameters<typeof parseBody>[0], body: unknown) {
  try {
    parseBody(schema, body);
    return [];
  } catch (e) {
    expect(e).toBeInstanceOf(HttpError);
    return (e as HttpError).extra.errors ?? [];
  }
}

const model = (spec: Record<string, unknown>) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name: 'm' },
  spec: {
    source: 'hf://a/b',
    engine: 'vllm',
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4 }],
    scaling: { min: 1, max: 2 },
    ...spec,
  },
});

describe('formatPath', () => {
  it('writes names with dots, indexes and other keys in brackets', () => {
    expect(formatPath(['spec', 'profiles', 0, 'gpus'])).toBe('spec.profiles[0].gpus');
    expect(formatPath(['members', 'arn:aws:iam::1:role/x'])).toBe('members["arn:aws:iam::1:role/x"]');
    expect(formatPath([3, 'principal'])).toBe('[3].principal');
  });
});

describe('repeats', () => {
  it('names each repeat with the first entry it repeats, skipping entries that cannot be compared', () => {
    expect(repeats(['a', 1, 'b', 'a', 'a'], (x) => (typeof x === 'string' ? x : undefined))).toEqual([
      { index: 3, first: 0, key: 'a' },
      { index: 4, first: 0, key: 'a' },
    ]);
  });
});

describe('a model manifest', () => {
  it('lists a type error, min > max and a duplicate profile name in one answer', () => {
    const body = model({
      profiles: [
        { name: 'l4', gpus: 'one', cpuCores: 4 },
        { name: 'l4', gpus: 1, cpuCores: 4 },
      ],
      scaling: { min: 3, max: 1 },
    });
    expect(issuesOf(ModelBody, body)).toEqual([
      { path: 'spec.profiles[0].gpus', message: expect.stringMatching(/expected number/) },
      {
        path: 'spec.scaling.min',
        message: expect.stringMatching(/scaling\.min \(3\) is above scaling\.max \(1\)/),
      },
      {
        path: 'spec.profiles[1].name',
        message: expect.stringMatching(/already the name of spec\.profiles\[0\]/),
      },
    ]);
  });

  it('checks a profile of its own (CPU-only needs minMemoryGb) beside another field type error', () => {
    const body = model({
      engine: 'llamacpp',
      source: 'hf://a/b-GGUF',
      profiles: [{ name: 'cpu', gpus: 0, gpuType: 'L4', cpuCores: 'x' }],
    });
    expect(issuesOf(ModelBody, body).map((i) => i.path)).toEqual([
      'spec.profiles[0].cpuCores',
      'spec.profiles[0].minMemoryGb',
      'spec.profiles[0].gpuType',
    ]);
  });

  it('compares min and max though target has a type error, and never when min itself failed', () => {
    expect(issuesOf(ScalingBody, { min: 3, max: 1, target: 'x' }).map((i) => i.path)).toEqual([
      'target',
      'min',
    ]);
    expect(issuesOf(ScalingBody, { min: 'x', max: 1 }).map((i) => i.path)).toEqual(['min']);
    expect(issuesOf(ScalingBody, { min: 0, max: 2, target: 5 })).toEqual([
      { path: 'target', message: expect.stringMatching(/outside \[0, 2\]/) },
    ]);
  });
});

describe('a quota', () => {
  it('lists a type error and each limit below its guarantee together', () => {
    expect(
      issuesOf(QuotaBody, {
        guarantee: { gpus: 4, cores: 'many', memoryGb: 64 },
        limit: { gpus: 2, memoryGb: 32 },
      }),
    ).toEqual([
      { path: 'guarantee.cores', message: expect.stringMatching(/expected number/) },
      {
        path: 'limit.gpus',
        message: 'limit.gpus (2) is below guarantee.gpus (4); raise the limit or lower the guarantee',
      },
      { path: 'limit.memoryGb', message: expect.stringMatching(/below guarantee\.memoryGb \(64\)/) },
    ]);
  });
});

describe('members', () => {
  const LEAD = 'arn:aws:iam::111111111111:role/lead';
  it('names a repeated member of a list by its index, beside a bad role and a principal in no form', () => {
    const r = issuesOf(MembersBody, {
      members: [
        { principal: LEAD, role: 'admin' },
        { principal: 'nobody', role: 'viewer' },
        { principal: 'arn:aws:iam::111111111111:role/dev', role: 'boss' },
        { principal: LEAD, role: 'viewer' },
      ],
    });
    expect(r).toEqual([
      { path: 'members[2].role', message: expect.stringMatching(/expected one of/) },
      { path: 'members[1].principal', message: expect.any(String) },
      { path: 'members[3]', message: `repeats members[0] (${LEAD}); list each member once` },
    ]);
  });

  it('writes a map key that is not a plain name in brackets', () => {
    expect(issuesOf(MembersBody, { members: { 'not-an-arn': 'admin' } }).map((i) => i.path)).toEqual([
      'members["not-an-arn"]',
    ]);
  });

  it('takes a list as the map it stands for', () => {
    expect(parseBody(MembersBody, { members: [{ principal: LEAD, role: 'admin' }] })).toEqual({
      members: { [LEAD]: 'admin' },
    });
  });
});

describe('instance families and subnets', () => {
  it('names a repeated family at its second place', () => {
    expect(issuesOf(InstanceFamiliesBody, { instanceFamilies: ['g6', 'P5', 'g6'] })).toEqual([
      { path: 'instanceFamilies[1]', message: expect.stringMatching(/instance family/) },
      { path: 'instanceFamilies[2]', message: 'g6 repeats instanceFamilies[0]; list each family once' },
    ]);
  });

  it('names a repeated subnet of a compute beside a type error', () => {
    const r = issuesOf(DeclaredComputeManifestSchema, {
      apiVersion: 'llmcap/v1',
      kind: 'Compute',
      metadata: { name: 'c' },
      spec: {
        node: { instanceType: 'g6.2xlarge', cpu: 'eight' },
        nodeGroup: { subnetIds: ['subnet-0abc1234', 'subnet-0abc1234'] },
      },
    });
    expect(r).toEqual([
      { path: 'spec.node.cpu', message: expect.stringMatching(/expected number/) },
      {
        path: 'spec.nodeGroup.subnetIds[1]',
        message: 'subnet-0abc1234 repeats spec.nodeGroup.subnetIds[0]; list each subnet once',
      },
    ]);
  });
});

describe('numbers DynamoDB cannot store', () => {
  it('come in the same answer as the type errors', () => {
    expect(issuesOf(QuotaBody, { guarantee: { gpus: 'x', cores: 1e-200 } }).map((i) => i.path)).toEqual([
      'guarantee.gpus',
      'guarantee.cores',
    ]);
  });
});
