import { DescribeAutoScalingGroupsCommand } from '@aws-sdk/client-auto-scaling';
import { DeleteNodegroupCommand, UpdateNodegroupConfigCommand } from '@aws-sdk/client-eks';
import {
  asgOf,
  CLUSTER,
  create,
  describeNg,
  failure,
  type Harness,
  harness,
  lifecycleStates,
  MIN,
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

const scaleTo = (name: string, desiredSize: number) =>
  h.eks.send(
    new UpdateNodegroupConfigCommand({
      clusterName: CLUSTER,
      nodegroupName: name,
      scalingConfig: { desiredSize },
    }),
  );

describe('create on the driven clock (realistic durations)', () => {
  it('launches instances that become InService one by one, then the group turns ACTIVE', async () => {
    await create(h, 'g', { scalingConfig: { minSize: 0, maxSize: 4, desiredSize: 3 } });
    expect(await lifecycleStates(h, 'g')).toEqual(['Pending', 'Pending', 'Pending']);
    h.clock.advance(90 * SEC);
    expect(await lifecycleStates(h, 'g')).toEqual(['InService', 'Pending', 'Pending']);
    h.clock.advance(5 * SEC);
    expect(await lifecycleStates(h, 'g')).toEqual(['InService', 'InService', 'Pending']);
    expect(await status(h, 'g')).toBe('CREATING');
    h.clock.advance(5 * SEC);
    expect(await lifecycleStates(h, 'g')).toEqual(['InService', 'InService', 'InService']);
    expect(await status(h, 'g')).toBe('CREATING');
    h.clock.advance(20 * SEC - 1);
    expect(await status(h, 'g')).toBe('CREATING');
    h.clock.advance(1);
    const ng = await describeNg(h, 'g');
    expect(ng.status).toBe('ACTIVE');
    expect(ng.modifiedAt!.getTime() - ng.createdAt!.getTime()).toBe(2 * MIN);
  });

  it('waits for the last node when a large group needs longer than the create time', async () => {
    await create(h, 'big', { scalingConfig: { minSize: 0, maxSize: 10, desiredSize: 10 } });
    h.clock.advance(2 * MIN);
    expect(await status(h, 'big')).toBe('CREATING');
    h.clock.advance(15 * SEC); // 90 s + 9 × 5 s
    expect(await status(h, 'big')).toBe('ACTIVE');
  });

  it('spreads instances over the subnets Availability Zones, with i- ids of 17 hex digits', async () => {
    await create(h, 'az', { scalingConfig: { minSize: 0, maxSize: 4, desiredSize: 4 } });
    const g = await asgOf(h, 'az');
    expect(g?.AvailabilityZones).toEqual(['us-east-1a', 'us-east-1b']);
    expect(g?.Instances?.map((i) => i.AvailabilityZone).sort()).toEqual([
      'us-east-1a',
      'us-east-1a',
      'us-east-1b',
      'us-east-1b',
    ]);
    for (const i of g?.Instances ?? []) {
      expect(i.InstanceId).toMatch(/^i-[0-9a-f]{17}$/);
      expect(i.InstanceType).toBe('g6.2xlarge');
      expect(i.HealthStatus).toBe('Healthy');
    }
  });

  it('progresses on reads only: nothing changes between requests until the clock moves', async () => {
    await create(h, 'lazy');
    const before = await describeNg(h, 'lazy');
    const again = await describeNg(h, 'lazy');
    expect(again).toEqual(before);
    h.clock.advance(10 * MIN);
    expect(await status(h, 'lazy')).toBe('ACTIVE');
  });
});

describe('scaling', () => {
  beforeEach(async () => {
    await create(h, 's', { scalingConfig: { minSize: 0, maxSize: 6, desiredSize: 2 } });
    h.clock.advance(3 * MIN);
  });

  it('scales out: the ASG desired follows at once, new nodes join after the update is done', async () => {
    await scaleTo('s', 4);
    const g = await asgOf(h, 's');
    expect(g?.DesiredCapacity).toBe(4);
    expect(g?.MaxSize).toBe(6);
    expect(await lifecycleStates(h, 's')).toEqual(['InService', 'InService', 'Pending', 'Pending']);
    h.clock.advance(30 * SEC);
    expect(await status(h, 's')).toBe('ACTIVE');
    expect(await lifecycleStates(h, 's')).toEqual(['InService', 'InService', 'Pending', 'Pending']);
    h.clock.advance(60 * SEC);
    expect(await lifecycleStates(h, 's')).toEqual(['InService', 'InService', 'InService', 'Pending']);
    h.clock.advance(5 * SEC);
    expect(await lifecycleStates(h, 's')).toEqual(['InService', 'InService', 'InService', 'InService']);
  });

  it('scales in: surplus instances go Terminating, then disappear', async () => {
    await scaleTo('s', 0);
    expect(await lifecycleStates(h, 's')).toEqual(['Terminating', 'Terminating']);
    h.clock.advance(60 * SEC);
    expect(await lifecycleStates(h, 's')).toEqual(['Terminating']);
    h.clock.advance(5 * SEC);
    expect(await lifecycleStates(h, 's')).toEqual([]);
    expect(await status(h, 's')).toBe('ACTIVE');
  });

  it('terminates Pending instances first when a scale-out is reverted', async () => {
    await scaleTo('s', 4);
    h.clock.advance(30 * SEC);
    await scaleTo('s', 2);
    expect(await lifecycleStates(h, 's')).toEqual(['InService', 'InService', 'Terminating', 'Terminating']);
  });
});

describe('delete', () => {
  it('sets the ASG to 0/0/0, terminates every node, then both disappear', async () => {
    await create(h, 'd', { scalingConfig: { minSize: 1, maxSize: 3, desiredSize: 2 } });
    h.clock.advance(3 * MIN);
    const asgName = (await describeNg(h, 'd')).resources?.autoScalingGroups?.[0]?.name ?? 'missing';
    await h.eks.send(new DeleteNodegroupCommand({ clusterName: CLUSTER, nodegroupName: 'd' }));
    const g = await asgOf(h, 'd');
    expect([g?.MinSize, g?.MaxSize, g?.DesiredCapacity]).toEqual([0, 0, 0]);
    expect(await lifecycleStates(h, 'd')).toEqual(['Terminating', 'Terminating']);
    h.clock.advance(5 * MIN - 1);
    expect(await status(h, 'd')).toBe('DELETING');
    h.clock.advance(1);
    expect((await failure(describeNg(h, 'd'))).name).toBe('ResourceNotFoundException');
    const out = await h.asg.send(new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [asgName] }));
    expect(out.AutoScalingGroups).toEqual([]);
  });
});

describe('time scale', () => {
  it('multiplies every duration: 0.001 makes the 2-minute create take 120 ms of clock', async () => {
    await h.close();
    h = await harness({ timeScale: 0.001 });
    await create(h, 'fast', { scalingConfig: { minSize: 0, maxSize: 2, desiredSize: 1 } });
    h.clock.advance(119);
    expect(await status(h, 'fast')).toBe('CREATING');
    h.clock.advance(1);
    expect(await status(h, 'fast')).toBe('ACTIVE');
  });

  it('runs on the wall clock by default', async () => {
    const { startCloudSim } = await import('../../../local/cloud-sim');
    const { EKSClient, DescribeNodegroupCommand, CreateNodegroupCommand } = await import(
      '@aws-sdk/client-eks'
    );
    const { createInput } = await import('./helpers');
    const sim = await startCloudSim({ port: 0, timeScale: 0.001, seed: 1 });
    const eks = new EKSClient({ endpoint: sim.endpoint, region: 'eu-west-3', maxAttempts: 1 });
    try {
      await eks.send(new CreateNodegroupCommand(createInput('wall')));
      const describe = () =>
        eks.send(new DescribeNodegroupCommand({ clusterName: CLUSTER, nodegroupName: 'wall' }));
      expect((await describe()).nodegroup?.status).toBe('CREATING');
      await new Promise((r) => setTimeout(r, 200));
      expect((await describe()).nodegroup?.status).toBe('ACTIVE');
    } finally {
      eks.destroy();
      await sim.stop();
    }
  });
});
