import { join } from 'node:path';
import { Duration, Validations } from 'aws-cdk-lib';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, LoggingFormat, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, type NodejsFunctionProps, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { API_TIMEOUT_SECONDS } from '../../lambdas/shared/config';
import { LAMBDA_EXTERNAL_MODULES } from './bundling';
import { starResourceAcks } from './nag';
import { dropRedundantRoleDependsOn } from './role-dependency';

/**
 * Every llmcap Lambda gets the same defaults here, in one place: Node 24 on arm64, JSON logs with a retention,
 * X-Ray, minified bundles built by the local esbuild (never Docker), and the config files inlined as JSON.
 */
export interface LlmcapFunctionProps {
  entry: string;
  description: string;
  environment: Record<string, string>;
  /** JSON strings inlined at bundle time, e.g. the validated config files. */
  inline?: Record<string, string>;
  memorySize?: number;
  timeout?: Duration;
  logRetention: RetentionDays;
  /**
   * Actions the function calls that can only be granted on Resource "*" (each needs its reason in
   * STAR_RESOURCE_ACTIONS); granted here so that the cdk-nag acknowledgement names exactly what is granted.
   */
  anyResourceActions?: string[];
  extra?: Partial<NodejsFunctionProps>;
}

/** What CDK grants on "*" for active tracing. */
const XRAY_ACTIONS = ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'];

export const ROOT = join(__dirname, '..', '..');

export class LlmcapFunction extends NodejsFunction {
  constructor(scope: Construct, id: string, props: LlmcapFunctionProps) {
    const logGroup = new LogGroup(scope, `${id}Logs`, { retention: props.logRetention });
    // A role of its own rather than CDK's default with AWSLambdaBasicExecutionRole, which lets a function
    // create and write every log group of the account: this one writes its own log group's streams only.
    const role = new Role(scope, `${id}ServiceRole`, {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `${props.description}: the function's execution role`,
    });
    logGroup.grant(role, 'logs:CreateLogStream', 'logs:PutLogEvents');
    const timeout = props.timeout ?? Duration.seconds(API_TIMEOUT_SECONDS);
    const define: Record<string, string> = {};
    for (const [k, v] of Object.entries(props.inline ?? {})) define[`process.env.${k}`] = JSON.stringify(v);
    super(scope, id, {
      entry: props.entry,
      handler: 'handler',
      description: props.description,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 512,
      timeout,
      tracing: Tracing.ACTIVE,
      loggingFormat: LoggingFormat.JSON,
      logGroup,
      role,
      projectRoot: ROOT,
      depsLockFilePath: join(ROOT, 'package-lock.json'),
      environment: {
        NODE_OPTIONS: '--enable-source-maps',
        POWERTOOLS_SERVICE_NAME: 'llmcap',
        POWERTOOLS_METRICS_NAMESPACE: 'llmcap',
        ...props.environment,
        // The timeout Lambda enforces, for code that must know how long an invocation can last (config.ts).
        LLMCAP_FUNCTION_TIMEOUT_SECONDS: String(timeout.toSeconds()),
      },
      bundling: {
        minify: true,
        sourceMap: true,
        target: 'node24',
        format: OutputFormat.CJS,
        externalModules: LAMBDA_EXTERNAL_MODULES,
        define,
        forceDockerBundling: false,
      },
      ...props.extra,
    });
    const any = props.anyResourceActions ?? [];
    if (any.length) this.addToRolePolicy(new PolicyStatement({ actions: any, resources: ['*'] }));
    Validations.of(role.node.findChild('DefaultPolicy')).acknowledge(
      ...starResourceAcks([...XRAY_ACTIONS, ...any]),
    );
    dropRedundantRoleDependsOn(this, role);
  }
}
