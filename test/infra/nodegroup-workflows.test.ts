import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, Stack, type StackProps } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { NodegroupWorkflows, type NodegroupWorkflowsProps } from '../../infra/constructs/nodegroup-workflows';
import { TEST_APP_PROPS } from '../helpers/cdk-app';

const ENV = { account: '123456789012', region: 'us-east-1' };
const NODEGROUP_ARN = 'arn:aws:eks:us-east-1:123456789012:nodegroup/prod-eks/llmcap-dev-*/*';

function build(props: Partial<NodegroupWorkflowsProps> = {}, stackProps: StackProps = { env: ENV }) {
  const app = new App(TEST_APP_PROPS);
  const stack = new Stack(app, 'Test', stackProps);
  const table = new dynamodb.TableV2(stack, 'Table', {
    partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  });
  const wf = new NodegroupWorkflows(stack, 'Workflows', {
    table,
    clusterName: 'prod-eks',
    stage: 'dev',
    ...props,
  });
  const template = Template.fromStack(stack);
  return { stack, template, wf };
}

/** A template value with Fn::Join of the partition, as plain text (enough to compare ARNs). */
function text(v: unknown): string {
  if (typeof v === 'string') return v;
  const o = v as Record<string, unknown>;
  if (o.Ref === 'AWS::Partition') return 'aws';
  if (Array.isArray(o['Fn::Join']))
    return ((o['Fn::Join'] as [string, unknown[]])[1] ?? []).map(text).join('');
  return JSON.stringify(v);
}

function statementsOf(template: Template, stateMachineLogicalIdPrefix: string) {
  const policies = template.findResources('AWS::IAM::Policy');
  const entry = Object.entries(policies).find(([id]) => id.startsWith(stateMachineLogicalIdPrefix));
  if (!entry) throw new Error(`no policy for ${stateMachineLogicalIdPrefix}`);
  const statements = (entry[1].Properties.PolicyDocument.Statement as Record<string, unknown>[]).map((s) => ({
    actions: ([] as string[]).concat(s.Action as string | string[]),
    resources: ([] as unknown[]).concat(s.Resource).map(text),
    condition: s.Condition,
  }));
  return statements;
}

function definitionOf(template: Template, name: string) {
  const sms = template.findResources('AWS::StepFunctions::StateMachine', {
    Properties: { StateMachineName: name },
  });
  const sm = Object.values(sms)[0];
  if (!sm) throw new Error(`no state machine ${name}`);
  return sm.Properties as {
    DefinitionString: string;
    DefinitionSubstitutions: Record<string, unknown>;
    TracingConfiguration: { Enabled: boolean };
    LoggingConfiguration: { Level: string };
    StateMachineType?: string;
  };
}

describe('NodegroupWorkflows construct', () => {
  const { stack, template } = build();

  it.each([
    ['llmcap-dev-provision-nodegroup', 'provision-nodegroup'],
    ['llmcap-dev-scale-nodegroup', 'scale-nodegroup'],
    ['llmcap-dev-delete-nodegroup', 'delete-nodegroup'],
  ])('%s deploys the ASL file with cluster, node role and table substituted', (name, file) => {
    const p = definitionOf(template, name);
    const asl = readFileSync(join(__dirname, '..', '..', 'statemachines', `${file}.asl.json`), 'utf8');
    expect(JSON.parse(p.DefinitionString)).toEqual(JSON.parse(asl));
    const placeholders = new Set([...asl.matchAll(/\$\{([A-Za-z]+)\}/g)].map((m) => m[1]));
    expect([...placeholders].every((k) => k && k in p.DefinitionSubstitutions)).toBe(true);
    expect(p.DefinitionSubstitutions.ClusterName).toBe('prod-eks');
    expect(p.DefinitionSubstitutions.TableName).toEqual({ Ref: expect.stringMatching(/^Table/) });
    expect(p.DefinitionSubstitutions.NodeRoleArn).toEqual({
      'Fn::GetAtt': [expect.stringMatching(/NodeRole/), 'Arn'],
    });
    expect(p.TracingConfiguration.Enabled).toBe(true);
    expect(p.LoggingConfiguration.Level).toBe('ALL');
    expect(p.StateMachineType ?? 'STANDARD').toBe('STANDARD');
  });

  it('creates a node role for EC2 with the three EKS worker policies', () => {
    template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [Match.objectLike({ Principal: { Service: 'ec2.amazonaws.com' } })],
      },
      ManagedPolicyArns: Match.arrayWith(
        ['AmazonEKSWorkerNodePolicy', 'AmazonEC2ContainerRegistryReadOnly', 'AmazonEKS_CNI_Policy'].map(
          (p) => ({
            'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:iam::aws:policy/${p}`]],
          }),
        ),
      ),
    });
  });

  it('lets provision create on this cluster and tag only with the stage tag, describe llmcap-dev node groups, and pass only the node role to EKS', () => {
    const st = statementsOf(template, 'WorkflowsProvisionRole');
    const eks = st.filter((s) => s.actions.some((a) => a.startsWith('eks:')));
    const ownTag = { StringEquals: { 'aws:RequestTag/llmcap:stage': 'dev' } };
    expect(eks).toEqual([
      {
        actions: ['eks:CreateNodegroup'],
        resources: ['arn:aws:eks:us-east-1:123456789012:cluster/prod-eks'],
        condition: ownTag,
      },
      { actions: ['eks:TagResource'], resources: [NODEGROUP_ARN], condition: ownTag },
      { actions: ['eks:DescribeNodegroup'], resources: [NODEGROUP_ARN], condition: undefined },
    ]);
    const pass = st.filter((s) => s.actions.includes('iam:PassRole'));
    expect(pass).toHaveLength(1);
    expect(pass[0]!.resources[0]).toMatch(/NodeRole.*Arn/);
    expect(pass[0]!.condition).toEqual({ StringEquals: { 'iam:PassedToService': 'eks.amazonaws.com' } });
  });

  it.each([
    ['WorkflowsScaleRole', 'eks:UpdateNodegroupConfig'],
    ['WorkflowsDeleteRole', 'eks:DeleteNodegroup'],
  ])(
    '%s may call %s only on llmcap-dev node groups tagged as stage dev, describe them, and pass no role',
    (role, action) => {
      const st = statementsOf(template, role);
      const eks = st.filter((s) => s.actions.some((a) => a.startsWith('eks:')));
      expect(eks).toEqual([
        {
          actions: [action],
          resources: [NODEGROUP_ARN],
          condition: { StringEquals: { 'aws:ResourceTag/llmcap:stage': 'dev' } },
        },
        { actions: ['eks:DescribeNodegroup'], resources: [NODEGROUP_ARN], condition: undefined },
      ]);
      expect(st.some((s) => s.actions.some((a) => a.startsWith('iam:')))).toBe(false);
    },
  );

  it.each(['WorkflowsProvisionRole', 'WorkflowsScaleRole', 'WorkflowsDeleteRole'])(
    '%s may only update items, of this table only, and has no wildcard action',
    (role) => {
      const st = statementsOf(template, role);
      const ddb = st.filter((s) => s.actions.some((a) => a.startsWith('dynamodb:')));
      expect(ddb.map((s) => s.actions)).toEqual([['dynamodb:UpdateItem']]);
      expect(ddb[0]!.resources[0]).toMatch(/Table.*Arn/);
      expect(st.flatMap((s) => s.actions).filter((a) => a.includes('*'))).toEqual([]);
      // Only the log-delivery and X-Ray statements CDK adds (no resource-level support) use Resource "*".
      for (const s of st.filter((x) => x.resources.includes('*'))) {
        expect(s.actions.every((a) => a.startsWith('logs:') || a.startsWith('xray:'))).toBe(true);
      }
    },
  );

  it('sends execution logs to a retained vendedlogs log group', () => {
    template.hasResource('AWS::Logs::LogGroup', {
      Properties: {
        LogGroupName: '/aws/vendedlogs/states/llmcap-dev-nodegroup-workflows',
        RetentionInDays: 90,
      },
      DeletionPolicy: 'Retain',
    });
  });

  it('has no unacknowledged cdk-nag AwsSolutions finding', () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} at ${v.violatingResources[0]?.constructPath}`),
    ).toEqual([]);
  });
});

describe('grantStartWorkflows', () => {
  it('lets the reconcile role start the three workflows and describe only their executions', () => {
    const app = new App(TEST_APP_PROPS);
    const stack = new Stack(app, 'Grant', { env: ENV });
    const table = new dynamodb.TableV2(stack, 'Table', {
      partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
    });
    const wf = new NodegroupWorkflows(stack, 'Workflows', { table, clusterName: 'prod-eks', stage: 'dev' });
    const role = new iam.Role(stack, 'Reconcile', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    });
    wf.grantStartWorkflows(role);
    const st = statementsOf(Template.fromStack(stack), 'ReconcileDefaultPolicy');
    expect(st.map((s) => s.actions)).toEqual([['states:StartExecution'], ['states:DescribeExecution']]);
    expect(st[0]!.resources).toHaveLength(3);
    expect(st[1]!.resources.sort()).toEqual(
      ['delete', 'provision', 'scale'].map(
        (k) => `arn:aws:states:us-east-1:123456789012:execution:llmcap-dev-${k}-nodegroup:*`,
      ),
    );
  });
});

describe('NodegroupWorkflows with a node role from the stage config', () => {
  const roleArn = 'arn:aws:iam::123456789012:role/existing-eks-nodes';
  const { stack, template, wf } = build({ nodeRoleArn: roleArn });

  it('creates no role for the nodes and substitutes and passes the given one', () => {
    expect(wf.nodeRole).toBeUndefined();
    const roles = template.findResources('AWS::IAM::Role');
    const ec2Roles = Object.values(roles).filter((r) =>
      JSON.stringify(r.Properties.AssumeRolePolicyDocument).includes('ec2.amazonaws.com'),
    );
    expect(ec2Roles).toHaveLength(0);
    expect(definitionOf(template, 'llmcap-dev-provision-nodegroup').DefinitionSubstitutions.NodeRoleArn).toBe(
      roleArn,
    );
    const pass = statementsOf(template, 'WorkflowsProvisionRole').filter((s) =>
      s.actions.includes('iam:PassRole'),
    );
    expect(pass.map((s) => s.resources)).toEqual([[roleArn]]);
  });

  it('is cdk-nag clean too', () => {
    expect(new AwsSolutionsChecks().validateScope(stack).violations).toEqual([]);
  });
});

describe('NodegroupWorkflows in an environment-agnostic stack', () => {
  it('acknowledges the node group wildcard under its pseudo-parameter name', () => {
    const { stack } = build({}, {});
    expect(new AwsSolutionsChecks().validateScope(stack).violations.map((v) => v.ruleName)).toEqual([]);
  });
});
