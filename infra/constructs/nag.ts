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
