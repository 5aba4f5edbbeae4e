/**
 * The acknowledgements for a cdk-nag IAM5 finding on a resource ARN with a wildcard. The finding names the
 * partition literally (`arn:aws:`) when the stack's region is known and as `arn:<AWS::Partition>:` otherwise,
 * and cdk-nag matches the plain and the pack-prefixed rule id in different paths: all four are returned, to be
 * passed in ONE `Validations.of(x).acknowledge(...)` call per construct (a later call replaces the earlier).
 * `arn` is what follows `arn:<partition>:`.
 */
export function arnWildcardAcks(arn: string, reason: string): { id: string; reason: string }[] {
  return ['aws', '<AWS::Partition>']
    .flatMap((p) => [
      `AwsSolutions-IAM5[Resource::arn:${p}:${arn}]`,
      `AwsSolutions::AwsSolutions-IAM5[Resource::arn:${p}:${arn}]`,
    ])
    .map((id) => ({ id, reason }));
}

/**
 * Every action llmcap grants on Resource "*", and why. `null` means the Service Authorization Reference lists
 * no resource type for the action, so "*" is the only resource it can be granted on (test/infra/security.test.ts
 * checks this against the reference's data); any other reason is written out.
 */
export const STAR_RESOURCE_ACTIONS: Record<string, string | null> = {
  'xray:PutTraceSegments': null,
  'xray:PutTelemetryRecords': null,
  'xray:GetSamplingRules': null,
  'xray:GetSamplingTargets': null,
  'logs:CreateLogDelivery': null,
  'logs:GetLogDelivery': null,
  'logs:UpdateLogDelivery': null,
  'logs:DeleteLogDelivery': null,
  'logs:ListLogDeliveries': null,
  'logs:PutResourcePolicy': null,
  'logs:DescribeResourcePolicies': null,
  'logs:DescribeLogGroups': null,
  'autoscaling:DescribeAutoScalingGroups': null,
  'autoscaling:DescribeScalingActivities': null,
  // The API resolves every compute write against what AWS says an instance type is and costs.
  'ec2:DescribeInstanceTypes': null,
  // The reconciler reads the zones of a compute's subnets (Describe* actions take no resource in IAM).
  'ec2:DescribeSubnets': null,
  'pricing:GetProducts': null,
  // A quota with no applied value is read as AWS's default (lambdas/aws/quotas.ts).
  'servicequotas:GetAWSDefaultServiceQuota': null,
  // The Service Authorization Reference lists the alarm resource type, but IAM authorizes a DescribeAlarms that
  // names no alarm on arn:...:alarm:*, which a prefix-scoped grant does not match (AccessDenied).
  'cloudwatch:DescribeAlarms':
    'the reconciler lists its llmcap-<stage>- alarms by name prefix; IAM authorizes a DescribeAlarms that names no alarm on every alarm (alarm:*), so a grant scoped to the prefix is denied; it reads alarm state only',
};

/** The reason of an IAM5[Resource::*] acknowledgement for exactly these actions, built from the table above. */
export function starResourceReason(actions: string[]): string {
  const sorted = [...new Set(actions)].sort();
  const unknown = sorted.filter((a) => !(a in STAR_RESOURCE_ACTIONS));
  if (unknown.length)
    throw new Error(`no reason for granting ${unknown.join(', ')} on "*": add it to STAR_RESOURCE_ACTIONS`);
  const only = sorted.filter((a) => STAR_RESOURCE_ACTIONS[a] === null);
  const other = sorted.filter((a) => STAR_RESOURCE_ACTIONS[a] !== null);
  return [
    ...(only.length ? [`${only.join(', ')}: no resource type in the Service Authorization Reference`] : []),
    ...other.map((a) => `${a}: ${STAR_RESOURCE_ACTIONS[a]}`),
  ].join('; ');
}

/** The acknowledgements (plain and pack-prefixed id) of an IAM5 finding for Resource "*" on these actions. */
export function starResourceAcks(actions: string[]): { id: string; reason: string }[] {
  const reason = starResourceReason(actions);
  return ['AwsSolutions-IAM5[Resource::*]', 'AwsSolutions::AwsSolutions-IAM5[Resource::*]'].map((id) => ({
    id,
    reason,
  }));
}
