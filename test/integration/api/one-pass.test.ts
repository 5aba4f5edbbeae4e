import { type TestApi, testApi } from '../../helpers/api';
import { dumpTable } from '../../helpers/dump';

/**
 * One request with several faults answers one 400 problem+json listing all of them (issue 18 §3): type errors
 * beside cross-field rules and repeated entries, each with its path, for a real write and for ?dryRun=All, and
 * nothing is written.
 */

let api: TestApi;
beforeAll(async () => {
  api = await testApi();
  expect((await api.call('POST', '/v1/scopes', { name: 'org:op' })).status).toBe(201);
});

const LEAD = 'arn:aws:iam::111111111111:role/op-lead';

const model = {
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name: 'faulty' },
  spec: {
    source: 'hf://Qwen/Qwen3-8B',
    engine: 'vllm',
    profiles: [
      { name: 'l4', gpus: 'one', gpuType: 'L4', cpuCores: 4 },
      { name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4 },
    ],
    scaling: { min: 3, max: 1 },
  },
};

const compute = {
  apiVersion: 'llmcap/v1',
  kind: 'Compute',
  metadata: { name: 'other-name' },
  spec: {
    node: { instanceType: 'g6.2xlarge', cpu: 'eight' },
    nodeGroup: { maxNodes: 2, subnetIds: ['subnet-0abc1234', 'subnet-0abc1234'] },
  },
};

const cases: [string, string, string, unknown, { path: string; message: RegExp }[]][] = [
  [
    'a model: a type error, min > max and a repeated profile',
    'PUT',
    '/v1/models/faulty',
    model,
    [
      { path: 'spec.profiles[0].gpus', message: /expected number/ },
      {
        path: 'spec.scaling.min',
        message: /scaling\.min \(3\) is above scaling\.max \(1\); raise max or lower min/,
      },
      {
        path: 'spec.profiles[1].name',
        message: /profile name l4 is already the name of spec\.profiles\[0\]/,
      },
    ],
  ],
  [
    'a new model by POST',
    'POST',
    '/v1/models',
    model,
    [
      { path: 'spec.profiles[0].gpus', message: /expected number/ },
      { path: 'spec.scaling.min', message: /above scaling\.max/ },
      { path: 'spec.profiles[1].name', message: /already the name of spec\.profiles\[0\]/ },
    ],
  ],
  [
    "a model's scaling: a type error beside min > max",
    'PUT',
    '/v1/models/qwen3-8b/scaling',
    { min: 5, max: 2, target: 'all' },
    [
      { path: 'spec.scaling.target', message: /expected number/ },
      { path: 'spec.scaling.min', message: /scaling\.min \(5\) is above scaling\.max \(2\)/ },
    ],
  ],
  [
    'a compute: a type error, a repeated subnet and a name that disagrees with the path',
    'PUT',
    '/v1/computes/faulty',
    compute,
    [
      { path: 'spec.node.cpu', message: /expected number/ },
      {
        path: 'spec.nodeGroup.subnetIds[1]',
        message: /subnet-0abc1234 repeats spec\.nodeGroup\.subnetIds\[0\]/,
      },
      { path: 'metadata.name', message: /is other-name but the path names faulty; make them agree/ },
    ],
  ],
  [
    'a quota: a type error beside each limit below its guarantee',
    'PUT',
    '/v1/quotas/org:op',
    { guarantee: { gpus: 8, cores: 'lots', memoryGb: 64 }, limit: { gpus: 4, memoryGb: 32 } },
    [
      { path: 'guarantee.cores', message: /expected number/ },
      { path: 'limit.gpus', message: /limit\.gpus \(4\) is below guarantee\.gpus \(8\)/ },
      { path: 'limit.memoryGb', message: /below guarantee\.memoryGb \(64\)/ },
    ],
  ],
  [
    'the members of a scope: a bad role, a principal in no form and a repeated member',
    'PUT',
    '/v1/scopes/org:op/members',
    {
      members: [
        { principal: LEAD, role: 'admin' },
        { principal: 'arn:aws:iam::111111111111:role/dev', role: 'boss' },
        { principal: 'op-dev', role: 'viewer' },
        { principal: LEAD, role: 'viewer' },
      ],
    },
    [
      { path: 'members[1].role', message: /expected one of/ },
      { path: 'members[2].principal', message: /./ },
      {
        path: 'members[3]',
        message: new RegExp(`repeats members\\[0\\] \\(${LEAD}\\); list each member once`),
      },
    ],
  ],
  [
    'the instance families of a scope: a malformed and a repeated family',
    'PUT',
    '/v1/scopes/org:op/instance-families',
    { instanceFamilies: ['g6', 'G6E', 'p5', 'g6'] },
    [
      { path: 'instanceFamilies[1]', message: /an EC2 instance family/ },
      { path: 'instanceFamilies[3]', message: /g6 repeats instanceFamilies\[0\]; list each family once/ },
    ],
  ],
];

describe.each(['', '?dryRun=All'])('one answer for every fault (%s)', (query) => {
  it.each(cases)('%s', async (_, method, path, body, expected) => {
    const before = await dumpTable();
    const r = await api.call(method, `${path}${query}`, body);
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.body.detail).toBe(
      `the request has ${expected.length} invalid field(s); fix each one listed in errors`,
    );
    expect(r.body.errors).toEqual(
      expected.map((e) => ({ path: e.path, message: expect.stringMatching(e.message) })),
    );
    expect(await dumpTable()).toEqual(before);
  });
});

describe('refusals that need more than the body', () => {
  it('name the field of each engine problem (the default pre-add check), once the body parses', async () => {
    const before = await dumpTable();
    const r = await api.call('POST', '/v1/models', {
      ...model,
      metadata: { name: 'cpu-vllm' },
      spec: {
        ...model.spec,
        source: 's3://weights',
        profiles: [{ name: 'cpu', gpus: 0, cpuCores: 2, minMemoryGb: 4 }],
        scaling: { min: 0, max: 1 },
      },
    });
    expect(r.status).toBe(400);
    expect(r.body.reason).toBe('CannotRun');
    expect(r.body.errors).toEqual([
      { path: 'spec.source', message: expect.stringMatching(/names a whole bucket/) },
      { path: 'spec.profiles[0].gpus', message: expect.stringMatching(/vllm needs a GPU and profile cpu/) },
    ]);
    expect(await dumpTable()).toEqual(before);
  });
});
