import {
  CreateNodegroupCommand,
  DeleteNodegroupCommand,
  DescribeClusterCommand,
  DescribeNodegroupCommand,
  DescribeUpdateCommand,
  ListNodegroupsCommand,
  paginateListNodegroups,
  UpdateNodegroupConfigCommand,
} from '@aws-sdk/client-eks';
import {
  CLUSTER,
  create,
  createInput,
  describeNg,
  failure,
  type Harness,
  harness,
  MIN,
  ROLE,
  SEC,
  status,
} from './helpers';

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => {
  await h.close();
});

describe('DescribeCluster', () => {
  it('describes the configured cluster as ACTIVE', async () => {
    const { cluster } = await h.eks.send(new DescribeClusterCommand({ name: CLUSTER }));
    expect(cluster?.status).toBe('ACTIVE');
    expect(cluster?.arn).toBe('arn:aws:eks:us-east-1:000000000000:cluster/llmcap-local');
    expect(cluster?.version).toMatch(/^1\.\d+$/);
    expect(cluster?.createdAt).toBeInstanceOf(Date);
  });

  it('answers 404 with the EKS message for another cluster, on every node group route', async () => {
    const e = await failure(h.eks.send(new DescribeClusterCommand({ name: 'prod' })));
    expect(e.name).toBe('ResourceNotFoundException');
    expect(e.message).toBe('No cluster found for name: prod.');
    expect(e.$metadata.httpStatusCode).toBe(404);
    const e2 = await failure(
      h.eks.send(new CreateNodegroupCommand({ ...createInput('a'), clusterName: 'prod' })),
    );
    expect(e2.message).toBe('No cluster found for name: prod.');
    const e3 = await failure(h.eks.send(new ListNodegroupsCommand({ clusterName: 'prod' })));
    expect(e3.name).toBe('ResourceNotFoundException');
  });
});

describe('CreateNodegroup and DescribeNodegroup', () => {
  it('creates a CREATING node group with an ARN, and describes its ASG named after the same uuid', async () => {
    const created = await create(h, 'gpu-l4');
    expect(created.status).toBe('CREATING');
    expect(created.nodegroupArn).toMatch(
      /^arn:aws:eks:us-east-1:000000000000:nodegroup\/llmcap-local\/gpu-l4\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
    expect(created.resources).toBeFalsy(); // the create response comes before the ASG exists
    expect(created.health?.issues).toEqual([]);
    expect(created.tags).toEqual({});
    expect(created.createdAt?.getTime()).toBe(h.clock.now());
    const uuid = created.nodegroupArn!.split('/').pop();
    const ng = await describeNg(h, 'gpu-l4');
    expect(ng.resources?.autoScalingGroups).toEqual([{ name: `eks-gpu-l4-${uuid}` }]);
    expect(ng).toMatchObject({
      nodegroupName: 'gpu-l4',
      clusterName: CLUSTER,
      nodeRole: ROLE,
      scalingConfig: { minSize: 0, maxSize: 4, desiredSize: 2 },
      instanceTypes: ['g6.2xlarge'],
      amiType: 'AL2023_x86_64_NVIDIA',
      capacityType: 'ON_DEMAND',
      diskSize: 20,
      updateConfig: { maxUnavailable: 1 },
    });
  });

  it('defaults to 2/2/2 nodes of t3.medium when scaling and instance types are omitted', async () => {
    await create(h, 'plain', { scalingConfig: undefined, instanceTypes: undefined, amiType: undefined });
    const ng = await describeNg(h, 'plain');
    expect(ng.scalingConfig).toEqual({ minSize: 2, maxSize: 2, desiredSize: 2 });
    expect(ng.instanceTypes).toEqual(['t3.medium']);
  });

  it('sends the wire format AWS sends: epoch seconds, nulls, tags {}, health.issues', async () => {
    await create(h, 'wire', { labels: { 'llmcap.dev/compute': 'wire' } });
    const res = await fetch(`${h.sim.endpoint}/clusters/${CLUSTER}/node-groups/wire`);
    expect(res.headers.get('x-amzn-requestid')).toBeTruthy();
    const { nodegroup } = (await res.json()) as { nodegroup: Record<string, unknown> };
    expect(nodegroup.createdAt).toBe(h.clock.now() / 1000);
    expect(typeof nodegroup.modifiedAt).toBe('number');
    expect(nodegroup.launchTemplate).toBeNull();
    expect(nodegroup.remoteAccess).toBeNull();
    expect(nodegroup.taints).toBeNull();
    expect(nodegroup.tags).toEqual({});
    expect(nodegroup.health).toEqual({ issues: [] });
    expect(nodegroup.labels).toEqual({ 'llmcap.dev/compute': 'wire' });
  });

  it('refuses a second node group with the same name with 409', async () => {
    await create(h, 'dup');
    const e = await failure(h.eks.send(new CreateNodegroupCommand(createInput('dup'))));
    expect(e.name).toBe('ResourceInUseException');
    expect(e.$metadata.httpStatusCode).toBe(409);
    expect(e.message).toBe('NodeGroup already exists with name dup and cluster name llmcap-local');
    expect(e.nodegroupName).toBe('dup');
  });

  it('answers 404 with the exact EKS message for an unknown node group', async () => {
    const e = await failure(
      h.eks.send(new DescribeNodegroupCommand({ clusterName: CLUSTER, nodegroupName: 'ghost' })),
    );
    expect(e.name).toBe('ResourceNotFoundException');
    expect(e.message).toBe('No node group found for name: ghost.');
    expect(e.$metadata.httpStatusCode).toBe(404);
    expect(e.clusterName).toBe(CLUSTER);
    expect(e.nodegroupName).toBe('ghost');
  });
});

describe('clientRequestToken idempotency', () => {
  it('answers a repeated CreateNodegroup with the same token and body with the same node group', async () => {
    const input = createInput('idem', { clientRequestToken: 'tok-1' });
    const first = (await h.eks.send(new CreateNodegroupCommand(input))).nodegroup!;
    h.clock.advance(5 * SEC);
    const again = (await h.eks.send(new CreateNodegroupCommand(input))).nodegroup!;
    expect(again.nodegroupArn).toBe(first.nodegroupArn);
    expect(again.status).toBe('CREATING');
  });

  it('refuses the same token with a different body', async () => {
    await h.eks.send(new CreateNodegroupCommand(createInput('idem', { clientRequestToken: 'tok-2' })));
    const e = await failure(
      h.eks.send(new CreateNodegroupCommand(createInput('other', { clientRequestToken: 'tok-2' }))),
    );
    expect(e.name).toBe('InvalidParameterException');
    expect(e.$metadata.httpStatusCode).toBe(400);
  });

  it('treats a token as new once its 10-minute window has passed', async () => {
    const input = createInput('idem', { clientRequestToken: 'tok-3' });
    await h.eks.send(new CreateNodegroupCommand(input));
    h.clock.advance(11 * MIN);
    const e = await failure(h.eks.send(new CreateNodegroupCommand(input)));
    expect(e.name).toBe('ResourceInUseException');
  });

  it('returns the same update for a repeated UpdateNodegroupConfig token', async () => {
    await create(h, 'u');
    h.clock.advance(3 * MIN);
    const cmd = {
      clusterName: CLUSTER,
      nodegroupName: 'u',
      scalingConfig: { desiredSize: 3 },
      clientRequestToken: 'up-1',
    };
    const a = await h.eks.send(new UpdateNodegroupConfigCommand(cmd));
    const b = await h.eks.send(new UpdateNodegroupConfigCommand(cmd)); // would be 409 UPDATING without the token
    expect(b.update?.id).toBe(a.update?.id);
  });
});

describe('ListNodegroups', () => {
  it('pages through node groups in creation order with nextToken', async () => {
    for (const n of ['n1', 'n2', 'n3', 'n4', 'n5']) await create(h, n);
    const first = await h.eks.send(new ListNodegroupsCommand({ clusterName: CLUSTER, maxResults: 2 }));
    expect(first.nodegroups).toEqual(['n1', 'n2']);
    expect(first.nextToken).toBeTruthy();
    const pages: string[][] = [];
    for await (const page of paginateListNodegroups({ client: h.eks, pageSize: 2 }, { clusterName: CLUSTER }))
      pages.push(page.nodegroups ?? []);
    expect(pages).toEqual([['n1', 'n2'], ['n3', 'n4'], ['n5']]);
    const all = await h.eks.send(new ListNodegroupsCommand({ clusterName: CLUSTER }));
    expect(all.nodegroups).toHaveLength(5);
    expect(all.nextToken).toBeUndefined();
  });

  it('refuses maxResults outside 1..100 and a forged nextToken', async () => {
    const e = await failure(h.eks.send(new ListNodegroupsCommand({ clusterName: CLUSTER, maxResults: 101 })));
    expect(e.name).toBe('InvalidParameterException');
    const e2 = await failure(
      h.eks.send(new ListNodegroupsCommand({ clusterName: CLUSTER, nextToken: 'garbage' })),
    );
    expect(e2.name).toBe('InvalidParameterException');
  });
});

describe('UpdateNodegroupConfig and DescribeUpdate', () => {
  it('returns a ConfigUpdate with string params, goes UPDATING, then Successful and ACTIVE', async () => {
    await create(h, 'scale');
    h.clock.advance(3 * MIN);
    expect(await status(h, 'scale')).toBe('ACTIVE');
    const { update } = await h.eks.send(
      new UpdateNodegroupConfigCommand({
        clusterName: CLUSTER,
        nodegroupName: 'scale',
        scalingConfig: { minSize: 1, maxSize: 4, desiredSize: 3 },
      }),
    );
    expect(update).toMatchObject({
      status: 'InProgress',
      type: 'ConfigUpdate',
      errors: [],
      params: [
        { type: 'MinSize', value: '1' },
        { type: 'MaxSize', value: '4' },
        { type: 'DesiredSize', value: '3' },
      ],
    });
    expect(update?.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await status(h, 'scale')).toBe('UPDATING');
    expect((await describeNg(h, 'scale')).scalingConfig).toEqual({ minSize: 1, maxSize: 4, desiredSize: 3 });
    const du = () =>
      h.eks.send(new DescribeUpdateCommand({ name: CLUSTER, nodegroupName: 'scale', updateId: update!.id! }));
    expect((await du()).update?.status).toBe('InProgress');
    h.clock.advance(30 * SEC);
    expect((await du()).update?.status).toBe('Successful');
    expect(await status(h, 'scale')).toBe('ACTIVE');
  });

  it('merges labels and taints by key and (key, effect)', async () => {
    await create(h, 'lt', {
      labels: { a: '1', b: '2' },
      taints: [{ key: 'nvidia.com/gpu', value: 'true', effect: 'NO_SCHEDULE' }],
    });
    h.clock.advance(3 * MIN);
    const { update } = await h.eks.send(
      new UpdateNodegroupConfigCommand({
        clusterName: CLUSTER,
        nodegroupName: 'lt',
        labels: { addOrUpdateLabels: { b: '3', c: '4' }, removeLabels: ['a'] },
        taints: {
          addOrUpdateTaints: [{ key: 'llmcap.dev/compute', value: 'lt', effect: 'NO_SCHEDULE' }],
          removeTaints: [{ key: 'nvidia.com/gpu', effect: 'NO_SCHEDULE' }],
        },
      }),
    );
    expect(update?.params?.map((p) => p.type)).toEqual([
      'LabelsToAdd',
      'LabelsToRemove',
      'TaintsToAdd',
      'TaintsToRemove',
    ]);
    const ng = await describeNg(h, 'lt');
    expect(ng.labels).toEqual({ b: '3', c: '4' });
    expect(ng.taints).toEqual([{ key: 'llmcap.dev/compute', value: 'lt', effect: 'NO_SCHEDULE' }]);
  });

  it('refuses an update while CREATING or UPDATING with 409 and the EKS message', async () => {
    await create(h, 'busy');
    const upd = () =>
      h.eks.send(
        new UpdateNodegroupConfigCommand({
          clusterName: CLUSTER,
          nodegroupName: 'busy',
          scalingConfig: { desiredSize: 1 },
        }),
      );
    const e = await failure(upd());
    expect(e.name).toBe('ResourceInUseException');
    expect(e.$metadata.httpStatusCode).toBe(409);
    expect(e.message).toBe('Nodegroup cannot be updated as it is currently not in Active State');
    h.clock.advance(3 * MIN);
    await upd();
    const e2 = await failure(upd());
    expect(e2.message).toBe('Nodegroup cannot be updated as it is currently not in Active State');
    h.clock.advance(30 * SEC);
    await upd();
  });

  it('answers 404 for an unknown node group or update id', async () => {
    const e = await failure(
      h.eks.send(
        new UpdateNodegroupConfigCommand({
          clusterName: CLUSTER,
          nodegroupName: 'ghost',
          scalingConfig: { desiredSize: 1 },
        }),
      ),
    );
    expect(e.message).toBe('No node group found for name: ghost.');
    await create(h, 'real');
    const e2 = await failure(
      h.eks.send(
        new DescribeUpdateCommand({
          name: CLUSTER,
          nodegroupName: 'real',
          updateId: '00000000-0000-4000-8000-000000000000',
        }),
      ),
    );
    expect(e2.name).toBe('ResourceNotFoundException');
    expect(e2.$metadata.httpStatusCode).toBe(404);
  });
});

describe('DeleteNodegroup', () => {
  it('goes DELETING, then the node group is gone with 404', async () => {
    await create(h, 'bye');
    h.clock.advance(3 * MIN);
    const { nodegroup } = await h.eks.send(
      new DeleteNodegroupCommand({ clusterName: CLUSTER, nodegroupName: 'bye' }),
    );
    expect(nodegroup?.status).toBe('DELETING');
    expect(await status(h, 'bye')).toBe('DELETING');
    const list = await h.eks.send(new ListNodegroupsCommand({ clusterName: CLUSTER }));
    expect(list.nodegroups).toEqual(['bye']);
    h.clock.advance(5 * MIN);
    const e = await failure(describeNg(h, 'bye'));
    expect(e.message).toBe('No node group found for name: bye.');
    expect((await h.eks.send(new ListNodegroupsCommand({ clusterName: CLUSTER }))).nodegroups).toEqual([]);
    const again = await failure(
      h.eks.send(new DeleteNodegroupCommand({ clusterName: CLUSTER, nodegroupName: 'bye' })),
    );
    expect(again.name).toBe('ResourceNotFoundException');
  });

  it('refuses to delete while CREATING with 409, and lets the name be reused once gone', async () => {
    await create(h, 'young');
    const e = await failure(
      h.eks.send(new DeleteNodegroupCommand({ clusterName: CLUSTER, nodegroupName: 'young' })),
    );
    expect(e.name).toBe('ResourceInUseException');
    h.clock.advance(3 * MIN);
    await h.eks.send(new DeleteNodegroupCommand({ clusterName: CLUSTER, nodegroupName: 'young' }));
    h.clock.advance(5 * MIN);
    const again = await create(h, 'young');
    expect(again.status).toBe('CREATING');
  });
});
