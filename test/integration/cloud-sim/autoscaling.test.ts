import {
  AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  DescribeScalingActivitiesCommand,
  paginateDescribeAutoScalingGroups,
} from '@aws-sdk/client-auto-scaling';
import { UpdateNodegroupConfigCommand } from '@aws-sdk/client-eks';
import { create, describeNg, failure, type Harness, harness, MIN } from './helpers';

let h: Harness;
beforeAll(async () => {
  h = await harness();
  await create(h, 'alpha', { scalingConfig: { minSize: 1, maxSize: 3, desiredSize: 2 } });
  await create(h, 'beta', {
    scalingConfig: { minSize: 0, maxSize: 2, desiredSize: 1 },
    instanceTypes: ['m7i.xlarge'],
  });
  await create(h, 'gamma', { scalingConfig: { minSize: 0, maxSize: 2, desiredSize: 0 } });
  h.clock.advance(3 * MIN);
});
afterAll(async () => {
  await h.close();
});

const asgName = async (ng: string) => (await describeNg(h, ng)).resources!.autoScalingGroups![0]!.name!;

describe('DescribeAutoScalingGroups (query protocol)', () => {
  it('describes a node group ASG with sizes, instances, tags and the eks- name', async () => {
    const name = await asgName('alpha');
    const uuid = (await describeNg(h, 'alpha')).nodegroupArn!.split('/').pop();
    expect(name).toBe(`eks-alpha-${uuid}`);
    const { AutoScalingGroups } = await h.asg.send(
      new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [name] }),
    );
    expect(AutoScalingGroups).toHaveLength(1);
    const g = AutoScalingGroups![0]!;
    expect(g).toMatchObject({
      AutoScalingGroupName: name,
      MinSize: 1,
      MaxSize: 3,
      DesiredCapacity: 2,
      HealthCheckType: 'EC2',
    });
    expect(g.AutoScalingGroupARN).toMatch(
      /^arn:aws:autoscaling:us-east-1:000000000000:autoScalingGroup:.+:autoScalingGroupName\/eks-alpha-/,
    );
    expect(g.CreatedTime).toBeInstanceOf(Date);
    expect(g.Instances?.map((i) => i.LifecycleState)).toEqual(['InService', 'InService']);
    expect(g.Tags).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Key: 'eks:nodegroup-name', Value: 'alpha', ResourceId: name }),
        expect.objectContaining({ Key: 'eks:cluster-name', Value: 'llmcap-local' }),
      ]),
    );
  });

  it('describes several groups at once and leaves unknown names out', async () => {
    const names = [await asgName('alpha'), await asgName('beta'), 'eks-nope-123'];
    const { AutoScalingGroups } = await h.asg.send(
      new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: names }),
    );
    expect(AutoScalingGroups?.map((g) => g.AutoScalingGroupName).sort()).toEqual(names.slice(0, 2).sort());
    const beta = AutoScalingGroups!.find((g) => g.AutoScalingGroupName === names[1])!;
    expect(beta.Instances?.[0]?.InstanceType).toBe('m7i.xlarge');
  });

  it('filters by the eks:nodegroup-name tag', async () => {
    const { AutoScalingGroups } = await h.asg.send(
      new DescribeAutoScalingGroupsCommand({
        Filters: [{ Name: 'tag:eks:nodegroup-name', Values: ['gamma'] }],
      }),
    );
    expect(AutoScalingGroups).toHaveLength(1);
    expect(AutoScalingGroups![0]!.Instances).toEqual([]);
  });

  it('pages with MaxRecords and NextToken', async () => {
    const pages: number[] = [];
    for await (const p of paginateDescribeAutoScalingGroups({ client: h.asg, pageSize: 2 }, {}))
      pages.push(p.AutoScalingGroups?.length ?? 0);
    expect(pages).toEqual([2, 1]);
  });

  it('answers an unknown action with the query protocol error shape', async () => {
    const res = await fetch(h.sim.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'Action=DeleteAutoScalingGroup&Version=2011-01-01',
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(
      /<ErrorResponse[^>]*><Error><Type>Sender<\/Type><Code>InvalidAction<\/Code>/,
    );
  });

  it('refuses MaxRecords above 100 with a ValidationError through the SDK', async () => {
    const e = await failure(h.asg.send(new DescribeAutoScalingGroupsCommand({ MaxRecords: 101 })));
    expect(e.name).toBe('ValidationError');
  });

  it('accepts any region and credentials', async () => {
    const other = new AutoScalingClient({
      endpoint: h.sim.endpoint,
      region: 'ap-southeast-2',
      credentials: { accessKeyId: 'AKIAANYTHING', secretAccessKey: 'whatever' },
      maxAttempts: 1,
    });
    const out = await other.send(new DescribeAutoScalingGroupsCommand({}));
    expect(out.AutoScalingGroups).toHaveLength(3);
    other.destroy();
  });
});

describe('DescribeScalingActivities (the NodegroupFailed runbook)', () => {
  it('lists launches and terminations newest first, and a failed launch with its reason', async () => {
    const name = await asgName('alpha');
    const { Activities } = await h.asg.send(
      new DescribeScalingActivitiesCommand({ AutoScalingGroupName: name }),
    );
    expect(Activities?.map((a) => [a.Description?.replace(/i-[0-9a-f]{17}/, 'i-…'), a.StatusCode])).toEqual([
      ['Launching a new EC2 instance: i-…', 'Successful'],
      ['Launching a new EC2 instance: i-…', 'Successful'],
    ]);
    expect(Activities![0]!.Cause).toMatch(/in response to a difference between desired and actual capacity/);

    h.sim.admin.patchFaults({ launchFailures: [{ nodegroup: 'beta', afterMs: MIN }] });
    await h.eks.send(
      new UpdateNodegroupConfigCommand({
        clusterName: 'llmcap-local',
        nodegroupName: 'beta',
        scalingConfig: { minSize: 0, maxSize: 2, desiredSize: 2 },
      }),
    );
    h.clock.advance(2 * MIN);
    const after = await h.asg.send(
      new DescribeScalingActivitiesCommand({ AutoScalingGroupName: await asgName('beta'), MaxRecords: 1 }),
    );
    expect(after.Activities?.[0]).toMatchObject({
      StatusCode: 'Failed',
      StatusMessage: expect.stringContaining('InsufficientInstanceCapacity'),
    });
    expect(after.NextToken).toBeDefined();
    expect(
      (await h.asg.send(new DescribeScalingActivitiesCommand({ AutoScalingGroupName: 'eks-nope-1' })))
        .Activities,
    ).toEqual([]);
  });
});
