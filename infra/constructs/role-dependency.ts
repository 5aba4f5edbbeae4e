import { type CfnResource, Lazy, Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * CDK makes a Lambda function or a state machine DependsOn its role and the role's default policy. The role is
 * already a dependency through the resource's GetAtt of its ARN, and cfn-lint warns about the repeat (W3005);
 * every other dependency, the default policy first (a state machine is created only once its role may deliver
 * its logs), is kept. Computed at synthesis, once CDK has turned construct dependencies into DependsOn.
 */
export function dropRedundantRoleDependsOn(resource: IConstruct, role: IConstruct): void {
  const cfn = resource.node.defaultChild as CfnResource;
  const roleCfn = role.node.defaultChild as CfnResource;
  const stack = Stack.of(resource);
  cfn.addOverride(
    'DependsOn',
    Lazy.list({
      produce: () =>
        cfn
          .obtainDependencies()
          .filter((d): d is CfnResource => d !== roleCfn && !(d instanceof Stack))
          .map((d) => stack.resolve(d.logicalId) as string)
          .sort(),
    }),
  );
}
