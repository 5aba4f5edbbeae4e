import type { EC2Client, Filter as Ec2Filter, InstanceTypeInfo } from '@aws-sdk/client-ec2';
import type { Filter as PriceFilter, PricingClient } from '@aws-sdk/client-pricing';
import {
  type Accelerator,
  type Architecture,
  type InstanceFacts,
  type OnDemandPrice,
  splitInstanceType,
  suggestionPatterns,
  type UsageClass,
} from '../domain/hardware';
import { ec2Client, eksClient, pricingClient } from '../shared/clients';
import { config } from '../shared/config';

/**
 * What AWS says an instance type is (EC2 DescribeInstanceTypes) and costs (the Price List API's GetProducts),
 * as the domain's InstanceFacts and OnDemandPrice. Clients are built once per container and answers cached
 * per instance type: instance types never change and prices rarely, and the Price List API is slow and
 * throttled. Endpoints come from the SDK's own AWS_ENDPOINT_URL_EC2 and AWS_ENDPOINT_URL_PRICING, which the
 * local control plane and the tests point at the cloud simulator.
 */

export const FACTS_TTL_MS = 24 * 3600_000;
export const PRICE_TTL_MS = 6 * 3600_000;
/** An unknown name is asked again sooner: AWS launches instance types, and a region gains them. */
export const UNKNOWN_TTL_MS = 10 * 60_000;
/** The most values one DescribeInstanceTypes filter is given here, and its page size (EC2 allows 5 to 100). */
const BATCH = 100;

/**
 * The Price List Query API answers only in us-east-1, eu-central-1 and ap-south-1, for every region's prices:
 * the client's region is the nearest of those, not the stage's.
 */
export function pricingRegionFor(region: string): string {
  if (/^(eu|me|af|il)-/.test(region)) return 'eu-central-1';
  if (/^ap-/.test(region)) return 'ap-south-1';
  return 'us-east-1';
}

const ARCHITECTURES: readonly string[] = ['x86_64', 'arm64'] satisfies Architecture[];
const USAGE_CLASSES: readonly string[] = ['on-demand', 'spot', 'capacity-block'] satisfies UsageClass[];

/** EC2's description of an instance type, as the domain sees it. */
export function toInstanceFacts(info: InstanceTypeInfo): InstanceFacts {
  const name = info.InstanceType ?? '';
  const net = info.NetworkInfo;
  return {
    instanceType: name,
    vcpus: info.VCpuInfo?.DefaultVCpus ?? 0,
    memoryMiB: info.MemoryInfo?.SizeInMiB ?? 0,
    architectures: (info.ProcessorInfo?.SupportedArchitectures ?? []).filter((a): a is Architecture =>
      ARCHITECTURES.includes(a),
    ),
    accelerator: acceleratorOf(info),
    bareMetal: info.BareMetal ?? false,
    usageClasses: (info.SupportedUsageClasses ?? []).filter((u): u is UsageClass =>
      USAGE_CLASSES.includes(u),
    ),
    ...(net?.MaximumNetworkInterfaces !== undefined && net.Ipv4AddressesPerInterface !== undefined
      ? {
          network: {
            maxInterfaces: net.MaximumNetworkInterfaces,
            ipv4PerInterface: net.Ipv4AddressesPerInterface,
          },
        }
      : {}),
  };
}

function acceleratorOf(info: InstanceTypeInfo): Accelerator {
  // Inferentia and Trainium are NeuronInfo (EC2 also lists Inferentia under InferenceAcceleratorInfo).
  const neuron = info.NeuronInfo?.NeuronDevices?.[0];
  if (neuron)
    return {
      kind: 'neuron',
      name: neuron.Name ?? 'Neuron',
      devices: neuron.Count ?? 0,
      coresPerDevice: neuron.CoreInfo?.Count ?? 0,
      memoryMiB: neuron.MemoryInfo?.SizeInMiB ?? 0,
    };
  const gpus = info.GpuInfo?.Gpus ?? [];
  const gpu = gpus[0];
  if (!gpu) return { kind: 'none' };
  const count = gpus.reduce((n, g) => n + (g.Count ?? 0), 0);
  if (gpu.Manufacturer !== 'NVIDIA')
    return { kind: 'unsupported', description: `${gpu.Manufacturer} ${gpu.Name} GPUs` };
  // Fractional GPUs (g6f: Count 0, GpuPartitionSize 0.125) cannot be handed out as nvidia.com/gpu.
  if (count < 1 || gpus.length > 1)
    return {
      kind: 'unsupported',
      description: `a share of an NVIDIA ${gpu.Name} GPU (${gpu.GpuPartitionSize ?? '?'} of one)`,
    };
  return { kind: 'nvidia', name: gpu.Name ?? 'GPU', count, memoryMiB: gpu.MemoryInfo?.SizeInMiB ?? 0 };
}

/**
 * The price list products of an instance type's on-demand Linux price in a region: shared tenancy, no
 * pre-installed software, capacity used (not a reservation's), the on-demand market. Bare metal is listed
 * with dedicated tenancy.
 */
export function priceFilters(
  region: string,
  f: Pick<InstanceFacts, 'instanceType' | 'bareMetal'>,
): PriceFilter[] {
  return (
    [
      ['instanceType', f.instanceType],
      ['regionCode', region],
      ['operatingSystem', 'Linux'],
      ['tenancy', f.bareMetal ? 'Dedicated' : 'Shared'],
      ['preInstalledSw', 'NA'],
      ['capacitystatus', 'Used'],
      ['marketoption', 'OnDemand'],
    ] as const
  ).map(([Field, Value]) => ({ Type: 'TERM_MATCH', Field, Value }));
}

interface PriceListEntry {
  product?: { sku?: string };
  terms?: {
    OnDemand?: Record<
      string,
      {
        effectiveDate?: string;
        priceDimensions?: Record<string, { unit?: string; pricePerUnit?: Record<string, string> }>;
      }
    >;
  };
}

/** The hourly USD price in one PriceList entry (a JSON string, as GetProducts returns it). */
export function toOnDemandPrice(entry: unknown, region: string): OnDemandPrice | undefined {
  // The SDK hands each entry over as a string (or a string-like LazyJsonString): the JSON AWS sent.
  const e = (
    typeof entry === 'object' && entry !== null && !(entry instanceof String)
      ? entry
      : JSON.parse(String(entry))
  ) as PriceListEntry;
  for (const term of Object.values(e.terms?.OnDemand ?? {})) {
    for (const dim of Object.values(term.priceDimensions ?? {})) {
      const usd = Number(dim.pricePerUnit?.USD);
      if (dim.unit === 'Hrs' && Number.isFinite(usd) && usd > 0)
        return {
          region,
          perHour: usd,
          currency: 'USD',
          ...(term.effectiveDate ? { effectiveDate: term.effectiveDate } : {}),
        };
    }
  }
  return undefined;
}

interface Cached<T> {
  value: T;
  expiresAt: number;
}

interface Waiting {
  name: string;
  resolve(f: InstanceFacts | undefined): void;
  reject(e: unknown): void;
}

export interface HardwareFactsOptions {
  ec2: EC2Client;
  pricing: PricingClient;
  /** The stage's region: where node groups run, whose instance types and prices are asked for. */
  region: string;
  now?: () => number;
  factsTtlMs?: number;
  priceTtlMs?: number;
  unknownTtlMs?: number;
}

export class HardwareFacts {
  readonly region: string;
  private readonly now: () => number;
  private readonly facts = new Map<string, Cached<InstanceFacts | undefined>>();
  private readonly prices = new Map<string, Cached<OnDemandPrice | undefined>>();
  private readonly near = new Map<string, Cached<string[]>>();
  private readonly inflight = new Map<string, Promise<InstanceFacts | undefined>>();
  private readonly pricesInflight = new Map<string, Promise<OnDemandPrice | undefined>>();
  private queue: Waiting[] = [];

  constructor(private readonly opts: HardwareFactsOptions) {
    this.region = opts.region;
    this.now = opts.now ?? Date.now;
  }

  /**
   * EC2's facts for each name (undefined: not offered in the region). Names not cached and asked for in the
   * same turn of the event loop, by this call or concurrent ones, go out in one DescribeInstanceTypes.
   */
  async instanceFacts(names: readonly string[]): Promise<Map<string, InstanceFacts | undefined>> {
    const unique = [...new Set(names)];
    const values = await Promise.all(unique.map((n) => this.load(n)));
    return new Map(unique.map((n, i) => [n, values[i]]));
  }

  /** The region's on-demand Linux price of an instance type (undefined: AWS lists none). */
  async onDemandPrice(
    f: Pick<InstanceFacts, 'instanceType' | 'bareMetal'>,
  ): Promise<OnDemandPrice | undefined> {
    const hit = fresh(this.prices.get(f.instanceType), this.now());
    if (hit) return hit.value;
    let p = this.pricesInflight.get(f.instanceType);
    if (!p) {
      p = this.fetchPrice(f).finally(() => this.pricesInflight.delete(f.instanceType));
      this.pricesInflight.set(f.instanceType, p);
    }
    return p;
  }

  /** Offered names near an unknown one (its family's sizes, its size in every family), for suggestions. */
  async nearNames(name: string): Promise<string[]> {
    const patterns = suggestionPatterns(name);
    const key = patterns.join(' ');
    const hit = fresh(this.near.get(key), this.now());
    if (hit) return hit.value;
    const found = await this.describe([{ Name: 'instance-type', Values: patterns }]);
    const names = [...found.keys()].sort();
    this.near.set(key, { value: names, expiresAt: this.now() + (this.opts.unknownTtlMs ?? UNKNOWN_TTL_MS) });
    return names;
  }

  /** Everything resolveComputeSpec needs for one instance type. */
  async lookup(
    instanceType: string,
  ): Promise<{ facts: InstanceFacts | undefined; price: OnDemandPrice | undefined; nearNames: string[] }> {
    const facts = (await this.instanceFacts([instanceType])).get(instanceType);
    if (!facts) return { facts, price: undefined, nearNames: await this.nearNames(instanceType) };
    return { facts, price: await this.onDemandPrice(facts), nearNames: [] };
  }

  /** Which of these instance families EC2 offers in the region (one DescribeInstanceTypes, cached per list). */
  async offeredFamilies(families: readonly string[]): Promise<Set<string>> {
    if (families.length === 0) return new Set();
    const key = `families ${[...families].sort().join(' ')}`;
    const hit = fresh(this.near.get(key), this.now());
    if (hit) return new Set(hit.value);
    const found = await this.describe([{ Name: 'instance-type', Values: families.map((f) => `${f}.*`) }]);
    const offered = [...new Set([...found.keys()].map((n) => splitInstanceType(n).family))];
    this.near.set(key, {
      value: offered,
      expiresAt: this.now() + (this.opts.unknownTtlMs ?? UNKNOWN_TTL_MS),
    });
    return new Set(offered);
  }

  destroy(): void {
    this.opts.ec2.destroy();
    this.opts.pricing.destroy();
  }

  private load(name: string): Promise<InstanceFacts | undefined> {
    const hit = fresh(this.facts.get(name), this.now());
    if (hit) return Promise.resolve(hit.value);
    const pending = this.inflight.get(name);
    if (pending) return pending;
    const p = new Promise<InstanceFacts | undefined>((resolve, reject) => {
      this.queue.push({ name, resolve, reject });
    });
    this.inflight.set(name, p);
    // The first name queued in this turn schedules the flush; the rest ride along.
    if (this.queue.length === 1) queueMicrotask(() => this.flush());
    return p;
  }

  private flush(): void {
    const batch = this.queue;
    this.queue = [];
    for (let i = 0; i < batch.length; i += BATCH) {
      const chunk = batch.slice(i, i + BATCH);
      const names = chunk.map((w) => w.name);
      // The filter, unlike the InstanceTypes parameter, leaves unknown names out instead of failing the call.
      this.describe([{ Name: 'instance-type', Values: names }]).then(
        (found) => {
          const now = this.now();
          for (const w of chunk) {
            const f = found.get(w.name);
            const ttl = f
              ? (this.opts.factsTtlMs ?? FACTS_TTL_MS)
              : (this.opts.unknownTtlMs ?? UNKNOWN_TTL_MS);
            this.facts.set(w.name, { value: f, expiresAt: now + ttl });
            this.inflight.delete(w.name);
            w.resolve(f);
          }
        },
        (e) => {
          for (const w of chunk) {
            this.inflight.delete(w.name);
            w.reject(e);
          }
        },
      );
    }
  }

  private async describe(filters: Ec2Filter[]): Promise<Map<string, InstanceFacts>> {
    const out = new Map<string, InstanceFacts>();
    // Pages by hand: the SDK's paginators check `instanceof` on the client, which fails when the client was
    // built by another copy of the SDK (a bundle's, or a test's isolated module registry).
    // Required on first use, as clients.ts requires the SDKs: the EC2 SDK alone takes about half a second to
    // load, which an API cold start whose built-ins stand as declared should not pay.
    const { DescribeInstanceTypesCommand } =
      require('@aws-sdk/client-ec2') as typeof import('@aws-sdk/client-ec2');
    let NextToken: string | undefined;
    do {
      const page = await this.opts.ec2.send(
        new DescribeInstanceTypesCommand({ Filters: filters, MaxResults: BATCH, NextToken }),
      );
      for (const info of page.InstanceTypes ?? [])
        if (info.InstanceType) out.set(info.InstanceType, toInstanceFacts(info));
      NextToken = page.NextToken;
    } while (NextToken);
    return out;
  }

  private async fetchPrice(
    f: Pick<InstanceFacts, 'instanceType' | 'bareMetal'>,
  ): Promise<OnDemandPrice | undefined> {
    const { GetProductsCommand } =
      require('@aws-sdk/client-pricing') as typeof import('@aws-sdk/client-pricing');
    const entries: unknown[] = [];
    let NextToken: string | undefined;
    do {
      const page = await this.opts.pricing.send(
        new GetProductsCommand({
          ServiceCode: 'AmazonEC2',
          FormatVersion: 'aws_v1',
          Filters: priceFilters(this.region, f),
          MaxResults: 100,
          NextToken,
        }),
      );
      entries.push(...(page.PriceList ?? []));
      NextToken = page.NextToken;
    } while (NextToken);
    let price: OnDemandPrice | undefined;
    for (const e of entries) {
      price = toOnDemandPrice(e, this.region);
      if (price) break;
    }
    this.prices.set(f.instanceType, {
      value: price,
      expiresAt: this.now() + (this.opts.priceTtlMs ?? PRICE_TTL_MS),
    });
    return price;
  }
}

function fresh<T>(c: Cached<T> | undefined, now: number): Cached<T> | undefined {
  return c && c.expiresAt > now ? c : undefined;
}

let shared: HardwareFacts | undefined;

/** The container's hardware facts: clients for the stage's region and the nearest Price List endpoint. */
export function hardwareFacts(): HardwareFacts {
  if (!shared) {
    const { region } = config();
    shared = new HardwareFacts({
      region,
      ec2: ec2Client(region),
      pricing: pricingClient(pricingRegionFor(region)),
    });
  }
  return shared;
}

/** For the local control plane and tests, which point the endpoints elsewhere after start. */
export function resetHardwareFacts(): void {
  // Its clients are the container's (clients.ts): resetClients destroys them.
  shared = undefined;
  clusterSubnetCache = undefined;
}

let clusterSubnetCache: Cached<string[]> | undefined;

/**
 * The cluster's subnets (EKS DescribeCluster resourcesVpcConfig.subnetIds): where a compute's node group may go
 * when the stage config lists none. Cached like the instance types: a cluster's subnets change only on an
 * UpdateClusterConfig, which an operator follows with a deploy.
 */
export async function clusterSubnets(now = Date.now()): Promise<string[]> {
  const hit = fresh(clusterSubnetCache, now);
  if (hit) return hit.value;
  const { DescribeClusterCommand } = await import('@aws-sdk/client-eks');
  const out = await eksClient().send(new DescribeClusterCommand({ name: config().cluster }));
  const value = out.cluster?.resourcesVpcConfig?.subnetIds ?? [];
  clusterSubnetCache = { value, expiresAt: now + FACTS_TTL_MS };
  return value;
}
