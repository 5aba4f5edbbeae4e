import { type EvaluationResult, runSimulation } from '@cloud-copilot/iam-simulate';
import type { CfnResolver } from './cfn';

/**
 * The synthesized IAM policies, evaluated offline by an IAM policy simulator (@cloud-copilot/iam-simulate): a
 * role's identity policies with the resource policy of the resource it calls (topic policy, key policy), the
 * request carrying the context keys AWS sets (aws:SourceAccount, aws:SecureTransport, resource and request
 * tags). What the simulator does not know of is listed in docs/operations.md#permissions.
 */

export type Decision = EvaluationResult;

export interface PolicyDoc {
  Version?: string;
  Statement: Record<string, unknown>[];
}

/** The documents of the AWS managed policies llmcap's Lambda roles use, as AWS publishes them. */
const AWS_MANAGED: Record<string, PolicyDoc> = {
  'service-role/AWSLambdaBasicExecutionRole': {
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Action: ['logs:CreateLogGroup', 'logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: '*',
      },
    ],
  },
};

export interface RoleModel {
  logicalId: string;
  name: string;
  arn: string;
  /** The service principals its trust policy names. */
  assumedBy: string[];
  policies: { name: string; policy: PolicyDoc }[];
  /** AWS managed policies the simulation does not know the document of (only the node role has any). */
  unknownManaged: string[];
}

/** Every IAM role of the template with its inline, attached and (known) AWS managed policies, resolved. */
export function rolesOf(resolver: CfnResolver): RoleModel[] {
  const res = resolver.template.Resources;
  return Object.entries(res)
    .filter(([, r]) => r.Type === 'AWS::IAM::Role')
    .map(([logicalId, r]) => {
      const p = resolver.resolve(r.Properties ?? {}) as Record<string, any>;
      const policies: RoleModel['policies'] = [];
      for (const inline of p.Policies ?? [])
        policies.push({ name: inline.PolicyName, policy: inline.PolicyDocument });
      for (const [id, x] of Object.entries(res)) {
        if (x.Type !== 'AWS::IAM::Policy' && x.Type !== 'AWS::IAM::ManagedPolicy') continue;
        const roles = (x.Properties?.Roles ?? []) as unknown[];
        if (!roles.some((ref) => (ref as { Ref?: string }).Ref === logicalId)) continue;
        policies.push({ name: id, policy: resolver.resolve(x.Properties!.PolicyDocument) as PolicyDoc });
      }
      const unknownManaged: string[] = [];
      for (const arn of (p.ManagedPolicyArns ?? []) as string[]) {
        const name = arn.replace(/^arn:[\w-]+:iam::aws:policy\//, '');
        const doc = AWS_MANAGED[name];
        if (doc) policies.push({ name, policy: doc });
        else unknownManaged.push(name);
      }
      const assumedBy = (
        (p.AssumeRolePolicyDocument?.Statement ?? []) as { Principal?: { Service?: unknown } }[]
      )
        .flatMap((s) => [s.Principal?.Service ?? []].flat())
        .map(String);
      const name = resolver.physicalName(logicalId);
      return { logicalId, name, arn: resolver.arnOf(logicalId), assumedBy, policies, unknownManaged };
    });
}

/** Resource policies by the ARN of the resource they guard: topic policies and key policies. */
export function resourcePolicies(resolver: CfnResolver): Map<string, PolicyDoc> {
  const out = new Map<string, PolicyDoc>();
  for (const [id, r] of Object.entries(resolver.template.Resources)) {
    if (r.Type === 'AWS::SNS::TopicPolicy') {
      const p = resolver.resolve(r.Properties) as { Topics: string[]; PolicyDocument: PolicyDoc };
      for (const t of p.Topics) out.set(t, p.PolicyDocument);
    }
    if (r.Type === 'AWS::KMS::Key')
      out.set(resolver.arnOf(id), resolver.resolve(r.Properties!.KeyPolicy) as PolicyDoc);
  }
  return out;
}

export interface Request {
  /** An IAM role session (`RoleModel`) or a service principal such as `cloudwatch.amazonaws.com`. */
  principal: RoleModel | string;
  action: string;
  resource: string;
  /** Context keys of the request; aws:SecureTransport defaults to true (every SDK call uses TLS). */
  context?: Record<string, string | string[]>;
}

/**
 * What AWS decides for one request: Allowed, ImplicitlyDenied or ExplicitlyDenied. An action, resource ARN or
 * context key the simulator does not know for that action (from the Service Authorization Reference) throws,
 * so that a typo cannot pass as a denial.
 */
export async function decide(
  req: Request,
  world: { account: string; resourcePolicies: Map<string, PolicyDoc> },
): Promise<Decision> {
  const role = typeof req.principal === 'string' ? undefined : req.principal;
  const principal = role
    ? `arn:aws:sts::${world.account}:assumed-role/${role.name}/session`
    : String(req.principal);
  const resourceAccount = req.resource.split(':')[4] || world.account;
  const out = await runSimulation(
    {
      request: {
        principal,
        action: req.action,
        resource: { resource: req.resource, accountId: resourceAccount },
        contextVariables: { 'aws:SecureTransport': 'true', ...req.context },
      },
      identityPolicies: role?.policies ?? [],
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      resourcePolicy: world.resourcePolicies.get(req.resource),
    },
    { simulationMode: 'Strict' },
  );
  if (out.resultType === 'error')
    throw new Error(`cannot simulate ${req.action} on ${req.resource}: ${JSON.stringify(out.errors)}`);
  if (out.resultType === 'single' && out.result.ignoredContextKeys?.length)
    throw new Error(
      `${req.action} on ${req.resource}: context keys ${out.result.ignoredContextKeys.join(', ')} do not apply to it`,
    );
  return out.overallResult;
}
