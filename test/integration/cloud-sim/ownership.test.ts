import {
  ListTagsForResourceCommand,
  TagResourceCommand,
  UntagResourceCommand,
  UpdateNodegroupConfigCommand,
} from '@aws-sdk/client-eks';
import { CLUSTER, create, describeNg, failure, type Harness, harness, MIN } from './helpers';

/**
 * What tells llmcap whose a node group is: its tags, stored and returned as EKS does (CreateNodegroup,
 * DescribeNodegroup, TagResource, UntagResource, ListTagsForResource), groups someone else made (the admin
 * endpoint), and health issues without the members EKS's model leaves optional.
 */

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const ours = { 'llmcap:stage': 'dev', 'llmcap:compute': 'gpu-l4-1x', 'llmcap:compute-id': 'k7m2q9xa4bc0' };

describe('node group tags', () => {
  it('keeps the tags of CreateNodegroup, returns them on every describe, and {} for a group without any', async () => {
    h = await harness();
    await create(h, 'tagged', { tags: ours });
    await create(h, 'bare');
    expect((await describeNg(h, 'tagged')).tags).toEqual(ours);
    h.clock.advance(5 * MIN);
    expect((await describeNg(h, 'tagged')).tags).toEqual(ours);
    expect((await describeNg(h, 'bare')).tags).toEqual({});
    // An update changes sizes, never tags.
    await h.eks.send(
      new UpdateNodegroupConfigCommand({
        clusterName: CLUSTER,
        nodegroupName: 'tagged',
        scalingConfig: { desiredSize: 3 },
      }),
    );
    expect((await describeNg(h, 'tagged')).tags).toEqual(ours);
  });

  it('tags, lists and untags a node group by its ARN', async () => {
    h = await harness();
    await create(h, 'mine', { tags: { team: 'ml' } });
    const resourceArn = (await describeNg(h, 'mine')).nodegroupArn!;
    await h.eks.send(new TagResourceCommand({ resourceArn, tags: { 'llmcap:compute-id': 'k7m2q9xa4bc0' } }));
    expect((await h.eks.send(new ListTagsForResourceCommand({ resourceArn }))).tags).toEqual({
      team: 'ml',
      'llmcap:compute-id': 'k7m2q9xa4bc0',
    });
    await h.eks.send(new UntagResourceCommand({ resourceArn, tagKeys: ['team'] }));
    expect((await describeNg(h, 'mine')).tags).toEqual({ 'llmcap:compute-id': 'k7m2q9xa4bc0' });
  });

  it('answers the tagging errors EKS models for them: NotFoundException and BadRequestException', async () => {
    h = await harness();
    await create(h, 'mine');
    const arn = (await describeNg(h, 'mine')).nodegroupArn!;
    const gone = await failure(
      h.eks.send(new ListTagsForResourceCommand({ resourceArn: `${arn.slice(0, -4)}0000` })),
    );
    expect(gone).toMatchObject({ name: 'NotFoundException', $metadata: { httpStatusCode: 404 } });
    const reserved = await failure(
      h.eks.send(new TagResourceCommand({ resourceArn: arn, tags: { 'aws:x': 'y' } })),
    );
    expect(reserved).toMatchObject({ name: 'BadRequestException', $metadata: { httpStatusCode: 400 } });
  });
});

describe('node groups someone else made (admin endpoint)', () => {
  it('creates one with their tags, ACTIVE with its nodes InService at once, through POST /_sim/nodegroups', async () => {
    h = await harness();
    const res = await fetch(`${h.sim.endpoint}/_sim/nodegroups`, {
      method: 'POST',
      body: JSON.stringify({ name: 'theirs', tags: { team: 'data' }, desiredSize: 2 }),
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ name: 'theirs', status: 'ACTIVE', tags: { team: 'data' } });
    const ng = await describeNg(h, 'theirs');
    expect(ng).toMatchObject({ status: 'ACTIVE', tags: { team: 'data' }, scalingConfig: { desiredSize: 2 } });
    const instances = h.sim.admin.state().nodegroups[0]!.autoScalingGroup.instances;
    expect(instances.map((i) => i.lifecycleState)).toEqual(['InService', 'InService']);
  });

  it('puts one straight into DELETING (then gone), DELETE_FAILED or CREATE_FAILED, with the issue EKS gives', async () => {
    h = await harness();
    h.sim.admin.createNodegroup({ name: 'going', status: 'DELETING' });
    h.sim.admin.createNodegroup({ name: 'stuck', status: 'DELETE_FAILED' });
    h.sim.admin.createNodegroup({ name: 'failed', status: 'CREATE_FAILED' });
    expect((await describeNg(h, 'going')).status).toBe('DELETING');
    expect((await describeNg(h, 'stuck')).health?.issues?.[0]?.code).toBe('Ec2SecurityGroupDeletionFailure');
    expect((await describeNg(h, 'failed')).health?.issues?.[0]?.code).toBe('AsgInstanceLaunchFailures');
    h.clock.advance(6 * MIN);
    expect((await failure(describeNg(h, 'going'))).name).toBe('ResourceNotFoundException');
  });

  it('refuses a name in use or a bad state with 400 and the reason', async () => {
    h = await harness();
    await create(h, 'taken');
    const post = (body: unknown) =>
      fetch(`${h.sim.endpoint}/_sim/nodegroups`, { method: 'POST', body: JSON.stringify(body) });
    const dup = await post({ name: 'taken' });
    expect(dup.status).toBe(400);
    expect(((await dup.json()) as { message: string }).message).toBe(
      'NodeGroup already exists with name taken and cluster name llmcap-local',
    );
    const bad = await post({ name: 'x', status: 'UPDATING' });
    expect(((await bad.json()) as { message: string }).message).toMatch(
      /^status must be one of CREATING, ACTIVE/,
    );
  });
});

describe('health issues without code or message (both optional in EKS model)', () => {
  it('leaves out the members a fault names', async () => {
    h = await harness({
      faults: { launchFailures: [{ nodegroup: 'bare', afterMs: MIN, omit: ['code', 'message'] }] },
    });
    await create(h, 'bare');
    h.clock.advance(2 * MIN);
    const bare = await describeNg(h, 'bare');
    expect(bare.status).toBe('CREATE_FAILED');
    expect(bare.health?.issues).toEqual([{ resourceIds: [expect.stringMatching(/^eks-bare-/)] }]);
  });

  it('refuses an omit that names anything else', async () => {
    await expect(
      harness({ faults: { deleteFailures: [{ omit: ['resourceIds' as 'code'] }] } }),
    ).rejects.toThrow('faults.deleteFailures[].omit must list code and/or message');
  });
});
