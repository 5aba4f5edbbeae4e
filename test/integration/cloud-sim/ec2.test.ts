import {
  type _InstanceType,
  DescribeInstanceTypesCommand,
  type DescribeInstanceTypesCommandInput,
  EC2Client,
  type InstanceTypeInfo,
  paginateDescribeInstanceTypes,
} from '@aws-sdk/client-ec2';
import { type CloudSim, startCloudSim } from '../../../local/cloud-sim';
import { loadSnapshot } from '../../../local/cloud-sim/aws-snapshot';

let sim: CloudSim;
let ec2: EC2Client;
const lines: string[] = [];
beforeAll(async () => {
  sim = await startCloudSim({ port: 0, seed: 7, log: (l) => lines.push(l) });
  ec2 = new EC2Client({ endpoint: sim.endpoint, region: 'us-east-1', maxAttempts: 1 });
});
afterAll(async () => {
  ec2.destroy();
  await sim.stop();
});

async function all(
  input: DescribeInstanceTypesCommandInput,
  pageSize?: number,
): Promise<InstanceTypeInfo[][]> {
  const pages: InstanceTypeInfo[][] = [];
  for await (const p of paginateDescribeInstanceTypes(
    { client: ec2, ...(pageSize ? { pageSize } : {}) },
    input,
  ))
    pages.push(p.InstanceTypes ?? []);
  return pages;
}
const names = (ts: InstanceTypeInfo[]) => ts.map((t) => t.InstanceType);
const error = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: Error & { $metadata?: { httpStatusCode?: number } }) => e,
  );

describe('EC2 DescribeInstanceTypes (query protocol)', () => {
  it('answers every snapshot instance type as the SDK reads it, member for member', async () => {
    // The whole snapshot through XML and the SDK's deserializer: any element EC2 names differently would be lost.
    const got = (await all({}, 100)).flat();
    expect(got).toEqual(loadSnapshot().instanceTypes);
    expect(got.length).toBeGreaterThan(80);
  });

  it('describes the named types with the facts llmcap resolves computes from', async () => {
    const { InstanceTypes } = await ec2.send(
      new DescribeInstanceTypesCommand({ InstanceTypes: ['p5.48xlarge', 'inf2.xlarge', 'm7g.xlarge'] }),
    );
    const by = new Map(InstanceTypes?.map((t) => [t.InstanceType, t]));
    expect(by.get('p5.48xlarge')).toMatchObject({
      VCpuInfo: { DefaultVCpus: 192 },
      MemoryInfo: { SizeInMiB: 2097152 },
      ProcessorInfo: { SupportedArchitectures: ['x86_64'] },
      GpuInfo: {
        Gpus: [{ Name: 'H100', Manufacturer: 'NVIDIA', Count: 8, MemoryInfo: { SizeInMiB: 81920 } }],
        TotalGpuMemoryInMiB: 655360,
      },
    });
    expect(by.get('inf2.xlarge')).toMatchObject({
      NeuronInfo: {
        NeuronDevices: [
          { Count: 1, Name: 'Inferentia2', CoreInfo: { Count: 2 }, MemoryInfo: { SizeInMiB: 32768 } },
        ],
      },
      InferenceAcceleratorInfo: { Accelerators: [{ Count: 1, Manufacturer: 'AWS', Name: 'Inferentia2' }] },
    });
    expect(by.get('m7g.xlarge')?.ProcessorInfo?.SupportedArchitectures).toEqual(['arm64']);
    expect(by.get('m7g.xlarge')?.GpuInfo).toBeUndefined();
  });

  it('filters on instance-type with * and ? wildcards, values OR-ed and filters AND-ed', async () => {
    const g6 = (await all({ Filters: [{ Name: 'instance-type', Values: ['g6.*'] }] })).flat();
    expect(names(g6).every((n) => n?.startsWith('g6.'))).toBe(true);
    expect(g6).toHaveLength(8);
    const q = (await all({ Filters: [{ Name: 'instance-type', Values: ['g6?.xlarge', 'p5.4*'] }] })).flat();
    expect(names(q)).toEqual(['g6e.xlarge', 'p5.48xlarge', 'p5.4xlarge']);
    const arm = (
      await all({
        Filters: [
          { Name: 'instance-type', Values: ['m7*'] },
          { Name: 'processor-info.supported-architecture', Values: ['arm64'] },
          { Name: 'bare-metal', Values: ['false'] },
        ],
      })
    ).flat();
    expect(names(arm).every((n) => n?.startsWith('m7g.') && n !== 'm7g.metal')).toBe(true);
    expect(arm).toHaveLength(8);
  });

  it('pages with MaxResults and NextToken, every type once', async () => {
    const pages = await all({}, 5);
    const total = loadSnapshot().instanceTypes.length;
    expect(pages).toHaveLength(Math.ceil(total / 5));
    expect(pages.every((p) => p.length <= 5)).toBe(true);
    const seen = names(pages.flat());
    expect(new Set(seen).size).toBe(total);
    const first = await ec2.send(new DescribeInstanceTypesCommand({ MaxResults: 5 }));
    expect(first.NextToken).toEqual(expect.any(String));
    const last = await ec2.send(
      new DescribeInstanceTypesCommand({
        Filters: [{ Name: 'instance-type', Values: ['p5.*'] }],
        MaxResults: 5,
      }),
    );
    expect(last.NextToken).toBeUndefined();
  });

  it('refuses unknown names as EC2 words it, naming each one', async () => {
    const e = await error(
      ec2.send(
        new DescribeInstanceTypesCommand({
          InstanceTypes: ['g6.2xlage', 'g6.2xlarge', 'p9.huge'] as _InstanceType[],
        }),
      ),
    );
    expect(e?.name).toBe('InvalidInstanceType');
    expect(e?.message).toBe('The following supplied instance types do not exist: [g6.2xlage, p9.huge]');
    expect(e?.$metadata?.httpStatusCode).toBe(400);
    expect(lines).toContain('EC2 DescribeInstanceTypes 400 InvalidInstanceType');
  });

  it('leaves unknown names out of an instance-type filter instead of failing', async () => {
    const got = (
      await all({ Filters: [{ Name: 'instance-type', Values: ['g6.2xlage', 'g6.2xlarge'] }] })
    ).flat();
    expect(names(got)).toEqual(['g6.2xlarge']);
  });

  it('refuses a page size outside 5-100, an unknown filter and a foreign token', async () => {
    expect((await error(ec2.send(new DescribeInstanceTypesCommand({ MaxResults: 3 }))))?.name).toBe(
      'InvalidParameterValue',
    );
    const f = await error(
      ec2.send(new DescribeInstanceTypesCommand({ Filters: [{ Name: 'gpu-count', Values: ['1'] }] })),
    );
    expect(f?.name).toBe('InvalidParameterValue');
    expect(f?.message).toBe("The filter 'gpu-count' is invalid");
    expect((await error(ec2.send(new DescribeInstanceTypesCommand({ NextToken: 'bm9wZQ' }))))?.name).toBe(
      'InvalidPaginationToken',
    );
    expect((await error(ec2.send(new DescribeInstanceTypesCommand({ DryRun: true }))))?.name).toBe(
      'DryRunOperation',
    );
  });

  it('throttles as EC2 does when a fault says so', async () => {
    sim.admin.patchFaults({ throttleRate: 1, operations: ['DescribeInstanceTypes'] });
    try {
      const e = await error(ec2.send(new DescribeInstanceTypesCommand({ InstanceTypes: ['g6.2xlarge'] })));
      expect(e?.name).toBe('RequestLimitExceeded');
      expect(e?.$metadata?.httpStatusCode).toBe(503);
    } finally {
      sim.admin.setFaults({});
    }
  });
});
