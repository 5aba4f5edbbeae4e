import type { InstanceTypeInfo } from '@aws-sdk/client-ec2';
import { xmlEscape } from './autoscaling';
import { loadSnapshot } from './aws-snapshot';
import { numbered } from './query';

/**
 * EC2 over its query protocol (form-encoded POST with Version=2016-11-15, XML answers): DescribeInstanceTypes
 * from the checked-in snapshot, DescribeSubnets from the simulator's VPC, as the real @aws-sdk/client-ec2 reads it. EC2's XML is its own dialect: element
 * names are the members' names in lowerCamelCase, lists are `<item>`s, a few lists are `…Set`, and the answer
 * carries `requestId`; errors are `<Response><Errors><Error>` with `RequestID`.
 */

export const EC2_VERSION = '2016-11-15';
const NS = `http://ec2.amazonaws.com/doc/${EC2_VERSION}/`;

export class Ec2Error extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function isEc2Request(form: URLSearchParams): boolean {
  return form.get('Version') === EC2_VERSION;
}

export function ec2ErrorXml(e: Ec2Error, requestId: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${xmlEscape(e.code)}</Code><Message>${xmlEscape(e.message)}</Message></Error></Errors><RequestID>${requestId}</RequestID></Response>`;
}

/** What DescribeSubnets answers from: the simulator's VPC (its subnets and their zones). */
export interface Ec2World {
  subnets(ids: readonly string[]): { id: string; zone: string; index: number }[];
  region: string;
  accountId: string;
}

export function handleEc2(
  form: URLSearchParams,
  world: Ec2World,
): {
  operation: string;
  handle: (requestId: string) => string;
} {
  const action = form.get('Action') ?? '';
  if (action === 'DescribeSubnets')
    return { operation: action, handle: (requestId) => describeSubnets(form, world, requestId) };
  if (action !== 'DescribeInstanceTypes')
    return {
      operation: action,
      handle: () => {
        throw new Ec2Error(400, 'InvalidAction', `The action ${action} is not valid for this web service.`);
      },
    };
  return { operation: action, handle: (requestId) => describeInstanceTypes(form, requestId) };
}

interface Filter {
  name: string;
  values: string[];
}

function filters(form: URLSearchParams): Filter[] {
  const out: Filter[] = [];
  const indexes = new Set<number>();
  for (const k of form.keys()) {
    const m = /^Filter\.(\d+)\.Name$/.exec(k);
    if (m) indexes.add(Number(m[1]));
  }
  for (const n of [...indexes].sort((a, b) => a - b))
    out.push({ name: form.get(`Filter.${n}.Name`) as string, values: numbered(form, `Filter.${n}.Value`) });
  return out;
}

/** EC2 filter values take `*` (any run) and `?` (one character), case-sensitively. */
function glob(pattern: string): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}

const str = (v: unknown) => (v === undefined || v === null ? undefined : String(v));

/** The filters DescribeInstanceTypes documents that the simulator answers, each with what it compares. */
const FILTERS: Record<string, (t: InstanceTypeInfo) => unknown> = {
  'instance-type': (t) => t.InstanceType,
  'current-generation': (t) => t.CurrentGeneration,
  'bare-metal': (t) => t.BareMetal,
  'burstable-performance-supported': (t) => t.BurstablePerformanceSupported,
  'free-tier-eligible': (t) => t.FreeTierEligible,
  'hibernation-supported': (t) => t.HibernationSupported,
  hypervisor: (t) => t.Hypervisor,
  'instance-storage-supported': (t) => t.InstanceStorageSupported,
  'memory-info.size-in-mib': (t) => t.MemoryInfo?.SizeInMiB,
  'processor-info.supported-architecture': (t) => t.ProcessorInfo?.SupportedArchitectures,
  'supported-usage-class': (t) => t.SupportedUsageClasses,
  'vcpu-info.default-vcpus': (t) => t.VCpuInfo?.DefaultVCpus,
};

function matches(t: InstanceTypeInfo, f: Filter): boolean {
  const get = FILTERS[f.name];
  if (!get) throw new Ec2Error(400, 'InvalidParameterValue', `The filter '${f.name}' is invalid`);
  const v = get(t);
  const have = (Array.isArray(v) ? v : [v]).map(str).filter((x): x is string => x !== undefined);
  return f.values.some((p) => {
    const re = glob(p);
    return have.some((h) => re.test(h));
  });
}

const DEFAULT_PAGE = 100;

function describeInstanceTypes(form: URLSearchParams, requestId: string): string {
  if (form.get('DryRun') === 'true')
    throw new Ec2Error(412, 'DryRunOperation', 'Request would have succeeded, but DryRun flag is set.');
  const { instanceTypes, byName } = loadSnapshot();
  const names = numbered(form, 'InstanceType');
  const unknown = names.filter((n) => !byName.has(n));
  if (unknown.length)
    throw new Ec2Error(
      400,
      'InvalidInstanceType',
      `The following supplied instance types do not exist: [${unknown.join(', ')}]`,
    );
  const rawMax = form.get('MaxResults');
  const max = rawMax === null ? DEFAULT_PAGE : Number(rawMax);
  if (!Number.isInteger(max) || max < 5 || max > 100)
    throw new Ec2Error(
      400,
      'InvalidParameterValue',
      `Value ( ${rawMax} ) for parameter maxResults is invalid. Parameter must be between 5 and 100.`,
    );
  const fs = filters(form);
  let found = (
    names.length ? instanceTypes.filter((t) => names.includes(t.InstanceType as string)) : instanceTypes
  )
    .filter((t) => fs.every((f) => matches(t, f)))
    .sort((a, b) => ((a.InstanceType as string) < (b.InstanceType as string) ? -1 : 1));
  const token = form.get('NextToken');
  if (token) {
    const after = decodeToken(token);
    found = found.filter((t) => (t.InstanceType as string) > after);
  }
  const page = found.slice(0, max);
  const last = page.at(-1)?.InstanceType;
  const next = found.length > max && last ? encodeToken(last) : undefined;
  const items = page
    .map((t) => `<item>${fields(t as Record<string, unknown>, 'InstanceTypes')}</item>`)
    .join('');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<DescribeInstanceTypesResponse xmlns="${NS}"><requestId>${requestId}</requestId><instanceTypeSet>${items}</instanceTypeSet>${next ? `<nextToken>${next}</nextToken>` : ''}</DescribeInstanceTypesResponse>`;
}

const SUBNET_ID = /^subnet-([0-9a-f]{8}|[0-9a-f]{17})$/;

/**
 * DescribeSubnets by SubnetId.N, as moto 5.2.1 answers it: any well-formed id is a subnet of the cluster's VPC
 * (CreateNodegroup takes any, local/cloud-sim/state.ts subnetZones), other ids are InvalidSubnetID.NotFound.
 * The zone ID is made up from the region (`use1-az2`): AWS maps zone names to IDs per account.
 */
function describeSubnets(form: URLSearchParams, world: Ec2World, requestId: string): string {
  if (form.get('DryRun') === 'true')
    throw new Ec2Error(412, 'DryRunOperation', 'Request would have succeeded, but DryRun flag is set.');
  const ids = numbered(form, 'SubnetId');
  const bad = ids.find((id) => !SUBNET_ID.test(id));
  if (bad) throw new Ec2Error(400, 'InvalidSubnetID.NotFound', `The subnet ID '${bad}' does not exist`);
  const short = world.region.replace(/^([a-z]+)-([a-z])[a-z]*-(\d+)$/, '$1$2$3');
  const items = world
    .subnets(ids)
    .map(
      ({ id, zone, index }) =>
        `<item><subnetId>${id}</subnetId><subnetArn>arn:aws:ec2:${world.region}:${world.accountId}:subnet/${id}</subnetArn><state>available</state><vpcId>vpc-0a1b2c3d4e5f60001</vpcId><cidrBlock>10.0.${index}.0/24</cidrBlock><availableIpAddressCount>251</availableIpAddressCount><availabilityZone>${zone}</availabilityZone><availabilityZoneId>${short}-az${zone.charCodeAt(zone.length - 1) - 96}</availabilityZoneId><defaultForAz>false</defaultForAz><mapPublicIpOnLaunch>false</mapPublicIpOnLaunch><ownerId>${world.accountId}</ownerId><assignIpv6AddressOnCreation>false</assignIpv6AddressOnCreation><ipv6CidrBlockAssociationSet/><tagSet/><ipv6Native>false</ipv6Native></item>`,
    )
    .join('');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<DescribeSubnetsResponse xmlns="${NS}"><requestId>${requestId}</requestId><subnetSet>${items}</subnetSet></DescribeSubnetsResponse>`;
}

const TOKEN_PREFIX = 'llmcap-sim:';

function encodeToken(after: string): string {
  return Buffer.from(`${TOKEN_PREFIX}${after}`).toString('base64url');
}

function decodeToken(token: string): string {
  const s = Buffer.from(token, 'base64url').toString('utf8');
  if (!s.startsWith(TOKEN_PREFIX))
    throw new Ec2Error(400, 'InvalidPaginationToken', 'The specified pagination token is not valid.');
  return s.slice(TOKEN_PREFIX.length);
}

/** Members whose EC2 element name is not their name in lowerCamelCase (the SDK's model says so). */
const ELEMENT: Record<string, string> = {
  InstanceTypes: 'instanceTypeSet',
  EbsCards: 'ebsCardSet',
  InterfaceTypes: 'interfaceTypeSet',
  Workloads: 'workloadSet',
};
/** Lists whose entries are `<member>` rather than EC2's usual `<item>`. */
const MEMBER_LISTS = new Set(['InferenceAcceleratorInfo.Accelerators']);

function fields(obj: Record<string, unknown>, path: string): string {
  return Object.entries(obj)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => element(k, v, `${path.split('.').pop()}.${k}`))
    .join('');
}

function element(key: string, value: unknown, path: string): string {
  const name = ELEMENT[key] ?? key.charAt(0).toLowerCase() + key.slice(1);
  if (Array.isArray(value)) {
    const tag = MEMBER_LISTS.has(path) ? 'member' : 'item';
    const items = value.map((v) => `<${tag}>${inner(v, path)}</${tag}>`).join('');
    return `<${name}>${items}</${name}>`;
  }
  return `<${name}>${inner(value, path)}</${name}>`;
}

function inner(value: unknown, path: string): string {
  if (value && typeof value === 'object') return fields(value as Record<string, unknown>, path);
  return xmlEscape(String(value));
}
