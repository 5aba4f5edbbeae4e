import {
  CreateNodegroupCommand,
  type CreateNodegroupCommandInput,
  UpdateNodegroupConfigCommand,
} from '@aws-sdk/client-eks';
import { CLUSTER, create, createInput, describeNg, failure, type Harness, harness, MIN } from './helpers';

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(async () => {
  await h.close();
});
afterEach(() => h.sim.admin.reset());

const taints = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: 'v', effect: 'NO_SCHEDULE' as const }));
const tags = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`t${i}`, 'v']));

// [case, input override, error name, exact message or pattern]
const createCases: [
  string,
  Partial<CreateNodegroupCommandInput> & Record<string, unknown>,
  string,
  string | RegExp,
][] = [
  [
    'name longer than 63',
    { nodegroupName: 'a'.repeat(64) },
    'InvalidParameterException',
    "nodeGroupName can't be longer than 63 characters!",
  ],
  [
    'name starting with a hyphen',
    { nodegroupName: '-gpu' },
    'InvalidParameterException',
    /Nodegroup name -gpu is invalid/,
  ],
  ['name with a dot', { nodegroupName: 'gpu.l4' }, 'InvalidParameterException', /is invalid/],
  [
    'missing nodegroupName',
    { nodegroupName: undefined },
    'InvalidParameterException',
    "nodegroupName can't be empty",
  ],
  ['missing subnets', { subnets: undefined }, 'InvalidParameterException', "subnets can't be empty"],
  [
    'bad subnet id',
    { subnets: ['sub-123'] },
    'InvalidParameterException',
    "The subnet ID 'sub-123' is not valid",
  ],
  ['missing nodeRole', { nodeRole: undefined }, 'InvalidParameterException', "nodeRole can't be empty"],
  [
    'bad role ARN',
    { nodeRole: 'arn:aws:iam::123:role/x' },
    'InvalidParameterException',
    "Invalid Role Arn: 'arn:aws:iam::123:role/x'",
  ],
  [
    'partial scalingConfig',
    { scalingConfig: { minSize: 1, maxSize: 2 } },
    'InvalidParameterException',
    /you must specify all or none/,
  ],
  [
    'min > desired',
    { scalingConfig: { minSize: 3, maxSize: 4, desiredSize: 2 } },
    'InvalidParameterException',
    "minSize can't be greater than desiredSize",
  ],
  [
    'desired > max',
    { scalingConfig: { minSize: 0, maxSize: 2, desiredSize: 3 } },
    'InvalidParameterException',
    "desiredSize can't be greater than maxSize",
  ],
  [
    'max 0',
    { scalingConfig: { minSize: 0, maxSize: 0, desiredSize: 0 } },
    'InvalidParameterException',
    "maxSize can't be less than 1",
  ],
  [
    'negative min',
    { scalingConfig: { minSize: -1, maxSize: 2, desiredSize: 0 } },
    'InvalidParameterException',
    "minSize can't be less than 0",
  ],
  [
    'max over the 450 quota',
    { scalingConfig: { minSize: 0, maxSize: 451, desiredSize: 1 } },
    'InvalidParameterException',
    "maxSize can't be greater than 450",
  ],
  [
    'label key over 63',
    { labels: { ['k'.repeat(64)]: 'v' } },
    'InvalidParameterException',
    /must be between 1 and 63/,
  ],
  [
    'label value over 63',
    { labels: { k: 'v'.repeat(64) } },
    'InvalidParameterException',
    /must be between 1 and 63/,
  ],
  [
    'reserved label prefix',
    { labels: { 'node.kubernetes.io/role': 'x' } },
    'InvalidParameterException',
    'Label cannot contain reserved prefixes [kubernetes.io/, k8s.io/, eks.amazonaws.com/]',
  ],
  [
    'eks.amazonaws.com label',
    { labels: { 'eks.amazonaws.com/nodegroup': 'x' } },
    'InvalidParameterException',
    /reserved prefixes/,
  ],
  [
    'label value with a space',
    { labels: { k: 'a b' } },
    'InvalidParameterException',
    /Invalid value: "a b": field must consist of alphanumeric characters/,
  ],
  [
    '51 taints',
    { taints: taints(51) },
    'InvalidParameterException',
    "Nodegroup can't have more than 50 taints",
  ],
  [
    'taint key over 63',
    { taints: [{ key: 'k'.repeat(64), effect: 'NO_SCHEDULE' }] },
    'InvalidParameterException',
    /can't be longer than 63/,
  ],
  [
    'taint value over 63',
    { taints: [{ key: 'k', value: 'v'.repeat(64), effect: 'NO_SCHEDULE' }] },
    'InvalidParameterException',
    /can't be longer than 63/,
  ],
  [
    'Kubernetes-style taint effect',
    { taints: [{ key: 'k', effect: 'NoSchedule' as never }] },
    'InvalidParameterException',
    /Taint effect NoSchedule is invalid/,
  ],
  ['51 tags', { tags: tags(51) }, 'InvalidParameterException', "Resource can't have more than 50 tags"],
  [
    'tag key over 128',
    { tags: { ['t'.repeat(129)]: 'v' } },
    'InvalidParameterException',
    /between 1 and 128/,
  ],
  [
    'tag value over 256',
    { tags: { t: 'v'.repeat(257) } },
    'InvalidParameterException',
    /can't be longer than 256/,
  ],
  [
    'aws: tag prefix',
    { tags: { 'aws:owner': 'x' } },
    'InvalidRequestException',
    "'aws:owner' is not a valid tag key",
  ],
  ['unknown amiType', { amiType: 'UBUNTU' as never }, 'InvalidParameterException', /AMI Type UBUNTU/],
  [
    'unknown capacityType',
    { capacityType: 'RESERVED' as never },
    'InvalidParameterException',
    /Capacity type RESERVED/,
  ],
  [
    'diskSize with a launch template',
    { diskSize: 100, launchTemplate: { name: 'lt', version: '1' } },
    'InvalidParameterException',
    'Disk size must be specified within the launch template.',
  ],
  [
    'version other than the cluster',
    { version: '1.20' },
    'InvalidParameterException',
    /equal to the current Kubernetes version/,
  ],
  [
    'maxUnavailable above maxSize',
    { updateConfig: { maxUnavailable: 5 } },
    'InvalidParameterException',
    'max-unavailable must be within the range 1 and max size of the node group',
  ],
  [
    'both maxUnavailable forms',
    { updateConfig: { maxUnavailable: 1, maxUnavailablePercentage: 10 } },
    'InvalidParameterException',
    /Only one of/,
  ],
];

describe('CreateNodegroup validation', () => {
  it.each(createCases)('refuses %s', async (_case, override, name, message) => {
    const e = await failure(
      h.eks.send(
        new CreateNodegroupCommand({ ...createInput('v'), ...override } as CreateNodegroupCommandInput),
      ),
    );
    expect(e.name).toBe(name);
    expect(e.$metadata.httpStatusCode).toBe(400);
    if (typeof message === 'string') expect(e.message).toBe(message);
    else expect(e.message).toMatch(message);
    // Nothing was created by a refused request.
    expect(await failure(describeNg(h, 'v'))).toHaveProperty('name', 'ResourceNotFoundException');
  });

  it('accepts the edges: a 63-character name with _ and -, 450 nodes, 50 taints and tags, min = desired = max', async () => {
    const name = `a_-${'x'.repeat(60)}`;
    await create(h, name, {
      scalingConfig: { minSize: 450, maxSize: 450, desiredSize: 450 },
      taints: taints(50),
      tags: tags(50),
      labels: { 'llmcap.dev/compute': 'gpu-l4-1x', [`k${'x'.repeat(61)}`]: 'v'.repeat(63) },
    });
    expect((await describeNg(h, name)).taints).toHaveLength(50);
  });

  it('refuses the 31st node group of the cluster with ResourceLimitExceededException', async () => {
    for (let i = 0; i < 30; i++) await create(h, `ng${i}`);
    const e = await failure(h.eks.send(new CreateNodegroupCommand(createInput('ng30'))));
    expect(e.name).toBe('ResourceLimitExceededException');
    expect(e.$metadata.httpStatusCode).toBe(400);
    expect(e.clusterName).toBe(CLUSTER);
  });
});

describe('UpdateNodegroupConfig validation on the merged config', () => {
  const update = (input: Record<string, unknown>) =>
    h.eks.send(new UpdateNodegroupConfigCommand({ clusterName: CLUSTER, nodegroupName: 'm', ...input }));

  beforeEach(async () => {
    await create(h, 'm', { scalingConfig: { minSize: 1, maxSize: 4, desiredSize: 2 } });
    h.clock.advance(3 * MIN);
  });

  it('refuses a min above the current desired, with the update wording', async () => {
    const e = await failure(update({ scalingConfig: { minSize: 3 } }));
    expect(e.name).toBe('InvalidParameterException');
    expect(e.message).toBe("Minimum capacity 3 can't be greater than desired size 2");
  });

  it('refuses a desired above the current max, and a max below the current desired', async () => {
    expect((await failure(update({ scalingConfig: { desiredSize: 5 } }))).message).toBe(
      "desiredSize can't be greater than maxSize",
    );
    expect((await failure(update({ scalingConfig: { maxSize: 1 } }))).message).toBe(
      "desiredSize can't be greater than maxSize",
    );
  });

  it('accepts any subset of the sizes when the merge is consistent', async () => {
    await update({ scalingConfig: { desiredSize: 4 } });
    expect((await describeNg(h, 'm')).scalingConfig).toEqual({ minSize: 1, maxSize: 4, desiredSize: 4 });
  });

  it('refuses a max above 450, bad labels and taints, and an empty update', async () => {
    expect((await failure(update({ scalingConfig: { maxSize: 451 } }))).message).toBe(
      "maxSize can't be greater than 450",
    );
    expect((await failure(update({ labels: { addOrUpdateLabels: { 'k8s.io/x': 'y' } } }))).message).toMatch(
      /reserved prefixes/,
    );
    expect(
      (await failure(update({ taints: { addOrUpdateTaints: [{ key: 'k', effect: 'NoExecute' }] } }))).name,
    ).toBe('InvalidParameterException');
    expect((await failure(update({}))).name).toBe('InvalidParameterException');
    // The refused updates changed nothing and left the group ACTIVE.
    const ng = await describeNg(h, 'm');
    expect(ng.status).toBe('ACTIVE');
    expect(ng.scalingConfig).toEqual({ minSize: 1, maxSize: 4, desiredSize: 2 });
  });
});
