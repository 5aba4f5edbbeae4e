import { randomUUID } from 'node:crypto';
import { numbered } from './query';
import type { SimActivity, SimNodegroup, Simulator } from './state';
import { TerminateError } from './state';

/**
 * Auto Scaling over the query protocol (form-encoded POST, XML answers), version 2011-01-01:
 * DescribeAutoScalingGroups (the node groups' ASGs, with their instances and lifecycle states) and
 * TerminateInstanceInAutoScalingGroup (remove one chosen instance).
 */

const NS = 'http://autoscaling.amazonaws.com/doc/2011-01-01/';

export class AsgError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly type: 'Sender' | 'Receiver' = status >= 500 ? 'Receiver' : 'Sender',
  ) {
    super(message);
  }
}

export function isQueryRequest(method: string, path: string, contentType: string | undefined): boolean {
  return (
    method === 'POST' &&
    (path === '/' || path === '') &&
    (contentType ?? '').includes('x-www-form-urlencoded')
  );
}

export function xmlEscape(s: string): string {
  return s.replace(
    /[<>&'"]/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c] as string,
  );
}

export function asgErrorXml(e: AsgError, requestId: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<ErrorResponse xmlns="${NS}"><Error><Type>${e.type}</Type><Code>${xmlEscape(e.code)}</Code><Message>${xmlEscape(e.message)}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`;
}

/** `Prefix.member.N` lists of the query protocol, in N order. */
const members = (form: URLSearchParams, prefix: string) => numbered(form, `${prefix}.member`);

interface Filter {
  name: string;
  values: string[];
}

function filters(form: URLSearchParams): Filter[] {
  const out: Filter[] = [];
  for (let n = 1; form.has(`Filters.member.${n}.Name`); n++) {
    out.push({
      name: form.get(`Filters.member.${n}.Name`) as string,
      values: members(form, `Filters.member.${n}.Values`),
    });
  }
  return out;
}

export function asgTags(sim: Simulator, ng: SimNodegroup): [string, string][] {
  const c = sim.opts.clusterName;
  return [
    ['eks:cluster-name', c],
    ['eks:nodegroup-name', ng.name],
    ['k8s.io/cluster-autoscaler/enabled', 'true'],
    [`k8s.io/cluster-autoscaler/${c}`, 'owned'],
    [`kubernetes.io/cluster/${c}`, 'owned'],
  ];
}

function matchesFilter(sim: Simulator, ng: SimNodegroup, f: Filter): boolean {
  const tags = asgTags(sim, ng);
  if (f.name === 'tag-key') return tags.some(([k]) => f.values.includes(k));
  if (f.name === 'tag-value') return tags.some(([, v]) => f.values.includes(v));
  if (f.name.startsWith('tag:')) {
    const key = f.name.slice(4);
    return tags.some(([k, v]) => k === key && f.values.includes(v));
  }
  throw new AsgError(400, 'ValidationError', `Filter name ${f.name} is invalid`);
}

export function handleQuery(
  sim: Simulator,
  form: URLSearchParams,
): { operation: string; handle: () => string } {
  const action = form.get('Action') ?? '';
  if (action === 'DescribeAutoScalingGroups')
    return { operation: action, handle: () => describeAutoScalingGroups(sim, form) };
  if (action === 'TerminateInstanceInAutoScalingGroup')
    return { operation: action, handle: () => terminateInstance(sim, form) };
  if (action === 'DescribeScalingActivities')
    return { operation: action, handle: () => describeScalingActivities(sim, form) };
  return {
    operation: action,
    handle: () => {
      throw new AsgError(400, 'InvalidAction', `Could not find operation ${action} for version 2011-01-01`);
    },
  };
}

function terminateInstance(sim: Simulator, form: URLSearchParams): string {
  const id = form.get('InstanceId');
  const decrement = form.get('ShouldDecrementDesiredCapacity');
  const missing: string[] = [];
  if (!id) missing.push("Value null at 'instanceId' failed to satisfy constraint: Member must not be null");
  if (decrement === null)
    missing.push(
      "Value null at 'shouldDecrementDesiredCapacity' failed to satisfy constraint: Member must not be null",
    );
  if (missing.length > 0)
    throw new AsgError(
      400,
      'ValidationError',
      `${missing.length} validation error${missing.length > 1 ? 's' : ''} detected: ${missing.join('; ')}`,
    );
  let activity: SimActivity;
  try {
    activity = sim.terminateInstance(id as string, decrement === 'true');
  } catch (e) {
    if (e instanceof TerminateError) throw new AsgError(400, 'ValidationError', e.message);
    throw e;
  }
  const a =
    el('ActivityId', activity.id) +
    el('AutoScalingGroupName', activity.asgName) +
    el('Description', activity.description) +
    el('Cause', activity.cause) +
    el('StartTime', new Date(activity.startTime).toISOString()) +
    el('StatusCode', 'InProgress') +
    el('Progress', 0) +
    el('Details', activity.details);
  return `<?xml version="1.0" encoding="UTF-8"?>\n<TerminateInstanceInAutoScalingGroupResponse xmlns="${NS}"><TerminateInstanceInAutoScalingGroupResult><Activity>${a}</Activity></TerminateInstanceInAutoScalingGroupResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></TerminateInstanceInAutoScalingGroupResponse>`;
}

/**
 * DescribeScalingActivities: the launches and terminations of one group (or of all), newest first, a failed
 * launch with its StatusMessage (InsufficientInstanceCapacity, ...): what the NodegroupFailed runbook reads.
 */
function describeScalingActivities(sim: Simulator, form: URLSearchParams): string {
  const name = form.get('AutoScalingGroupName');
  const ids = members(form, 'ActivityIds');
  const rawMax = form.get('MaxRecords');
  const max = rawMax === null ? 100 : Number(rawMax);
  if (!Number.isInteger(max) || max < 1 || max > 100)
    throw new AsgError(
      400,
      'ValidationError',
      `1 validation error detected: Value '${rawMax}' at 'maxRecords' failed to satisfy constraint: Member must have value less than or equal to 100`,
    );
  // An unknown group has no activities: an empty list, not an error, as AWS answers.
  let all = sim
    .list()
    .filter((ng) => !name || ng.asg.name === name)
    .flatMap((ng) => ng.asg.activities.map((a) => ({ a, arn: ng.asg.arn })))
    .filter(({ a }) => ids.length === 0 || ids.includes(a.id))
    .sort((x, y) => y.a.startTime - x.a.startTime);
  const token = form.get('NextToken');
  if (token) {
    const at = all.findIndex(({ a }) => a.id === Buffer.from(token, 'base64url').toString('utf8'));
    if (at < 0) throw new AsgError(400, 'InvalidNextToken', 'The token provided is not valid.');
    all = all.slice(at + 1);
  }
  const page = all.slice(0, max);
  const last = page.at(-1);
  const next = all.length > max && last ? Buffer.from(last.a.id).toString('base64url') : undefined;
  const body = page
    .map(
      ({ a, arn }) =>
        `<member>${
          el('ActivityId', a.id) +
          el('AutoScalingGroupName', a.asgName) +
          el('AutoScalingGroupARN', arn) +
          el('Description', a.description) +
          el('Cause', a.cause) +
          el('StartTime', new Date(a.startTime).toISOString()) +
          (a.endTime === undefined ? '' : el('EndTime', new Date(a.endTime).toISOString())) +
          el('StatusCode', a.statusCode) +
          (a.statusMessage === undefined ? '' : el('StatusMessage', a.statusMessage)) +
          el('Progress', a.progress) +
          el('Details', a.details)
        }</member>`,
    )
    .join('');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<DescribeScalingActivitiesResponse xmlns="${NS}"><DescribeScalingActivitiesResult><Activities>${body}</Activities>${next ? `<NextToken>${next}</NextToken>` : ''}</DescribeScalingActivitiesResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></DescribeScalingActivitiesResponse>`;
}

function describeAutoScalingGroups(sim: Simulator, form: URLSearchParams): string {
  const names = members(form, 'AutoScalingGroupNames');
  const fs = filters(form);
  const rawMax = form.get('MaxRecords');
  const max = rawMax === null ? 50 : Number(rawMax);
  if (!Number.isInteger(max) || max < 1 || max > 100)
    throw new AsgError(
      400,
      'ValidationError',
      `1 validation error detected: Value '${rawMax}' at 'maxRecords' failed to satisfy constraint: Member must have value less than or equal to 100`,
    );
  // Unknown names are left out, not refused: that is how a vanished ASG looks to a caller.
  let groups = sim.list().filter((ng) => names.length === 0 || names.includes(ng.asg.name));
  groups = groups.filter((ng) => fs.every((f) => matchesFilter(sim, ng, f)));
  groups.sort((a, b) => (a.asg.name < b.asg.name ? -1 : a.asg.name > b.asg.name ? 1 : 0));
  const token = form.get('NextToken');
  if (token) {
    const after = Buffer.from(token, 'base64url').toString('utf8');
    if (!after.startsWith('eks-'))
      throw new AsgError(400, 'InvalidNextToken', 'The token provided is not valid.');
    groups = groups.filter((ng) => ng.asg.name > after);
  }
  const page = groups.slice(0, max);
  const last = page[page.length - 1];
  const next = groups.length > max && last ? Buffer.from(last.asg.name).toString('base64url') : undefined;
  const body = page.map((ng) => `<member>${asgXml(sim, ng)}</member>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<DescribeAutoScalingGroupsResponse xmlns="${NS}"><DescribeAutoScalingGroupsResult><AutoScalingGroups>${body}</AutoScalingGroups>${next ? `<NextToken>${next}</NextToken>` : ''}</DescribeAutoScalingGroupsResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></DescribeAutoScalingGroupsResponse>`;
}

const el = (name: string, value: string | number | boolean) =>
  `<${name}>${xmlEscape(String(value))}</${name}>`;
const list = (name: string, items: string[]) =>
  `<${name}>${items.map((i) => `<member>${i}</member>`).join('')}</${name}>`;

function asgXml(sim: Simulator, ng: SimNodegroup): string {
  const a = ng.asg;
  const subnets = ng.input.subnets;
  const azs = [...new Set(sim.zonesOf(subnets))];
  const lt =
    el('LaunchTemplateId', a.launchTemplate.id) +
    el('LaunchTemplateName', a.launchTemplate.name) +
    el('Version', a.launchTemplate.version);
  const instances = a.instances.map(
    (i) =>
      el('InstanceId', i.id) +
      el('InstanceType', i.type) +
      el('AvailabilityZone', i.az) +
      el('LifecycleState', i.state) +
      el('HealthStatus', 'Healthy') +
      `<LaunchTemplate>${lt}</LaunchTemplate>` +
      el('ProtectedFromScaleIn', false),
  );
  const tags = asgTags(sim, ng).map(
    ([k, v]) =>
      el('ResourceId', a.name) +
      el('ResourceType', 'auto-scaling-group') +
      el('Key', k) +
      el('Value', v) +
      el('PropagateAtLaunch', true),
  );
  return [
    el('AutoScalingGroupName', a.name),
    el('AutoScalingGroupARN', a.arn),
    `<MixedInstancesPolicy><LaunchTemplate><LaunchTemplateSpecification>${lt}</LaunchTemplateSpecification>${list(
      'Overrides',
      ng.instanceTypes.map((t) => el('InstanceType', t)),
    )}</LaunchTemplate><InstancesDistribution>${el('OnDemandAllocationStrategy', 'prioritized')}${el('OnDemandBaseCapacity', 0)}${el('OnDemandPercentageAboveBaseCapacity', ng.input.capacityType === 'SPOT' ? 0 : 100)}${el('SpotAllocationStrategy', 'capacity-optimized')}</InstancesDistribution></MixedInstancesPolicy>`,
    el('MinSize', a.minSize),
    el('MaxSize', a.maxSize),
    el('DesiredCapacity', a.desired),
    el('DefaultCooldown', 300),
    list('AvailabilityZones', azs.map(xmlEscape)),
    list('LoadBalancerNames', []),
    list('TargetGroupARNs', []),
    el('HealthCheckType', 'EC2'),
    el('HealthCheckGracePeriod', 15),
    list('Instances', instances),
    el('CreatedTime', new Date(a.createdAt).toISOString()),
    list('SuspendedProcesses', []),
    el('VPCZoneIdentifier', subnets.join(',')),
    list('EnabledMetrics', []),
    list('Tags', tags),
    list('TerminationPolicies', ['AllocationStrategy', 'OldestLaunchTemplate', 'OldestInstance']),
    el('NewInstancesProtectedFromScaleIn', false),
    el(
      'ServiceLinkedRoleARN',
      `arn:aws:iam::${sim.opts.accountId}:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling`,
    ),
    el('CapacityRebalance', ng.input.capacityType === 'SPOT'),
  ].join('');
}
