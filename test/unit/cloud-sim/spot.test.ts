import { DrivenClock } from '../../../local/cloud-sim/clock';
import { DEFAULT_DURATIONS, DEFAULT_LIMITS, type FaultConfig } from '../../../local/cloud-sim/config';
import { type SimEvent, Simulator } from '../../../local/cloud-sim/state';

// The simulator's Spot reclaims (issue 32 §4): EC2's warning to the event targets, the instance gone two minutes on.

function sim(faults: FaultConfig = {}) {
  const clock = new DrivenClock();
  const s = new Simulator({
    clock,
    seed: 7,
    timeScale: 1,
    durations: DEFAULT_DURATIONS,
    limits: DEFAULT_LIMITS,
    faults,
    clusterName: 'c',
    clusterVersion: '1.33',
    region: 'us-east-1',
    accountId: '123456789012',
  });
  const events: SimEvent[] = [];
  s.onEvent((e) => events.push(e));
  const group = (name: string, capacityType: string) =>
    s.create({
      nodegroupName: name,
      subnets: ['subnet-1'],
      nodeRole: 'arn:aws:iam::123456789012:role/node',
      instanceTypes: ['g6.2xlarge'],
      capacityType,
      scalingConfig: { minSize: 0, maxSize: 2, desiredSize: 1 },
    });
  const advance = (ms: number) => {
    clock.advance(ms);
    s.catchUp();
  };
  return { s, events, group, advance };
}

describe('Spot interruptions in the simulator', () => {
  it('warns as EC2 does, then reclaims the instance two minutes later and Auto Scaling replaces it', () => {
    const { s, events, group, advance } = sim();
    const ng = group('spot', 'SPOT');
    advance(DEFAULT_DURATIONS.createMs + DEFAULT_DURATIONS.instanceLaunchMs);
    const [inst] = ng.asg.instances;
    expect(inst!.state).toBe('InService');
    const e = s.interruptSpot(inst!.id);
    expect(events).toEqual([e]);
    expect(e).toMatchObject({
      'detail-type': 'EC2 Spot Instance Interruption Warning',
      source: 'aws.ec2',
      account: '123456789012',
      resources: [`arn:aws:ec2:us-east-1:123456789012:instance/${inst!.id}`],
      detail: { 'instance-id': inst!.id, 'instance-action': 'terminate' },
    });
    expect(() => s.interruptSpot(inst!.id)).toThrow('warned already');
    advance(119_000);
    expect(inst!.state).toBe('InService');
    advance(1_000);
    expect(inst!.state).toBe('Terminating');
    expect(ng.asg.activities.map((a) => a.cause)).toContainEqual(
      expect.stringContaining('was taken out of service in response to an EC2 Spot interruption notice'),
    );
    expect(ng.asg.instances.filter((i) => i.state === 'Pending')).toHaveLength(1);
  });

  it('reclaims only Spot instances, and at a rate with faults.spotInterruptions', () => {
    const { s, events, group, advance } = sim({
      spotInterruptions: [{ nodegroup: 'spot*', meanMs: 60_000 }],
    });
    const od = group('od', 'ON_DEMAND');
    const spot = group('spot', 'SPOT');
    advance(DEFAULT_DURATIONS.createMs + DEFAULT_DURATIONS.instanceLaunchMs);
    expect(() => s.interruptSpot(od.asg.instances[0]!.id)).toThrow('is not a Spot instance');
    advance(3_600_000);
    expect(events.length).toBeGreaterThan(0);
    expect(
      events.every((e) =>
        spot.asg.activities.some((a) => a.description.includes(String(e.detail['instance-id']))),
      ),
    ).toBe(true);
    expect(od.asg.instances.map((i) => i.state)).toEqual(['InService']);
  });
});
