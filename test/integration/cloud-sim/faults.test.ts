import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  DescribeScalingActivitiesCommand,
} from '@aws-sdk/client-auto-scaling';
import {
  DeleteNodegroupCommand,
  DescribeNodegroupCommand,
  EKSClient,
  ListNodegroupsCommand,
  UpdateNodegroupConfigCommand,
} from '@aws-sdk/client-eks';
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
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
afterEach(async () => {
  await h?.close();
});

/** Real SDK retries without the real back-off, so a throttled run stays fast. */
const quickRetries = (maxAttempts: number) => new ConfiguredRetryStrategy(maxAttempts, () => 1);

async function outcomes(seed: number, n: number): Promise<string[]> {
  const x = await harness({ seed, faults: { throttleRate: 0.5 } });
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    try {
      await x.eks.send(new ListNodegroupsCommand({ clusterName: CLUSTER }));
      out.push('ok');
    } catch (e) {
      out.push((e as Error).name);
    }
  }
  await x.close();
  return out;
}

describe('throttling and server errors', () => {
  it('answers 429 ThrottlingException, which the SDK retries until the call succeeds', async () => {
    h = await harness({ faults: { throttleRate: 1, operations: ['DescribeNodegroup'] } });
    await create(h, 't'); // CreateNodegroup is not in `operations`, so it is never throttled
    const e = await failure(describeNg(h, 't'));
    expect(e.name).toBe('ThrottlingException');
    expect(e.$metadata.httpStatusCode).toBe(429);
    expect(e.message).toBe('Rate exceeded');

    h.sim.admin.patchFaults({ throttleRate: 0.6 });
    const eks = new EKSClient({
      endpoint: h.sim.endpoint,
      region: 'us-east-1',
      retryStrategy: quickRetries(20),
    });
    const attempts: number[] = [];
    for (let i = 0; i < 10; i++) {
      const out = await eks.send(new DescribeNodegroupCommand({ clusterName: CLUSTER, nodegroupName: 't' }));
      expect(out.nodegroup?.nodegroupName).toBe('t');
      attempts.push(out.$metadata.attempts ?? 1);
    }
    eks.destroy();
    expect(Math.max(...attempts)).toBeGreaterThan(1);
  });

  it('throttles the same requests for the same seed, and others for another seed', async () => {
    const a = await outcomes(42, 24);
    const b = await outcomes(42, 24);
    const c = await outcomes(43, 24);
    expect(a).toEqual(b);
    expect(a).toContain('ok');
    expect(a).toContain('ThrottlingException');
    expect(c).not.toEqual(a);
  });

  it('answers 500 ServerException or 503 ServiceUnavailableException as server faults', async () => {
    h = await harness({ faults: { serverErrorRate: 1 } });
    const e = await failure(h.eks.send(new ListNodegroupsCommand({ clusterName: CLUSTER })));
    expect(e.name).toBe('ServerException');
    expect(e.$metadata.httpStatusCode).toBe(500);
    expect(e.$fault).toBe('server');
    h.sim.admin.patchFaults({ serverErrorType: 'ServiceUnavailableException' });
    const e2 = await failure(h.eks.send(new ListNodegroupsCommand({ clusterName: CLUSTER })));
    expect(e2.name).toBe('ServiceUnavailableException');
    expect(e2.$metadata.httpStatusCode).toBe(503);
  });

  it('throttles Auto Scaling with its own error (400 Throttling), which the SDK retries too', async () => {
    h = await harness({ faults: { throttleRate: 1 } });
    const e = await failure(h.asg.send(new DescribeAutoScalingGroupsCommand({})));
    expect(e.name).toBe('Throttling');
    expect(e.$metadata.httpStatusCode).toBe(400);
    h.sim.admin.setFaults({ throttleRate: 0.6 });
    const asg = new AutoScalingClient({
      endpoint: h.sim.endpoint,
      region: 'us-east-1',
      retryStrategy: quickRetries(20),
    });
    const attempts: number[] = [];
    for (let i = 0; i < 10; i++)
      attempts.push((await asg.send(new DescribeAutoScalingGroupsCommand({}))).$metadata.attempts ?? 1);
    asg.destroy();
    expect(Math.max(...attempts)).toBeGreaterThan(1);
  });
});

describe('launch failures', () => {
  it('keeps a create CREATING with no health issue, then CREATE_FAILED with InsufficientInstanceCapacity', async () => {
    h = await harness({ faults: { unavailableInstanceTypes: ['g6e.12xlarge'] } });
    await create(h, 'l40s', {
      instanceTypes: ['g6e.12xlarge'],
      scalingConfig: { minSize: 0, maxSize: 1, desiredSize: 1 },
    });
    await create(h, 'l4'); // other types are not affected
    h.clock.advance(34 * MIN);
    const during = await describeNg(h, 'l40s');
    expect(during.status).toBe('CREATING');
    expect(during.health?.issues).toEqual([]);
    expect(await lifecycleStates(h, 'l40s')).toEqual([]);
    expect(await status(h, 'l4')).toBe('ACTIVE');
    h.clock.advance(1 * MIN);
    const failed = await describeNg(h, 'l40s');
    expect(failed.status).toBe('CREATE_FAILED');
    const asgName = failed.resources?.autoScalingGroups?.[0]?.name;
    expect(failed.health?.issues).toEqual([
      {
        code: 'AsgInstanceLaunchFailures',
        message: expect.stringMatching(
          /^Could not launch On-Demand Instances\. InsufficientInstanceCapacity - We currently do not have sufficient g6e\.12xlarge capacity in the Availability Zone you requested \(us-east-1a\)\..*Launching EC2 instance failed\.$/,
        ),
        resourceIds: [asgName],
      },
    ]);
    // A CREATE_FAILED group cannot be updated, only deleted.
    const e = await failure(
      h.eks.send(
        new UpdateNodegroupConfigCommand({
          clusterName: CLUSTER,
          nodegroupName: 'l40s',
          scalingConfig: { desiredSize: 0 },
        }),
      ),
    );
    expect(e.name).toBe('ResourceInUseException');
    await h.eks.send(new DeleteNodegroupCommand({ clusterName: CLUSTER, nodegroupName: 'l40s' }));
    h.clock.advance(5 * MIN);
    expect((await failure(describeNg(h, 'l40s'))).name).toBe('ResourceNotFoundException');
  });

  it('reports a chosen health issue after a chosen delay for matching node group names', async () => {
    h = await harness({
      faults: {
        launchFailures: [
          {
            nodegroup: 'quota-*',
            code: 'InstanceLimitExceeded',
            message: 'vCPU limit reached',
            afterMs: 2 * MIN,
          },
        ],
      },
    });
    await create(h, 'quota-a');
    await create(h, 'other');
    h.clock.advance(2 * MIN);
    expect((await describeNg(h, 'quota-a')).health?.issues?.[0]).toMatchObject({
      code: 'InstanceLimitExceeded',
      message: 'vCPU limit reached',
    });
    expect(await status(h, 'quota-a')).toBe('CREATE_FAILED');
    expect(await status(h, 'other')).toBe('ACTIVE');
  });

  it('turns a group DEGRADED after a failed scale-out, keeps it so at zero, and recovers on a good scale-out', async () => {
    h = await harness();
    await create(h, 'deg', { scalingConfig: { minSize: 0, maxSize: 4, desiredSize: 2 } });
    h.clock.advance(3 * MIN);
    h.sim.admin.patchFaults({ unavailableInstanceTypes: ['g6.2xlarge'] });
    const scale = (desiredSize: number) =>
      h.eks.send(
        new UpdateNodegroupConfigCommand({
          clusterName: CLUSTER,
          nodegroupName: 'deg',
          scalingConfig: { desiredSize },
        }),
      );
    await scale(4);
    h.clock.advance(30 * SEC);
    expect(await status(h, 'deg')).toBe('ACTIVE'); // the update itself succeeds: it only sets the ASG
    h.clock.advance(5 * MIN);
    const ng = await describeNg(h, 'deg');
    expect(ng.status).toBe('DEGRADED');
    expect(ng.health?.issues?.[0]?.code).toBe('AsgInstanceLaunchFailures');
    const g = await asgOf(h, 'deg');
    expect(g?.DesiredCapacity).toBe(4);
    expect(g?.Instances).toHaveLength(2);

    await scale(0); // DEGRADED groups accept updates
    h.clock.advance(3 * MIN);
    expect(await status(h, 'deg')).toBe('DEGRADED');

    h.sim.admin.setFaults({});
    await scale(2);
    h.clock.advance(90 * SEC);
    expect(await status(h, 'deg')).toBe('DEGRADED'); // one node still Pending
    h.clock.advance(5 * SEC);
    const healed = await describeNg(h, 'deg');
    expect(healed.status).toBe('ACTIVE');
    expect(healed.health?.issues).toEqual([]);
  });

  it('records each refused launch as a Failed scaling activity within seconds, long before EKS says DEGRADED', async () => {
    h = await harness();
    await create(h, 'spot', {
      capacityType: 'SPOT',
      scalingConfig: { minSize: 0, maxSize: 4, desiredSize: 1 },
    });
    h.clock.advance(3 * MIN);
    h.sim.admin.patchFaults({
      launchFailures: [
        { nodegroup: 'spot', message: 'There is no Spot capacity available that matches your request.' },
      ],
    });
    const scale = (desiredSize: number) =>
      h.eks.send(
        new UpdateNodegroupConfigCommand({
          clusterName: CLUSTER,
          nodegroupName: 'spot',
          scalingConfig: { desiredSize },
        }),
      );
    const failed = async () => {
      const g = await asgOf(h, 'spot');
      const out = await h.asg.send(
        new DescribeScalingActivitiesCommand({ AutoScalingGroupName: g!.AutoScalingGroupName }),
      );
      return (out.Activities ?? []).filter((a) => a.StatusCode === 'Failed');
    };
    const events: { 'detail-type': string; source: string; detail: Record<string, unknown> }[] = [];
    h.sim.onEvent((e) => events.push(e));
    const asked = h.clock.now();
    await scale(2);
    h.clock.advance(5 * SEC);
    // One refusal per zone of the group (its two subnets): Auto Scaling tries each before it gives up.
    const refused = await failed();
    expect(refused.map((a) => JSON.parse(a.Details ?? '{}')['Availability Zone']).sort()).toEqual([
      'us-east-1a',
      'us-east-1b',
    ]);
    const first = refused[0];
    // And sends each to EventBridge, as Auto Scaling's event reference shows it.
    expect(events).toHaveLength(2);
    expect(events).toContainEqual(
      expect.objectContaining({
        source: 'aws.autoscaling',
        'detail-type': 'EC2 Instance Launch Unsuccessful',
        detail: expect.objectContaining({
          StatusCode: 'Failed',
          AutoScalingGroupName: (await asgOf(h, 'spot'))!.AutoScalingGroupName,
          ActivityId: first?.ActivityId,
          StatusMessage: 'There is no Spot capacity available that matches your request.',
        }),
      }),
    );
    // As Auto Scaling records it (supply-and-demand.md A1): StartTime the ask, EndTime seconds later, EC2's words.
    expect(first).toMatchObject({
      StatusCode: 'Failed',
      Progress: 100,
      StatusMessage: 'There is no Spot capacity available that matches your request.',
    });
    expect(first!.StartTime!.getTime()).toBe(asked);
    expect(first!.EndTime!.getTime() - asked).toBeLessThanOrEqual(5 * SEC);
    // EKS's health issue is the slow signal: none, and not DEGRADED, until scaleOutFailureMs.
    const early = await describeNg(h, 'spot');
    expect(early.status).not.toBe('DEGRADED');
    expect(early.health?.issues ?? []).toEqual([]);
    // Asked again (a probe), the next attempt is refused and recorded again.
    h.clock.advance(2 * MIN);
    await scale(3);
    h.clock.advance(5 * SEC);
    expect(await failed()).toHaveLength(4);
    h.clock.advance(5 * MIN);
    expect(await status(h, 'spot')).toBe('DEGRADED');
  });
});

describe('capacity short in one zone', () => {
  it("launches in the group's other zone, records the refused one, and stays ACTIVE; in every zone it fails", async () => {
    h = await harness({
      faults: { launchFailures: [{ instanceType: 'g6.2xlarge', zone: 'us-east-1a' }] },
    });
    // Two subnets of the cluster: us-east-1a and us-east-1b (DescribeCluster's order, local/cloud-sim/state.ts).
    await create(h, 'gpu', {
      instanceTypes: ['g6.2xlarge'],
      subnets: ['subnet-0a1b2c3d4e5f60001', 'subnet-0a1b2c3d4e5f60002'],
      scalingConfig: { minSize: 0, maxSize: 4, desiredSize: 2 },
    });
    h.clock.advance(10 * MIN);
    const g = await asgOf(h, 'gpu');
    expect(g?.AvailabilityZones).toEqual(['us-east-1a', 'us-east-1b']);
    expect((g?.Instances ?? []).map((i) => [i.AvailabilityZone, i.LifecycleState])).toEqual([
      ['us-east-1b', 'InService'],
      ['us-east-1b', 'InService'],
    ]);
    const out = await h.asg.send(
      new DescribeScalingActivitiesCommand({ AutoScalingGroupName: g!.AutoScalingGroupName }),
    );
    const refused = (out.Activities ?? []).filter((a) => a.StatusCode === 'Failed');
    expect(refused).toHaveLength(1);
    expect(JSON.parse(refused[0]!.Details!)).toEqual({
      'Subnet ID': 'subnet-0a1b2c3d4e5f60001',
      'Availability Zone': 'us-east-1a',
    });
    expect(refused[0]!.StatusMessage).toContain(
      'InsufficientInstanceCapacity - We currently do not have sufficient g6.2xlarge capacity in the Availability Zone you requested (us-east-1a).',
    );
    expect(refused[0]!.StatusMessage).toContain('or choosing us-east-1b.');
    expect(await status(h, 'gpu')).toBe('ACTIVE');
    // A group only in the short zone cannot launch at all.
    await create(h, 'gpu-a', {
      instanceTypes: ['g6.2xlarge'],
      subnets: ['subnet-0a1b2c3d4e5f60001'],
      scalingConfig: { minSize: 0, maxSize: 4, desiredSize: 1 },
    });
    h.clock.advance(10 * MIN);
    expect(await lifecycleStates(h, 'gpu-a')).toEqual([]);
    const a = await asgOf(h, 'gpu-a');
    const tried = await h.asg.send(
      new DescribeScalingActivitiesCommand({ AutoScalingGroupName: a!.AutoScalingGroupName }),
    );
    expect(tried.Activities?.map((x) => [x.StatusCode, JSON.parse(x.Details!)['Availability Zone']])).toEqual(
      [['Failed', 'us-east-1a']],
    );
    h.clock.advance(30 * MIN);
    expect(await status(h, 'gpu-a')).toBe('CREATE_FAILED');
  });
});

describe('deletes', () => {
  it('deletes a node group out of band through the admin endpoint', async () => {
    h = await harness();
    await create(h, 'oob');
    h.clock.advance(3 * MIN);
    const res = await fetch(`${h.sim.endpoint}/_sim/nodegroups/oob`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect((await failure(describeNg(h, 'oob'))).message).toBe('No node group found for name: oob.');
    expect((await h.asg.send(new DescribeAutoScalingGroupsCommand({}))).AutoScalingGroups).toEqual([]);
    expect((await fetch(`${h.sim.endpoint}/_sim/nodegroups/oob`, { method: 'DELETE' })).status).toBe(404);
  });

  it('makes matching node groups vanish after a delay (vanish rule) and fails deletes (DELETE_FAILED)', async () => {
    h = await harness({
      faults: {
        vanish: [{ nodegroup: 'ghost', afterMs: 10 * MIN }],
        deleteFailures: [{ nodegroup: 'sticky' }],
      },
    });
    await create(h, 'ghost');
    await create(h, 'sticky');
    h.clock.advance(10 * MIN);
    expect((await failure(describeNg(h, 'ghost'))).name).toBe('ResourceNotFoundException');
    await h.eks.send(new DeleteNodegroupCommand({ clusterName: CLUSTER, nodegroupName: 'sticky' }));
    h.clock.advance(5 * MIN);
    const ng = await describeNg(h, 'sticky');
    expect(ng.status).toBe('DELETE_FAILED');
    expect(ng.health?.issues?.[0]?.code).toBe('Ec2SecurityGroupDeletionFailure');
    h.sim.admin.setFaults({});
    await h.eks.send(new DeleteNodegroupCommand({ clusterName: CLUSTER, nodegroupName: 'sticky' }));
    h.clock.advance(5 * MIN);
    expect((await failure(describeNg(h, 'sticky'))).name).toBe('ResourceNotFoundException');
  });
});

describe('configuration and admin endpoint', () => {
  it('reads durations, limits and faults from a YAML config file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cloud-sim-'));
    const file = join(dir, 'sim.yaml');
    writeFileSync(
      file,
      [
        'seed: 9',
        'durations: {createMs: 10000, instanceLaunchMs: 5000}',
        'limits: {nodegroupsPerCluster: 1}',
        'faults:',
        '  launchFailures:',
        '    - {instanceType: p5.48xlarge, afterMs: 60000}',
      ].join('\n'),
    );
    h = await harness({ configFile: file, seed: undefined });
    expect(h.sim.seed).toBe(9);
    await create(h, 'p5', { instanceTypes: ['p5.48xlarge'] });
    expect((await failure(create(h, 'second'))).name).toBe('ResourceLimitExceededException');
    h.clock.advance(60 * SEC);
    expect(await status(h, 'p5')).toBe('CREATE_FAILED');
  });

  it('serves state, faults, clock and reset under /_sim', async () => {
    h = await harness();
    await create(h, 'st');
    const put = await fetch(`${h.sim.endpoint}/_sim/faults`, {
      method: 'PUT',
      body: JSON.stringify({ throttleRate: 1, operations: ['DescribeNodegroup'] }),
    });
    expect(put.status).toBe(200);
    expect((await failure(describeNg(h, 'st'))).name).toBe('ThrottlingException');
    const bad = await fetch(`${h.sim.endpoint}/_sim/faults`, {
      method: 'PUT',
      body: JSON.stringify({ throttleRate: 2 }),
    });
    expect(bad.status).toBe(400);
    const adv = await fetch(`${h.sim.endpoint}/_sim/clock/advance`, {
      method: 'POST',
      body: JSON.stringify({ ms: 3 * MIN }),
    });
    expect(adv.status).toBe(200);
    const state = (await (await fetch(`${h.sim.endpoint}/_sim/state`)).json()) as {
      nodegroups: {
        name: string;
        status: string;
        autoScalingGroup: { instances: { lifecycleState: string }[] };
      }[];
      faults: { throttleRate?: number };
    };
    expect(state.faults.throttleRate).toBe(1);
    expect(state.nodegroups.map((n) => [n.name, n.status])).toEqual([['st', 'ACTIVE']]);
    expect(state.nodegroups[0]!.autoScalingGroup.instances.map((i) => i.lifecycleState)).toEqual([
      'InService',
      'InService',
    ]);
    expect((await fetch(`${h.sim.endpoint}/_sim/reset`, { method: 'POST' })).status).toBe(200);
    expect((await h.eks.send(new ListNodegroupsCommand({ clusterName: CLUSTER }))).nodegroups).toEqual([]);
    expect(h.sim.admin.getFaults()).toEqual({});
  });
});
