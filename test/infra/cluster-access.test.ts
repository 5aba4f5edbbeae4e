import { loadStageConfig } from '../../infra/stage-config';
import { devStack, synthStage } from '../helpers/cfn';

/**
 * Issue 20 §4: the reconciler reaches the cluster's Kubernetes API through an EKS access entry of its own role,
 * with Edit only in llmcap's namespaces (the cluster-scoped part is config/kubernetes/reconciler-rbac.yaml), and
 * may describe this cluster only.
 */

const { template, stack, config } = devStack();
const entries = () => Object.values(template.Resources).filter((r) => r.Type === 'AWS::EKS::AccessEntry');
const reconcileRole = stack.getLogicalId(stack.reconcileFunction.role!.node.defaultChild as never);
/** The reconciler's statements (the API may describe the cluster too, for its subnets: issue 17). */
const reconcilerStatements = (t: typeof template) =>
  Object.values(t.Resources)
    .filter(
      (r) =>
        r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties!.Roles).includes(`"${reconcileRole}"`),
    )
    .flatMap((p) => p.Properties!.PolicyDocument.Statement as any[]);
const statements = () => reconcilerStatements(template);

it("gives the reconciler's role one access entry: its group and Edit in llmcap-<stage>-* namespaces only", () => {
  expect(entries()).toHaveLength(1);
  const e = entries()[0]!.Properties!;
  const roleId = stack.getLogicalId(stack.reconcileFunction.role!.node.defaultChild as never);
  expect(e).toEqual({
    ClusterName: config.clusterName,
    PrincipalArn: { 'Fn::GetAtt': [roleId, 'Arn'] },
    Type: 'STANDARD',
    KubernetesGroups: ['llmcap:reconciler'],
    AccessPolicies: [
      {
        PolicyArn: 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy',
        AccessScope: { Type: 'namespace', Namespaces: [`llmcap-${config.stage}-*`] },
      },
    ],
  });
});

it('lets the reconciler describe exactly this cluster, for its endpoint and CA', () => {
  const s = statements().filter((x) => JSON.stringify(x.Action).includes('eks:DescribeCluster'));
  expect(s).toHaveLength(1);
  expect(s[0].Action).toBe('eks:DescribeCluster');
  expect(JSON.stringify(s[0].Resource)).toMatch(
    new RegExp(`:eks:${config.region}:${config.account}:cluster/${config.clusterName}"`),
  );
});

it("lets it remove a drained node's instance only from this stage's groups of this cluster", () => {
  const s = statements().filter((x) =>
    JSON.stringify(x.Action).includes('TerminateInstanceInAutoScalingGroup'),
  );
  expect(s).toHaveLength(1);
  expect(s[0].Action).toBe('autoscaling:TerminateInstanceInAutoScalingGroup');
  expect(JSON.stringify(s[0].Resource)).toContain(`autoScalingGroupName/eks-llmcap-${config.stage}-*`);
  expect(s[0].Condition).toEqual({
    StringEquals: { 'aws:ResourceTag/eks:cluster-name': config.clusterName },
  });
});

it('turns the model servers on in the reconciler, and leaves the cluster alone when the stage says so', () => {
  // Both: the reconciler deploys, the API shows status.running.
  const fns = Object.values(template.Resources).filter(
    (r) => r.Type === 'AWS::Lambda::Function' && r.Properties?.Environment?.Variables?.LLMCAP_WORKLOADS,
  );
  expect(fns.map((f) => f.Properties!.Environment.Variables.LLMCAP_WORKLOADS)).toEqual(['deploy', 'deploy']);
  const off = synthStage({ ...loadStageConfig('dev', `${__dirname}/../..`), deployWorkloads: false });
  expect(Object.values(off.template.Resources).filter((r) => r.Type === 'AWS::EKS::AccessEntry')).toEqual([]);
  expect(
    reconcilerStatements(off.template).filter((x) =>
      /eks:DescribeCluster|TerminateInstance/.test(JSON.stringify(x.Action)),
    ),
  ).toEqual([]);
});
