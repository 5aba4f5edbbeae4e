import { Stack, Validations } from 'aws-cdk-lib';
import { CfnAccessEntry } from 'aws-cdk-lib/aws-eks';
import { type IRole, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { reconcilerAccess } from '../../lambdas/domain/workloads';
import { arnWildcardAcks } from './nag';

/**
 * The reconciler's access to the cluster's Kubernetes API (docs/workloads.md#access-to-the-cluster): an EKS access
 * entry for its role, with AmazonEKSEditPolicy scoped to llmcap's own namespaces (`llmcap-<stage>-*`) and the
 * group `llmcap:reconciler`, which config/kubernetes/reconciler-rbac.yaml binds to reading nodes and creating
 * namespaces; and IAM to read the cluster's endpoint and CA. Nothing else cluster-wide.
 */
export class ReconcilerClusterAccess extends Construct {
  readonly accessEntry: CfnAccessEntry;

  constructor(scope: Construct, id: string, props: { clusterName: string; stage: string; role: IRole }) {
    super(scope, id);
    const stack = Stack.of(this);
    const access = reconcilerAccess(props.stage);
    this.accessEntry = new CfnAccessEntry(this, 'AccessEntry', {
      clusterName: props.clusterName,
      principalArn: props.role.roleArn,
      type: 'STANDARD',
      kubernetesGroups: access.kubernetesGroups,
      accessPolicies: access.accessPolicies.map((p) => ({
        policyArn: p.policyArn,
        accessScope: { type: p.accessScope.type, namespaces: p.accessScope.namespaces },
      })),
    });
    // A drained node's instance is removed by llmcap itself (lambdas/service/drain.ts): only in this cluster's groups
    // of this stage (EKS names their ASGs eks-<node group>-<uuid> and tags them with the cluster).
    props.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['autoscaling:TerminateInstanceInAutoScalingGroup'],
        resources: [
          `arn:${stack.partition}:autoscaling:${stack.region}:${stack.account}:autoScalingGroup:*:autoScalingGroupName/eks-llmcap-${props.stage}-*`,
        ],
        conditions: { StringEquals: { 'aws:ResourceTag/eks:cluster-name': props.clusterName } },
      }),
    );
    const policy = props.role.node.tryFindChild('DefaultPolicy');
    if (policy)
      Validations.of(policy).acknowledge(
        ...arnWildcardAcks(
          `autoscaling:${stack.region}:${stack.account}:autoScalingGroup:*:autoScalingGroupName/eks-llmcap-${props.stage}-*`,
          "EKS names a node group's ASG eks-<node group>-<uuid>; the prefix is this stage's groups, and the cluster tag narrows it to this cluster.",
        ),
      );
    props.role.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['eks:DescribeCluster'],
        resources: [
          `arn:${stack.partition}:eks:${stack.region}:${stack.account}:cluster/${props.clusterName}`,
        ],
      }),
    );
  }
}
