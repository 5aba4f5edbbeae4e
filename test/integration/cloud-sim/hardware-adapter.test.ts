import { EC2Client } from '@aws-sdk/client-ec2';
import { PricingClient } from '@aws-sdk/client-pricing';
import {
  FACTS_TTL_MS,
  HardwareFacts,
  hardwareFacts,
  PRICE_TTL_MS,
  pricingRegionFor,
  resetHardwareFacts,
  UNKNOWN_TTL_MS,
} from '../../../lambdas/aws/hardware';
import { resetClients } from '../../../lambdas/shared/clients';
import { resetConfig } from '../../../lambdas/shared/config';
import { type CloudSim, startCloudSim } from '../../../local/cloud-sim';
import { loadSnapshot } from '../../../local/cloud-sim/aws-snapshot';

/**
 * The adapter as a Lambda runs it: real SDK clients, endpoints only from AWS_ENDPOINT_URL_EC2 and
 * AWS_ENDPOINT_URL_PRICING (pointed at the simulator), and the simulator's request log to count calls.
 */

let sim: CloudSim;
const lines: string[] = [];
const saved = { ...process.env };
beforeAll(async () => {
  sim = await startCloudSim({ port: 0, seed: 7, log: (l) => lines.push(l) });
  process.env.AWS_ENDPOINT_URL_EC2 = sim.endpoint;
  process.env.AWS_ENDPOINT_URL_PRICING = sim.endpoint;
});
afterAll(async () => {
  resetHardwareFacts();
  resetClients();
  process.env = saved;
  await sim.stop();
});
beforeEach(() => {
  lines.length = 0;
  sim.admin.setFaults({});
});

const count = (prefix: string) => lines.filter((l) => l.startsWith(prefix)).length;
const ec2Calls = () => count('EC2 DescribeInstanceTypes');
const priceCalls = () => count('Pricing GetProducts');

/** An adapter on a clock the test moves, with clients that find the simulator through the environment. */
function adapter(region = 'us-east-1', maxAttempts = 3) {
  let t = 1_000_000;
  const hw = new HardwareFacts({
    region,
    ec2: new EC2Client({ region, maxAttempts }),
    pricing: new PricingClient({ region: pricingRegionFor(region), maxAttempts }),
    now: () => t,
  });
  return { hw, advance: (ms: number) => (t += ms), [Symbol.dispose]: () => hw.destroy() };
}

describe('hardware facts from EC2 and the Price List', () => {
  it('asks for many names, from concurrent callers, in one DescribeInstanceTypes', async () => {
    using a = adapter();
    const [one, two, unknown] = await Promise.all([
      a.hw.instanceFacts(['g6.2xlarge']),
      a.hw.instanceFacts(['p5.48xlarge', 'm7i.xlarge', 'g6.2xlarge']),
      a.hw.instanceFacts(['g6.2xlage']),
    ]);
    expect(ec2Calls()).toBe(1);
    expect(one.get('g6.2xlarge')).toMatchObject({
      vcpus: 8,
      memoryMiB: 32768,
      architectures: ['x86_64'],
      accelerator: { kind: 'nvidia', name: 'L4', count: 1, memoryMiB: 22888 },
    });
    expect(two.get('p5.48xlarge')?.accelerator).toEqual({
      kind: 'nvidia',
      name: 'H100',
      count: 8,
      memoryMiB: 81920,
    });
    expect(two.get('m7i.xlarge')?.accelerator).toEqual({ kind: 'none' });
    expect(unknown.has('g6.2xlage')).toBe(true);
    expect(unknown.get('g6.2xlage')).toBeUndefined();
  });

  it('caches facts per instance type, unknown names for a shorter time, and asks again once they expire', async () => {
    using a = adapter();
    await a.hw.instanceFacts(['g6.2xlarge', 'g6.2xlage']);
    await a.hw.instanceFacts(['g6.2xlarge', 'g6.2xlage']);
    expect(ec2Calls()).toBe(1);
    a.advance(UNKNOWN_TTL_MS + 1);
    await a.hw.instanceFacts(['g6.2xlarge', 'g6.2xlage']);
    expect(ec2Calls()).toBe(2);
    expect(lines.at(-1)).toBe('EC2 DescribeInstanceTypes 200');
    a.advance(FACTS_TTL_MS);
    await a.hw.instanceFacts(['g6.2xlarge']);
    expect(ec2Calls()).toBe(3);
  });

  it('splits more than 100 names into pages of 100', async () => {
    using a = adapter();
    const known = loadSnapshot().instanceTypes.map((t) => t.InstanceType as string);
    const names = [...known, ...Array.from({ length: 101 - known.length }, (_, i) => `zz${i}.large`)];
    const got = await a.hw.instanceFacts(names);
    expect(ec2Calls()).toBe(2);
    expect([...got.values()].filter(Boolean)).toHaveLength(known.length);
  });

  it('prices an instance type once per TTL, however many ask at the same time', async () => {
    using a = adapter();
    const f = (await a.hw.instanceFacts(['g6e.2xlarge'])).get('g6e.2xlarge')!;
    const prices = await Promise.all([a.hw.onDemandPrice(f), a.hw.onDemandPrice(f), a.hw.onDemandPrice(f)]);
    expect(prices[0]).toEqual({
      region: 'us-east-1',
      perHour: 2.24208,
      currency: 'USD',
      effectiveDate: '2026-07-20T13:44:30Z',
    });
    expect(priceCalls()).toBe(1);
    await a.hw.onDemandPrice(f);
    expect(priceCalls()).toBe(1);
    a.advance(PRICE_TTL_MS + 1);
    await a.hw.onDemandPrice(f);
    expect(priceCalls()).toBe(2);
  });

  it('prices bare metal at its dedicated-tenancy product', async () => {
    using a = adapter();
    const f = (await a.hw.instanceFacts(['m7i.metal-24xl'])).get('m7i.metal-24xl')!;
    expect(f.bareMetal).toBe(true);
    expect((await a.hw.onDemandPrice(f))?.perHour).toBe(5.32224);
  });

  it('looks up everything a compute write needs, with near names for an unknown type', async () => {
    using a = adapter();
    const known = await a.hw.lookup('g6.2xlarge');
    expect(known.price?.perHour).toBe(0.9776);
    expect(known.nearNames).toEqual([]);
    lines.length = 0;
    const unknown = await a.hw.lookup('g6.2xlage');
    expect(unknown.facts).toBeUndefined();
    // One call for the name, one for its family's sizes and its size in every family.
    expect(ec2Calls()).toBe(2);
    expect(unknown.nearNames).toContain('g6.2xlarge');
    expect(unknown.nearNames).toContain('g6.48xlarge');
    await a.hw.lookup('g6.2xlage');
    expect(ec2Calls()).toBe(2);
  });

  it('does not cache a failure: the next call asks again', async () => {
    using a = adapter('us-east-1', 1);
    sim.admin.patchFaults({ throttleRate: 1, operations: ['DescribeInstanceTypes'] });
    await expect(a.hw.instanceFacts(['g5.xlarge'])).rejects.toMatchObject({ name: 'RequestLimitExceeded' });
    sim.admin.setFaults({});
    expect((await a.hw.instanceFacts(['g5.xlarge'])).get('g5.xlarge')?.vcpus).toBe(4);
  });

  it('asks the nearest Price List endpoint for the stage region prices, from one shared instance', async () => {
    expect(pricingRegionFor('us-west-2')).toBe('us-east-1');
    expect(pricingRegionFor('eu-west-1')).toBe('eu-central-1');
    expect(pricingRegionFor('ap-northeast-1')).toBe('ap-south-1');
    process.env.AWS_REGION = 'eu-west-1';
    resetConfig();
    resetHardwareFacts();
    try {
      const hw = hardwareFacts();
      expect(hardwareFacts()).toBe(hw);
      const f = (await hw.instanceFacts(['g6.2xlarge'])).get('g6.2xlarge')!;
      // The snapshot has us-east-1 prices only: eu-west-1's is asked for, and there is none.
      expect(await hw.onDemandPrice(f)).toBeUndefined();
      expect(priceCalls()).toBe(1);
    } finally {
      process.env.AWS_REGION = saved.AWS_REGION;
      resetConfig();
      resetHardwareFacts();
    }
  });
});
