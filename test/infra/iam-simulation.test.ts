import { join } from 'node:path';
import type { CfnElement } from 'aws-cdk-lib';
import { STATE_MACHINE_RUNTIME_ACTIONS } from '../../infra/constructs/nodegroup-workflows';
import { executionArnOf } from '../../lambdas/aws/workflows';
import { alarmName } from '../../lambdas/domain/alarms';
import { nodegroupName } from '../../lambdas/domain/compute';
import { buildWorkflowInput, executionNameOf, type WorkflowKind } from '../../lambdas/service/workflows';
import { resetConfig } from '../../lambdas/shared/config';
import { type AslCall, type Authorization, aslCalls, commandKey, sdkCommands } from '../helpers/aws-calls';
import { devStack } from '../helpers/cfn';
import { builtin } from '../helpers/computes';
import {
  type Decision,
  decide,
  type Request,
  type RoleModel,
  resourcePolicies,
  rolesOf,
} from '../helpers/iam';

/** A compute as stored: workflows name their executions and tokens after its incarnation id. */
const GPU_L4 = { ...builtin('gpu-l4-1x'), createdAt: '2026-01-01T00:00:00.000Z', uid: 'k3v9x2m4q8wz' };

/**
 * The synthesized policies, evaluated by an IAM policy simulator as AWS would evaluate them in the stage's
 * account (123456789012, us-east-1): every call the code makes is allowed on the ARN it will have there, and
 * calls it must never make are denied. The calls are found in the code: the Task states of the ASL files, and
 * the SDK commands of each Lambda's bundle, which must each have an entry in LAMBDA_CALLS below.
 */

const { stack, config, resolver, template } = devStack();
const ACCOUNT = config.account;
const OTHER_ACCOUNT = '210987654321';
const ENV = { partition: 'aws', region: config.region, account: ACCOUNT };
const arn = (service: string, rest: string) => `arn:aws:${service}:${config.region}:${ACCOUNT}:${rest}`;
const logicalId = (c: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(c.node.defaultChild as CfnElement);

const roles = rolesOf(resolver);
const world = { account: ACCOUNT, resourcePolicies: resourcePolicies(resolver) };
const run = (req: Request): Promise<Decision> => decide(req, world);
const roleByArn = (roleArn: unknown): RoleModel => {
  const r = roles.find((x) => x.arn === roleArn);
  if (!r) throw new Error(`no role ${String(roleArn)}`);
  return r;
};
const functionRole = (fn: { node: { defaultChild?: unknown } }) =>
  roleByArn(resolver.resolve(resolver.resource(logicalId(fn)).Properties!.Role));
const functionEnv = (fn: { node: { defaultChild?: unknown } }) =>
  (
    resolver.resolve(resolver.resource(logicalId(fn)).Properties!.Environment) as {
      Variables: Record<string, string>;
    }
  ).Variables;

const topicArn = resolver.arnOf(logicalId(stack.onCall));
/** The key the topic is encrypted with, as the template has it (undefined: not encrypted). */
const keyArn =
  (resolver.resolve(resolver.resource(logicalId(stack.onCall)).Properties) as Record<string, string>)
    .KmsMasterKeyId ?? 'the topic has no KmsMasterKeyId';
/** The node role the provision workflow passes to EKS, as its definition substitutions give it. */
const NODE_ROLE = (
  resolver.resolve(
    resolver.resource(logicalId(stack.workflows.provision)).Properties!.DefinitionSubstitutions,
  ) as {
    NodeRoleArn: string;
  }
).NodeRoleArn;
const tableArn = resolver.arnOf(logicalId(stack.table));
const reconcileArn = resolver.arnOf(logicalId(stack.reconcileFunction));
const apiArn = resolver.arnOf(logicalId(stack.apiFunction));
const failuresArn = resolver.arnOf(logicalId(stack.reconcileFailures));
const ours = { 'llmcap:stage': config.stage, 'llmcap:compute': 'gpu-l4-1x' };
const resourceTags = (tags: Record<string, string>) =>
  Object.fromEntries(Object.entries(tags).map(([k, v]) => [`aws:ResourceTag/${k}`, v]));
const requestTags = (tags: Record<string, string>) => ({
  ...Object.fromEntries(Object.entries(tags).map(([k, v]) => [`aws:RequestTag/${k}`, v])),
  'aws:TagKeys': Object.keys(tags),
});
const nodegroupArn = (name: string) =>
  arn('eks', `nodegroup/${config.clusterName}/${name}/4ac7a1f2-0000-4000-8000-00000000a11c`);
const ourGroup = nodegroupArn(nodegroupName(config.stage, 'gpu-l4-1x'));

/** A call as [action, resource ARN, context keys]; resources and names are those the Lambda's environment gives. */
type Call = [action: string, resource: string, context?: Record<string, string | string[]>];
const QUOTA_CALLS: Call[] = ['eks/L-6D54EA21', 'eks/L-BD136A63', 'ec2/L-DB2E81BA', 'ec2/L-417A185B'].map(
  (q) => ['servicequotas:GetServiceQuota', arn('servicequotas', q)],
);
/** A quota with no applied value is read as its default; the action has no resource type, so "*". */
const DEFAULT_QUOTA_CALLS: Call[] = [['servicequotas:GetAWSDefaultServiceQuota', '*']];

/**
 * Every SDK command each Lambda's code sends, and the authorizations AWS checks for it. The scan below fails
 * when a command has no entry here (or an entry no command any more); adding a call is one line.
 * DynamoDB authorizes each item of a TransactWriteItems as its own action; a Query on an index needs the
 * index ARN. Keys `runtime:<what>` are calls the Lambda service makes with the function's role rather than
 * its code, e.g. an on-failure destination of asynchronous invocations: `'runtime:OnFailure': [['sns:Publish',
 * topic], ['kms:GenerateDataKey', key], ['kms:Decrypt', key]]` for the on-call topic, `sqs:SendMessage` (and the
 * queue key's) for a queue.
 */
function lambdaCalls(
  env: Record<string, string>,
): Record<'api' | 'reconcile' | 'admitter', Record<string, Call[]>> {
  const table = arn('dynamodb', `table/${env.LLMCAP_TABLE}`);
  const stream = `${table}/stream/2026-01-01T00:00:00.000`;
  const ddb = (...actions: string[]): Call[] => actions.map((a) => [`dynamodb:${a}`, table]);
  const documentClient = {
    'lib-dynamodb:GetCommand': ddb('GetItem'),
    'lib-dynamodb:BatchGetCommand': ddb('BatchGetItem'),
    'lib-dynamodb:PutCommand': ddb('PutItem'),
    'lib-dynamodb:UpdateCommand': ddb('UpdateItem'),
    'lib-dynamodb:DeleteCommand': ddb('DeleteItem'),
    'lib-dynamodb:QueryCommand': ddb('Query'),
    'lib-dynamodb:TransactWriteCommand': ddb('PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem'),
  };
  const sm = (kind: WorkflowKind) => env[`LLMCAP_${kind.toUpperCase()}_SM_ARN`] ?? '';
  const alarm = arn('cloudwatch', `alarm:${alarmName(env.LLMCAP_STAGE!, 'CapacityAtLimit', 'team:ml')}`);
  return {
    api: {
      ...documentClient,
      'client-lambda:InvokeCommand': [
        ['lambda:InvokeFunction', arn('lambda', `function:${env.LLMCAP_RECONCILE_FUNCTION}`)],
      ],
      // Compute writes: what EC2 says an instance type is, the Price List its price, and the cluster's subnets.
      'client-ec2:DescribeInstanceTypesCommand': [['ec2:DescribeInstanceTypes', '*']],
      'client-pricing:GetProductsCommand': [['pricing:GetProducts', '*']],
      'client-eks:DescribeClusterCommand': [
        ['eks:DescribeCluster', arn('eks', `cluster/${env.LLMCAP_CLUSTER}`)],
      ],
      // GET /v1/alarms: the stage's alarms and their state.
      'client-cloudwatch:DescribeAlarmsCommand': [['cloudwatch:DescribeAlarms', '*']],
      // A compute write checks the cluster's quotas (managed node groups per cluster, nodes per group).
      'client-service-quotas:GetServiceQuotaCommand': QUOTA_CALLS,
      'client-service-quotas:GetAWSDefaultServiceQuotaCommand': DEFAULT_QUOTA_CALLS,
    },
    reconcile: {
      // Each pass runs the admitter synchronously before it places (aws/lambda.ts invokeAdmitter).
      'client-lambda:InvokeCommand': [
        ['lambda:InvokeFunction', arn('lambda', `function:${env.LLMCAP_ADMITTER_FUNCTION}`)],
      ],
      // Nodes are asked for within the cluster's and the account's quotas (node groups, vCPUs per class).
      'client-service-quotas:GetServiceQuotaCommand': QUOTA_CALLS,
      'client-service-quotas:GetAWSDefaultServiceQuotaCommand': DEFAULT_QUOTA_CALLS,
      ...documentClient,
      // Loading the built-ins: what EC2 says each instance type is, and its price.
      'client-ec2:DescribeInstanceTypesCommand': [['ec2:DescribeInstanceTypes', '*']],
      'client-pricing:GetProductsCommand': [['pricing:GetProducts', '*']],
      // The zones of a compute's subnets before its node group exists (issue 32 §3).
      'client-ec2:DescribeSubnetsCommand': [['ec2:DescribeSubnets', '*']],
      'client-eks:DescribeNodegroupCommand': [
        ['eks:DescribeNodegroup', nodegroupArn(nodegroupName(env.LLMCAP_STAGE!, 'gpu-l4-1x'))],
      ],
      'client-auto-scaling:DescribeAutoScalingGroupsCommand': [
        ['autoscaling:DescribeAutoScalingGroups', '*'],
      ],
      // A group short of instances: why its newest launch failed.
      'client-auto-scaling:DescribeScalingActivitiesCommand': [
        ['autoscaling:DescribeScalingActivities', '*'],
      ],
      // The cluster's endpoint and CA, for its Kubernetes API (lambdas/aws/kubernetes.ts).
      'client-eks:DescribeClusterCommand': [
        ['eks:DescribeCluster', arn('eks', `cluster/${env.LLMCAP_CLUSTER}`)],
      ],
      // A drained node's instance (lambdas/service/drain.ts, through aws/nodegroups.ts), in this stage's group of this cluster.
      'client-auto-scaling:TerminateInstanceInAutoScalingGroupCommand': [
        [
          'autoscaling:TerminateInstanceInAutoScalingGroup',
          arn(
            'autoscaling',
            `autoScalingGroup:6a1b2c3d-0000-4000-8000-00000000a5c9:autoScalingGroupName/eks-${nodegroupName(env.LLMCAP_STAGE!, 'gpu-l4-1x')}-4ac7a1f2-0000-4000-8000-00000000a11c`,
          ),
          { 'aws:ResourceTag/eks:cluster-name': env.LLMCAP_CLUSTER! },
        ],
      ],
      'client-sfn:StartExecutionCommand': (['provision', 'scale', 'delete'] as const).map((k) => [
        'states:StartExecution',
        sm(k),
      ]),
      'client-sfn:DescribeExecutionCommand': (['provision', 'scale', 'delete'] as const).map((k) => [
        'states:DescribeExecution',
        executionArnOf(sm(k), executionNameOf(GPU_L4, k, 3)),
      ]),
      'client-cloudwatch:DescribeAlarmsCommand': [['cloudwatch:DescribeAlarms', '*']],
      'client-cloudwatch:PutMetricAlarmCommand': [['cloudwatch:PutMetricAlarm', alarm]],
      'client-cloudwatch:DeleteAlarmsCommand': [['cloudwatch:DeleteAlarms', alarm]],
      // Lambda sends a failed or expired asynchronous invocation's record with the function's role.
      // CDK's SqsDestination grants the queue's two read actions with it (grantSendMessages).
      'runtime:OnFailure': [
        ['sqs:SendMessage', failuresArn],
        ['sqs:GetQueueAttributes', failuresArn],
        ['sqs:GetQueueUrl', failuresArn],
      ],
    },
    admitter: {
      ...documentClient,
      // The catalog it decides over holds the built-ins, resolved against EC2 and the Price List.
      'client-ec2:DescribeInstanceTypesCommand': [['ec2:DescribeInstanceTypes', '*']],
      'client-pricing:GetProductsCommand': [['pricing:GetProducts', '*']],
      // Lambda's event source mapping reads the table's stream with the function's role.
      'runtime:StreamRead': [
        ['dynamodb:DescribeStream', stream],
        ['dynamodb:GetRecords', stream],
        ['dynamodb:GetShardIterator', stream],
      ],
      // In its bundle through the services' default wiring (service/index.ts), never on its path (catalog,
      // admission, events): no grant, so a change that made it call them fails here.
      'client-cloudwatch:DescribeAlarmsCommand': [],
      'client-eks:DescribeClusterCommand': [],
      'client-service-quotas:GetServiceQuotaCommand': [],
      'client-service-quotas:GetAWSDefaultServiceQuotaCommand': [],
    },
  };
}

const FUNCTIONS = {
  api: { fn: stack.apiFunction, entry: join('lambdas', 'api', 'handler.ts') },
  reconcile: { fn: stack.reconcileFunction, entry: join('lambdas', 'reconcile', 'handler.ts') },
  admitter: { fn: stack.admitterFunction, entry: join('lambdas', 'admitter', 'handler.ts') },
} as const;

/** What a Lambda role holds beyond its code's calls: the runtime's log writes and X-Ray segments. */
const LAMBDA_RUNTIME_ACTIONS = [
  'logs:CreateLogGroup',
  'logs:CreateLogStream',
  'logs:PutLogEvents',
  'xray:PutTraceSegments',
  'xray:PutTelemetryRecords',
  // CDK's stream grant (DynamoEventSource) includes it on the stream's ARN, where IAM never matches it (it takes
  // only "*"); Lambda's event source mapping reads the stream by its ARN and never lists streams.
  'dynamodb:ListStreams',
];

/** The actions a role's policies allow (no wildcard actions exist: security.test.ts checks that). */
function allowedActions(role: RoleModel): Set<string> {
  return new Set(
    role.policies.flatMap((p) =>
      p.policy.Statement.filter((s) => s.Effect === 'Allow').flatMap(
        (s) => [s.Action ?? []].flat() as string[],
      ),
    ),
  );
}

function withEnv<T>(env: Record<string, string>, f: () => T): T {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  resetConfig();
  try {
    return f();
  } finally {
    process.env = saved;
    resetConfig();
  }
}

describe('the on-call topic reaches on-call', () => {
  const alarms = Object.values(template.Resources)
    .filter((r) => r.Type === 'AWS::CloudWatch::Alarm')
    .map((r) => resolver.resolve(r.Properties) as { AlarmName: string; AlarmActions: string[] });
  const stage = functionEnv(stack.reconcileFunction).LLMCAP_STAGE!;
  const kept = [
    alarmName(stage, 'CapacityAtLimit', 'team:ml'),
    alarmName(stage, 'NodegroupFailed', 'gpu-l4-1x'),
  ];
  const alarmArns = [...alarms.map((a) => a.AlarmName), ...kept].map((n) => arn('cloudwatch', `alarm:${n}`));
  const fromAlarm = (alarmArn: string, account = ACCOUNT) => ({
    'aws:SourceAccount': account,
    'aws:SourceArn': alarmArn,
  });

  it("is encrypted with a customer managed key of the stack's own, which rotates", () => {
    const keys = Object.keys(template.Resources).filter(
      (id) => template.Resources[id]!.Type === 'AWS::KMS::Key',
    );
    const key = keys.find((id) => resolver.arnOf(id) === keyArn);
    expect(key).toBeDefined();
    expect(resolver.resource(key!).Properties!.EnableKeyRotation).toBe(true);
  });

  it('is where every alarm of the stack sends its notifications', () => {
    expect(alarms.length).toBeGreaterThan(0);
    for (const a of alarms) expect(a.AlarmActions).toEqual([topicArn]);
  });

  it.each(alarmArns)(
    'lets CloudWatch publish a notification of %s, and use the key for it',
    async (alarmArn) => {
      const from = { principal: 'cloudwatch.amazonaws.com', context: fromAlarm(alarmArn) };
      expect(await run({ ...from, action: 'sns:Publish', resource: topicArn })).toBe('Allowed');
      expect(await run({ ...from, action: 'kms:GenerateDataKey', resource: keyArn })).toBe('Allowed');
      expect(await run({ ...from, action: 'kms:Decrypt', resource: keyArn })).toBe('Allowed');
    },
  );

  it("refuses CloudWatch publishing for another account's alarm (confused deputy)", async () => {
    const other = `arn:aws:cloudwatch:${config.region}:${OTHER_ACCOUNT}:alarm:llmcap-${config.stage}-ReconcileErrors`;
    const from = { principal: 'cloudwatch.amazonaws.com', context: fromAlarm(other, OTHER_ACCOUNT) };
    expect(await run({ ...from, action: 'sns:Publish', resource: topicArn })).not.toBe('Allowed');
    expect(await run({ ...from, action: 'kms:GenerateDataKey', resource: keyArn })).not.toBe('Allowed');
  });

  it("refuses CloudWatch publishing for an alarm of this account that is not the stage's", async () => {
    const from = {
      principal: 'cloudwatch.amazonaws.com',
      context: fromAlarm(arn('cloudwatch', 'alarm:billing-over-budget')),
    };
    expect(await run({ ...from, action: 'sns:Publish', resource: topicArn })).not.toBe('Allowed');
  });

  it('refuses any publish without TLS, even by an allowed publisher', async () => {
    const context = { ...fromAlarm(alarmArns[0]!), 'aws:SecureTransport': 'false' };
    expect(
      await run({
        principal: 'cloudwatch.amazonaws.com',
        action: 'sns:Publish',
        resource: topicArn,
        context,
      }),
    ).toBe('ExplicitlyDenied');
  });

  it('refuses publishing to anyone else, the API and the reconciler included', async () => {
    for (const principal of [
      'events.amazonaws.com',
      functionRole(stack.apiFunction),
      functionRole(stack.reconcileFunction),
    ])
      expect(await run({ principal, action: 'sns:Publish', resource: topicArn })).not.toBe('Allowed');
  });
});

describe('the state machine roles allow exactly what the ASL calls', () => {
  const kinds = ['provision', 'scale', 'delete'] as const;
  const machines = Object.fromEntries(
    kinds.map((kind) => {
      const sm = stack.workflows.stateMachines[kind];
      const p = resolver.resolve(resolver.resource(logicalId(sm)).Properties) as {
        DefinitionString: string;
        DefinitionSubstitutions: Record<string, string>;
        RoleArn: string;
      };
      const definition = p.DefinitionString.replace(
        /\$\{(\w+)\}/g,
        (m, k: string) => p.DefinitionSubstitutions[k] ?? m,
      );
      return [kind, { definition, role: roleByArn(p.RoleArn) }];
    }),
  ) as Record<WorkflowKind, { definition: string; role: RoleModel }>;
  const input = (kind: WorkflowKind) =>
    buildWorkflowInput(GPU_L4, {
      kind,
      generation: 2,
      desiredNodes: 1,
      stage: config.stage,
      subnetIds: config.subnetIds,
    });
  const callsOf = (kind: WorkflowKind) =>
    aslCalls(
      machines[kind].definition,
      input(kind),
      { executionName: executionNameOf(GPU_L4, kind, 2) },
      ENV,
    );

  /**
   * The requests AWS sees for one Task: its authorizations with the tags the group carries (the ones the
   * provision workflow created it with), a create's request tags, tagging on create, and passing a role.
   */
  function requests(
    call: AslCall,
    kind: WorkflowKind,
  ): (Authorization & { context?: Record<string, string | string[]> })[] {
    const tags = input(kind).nodegroup.tags;
    const out: (Authorization & { context?: Record<string, string | string[]> })[] = call.authorizations.map(
      (a) => ({
        ...a,
        ...(a.resourceType === 'nodegroup' ? { context: resourceTags(tags) } : {}),
      }),
    );
    const reqTags = call.parameters.Tags as Record<string, string> | undefined;
    if (reqTags && /:create\w+$/.test(call.integration)) {
      for (const a of out) a.context = { ...a.context, ...requestTags(reqTags) };
      const created = nodegroupArn(String(call.parameters.NodegroupName));
      out.push({
        action: 'eks:TagResource',
        resource: created,
        resourceType: 'nodegroup',
        context: requestTags(reqTags),
      });
    }
    for (const v of Object.values(call.parameters))
      if (typeof v === 'string' && /^arn:aws[\w-]*:iam::\d{12}:role\//.test(v))
        out.push({
          action: 'iam:PassRole',
          resource: v,
          resourceType: 'role',
          context: { 'iam:PassedToService': `${call.integration.split(':')[6]}.amazonaws.com` },
        });
    return out;
  }

  it.each(kinds)('%s: the derivation finds its EKS and DynamoDB tasks', async (kind) => {
    const actions = new Set((await callsOf(kind)).flatMap((c) => c.authorizations.map((a) => a.action)));
    const expected = {
      provision: 'eks:CreateNodegroup',
      scale: 'eks:UpdateNodegroupConfig',
      delete: 'eks:DeleteNodegroup',
    };
    expect([...actions]).toEqual(
      expect.arrayContaining([expected[kind], 'eks:DescribeNodegroup', 'dynamodb:UpdateItem']),
    );
  });

  it.each(kinds)('%s: every Task is allowed on the ARN it calls in the account', async (kind) => {
    const denied: string[] = [];
    for (const call of await callsOf(kind))
      for (const r of requests(call, kind)) {
        const d = await run({ principal: machines[kind].role, ...r });
        if (d !== 'Allowed')
          denied.push(`${call.state}: ${r.action} on ${r.resource} ${JSON.stringify(r.context ?? {})}: ${d}`);
      }
    expect(denied).toEqual([]);
  });

  it.each(kinds)('%s: the role allows no action its ASL does not call', async (kind) => {
    const used = new Set((await callsOf(kind)).flatMap((c) => requests(c, kind).map((r) => r.action)));
    const extra = [...allowedActions(machines[kind].role)].filter(
      (a) => !used.has(a) && !STATE_MACHINE_RUNTIME_ACTIONS.includes(a),
    );
    expect(extra).toEqual([]);
  });

  const otherStage = `${config.stage}-x`;
  const foreign = nodegroupArn(nodegroupName(otherStage, 'gpu-l4-1x'));

  it('deletes a node group tagged as this stage, and no other: not one of another stage, untagged or of another cluster', async () => {
    const role = machines.delete.role;
    const del = (resource: string, tags: Record<string, string>) =>
      run({ principal: role, action: 'eks:DeleteNodegroup', resource, context: resourceTags(tags) });
    expect(await del(ourGroup, ours)).toBe('Allowed');
    // Same name prefix (llmcap-dev-x-... starts with llmcap-dev-), another stage's tag.
    expect(await del(foreign, { 'llmcap:stage': otherStage })).not.toBe('Allowed');
    expect(await del(ourGroup, { 'llmcap:stage': 'prod' })).not.toBe('Allowed');
    expect(await del(ourGroup, {})).not.toBe('Allowed');
    expect(
      await del(
        `arn:aws:eks:${config.region}:${ACCOUNT}:nodegroup/other-cluster/${nodegroupName(config.stage, 'x')}/4ac7a1f2-0000-4000-8000-00000000a11c`,
        ours,
      ),
    ).not.toBe('Allowed');
  });

  it('scales only node groups tagged as this stage', async () => {
    const upd = (tags: Record<string, string>) =>
      run({
        principal: machines.scale.role,
        action: 'eks:UpdateNodegroupConfig',
        resource: ourGroup,
        context: resourceTags(tags),
      });
    expect(await upd(ours)).toBe('Allowed');
    expect(await upd({ 'llmcap:stage': otherStage })).not.toBe('Allowed');
    expect(await upd({})).not.toBe('Allowed');
  });

  it('creates node groups only with the stage tag, and passes only the node role, only to EKS', async () => {
    const role = machines.provision.role;
    const cluster = arn('eks', `cluster/${config.clusterName}`);
    const create = (tags: Record<string, string>) =>
      run({ principal: role, action: 'eks:CreateNodegroup', resource: cluster, context: requestTags(tags) });
    expect(await create(ours)).toBe('Allowed');
    expect(await create({ 'llmcap:compute': 'gpu-l4-1x' })).not.toBe('Allowed');
    expect(await create({ 'llmcap:stage': 'prod' })).not.toBe('Allowed');
    const nodeRole = NODE_ROLE;
    const pass = (resource: string, service: string) =>
      run({ principal: role, action: 'iam:PassRole', resource, context: { 'iam:PassedToService': service } });
    expect(await pass(nodeRole, 'eks.amazonaws.com')).toBe('Allowed');
    expect(await pass(nodeRole, 'ec2.amazonaws.com')).not.toBe('Allowed');
    expect(await pass(`arn:aws:iam::${ACCOUNT}:role/Admin`, 'eks.amazonaws.com')).not.toBe('Allowed');
    expect(
      await run({
        principal: role,
        action: 'eks:TagResource',
        resource: foreign,
        context: requestTags({ 'llmcap:stage': otherStage }),
      }),
    ).not.toBe('Allowed');
  });

  it.each(kinds)(
    "%s: reads a foreign group's tags (to refuse adopting it) but never deletes clusters or tables",
    async (kind) => {
      const role = machines[kind].role;
      const describe = await run({
        principal: role,
        action: 'eks:DescribeNodegroup',
        resource: ourGroup,
        context: resourceTags({ 'llmcap:stage': 'prod' }),
      });
      expect(describe).toBe('Allowed');
      for (const [action, resource] of [
        ['eks:DeleteCluster', arn('eks', `cluster/${config.clusterName}`)],
        ['dynamodb:DeleteTable', tableArn],
        ['dynamodb:PutItem', tableArn],
        ['dynamodb:DeleteItem', tableArn],
        ['sns:Publish', topicArn],
      ] as const)
        expect(await run({ principal: role, action, resource })).not.toBe('Allowed');
    },
  );
});

describe('the Lambda roles allow exactly what the code calls', () => {
  const names = Object.keys(FUNCTIONS) as (keyof typeof FUNCTIONS)[];
  const calls = Object.fromEntries(
    names.map((n) => {
      const env = functionEnv(FUNCTIONS[n].fn);
      return [n, withEnv(env, () => lambdaCalls(env))[n]];
    }),
  ) as Record<keyof typeof FUNCTIONS, Record<string, Call[]>>;

  it.each(names)(
    '%s: every SDK command its bundle sends has its entry in LAMBDA_CALLS, and every entry a command',
    async (n) => {
      const found = [...new Set((await sdkCommands(FUNCTIONS[n].entry)).map(commandKey))].sort();
      expect(found.filter((k) => !(k in calls[n]))).toEqual([]);
      const listed = Object.keys(calls[n]).filter((k) => !k.startsWith('runtime:'));
      expect(listed.filter((k) => !found.includes(k))).toEqual([]);
    },
  );

  it.each(names)('%s: every call is allowed on the ARN it has in the account', async (n) => {
    const role = functionRole(FUNCTIONS[n].fn);
    const denied: string[] = [];
    for (const [command, list] of Object.entries(calls[n]))
      for (const [action, resource, context] of list) {
        const d = await run({ principal: role, action, resource, ...(context ? { context } : {}) });
        if (d !== 'Allowed') denied.push(`${command}: ${action} on ${resource}: ${d}`);
      }
    expect(denied).toEqual([]);
  });

  it.each(names)('%s: the role allows no action its code does not call', (n) => {
    const used = new Set(Object.values(calls[n]).flatMap((l) => l.map(([a]) => a)));
    const extra = [...allowedActions(functionRole(FUNCTIONS[n].fn))].filter(
      (a) => !used.has(a) && !LAMBDA_RUNTIME_ACTIONS.includes(a),
    );
    expect(extra).toEqual([]);
  });

  it('the API reads no node group (only its cluster), never the workflows or the topic, and invokes only the reconciler', async () => {
    const role = functionRole(stack.apiFunction);
    for (const [action, resource] of [
      ['eks:DeleteNodegroup', ourGroup],
      ['eks:DescribeNodegroup', ourGroup],
      ['states:StartExecution', String(functionEnv(stack.reconcileFunction).LLMCAP_PROVISION_SM_ARN)],
      ['sns:Publish', topicArn],
      ['kms:Decrypt', keyArn],
      ['dynamodb:DeleteTable', tableArn],
      ['dynamodb:Scan', tableArn],
      ['iam:PassRole', `arn:aws:iam::${ACCOUNT}:role/Admin`],
      ['lambda:InvokeFunction', apiArn],
    ] as const)
      expect([action, await run({ principal: role, action, resource })]).toEqual([
        action,
        expect.not.stringMatching(/^Allowed$/),
      ]);
  });

  it("the reconciler changes no node group, table or alarm that is not the stage's", async () => {
    const role = functionRole(stack.reconcileFunction);
    for (const [action, resource] of [
      ['eks:DeleteNodegroup', ourGroup],
      ['eks:CreateNodegroup', arn('eks', `cluster/${config.clusterName}`)],
      ['eks:UpdateNodegroupConfig', ourGroup],
      ['eks:DeleteCluster', arn('eks', `cluster/${config.clusterName}`)],
      ['eks:DescribeNodegroup', nodegroupArn('someone-elses-group')],
      ['dynamodb:DeleteTable', tableArn],
      ['iam:PassRole', NODE_ROLE],
      ['cloudwatch:DeleteAlarms', arn('cloudwatch', 'alarm:billing-over-budget')],
      ['cloudwatch:PutMetricAlarm', arn('cloudwatch', 'alarm:billing-over-budget')],
      ['states:StartExecution', arn('states', 'stateMachine:someone-elses-workflow')],
      ['lambda:InvokeFunction', apiArn],
    ] as const)
      expect([action, await run({ principal: role, action, resource })]).toEqual([
        action,
        expect.not.stringMatching(/^Allowed$/),
      ]);
  });
});

describe('every role is simulated', () => {
  it('has no role this file does not check: Lambda, state machine, scheduler, or the node role EC2 assumes', () => {
    const lambdaRoles = Object.values(FUNCTIONS).map((f) => functionRole(f.fn).logicalId);
    const smRoles = Object.values(stack.workflows.stateMachines).map(
      (sm) => roleByArn(resolver.resolve(resolver.resource(logicalId(sm)).Properties!.RoleArn)).logicalId,
    );
    const unchecked = roles
      .filter((r) => !lambdaRoles.includes(r.logicalId) && !smRoles.includes(r.logicalId))
      .map((r) => `${r.assumedBy.join(',')}: ${r.logicalId}`);
    // Checked below / by its AWS managed policies only (docs/operations.md#permissions).
    expect(unchecked.map((u) => u.replace(/:.*/, ''))).toEqual(
      expect.arrayContaining(['scheduler.amazonaws.com']),
    );
    expect(unchecked.every((u) => /^(scheduler|ec2)\.amazonaws\.com:/.test(u))).toBe(true);
  });

  it('lets the schedule invoke the reconciler, dead-letter to its queue, and nothing else', async () => {
    const role = roles.find((r) => r.assumedBy.includes('scheduler.amazonaws.com'))!;
    expect(await run({ principal: role, action: 'lambda:InvokeFunction', resource: reconcileArn })).toBe(
      'Allowed',
    );
    expect(await run({ principal: role, action: 'sqs:SendMessage', resource: failuresArn })).toBe('Allowed');
    expect(await run({ principal: role, action: 'lambda:InvokeFunction', resource: apiArn })).not.toBe(
      'Allowed',
    );
    expect([...allowedActions(role)].sort()).toEqual(['lambda:InvokeFunction', 'sqs:SendMessage']);
  });
});
