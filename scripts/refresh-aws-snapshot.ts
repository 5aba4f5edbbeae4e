import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EC2Client, type InstanceTypeInfo, paginateDescribeInstanceTypes } from '@aws-sdk/client-ec2';
import { PricingClient, paginateGetProducts } from '@aws-sdk/client-pricing';
import { priceFilters, toInstanceFacts } from '../lambdas/aws/hardware';

/**
 * `npm run refresh-aws-snapshot`: regenerates config/aws/instance-types.json and config/aws/prices-<region>.json,
 * the snapshot of AWS's data that the cloud simulator serves and config/computes.yaml is checked against, from
 * an account with the real SDK clients: DescribeInstanceTypes in each region for the families below, and the
 * Price List API (us-east-1) for each region's on-demand Linux prices. Output is deterministic (sorted, keys
 * sorted, two-space JSON), so a refresh shows as a reviewable diff.
 *
 *   npm run refresh-aws-snapshot -- [--regions us-east-1,eu-west-1] [--out config/aws] [--date 2026-12-03]
 *
 * Regions default to those of config/stages/*.json. Credentials, and endpoints if overridden
 * (AWS_ENDPOINT_URL_EC2, AWS_ENDPOINT_URL_PRICING), are found the SDK's usual way. Needs
 * ec2:DescribeInstanceTypes and pricing:GetProducts.
 */

/** The families llmcap supports: CPU (Intel, Graviton), NVIDIA GPUs, and AWS Neuron (Inferentia, Trainium). */
export const SNAPSHOT_FAMILIES = [
  'c7i',
  'g5',
  'g5g',
  'g6',
  'g6e',
  'inf2',
  'm7g',
  'm7i',
  'p4d',
  'p4de',
  'p5',
  'p5e',
  'p5en',
  'p6-b200',
  'r7i',
  'trn1',
  'trn1n',
];

export const CONFIG_DIR = join(__dirname, '..', 'config');
export const SNAPSHOT_DIR = join(CONFIG_DIR, 'aws');

/**
 * The members of InstanceTypeInfo kept (true: all of it; a list: those of its members). Enough to resolve a
 * compute and a node's allocatable; the rest (EBS and network cards' details, boot modes, ...) only makes the
 * diff of a refresh longer.
 */
const KEEP: Record<string, true | string[]> = {
  InstanceType: true,
  CurrentGeneration: true,
  FreeTierEligible: true,
  SupportedUsageClasses: true,
  SupportedRootDeviceTypes: true,
  SupportedVirtualizationTypes: true,
  BareMetal: true,
  Hypervisor: true,
  ProcessorInfo: true,
  VCpuInfo: ['DefaultVCpus', 'DefaultCores', 'DefaultThreadsPerCore'],
  MemoryInfo: true,
  InstanceStorageSupported: true,
  InstanceStorageInfo: true,
  NetworkInfo: [
    'NetworkPerformance',
    'MaximumNetworkInterfaces',
    'MaximumNetworkCards',
    'Ipv4AddressesPerInterface',
    'Ipv6AddressesPerInterface',
    'Ipv6Supported',
    'EnaSupport',
    'EfaSupported',
    'EfaInfo',
  ],
  GpuInfo: true,
  NeuronInfo: true,
  InferenceAcceleratorInfo: true,
  MediaAcceleratorInfo: true,
  HibernationSupported: true,
  BurstablePerformanceSupported: true,
};

/** Product attributes kept from a price list entry: what identifies the product and what a person checks. */
const PRICE_ATTRIBUTES = [
  'capacitystatus',
  'currentGeneration',
  'gpu',
  'instanceFamily',
  'instanceType',
  'licenseModel',
  'location',
  'locationType',
  'marketoption',
  'memory',
  'operatingSystem',
  'operation',
  'preInstalledSw',
  'processorArchitecture',
  'regionCode',
  'servicecode',
  'servicename',
  'tenancy',
  'usagetype',
  'vcpu',
];

export function projectInstanceType(info: InstanceTypeInfo): Record<string, unknown> {
  const src = info as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, keep] of Object.entries(KEEP)) {
    const v = src[key];
    if (v === undefined || v === null) continue;
    if (keep === true) out[key] = v;
    else {
      const part: Record<string, unknown> = {};
      for (const k of keep)
        if ((v as Record<string, unknown>)[k] !== undefined) part[k] = (v as Record<string, unknown>)[k];
      out[key] = part;
    }
  }
  return sortKeys(out) as Record<string, unknown>;
}

/** A PriceList entry without its Reserved terms and with the attributes above. */
export function projectPriceEntry(entry: Record<string, any>): Record<string, unknown> {
  const attrs = entry.product?.attributes ?? {};
  const attributes: Record<string, string> = {};
  for (const k of PRICE_ATTRIBUTES) if (attrs[k] !== undefined) attributes[k] = attrs[k];
  return sortKeys({
    product: { productFamily: entry.product?.productFamily, sku: entry.product?.sku, attributes },
    serviceCode: entry.serviceCode,
    terms: { OnDemand: entry.terms?.OnDemand ?? {} },
    version: entry.version,
    publicationDate: entry.publicationDate,
  }) as Record<string, unknown>;
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object' && !(v instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== undefined) out[k] = sortKeys(x);
    }
    return out;
  }
  return v;
}

export interface InstanceTypesFile {
  about: string;
  source: string;
  retrievedAt: string;
  regions: string[];
  families: string[];
  instanceTypes: Record<string, unknown>[];
}

export interface PricesFile {
  about: string;
  source: string;
  retrievedAt: string;
  region: string;
  priceList: Record<string, unknown>[];
}

export const INSTANCE_TYPES_ABOUT =
  'EC2 DescribeInstanceTypes answers for the instance families llmcap supports: what the cloud simulator serves and config/computes.yaml is checked against. A subset of InstanceTypeInfo (scripts/refresh-aws-snapshot.ts says which members). Regenerate with npm run refresh-aws-snapshot (docs/cloud-sim.md).';
export const PRICES_ABOUT =
  "The AWS Price List API's GetProducts entries for these instance types' on-demand Linux price in one region (shared tenancy, dedicated for bare metal; no pre-installed software; capacity used), without Reserved terms: what the cloud simulator serves. Regenerate with npm run refresh-aws-snapshot (docs/cloud-sim.md).";

/** The files' text: fixed header order, then the sorted records, two-space indent, a final newline. */
export function renderJson(file: InstanceTypesFile | PricesFile): string {
  return `${JSON.stringify(file, null, 2)}\n`;
}

const byName = (a: Record<string, unknown>, b: Record<string, unknown>) =>
  String(a.InstanceType) < String(b.InstanceType)
    ? -1
    : String(a.InstanceType) > String(b.InstanceType)
      ? 1
      : 0;

function priceKey(e: Record<string, any>): string {
  return `${e.product?.attributes?.instanceType ?? ''} ${e.product?.sku ?? ''}`;
}

export interface CollectOptions {
  regions: string[];
  families?: string[];
  ec2For(region: string): EC2Client;
  pricing: PricingClient;
  retrievedAt: string;
  source?: string;
}

/** Asks AWS (or whatever the clients point at) and returns the files' contents, keyed by file name. */
export async function collectSnapshot(opts: CollectOptions): Promise<Map<string, string>> {
  const families = opts.families ?? SNAPSHOT_FAMILIES;
  const source =
    opts.source ??
    `DescribeInstanceTypes in ${opts.regions.join(', ')} and the Price List API's GetProducts, asked by scripts/refresh-aws-snapshot.ts`;
  const union = new Map<string, InstanceTypeInfo>();
  const offered = new Map<string, InstanceTypeInfo[]>();
  for (const region of opts.regions) {
    const ec2 = opts.ec2For(region);
    const here: InstanceTypeInfo[] = [];
    const pages = paginateDescribeInstanceTypes(
      { client: ec2, pageSize: 100 },
      { Filters: [{ Name: 'instance-type', Values: families.map((f) => `${f}.*`) }], MaxResults: 100 },
    );
    for await (const page of pages) here.push(...(page.InstanceTypes ?? []));
    offered.set(region, here);
    for (const info of here)
      if (info.InstanceType && !union.has(info.InstanceType)) union.set(info.InstanceType, info);
  }
  const files = new Map<string, string>();
  files.set(
    'instance-types.json',
    renderJson({
      about: INSTANCE_TYPES_ABOUT,
      source,
      retrievedAt: opts.retrievedAt,
      regions: opts.regions,
      families,
      instanceTypes: [...union.values()].map(projectInstanceType).sort(byName),
    }),
  );
  for (const region of opts.regions) {
    const entries: Record<string, unknown>[] = [];
    const types = offered.get(region) ?? [];
    // A few at a time: the Price List API is throttled per account.
    for (let i = 0; i < types.length; i += 4) {
      const chunk = await Promise.all(
        types.slice(i, i + 4).map(async (info) => {
          const found: Record<string, unknown>[] = [];
          const pages = paginateGetProducts(
            { client: opts.pricing, pageSize: 100 },
            {
              ServiceCode: 'AmazonEC2',
              FormatVersion: 'aws_v1',
              Filters: priceFilters(region, toInstanceFacts(info)),
              MaxResults: 100,
            },
          );
          for await (const page of pages)
            for (const e of page.PriceList ?? []) found.push(projectPriceEntry(JSON.parse(String(e))));
          return found;
        }),
      );
      entries.push(...chunk.flat());
    }
    entries.sort((a, b) => (priceKey(a) < priceKey(b) ? -1 : priceKey(a) > priceKey(b) ? 1 : 0));
    files.set(
      `prices-${region}.json`,
      renderJson({ about: PRICES_ABOUT, source, retrievedAt: opts.retrievedAt, region, priceList: entries }),
    );
  }
  return files;
}

/** The regions the checked-in snapshot has prices for. */
export function snapshotRegions(dir = SNAPSHOT_DIR): string[] {
  return readdirSync(dir)
    .flatMap((f) => /^prices-(.+)\.json$/.exec(f)?.[1] ?? [])
    .sort();
}

/** The regions of the stage configs: the ones whose prices llmcap needs. */
export function stageRegions(dir = join(CONFIG_DIR, 'stages')): string[] {
  const regions = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => (JSON.parse(readFileSync(join(dir, f), 'utf8')) as { region: string }).region);
  return [...new Set(regions)].sort();
}

function flag(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
}

export async function main(argv: string[]): Promise<void> {
  const regions = flag(argv, 'regions')?.split(',').filter(Boolean) ?? stageRegions();
  const out = flag(argv, 'out') ?? SNAPSHOT_DIR;
  const retrievedAt = flag(argv, 'date') ?? new Date().toISOString().slice(0, 10);
  const clients: { destroy(): void }[] = [];
  const pricing = new PricingClient({ region: 'us-east-1', maxAttempts: 8, retryMode: 'adaptive' });
  clients.push(pricing);
  try {
    const files = await collectSnapshot({
      regions,
      retrievedAt,
      pricing,
      ec2For: (region) => {
        const c = new EC2Client({ region, maxAttempts: 8, retryMode: 'adaptive' });
        clients.push(c);
        return c;
      },
    });
    for (const [name, text] of files) {
      writeFileSync(join(out, name), text);
      console.log(`wrote ${join(out, name)}`);
    }
  } finally {
    for (const c of clients) c.destroy();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((e: Error) => {
    console.error(`refresh-aws-snapshot: ${e.name}: ${e.message}`);
    process.exit(1);
  });
}
