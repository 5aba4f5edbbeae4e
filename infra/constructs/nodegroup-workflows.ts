import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ArnFormat, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { arnWildcardAcks, starResourceAcks } from './nag';
import { dropRedundantRoleDependsOn } from './role-dependency';

/**
 * The three node group workflows of docs/design.md §5, deployed from the ASL files in statemachines/ (the same
 * text the local runner executes), each with a role that can touch only this stage's node groups, the node
 * role and the table.
 */

export interface NodegroupWorkflowsProps {
  table: dynamodb.ITable;
  clusterName: string;
  stage: string;
  /** The role EKS gives the nodes; created here (with the EKS worker policies) when not given. */
  nodeRoleArn?: string;
  /** How long the execution logs are kept (the stage config's logRetentionDays); default three months. */
  logRetention?: logs.RetentionDays;
  /** Where the ASL files live; default the repository's statemachines/. */
  statemachinesDir?: string;
}

export type WorkflowKind = 'provision' | 'scale' | 'delete';

const FILES: Record<WorkflowKind, string> = {
  provision: 'provision-nodegroup',
  scale: 'scale-nodegroup',
  delete: 'delete-nodegroup',
};

/**
 * Exactly the EKS actions each ASL calls (test/infra/iam-simulation.test.ts derives them from the ASL files
 * and fails on one missing here). By the Service Authorization Reference: CreateNodegroup is authorized on the
 * cluster and supports aws:RequestTag; the nodegroup resource supports aws:ResourceTag, so the actions that
 * change a group are allowed only on groups tagged as this stage's. Reads stay open to the stage's node group
 * names whatever their tags: a workflow must read a foreign group's tags to refuse to adopt it.
 */
const EKS_ACTIONS: Record<WorkflowKind, { create: boolean; change: string[]; read: string[] }> = {
  provision: { create: true, change: [], read: ['eks:DescribeNodegroup'] },
  scale: { create: false, change: ['eks:UpdateNodegroupConfig'], read: ['eks:DescribeNodegroup'] },
  delete: { create: false, change: ['eks:DeleteNodegroup'], read: ['eks:DescribeNodegroup'] },
};

/** What CDK grants a state machine on Resource "*" for its execution logs and X-Ray traces. */
export const STATE_MACHINE_RUNTIME_ACTIONS = [
  'logs:CreateLogDelivery',
  'logs:GetLogDelivery',
  'logs:UpdateLogDelivery',
  'logs:DeleteLogDelivery',
  'logs:ListLogDeliveries',
  'logs:PutResourcePolicy',
  'logs:DescribeResourcePolicies',
  'logs:DescribeLogGroups',
  'xray:PutTraceSegments',
  'xray:PutTelemetryRecords',
  'xray:GetSamplingRules',
  'xray:GetSamplingTargets',
];

/** The tag that marks a node group as this stage's; the workflows set it at creation. */
export const STAGE_TAG = 'llmcap:stage';

export class NodegroupWorkflows extends Construct {
  readonly provision: sfn.StateMachine;
  readonly scale: sfn.StateMachine;
  readonly delete: sfn.StateMachine;
  readonly nodeRoleArn: string;
  /** Set when this construct created the node role. */
  readonly nodeRole?: iam.Role;
  readonly logGroup: logs.LogGroup;
  private readonly prefix: string;

  constructor(scope: Construct, id: string, props: NodegroupWorkflowsProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const prefix = `llmcap-${props.stage}`;
    this.prefix = prefix;
    const dir = props.statemachinesDir ?? join(__dirname, '..', '..', 'statemachines');

    if (props.nodeRoleArn) {
      this.nodeRoleArn = props.nodeRoleArn;
    } else {
      this.nodeRole = new iam.Role(this, 'NodeRole', {
        assumedBy: new iam.ServicePrincipal('ec2.amazonaws.com'),
        description: `EKS worker nodes of the llmcap ${props.stage} node groups`,
        managedPolicies: [
          iam.ManagedPolicy.fromAwsManagedPolicyName('AmazonEKSWorkerNodePolicy'),
          iam.ManagedPolicy.fromAwsManagedPolicyName('AmazonEC2ContainerRegistryReadOnly'),
          iam.ManagedPolicy.fromAwsManagedPolicyName('AmazonEKS_CNI_Policy'),
        ],
      });
      // Why each managed policy: what the EKS User Guide's node IAM role page says the nodes need it for.
      const why: Record<string, string> = {
        AmazonEKSWorkerNodePolicy: 'lets the kubelet describe the instance and its cluster to join it',
        AmazonEC2ContainerRegistryReadOnly: 'lets the nodes pull images from ECR, the EKS add-ons among them',
        AmazonEKS_CNI_Policy:
          'lets the VPC CNI on the nodes assign pod IP addresses (a node role without it needs the CNI set up with IRSA or Pod Identity, which this stack does not do)',
      };
      // One call: a later acknowledge() on the same construct replaces the earlier ones.
      Validations.of(this.nodeRole).acknowledge(
        ...Object.entries(why).map(([policy, reason]) => ({
          id: `AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/${policy}]`,
          reason: `${policy} ${reason}; AWS maintains it as EKS changes.`,
        })),
      );
      this.nodeRoleArn = this.nodeRole.roleArn;
    }

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      // The vendedlogs prefix keeps Step Functions from growing the account's log resource policy.
      logGroupName: `/aws/vendedlogs/states/${prefix}-nodegroup-workflows`,
      retention: props.logRetention ?? logs.RetentionDays.THREE_MONTHS,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    const clusterArn = stack.formatArn({
      service: 'eks',
      resource: 'cluster',
      resourceName: props.clusterName,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    });
    const nodegroupArns = stack.formatArn({
      service: 'eks',
      resource: 'nodegroup',
      resourceName: `${props.clusterName}/${prefix}-*/*`,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    });

    // cdk-nag names a finding by the ARN as the template has it: pseudo parameters for env-agnostic stacks.
    const region = Token.isUnresolved(stack.region) ? '<AWS::Region>' : stack.region;
    const account = Token.isUnresolved(stack.account) ? '<AWS::AccountId>' : stack.account;

    const make = (kind: WorkflowKind): sfn.StateMachine => {
      const file = FILES[kind];
      const sm = new sfn.StateMachine(this, `${kind[0]!.toUpperCase()}${kind.slice(1)}`, {
        stateMachineName: `${prefix}-${file}`,
        stateMachineType: sfn.StateMachineType.STANDARD,
        definitionBody: sfn.DefinitionBody.fromString(readFileSync(join(dir, `${file}.asl.json`), 'utf8')),
        definitionSubstitutions: {
          ClusterName: props.clusterName,
          NodeRoleArn: this.nodeRoleArn,
          TableName: props.table.tableName,
        },
        logs: { destination: this.logGroup, level: sfn.LogLevel.ALL, includeExecutionData: true },
        tracingEnabled: true,
        comment: `llmcap ${props.stage}: ${file}`,
      });
      const actions = EKS_ACTIONS[kind];
      const ownTag = { StringEquals: { [`aws:RequestTag/${STAGE_TAG}`]: props.stage } };
      if (actions.create) {
        sm.addToRolePolicy(
          new iam.PolicyStatement({
            actions: ['eks:CreateNodegroup'],
            resources: [clusterArn],
            conditions: ownTag,
          }),
        );
        // The reference lists no dependent action for tagging on create, but creates with tags have been
        // refused without eks:TagResource on the new group: granted, with the same stage tag condition.
        sm.addToRolePolicy(
          new iam.PolicyStatement({
            actions: ['eks:TagResource'],
            resources: [nodegroupArns],
            conditions: ownTag,
          }),
        );
      }
      if (actions.change.length) {
        sm.addToRolePolicy(
          new iam.PolicyStatement({
            actions: actions.change,
            resources: [nodegroupArns],
            conditions: { StringEquals: { [`aws:ResourceTag/${STAGE_TAG}`]: props.stage } },
          }),
        );
      }
      // DescribeUpdate, should a workflow call it, is authorized on the cluster as well as on the group.
      const readsCluster = actions.read.includes('eks:DescribeUpdate');
      sm.addToRolePolicy(
        new iam.PolicyStatement({
          actions: actions.read,
          resources: readsCluster ? [clusterArn, nodegroupArns] : [nodegroupArns],
        }),
      );
      if (kind === 'provision') {
        sm.addToRolePolicy(
          new iam.PolicyStatement({
            actions: ['iam:PassRole'],
            resources: [this.nodeRoleArn],
            conditions: { StringEquals: { 'iam:PassedToService': 'eks.amazonaws.com' } },
          }),
        );
      }
      // Status writes only: the workflows never read, put or delete items.
      sm.addToRolePolicy(
        new iam.PolicyStatement({ actions: ['dynamodb:UpdateItem'], resources: [props.table.tableArn] }),
      );
      props.table.encryptionKey?.grant(sm, 'kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey*');

      const policy = sm.role.node.tryFindChild('DefaultPolicy') ?? sm.role;
      Validations.of(policy).acknowledge(
        ...arnWildcardAcks(
          `eks:${region}:${account}:nodegroup/${props.clusterName}/${prefix}-*/*`,
          'Node group ARNs end in an id EKS assigns at creation; the wildcard is limited to this cluster and the llmcap-<stage>- name prefix.',
        ),
        ...starResourceAcks(STATE_MACHINE_RUNTIME_ACTIONS),
      );
      dropRedundantRoleDependsOn(sm, sm.role);
      return sm;
    };

    this.provision = make('provision');
    this.scale = make('scale');
    this.delete = make('delete');
  }

  /**
   * What lambdas/service/workflows.ts calls: start executions of these three state machines and describe
   * them. Execution ARNs end in the execution name, hence one wildcard each (cdk-nag AwsSolutions-IAM5 on the
   * grantee's policy, which its owner acknowledges).
   */
  grantStartWorkflows(grantee: iam.IGrantable): void {
    const machines = Object.values(this.stateMachines);
    const stack = Stack.of(this);
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['states:StartExecution'],
      resourceArns: machines.map((m) => m.stateMachineArn),
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['states:DescribeExecution'],
      // The names are known here, which keeps the ARNs literal (and the cdk-nag finding id predictable).
      resourceArns: Object.values(FILES).map((file) =>
        stack.formatArn({
          service: 'states',
          resource: 'execution',
          resourceName: `${this.prefix}-${file}:*`,
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        }),
      ),
    });
  }

  /** The state machines by workflow kind, e.g. to pass their ARNs to the reconcile function. */
  get stateMachines(): Record<WorkflowKind, sfn.StateMachine> {
    return { provision: this.provision, scale: this.scale, delete: this.delete };
  }
}
