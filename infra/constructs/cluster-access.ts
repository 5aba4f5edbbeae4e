import { Stack } from 'aws-cdk-lib';
import { CfnAccessEntry } from 'aws-cdk-lib/aws-eks';
import { type IRole, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { reconcilerAccess } from '../../lambdas/domain/workloads';

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
