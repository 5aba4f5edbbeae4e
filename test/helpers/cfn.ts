import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { LlmcapStack } from '../../infra/stacks/llmcap-stack';
import { loadStageConfig, type StageConfig } from '../../infra/stage-config';
import { TEST_APP_PROPS } from './cdk-app';

/**
 * The llmcap stack as `cdk synth` builds it (the feature flags of cdk.json, a stage config with a real account
 * and region), and a resolver that turns the template's references into the values they take in an account.
 */

const ROOT = join(__dirname, '..', '..');

/** cdk.json's context: its feature flags change the synthesized policies (e.g. minimizePolicies). */
export function cdkJsonContext(): Record<string, unknown> {
  const { context } = JSON.parse(readFileSync(join(ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  return context;
}

export interface Synthesized {
  app: App;
  stack: LlmcapStack;
  config: StageConfig;
  template: CfnTemplate;
  resolver: CfnResolver;
}

export interface CfnResource {
  Type: string;
  Properties?: Record<string, any>;
  [k: string]: unknown;
}
export interface CfnTemplate {
  Resources: Record<string, CfnResource>;
  [k: string]: unknown;
}

/**
 * Synthesizes the stage's stack, with cdk-nag added as in infra/bin/app.ts. Lambda bundling is skipped
 * (`aws:cdk:bundling-stacks` empty, what `cdk synth --exclusively` does for other stacks): the template is the
 * same but for the asset hash, and a test file no longer runs esbuild for each function.
 */
export function synthStage(config: StageConfig = loadStageConfig('dev', ROOT)): Synthesized {
  const app = new App({
    ...TEST_APP_PROPS,
    context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [] },
  });
  const stack = new LlmcapStack(app, `llmcap-${config.stage}`, {
    config,
    env: { account: config.account, region: config.region },
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  const template = Template.fromStack(stack).toJSON() as CfnTemplate;
  return {
    app,
    stack,
    config,
    template,
    resolver: new CfnResolver(template, {
      account: config.account,
      region: config.region,
      stackName: stack.stackName,
    }),
  };
}

let cached: Synthesized | undefined;
/** One synthesis of the dev stage per test file. */
export function devStack(): Synthesized {
  cached ??= synthStage();
  return cached;
}

export interface ResolverEnv {
  account: string;
  region: string;
  stackName: string;
  partition?: string;
}

/** How CloudFormation names and references a resource type: what Ref returns, and its ARN. */
interface TypeInfo {
  /** The property that holds a physical name given in the template. */
  nameProp?: string;
  ref: 'name' | 'arn';
  arn: (name: string, e: Required<ResolverEnv>) => string;
}

const TYPES: Record<string, TypeInfo> = {
  'AWS::IAM::Role': {
    nameProp: 'RoleName',
    ref: 'name',
    arn: (n, e) => `arn:${e.partition}:iam::${e.account}:role/${n}`,
  },
  'AWS::Lambda::Function': {
    nameProp: 'FunctionName',
    ref: 'name',
    arn: (n, e) => `arn:${e.partition}:lambda:${e.region}:${e.account}:function:${n}`,
  },
  'AWS::DynamoDB::GlobalTable': {
    nameProp: 'TableName',
    ref: 'name',
    arn: (n, e) => `arn:${e.partition}:dynamodb:${e.region}:${e.account}:table/${n}`,
  },
  'AWS::DynamoDB::Table': {
    nameProp: 'TableName',
    ref: 'name',
    arn: (n, e) => `arn:${e.partition}:dynamodb:${e.region}:${e.account}:table/${n}`,
  },
  'AWS::SNS::Topic': {
    nameProp: 'TopicName',
    ref: 'arn',
    arn: (n, e) => `arn:${e.partition}:sns:${e.region}:${e.account}:${n}`,
  },
  'AWS::SQS::Queue': {
    nameProp: 'QueueName',
    ref: 'name',
    arn: (n, e) => `arn:${e.partition}:sqs:${e.region}:${e.account}:${n}`,
  },
  'AWS::KMS::Key': {
    ref: 'name',
    arn: (n, e) => `arn:${e.partition}:kms:${e.region}:${e.account}:key/${n}`,
  },
  'AWS::StepFunctions::StateMachine': {
    nameProp: 'StateMachineName',
    ref: 'arn',
    arn: (n, e) => `arn:${e.partition}:states:${e.region}:${e.account}:stateMachine:${n}`,
  },
  'AWS::Logs::LogGroup': {
    nameProp: 'LogGroupName',
    ref: 'name',
    arn: (n, e) => `arn:${e.partition}:logs:${e.region}:${e.account}:log-group:${n}:*`,
  },
  'AWS::Scheduler::Schedule': {
    nameProp: 'Name',
    ref: 'name',
    arn: (n, e) => `arn:${e.partition}:scheduler:${e.region}:${e.account}:schedule/default/${n}`,
  },
  'AWS::ApiGatewayV2::Api': {
    ref: 'name',
    arn: (n, e) => `arn:${e.partition}:apigateway:${e.region}::/apis/${n}`,
  },
};

/**
 * Resolves Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select and Fn::Split in a template value to what they will
 * be in the account. Physical names the template gives are used as they are; names CloudFormation generates
 * (`<stack>-<logicalId>-<random>`) get a deterministic stand-in of the same shape, and KMS key ids a
 * deterministic UUID, so that an ARN in a policy and the same ARN in a state machine definition agree.
 */
export class CfnResolver {
  private readonly env: Required<ResolverEnv>;

  constructor(
    readonly template: CfnTemplate,
    env: ResolverEnv,
  ) {
    this.env = { partition: 'aws', ...env };
  }

  resource(logicalId: string): CfnResource {
    const r = this.template.Resources[logicalId];
    if (!r) throw new Error(`no resource ${logicalId} in the template`);
    return r;
  }

  /** The physical name (or id) CloudFormation gives the resource. */
  physicalName(logicalId: string): string {
    const r = this.resource(logicalId);
    const info = TYPES[r.Type];
    const given = info?.nameProp ? r.Properties?.[info.nameProp] : undefined;
    if (given !== undefined) return String(this.resolve(given));
    const h = createHash('sha256').update(`${this.env.stackName}/${logicalId}`).digest('hex');
    if (r.Type === 'AWS::KMS::Key')
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
    if (r.Type === 'AWS::ApiGatewayV2::Api') return h.slice(0, 10);
    return `${`${this.env.stackName}-${logicalId}`.slice(0, 51)}-${h.slice(0, 12).toUpperCase()}`;
  }

  arnOf(logicalId: string): string {
    const r = this.resource(logicalId);
    const info = TYPES[r.Type];
    if (!info) throw new Error(`no ARN format known for ${r.Type} (${logicalId}): add it to TYPES`);
    return info.arn(this.physicalName(logicalId), this.env);
  }

  private ref(name: string): string {
    const pseudo: Record<string, string> = {
      'AWS::Partition': this.env.partition,
      'AWS::Region': this.env.region,
      'AWS::AccountId': this.env.account,
      'AWS::StackName': this.env.stackName,
      'AWS::URLSuffix': 'amazonaws.com',
    };
    if (name in pseudo) return pseudo[name]!;
    const type = this.resource(name).Type;
    // A queue's Ref is its URL, which SQS builds from the account and the name.
    if (type === 'AWS::SQS::Queue') return this.queueUrl(name);
    return TYPES[type]?.ref === 'arn' ? this.arnOf(name) : this.physicalName(name);
  }

  private queueUrl(logicalId: string): string {
    return `https://sqs.${this.env.region}.amazonaws.com/${this.env.account}/${this.physicalName(logicalId)}`;
  }

  private getAtt(logicalId: string, attr: string): string {
    const type = this.resource(logicalId).Type;
    if (attr === 'Arn' || (attr === 'TopicArn' && type === 'AWS::SNS::Topic')) return this.arnOf(logicalId);
    if (attr === 'Name' || attr === 'TopicName' || attr === 'StateMachineName' || attr === 'QueueName')
      return this.physicalName(logicalId);
    if (attr === 'QueueUrl') return this.queueUrl(logicalId);
    if (attr === 'KeyId') return this.physicalName(logicalId);
    if (attr === 'ApiEndpoint')
      return `https://${this.physicalName(logicalId)}.execute-api.${this.env.region}.amazonaws.com`;
    // A table's stream, as DynamoDB names it: the table's ARN, /stream/, and the time it was enabled.
    if (attr === 'StreamArn') return `${this.arnOf(logicalId)}/stream/2026-01-01T00:00:00.000`;
    throw new Error(`Fn::GetAtt ${logicalId}.${attr} (${type}) is not known to the resolver`);
  }

  private sub(text: string, vars: Record<string, unknown>): string {
    return text.replace(/\$\{([^}!][^}]*)\}/g, (_, name: string) => {
      if (name in vars) return String(this.resolve(vars[name]));
      const [id, attr] = name.split('.');
      return attr ? this.getAtt(id!, attr) : this.ref(id!);
    });
  }

  resolve(v: unknown): unknown {
    if (Array.isArray(v)) return v.map((x) => this.resolve(x));
    if (!v || typeof v !== 'object') return v;
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1) {
      const [k] = keys as [string];
      const arg = o[k];
      if (k === 'Ref') return this.ref(String(arg));
      if (k === 'Fn::GetAtt') {
        const [id, attr] = typeof arg === 'string' ? arg.split('.') : (arg as string[]);
        return this.getAtt(id!, attr!);
      }
      if (k === 'Fn::Join') {
        const [sep, parts] = arg as [string, unknown[]];
        return (this.resolve(parts) as unknown[]).join(sep);
      }
      if (k === 'Fn::Sub') {
        const [text, vars] = typeof arg === 'string' ? [arg, {}] : (arg as [string, Record<string, unknown>]);
        return this.sub(text, vars);
      }
      if (k === 'Fn::Select') {
        const [i, list] = arg as [number, unknown];
        return (this.resolve(list) as unknown[])[Number(i)];
      }
      if (k === 'Fn::Split') {
        const [sep, s] = arg as [string, unknown];
        return String(this.resolve(s)).split(sep);
      }
      if (k.startsWith('Fn::')) throw new Error(`${k} is not known to the resolver`);
    }
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, this.resolve(x)]));
  }
}
