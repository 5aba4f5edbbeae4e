import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { LlmcapStack } from '../../infra/stacks/llmcap-stack';
import { loadStageConfig } from '../../infra/stage-config';

/**
 * DESIGN.md §8 on the synthesized template: no route reachable without IAM authorization, and no IAM policy
 * statement with a wildcard action or resource except the ones AWS requires, each listed below with why.
 * A new wildcard fails this test until it is either scoped or added here with its reason.
 */

/** Actions AWS authorizes only against Resource "*" (no resource-level permissions), and why we need them. */
const STAR_RESOURCE_ALLOWED: Record<string, string> = {
  'xray:PutTraceSegments':
    'X-Ray has no resource-level permissions; active tracing on Lambda and Step Functions',
  'xray:PutTelemetryRecords': 'X-Ray has no resource-level permissions; active tracing',
  'xray:GetSamplingRules':
    'X-Ray has no resource-level permissions; Step Functions tracing reads sampling rules',
  'xray:GetSamplingTargets': 'X-Ray has no resource-level permissions; Step Functions tracing',
  'logs:CreateLogDelivery':
    'Step Functions logging to CloudWatch Logs uses vended log delivery, which AWS documents on Resource "*"',
  'logs:GetLogDelivery': 'vended log delivery for Step Functions logging (Resource "*" per AWS docs)',
  'logs:UpdateLogDelivery': 'vended log delivery for Step Functions logging (Resource "*" per AWS docs)',
  'logs:DeleteLogDelivery': 'vended log delivery for Step Functions logging (Resource "*" per AWS docs)',
  'logs:ListLogDeliveries': 'vended log delivery for Step Functions logging (Resource "*" per AWS docs)',
  'logs:PutResourcePolicy': 'vended log delivery for Step Functions logging (Resource "*" per AWS docs)',
  'logs:DescribeResourcePolicies':
    'vended log delivery for Step Functions logging (Resource "*" per AWS docs)',
  'logs:DescribeLogGroups': 'vended log delivery for Step Functions logging (Resource "*" per AWS docs)',
  'autoscaling:DescribeAutoScalingGroups':
    'Auto Scaling Describe* actions support no resource-level permissions; reconcile counts ready nodes',
  'cloudwatch:DescribeAlarms':
    'a List action called with AlarmNamePrefix; AWS documents that it must be scoped to "*" to return every alarm',
  'cloudwatch:PutMetricData':
    'CloudWatch metric data has no resource ARN (only a cloudwatch:namespace condition key)',
};

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
    pattern: /^\$\{[\w]+\.Arn\}:\*$/,
    why: 'lambda:InvokeFunction on the function and its versions/aliases (CDK grantInvoke adds the qualifier form)',
  },
  {
    pattern: /^\$\{[\w]+\.Arn\}\/index\/\*$/,
    why: "the table's own indexes (CDK grants on a table include them)",
  },
];

/** AWS managed policies attached to roles, and why each is needed. */
const MANAGED_POLICIES_ALLOWED: Record<string, string> = {
  'service-role/AWSLambdaBasicExecutionRole': "the Lambda functions write their own log groups' streams",
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

let template: Record<string, any>;
let statements: Stmt[];

beforeAll(() => {
  const app = new App();
  const config = loadStageConfig('dev');
  const stack = new LlmcapStack(app, 'llmcap-dev', {
    config,
    env: { account: config.account, region: config.region },
  });
  template = Template.fromStack(stack).toJSON();
  statements = [];
  for (const [id, r] of Object.entries<any>(template.Resources)) {
    const docs: unknown[] = [];
    if (r.Type === 'AWS::IAM::Policy' || r.Type === 'AWS::IAM::ManagedPolicy')
      docs.push(r.Properties.PolicyDocument);
    if (r.Type === 'AWS::IAM::Role') for (const p of r.Properties.Policies ?? []) docs.push(p.PolicyDocument);
    if (r.Type === 'AWS::SNS::TopicPolicy' || r.Type === 'AWS::SQS::QueuePolicy')
      docs.push(r.Properties.PolicyDocument);
    for (const d of docs as { Statement: Omit<Stmt, 'where'>[] }[])
      for (const s of d.Statement) statements.push({ ...s, where: `${id} (${r.Type})` });
  }
});

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

  it('has no wildcard action anywhere in an Allow (no "*", no "service:*", no "service:Get*")', () => {
    const bad = statements
      .filter((s) => s.Effect === 'Allow')
      .flatMap((s) =>
        [s.Action ?? []]
          .flat()
          .filter((a) => a.includes('*'))
          .map((a) => `${s.where}: ${a}`),
      );
    expect(bad).toEqual([]);
  });

  it('grants Resource "*" only for actions AWS authorizes on "*" alone, each with its reason', () => {
    const bad: string[] = [];
    for (const s of statements.filter((x) => x.Effect === 'Allow')) {
      const resources = [s.Resource ?? []].flat().map(flat);
      if (!resources.includes('*')) continue;
      for (const a of [s.Action ?? []].flat())
        if (!STAR_RESOURCE_ALLOWED[a]) bad.push(`${s.where}: ${a} on "*"`);
    }
    expect(bad).toEqual([]);
  });

  it('scopes every other wildcard in a resource ARN to what llmcap owns', () => {
    const bad: string[] = [];
    for (const s of statements.filter((x) => x.Effect === 'Allow')) {
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
