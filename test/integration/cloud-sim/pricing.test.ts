import { type Filter, GetProductsCommand, PricingClient, paginateGetProducts } from '@aws-sdk/client-pricing';
import { type CloudSim, startCloudSim } from '../../../local/cloud-sim';
import { loadSnapshot } from '../../../local/cloud-sim/aws-snapshot';

let sim: CloudSim;
let pricing: PricingClient;
beforeAll(async () => {
  sim = await startCloudSim({ port: 0, seed: 7 });
  pricing = new PricingClient({ endpoint: sim.endpoint, region: 'us-east-1', maxAttempts: 1 });
});
afterAll(async () => {
  pricing.destroy();
  await sim.stop();
});

const term = (Field: string, Value: string, Type = 'TERM_MATCH'): Filter =>
  ({ Type, Field, Value }) as Filter;
const onDemandLinux = (instanceType: string, tenancy = 'Shared') => [
  term('instanceType', instanceType),
  term('regionCode', 'us-east-1'),
  term('operatingSystem', 'Linux'),
  term('tenancy', tenancy),
  term('preInstalledSw', 'NA'),
  term('capacitystatus', 'Used'),
];
const products = async (Filters: Filter[], MaxResults?: number) => {
  const out: any[] = [];
  for await (const page of paginateGetProducts(
    { client: pricing, ...(MaxResults ? { pageSize: MaxResults } : {}) },
    { ServiceCode: 'AmazonEC2', Filters },
  ))
    out.push(...((page.PriceList ?? []) as unknown[]).map((e) => JSON.parse(String(e))));
  return out;
};
const hourly = (e: any): string => {
  const [t] = Object.values(e.terms.OnDemand) as any[];
  const [d] = Object.values(t.priceDimensions) as any[];
  return d.pricePerUnit.USD;
};
const error = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: Error) => e,
  );

describe('Price List GetProducts (JSON 1.1)', () => {
  it('answers one product per on-demand Linux instance type, its PriceList entry a JSON string', async () => {
    const out = await pricing.send(
      new GetProductsCommand({
        ServiceCode: 'AmazonEC2',
        Filters: onDemandLinux('g6.2xlarge'),
        FormatVersion: 'aws_v1',
      }),
    );
    expect(out.FormatVersion).toBe('aws_v1');
    expect(out.PriceList).toHaveLength(1);
    const raw = out.PriceList![0]!;
    // The SDK hands the entry over as a String: AWS's JSON text, not a parsed object.
    expect(raw).toBeInstanceOf(String);
    expect(String(raw)).toMatch(/^\{"product":\{/);
    const e = JSON.parse(String(raw));
    expect(e.product.attributes).toMatchObject({
      instanceType: 'g6.2xlarge',
      regionCode: 'us-east-1',
      location: 'US East (N. Virginia)',
      operatingSystem: 'Linux',
      tenancy: 'Shared',
      capacitystatus: 'Used',
    });
    expect(hourly(e)).toBe('0.9776000000');
  });

  it('filters on location as well as regionCode, on field names in any case', async () => {
    const byLocation = await products([
      term('InstanceType', 'p5.48xlarge'),
      term('location', 'US East (N. Virginia)'),
      term('serviceCode', 'AmazonEC2'),
    ]);
    expect(byLocation.map(hourly)).toEqual(['55.0400000000']);
    expect(await products([term('instanceType', 'p5.48xlarge'), term('regionCode', 'eu-west-1')])).toEqual(
      [],
    );
  });

  it('lists bare metal with dedicated tenancy, not shared', async () => {
    expect(await products(onDemandLinux('m7i.metal-24xl'))).toEqual([]);
    const metal = await products(onDemandLinux('m7i.metal-24xl', 'Dedicated'));
    expect(metal).toHaveLength(1);
    expect(metal[0].product.productFamily).toBe('Compute Instance (bare metal)');
  });

  it('takes ANY_OF, NONE_OF and CONTAINS filters', async () => {
    const any = await products([term('instanceType', 'g6.2xlarge,g5.2xlarge', 'ANY_OF')]);
    expect(any.map((e) => e.product.attributes.instanceType).sort()).toEqual(['g5.2xlarge', 'g6.2xlarge']);
    const g6 = await products([term('instanceType', 'g6.', 'CONTAINS')]);
    expect(g6.every((e) => e.product.attributes.instanceType.startsWith('g6.'))).toBe(true);
    const none = await products([
      term('instanceType', 'g6.', 'CONTAINS'),
      term('instanceType', 'g6.2xlarge', 'NONE_OF'),
    ]);
    expect(none).toHaveLength(g6.length - 1);
  });

  it('pages with MaxResults and NextToken, every entry once', async () => {
    const total = loadSnapshot().priceList.length;
    const pages: number[] = [];
    for await (const page of paginateGetProducts(
      { client: pricing, pageSize: 10 },
      { ServiceCode: 'AmazonEC2', Filters: [term('regionCode', 'us-east-1')] },
    ))
      pages.push(page.PriceList?.length ?? 0);
    expect(pages).toHaveLength(Math.ceil(total / 10));
    expect(pages.reduce((a, b) => a + b, 0)).toBe(total);
  });

  it('refuses a bad page size, filter type, token or service code with the Price List errors', async () => {
    const send = (input: object) =>
      error(pricing.send(new GetProductsCommand({ ServiceCode: 'AmazonEC2', ...input })));
    expect((await send({ MaxResults: 0 }))?.name).toBe('InvalidParameterException');
    expect((await send({ Filters: [term('instanceType', 'x', 'LIKE')] }))?.name).toBe(
      'InvalidParameterException',
    );
    expect((await send({ NextToken: 'nope' }))?.name).toBe('InvalidNextTokenException');
    expect((await send({ ServiceCode: 'AmazonS3' }))?.name).toBe('NotFoundException');
  });
});
