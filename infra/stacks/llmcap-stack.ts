import { join } from 'node:path';
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, HttpMethod, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AttributeType, Billing, TableEncryptionV2, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { inlinedConfig } from '../../lambdas/shared/builtin-config';
import { LlmcapFunction, ROOT } from '../constructs/llmcap-function';
import type { StageConfig } from '../stage-config';

export interface LlmcapStackProps extends StackProps {
  config: StageConfig;
}

function retention(days: number): RetentionDays {
  const known = Object.values(RetentionDays).filter((v): v is RetentionDays => typeof v === 'number');
  return known.find((d) => d >= days) ?? RetentionDays.TEN_YEARS;
}

/**
 * One stack per stage: the table, the HTTP API with IAM auth and its Lambda. Everything a stage differs in
 * comes from the zod-checked stage config.
 */
export class LlmcapStack extends Stack {
  readonly table: TableV2;
  readonly api: HttpApi;
  readonly apiFunction: LlmcapFunction;

  constructor(scope: Construct, id: string, props: LlmcapStackProps) {
    super(scope, id, props);
    const cfg = props.config;
    const logRetention = retention(cfg.logRetentionDays);

    this.table = new TableV2(this, 'Table', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      sortKey: { name: 'sk', type: AttributeType.STRING },
      billing: Billing.onDemand(),
      encryption: TableEncryptionV2.awsManagedKey(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      timeToLiveAttribute: 'ttl',
      // The table holds every decision llmcap made: it outlives the stack.
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.apiFunction = new LlmcapFunction(this, 'ApiFunction', {
      entry: join(ROOT, 'lambdas', 'api', 'handler.ts'),
      description: 'llmcap HTTP API',
      logRetention,
      environment: {
        LLMCAP_STAGE: cfg.stage,
        LLMCAP_TABLE: this.table.tableName,
        LLMCAP_ADMINS: cfg.admins.join(','),
        LLMCAP_CLUSTER: cfg.clusterName,
        LLMCAP_SUBNETS: cfg.subnetIds.join(','),
        LLMCAP_COOLDOWN_SECONDS: String(cfg.scaleDownCooldown * 60),
      },
      // Validated here, so a bad config file fails `cdk synth` instead of a Lambda at run time.
      inline: inlinedConfig(),
    });
    this.table.grantReadWriteData(this.apiFunction);

    const accessLogs = new LogGroup(this, 'ApiAccessLogs', { retention: logRetention });
    this.api = new HttpApi(this, 'HttpApi', {
      description: `llmcap ${cfg.stage} control plane API`,
      createDefaultStage: false,
      defaultAuthorizer: new HttpIamAuthorizer(),
    });
    this.api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: cfg.api.throttleRatePerSecond, burstLimit: cfg.api.throttleBurst },
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            principal: '$context.identity.userArn',
            method: '$context.httpMethod',
            path: '$context.path',
            status: '$context.status',
            latencyMs: '$context.responseLatency',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });
    const integration = new HttpLambdaIntegration('ApiIntegration', this.apiFunction, {
      timeout: Duration.seconds(29),
    });
    this.api.addRoutes({ path: '/{proxy+}', methods: [HttpMethod.ANY], integration });

    new CfnOutput(this, 'ApiUrl', {
      value: this.api.apiEndpoint,
      description: 'llmcap API (LLMCAP_ENDPOINT)',
    });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });

    Validations.of(this.apiFunction.role!).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      reason: 'The AWS managed basic execution role only lets the function write its own logs.',
    });
  }
}
