import type { CfnElement } from 'aws-cdk-lib';
import { ACCESS_LOG_FORMAT } from '../../infra/stacks/llmcap-stack';
import { loadStageConfig, parseStageConfig } from '../../infra/stage-config';
import { API_TIMEOUT_SECONDS, loadConfig } from '../../lambdas/shared/config';
import { devStack, type Synthesized, synthStage } from '../helpers/cfn';
import { decide, rolesOf } from '../helpers/iam';

/**
 * The limits and logs of a stage as CloudFormation creates them: API Gateway's throttle per route (writes
 * tighter than reads), its access log line, the retention of every log group, each from the stage config; the
 * function timeout the Lambda code reads; and Lambda roles that write their own logs only.
 */

const dev = devStack();
const custom = synthStage(
  parseStageConfig(
    {
      ...(JSON.parse(JSON.stringify(loadStageConfig('dev'))) as object),
      api: { reads: { ratePerSecond: 40, burst: 80 }, writes: { ratePerSecond: 4, burst: 8 } },
      logRetentionDays: 30,
    },
    'test',
  ),
);

const ofType = (s: Synthesized, type: string) =>
  Object.entries(s.template.Resources).filter(([, r]) => r.Type === type);
const stageOf = (s: Synthesized) => {
  const stages = ofType(s, 'AWS::ApiGatewayV2::Stage');
  expect(stages).toHaveLength(1);
  return stages[0]!;
};
const WRITES = ['POST', 'PUT', 'PATCH', 'DELETE'];

describe('API Gateway throttling', () => {
  it('throttles writes per route tighter than reads, with the stage config figures', () => {
    const [, stage] = stageOf(custom);
    expect(stage.Properties!.DefaultRouteSettings).toEqual({
      ThrottlingRateLimit: 40,
      ThrottlingBurstLimit: 80,
    });
    expect(stage.Properties!.RouteSettings).toEqual(
      Object.fromEntries(
        WRITES.map((m) => [`${m} /{proxy+}`, { ThrottlingRateLimit: 4, ThrottlingBurstLimit: 8 }]),
      ),
    );
  });

  it('names in the route settings routes the API has, created before the stage', () => {
    const [, stage] = stageOf(custom);
    const routes = ofType(custom, 'AWS::ApiGatewayV2::Route');
    const keys = new Map(routes.map(([id, r]) => [r.Properties!.RouteKey as string, id]));
    expect([...keys.keys()].sort()).toEqual(['ANY /{proxy+}', ...WRITES.map((m) => `${m} /{proxy+}`)].sort());
    for (const key of Object.keys(stage.Properties!.RouteSettings)) {
      expect(keys.has(key)).toBe(true);
      expect(stage.DependsOn).toContain(keys.get(key));
    }
  });

  it('defaults to writes tighter than reads when the stage config says nothing', () => {
    const [, stage] = stageOf(dev);
    const reads = stage.Properties!.DefaultRouteSettings;
    for (const s of Object.values<any>(stage.Properties!.RouteSettings)) {
      expect(s.ThrottlingRateLimit).toBeLessThan(reads.ThrottlingRateLimit);
      expect(s.ThrottlingBurstLimit).toBeLessThan(reads.ThrottlingBurstLimit);
    }
  });
});

/** HTTP API's access log variables that llmcap logs (API Gateway developer guide, "Customize HTTP API access logs"). */
const HTTP_API_VARIABLES = new Set([
  '$context.requestId',
  '$context.requestTime',
  '$context.identity.sourceIp',
  '$context.identity.userAgent',
  '$context.identity.userArn',
  '$context.identity.accountId',
  '$context.routeKey',
  '$context.httpMethod',
  '$context.path',
  '$context.status',
  '$context.responseLength',
  '$context.responseLatency',
  '$context.error.messageString',
  '$context.error.responseType',
  '$context.authorizer.error',
  '$context.integrationStatus',
  '$context.integrationErrorMessage',
]);

describe('the access log', () => {
  const format = stageOf(dev)[1].Properties!.AccessLogSettings.Format as string;
  // What API Gateway writes for a request refused with a message that has a quote in it.
  const line = format.replace(/\$context\.[\w.]+/g, (v) =>
    v === '$context.error.messageString' ? JSON.stringify('Missing "Authentication" Token') : `<${v}>`,
  );

  it('is one JSON object per request, even when the error message has quotes', () => {
    expect(() => JSON.parse(line)).not.toThrow();
  });

  it('names the source IP, the principal, the route, the status and the error', () => {
    expect(JSON.parse(line)).toMatchObject({
      sourceIp: '<$context.identity.sourceIp>',
      principal: '<$context.identity.userArn>',
      routeKey: '<$context.routeKey>',
      path: '<$context.path>',
      status: '<$context.status>',
      error: 'Missing "Authentication" Token',
      integrationError: '<$context.integrationErrorMessage>',
    });
  });

  it('uses only variables HTTP APIs have (REST API ones would log as "-")', () => {
    const used = [...format.matchAll(/\$context\.[\w.]+/g)].map((m) => m[0]);
    expect(used.filter((v) => !HTTP_API_VARIABLES.has(v))).toEqual([]);
    expect(Object.values(ACCESS_LOG_FORMAT).sort()).toEqual([...new Set(used)].sort());
  });
});

describe('log retention', () => {
  it('keeps every log group for the stage config days: functions, access logs and state machines', () => {
    const groups = ofType(custom, 'AWS::Logs::LogGroup');
    expect(groups.length).toBeGreaterThanOrEqual(4);
    expect(groups.filter(([, g]) => g.Properties!.RetentionInDays !== 30).map(([id]) => id)).toEqual([]);
    expect(ofType(custom, 'Custom::LogRetention')).toEqual([]);
  });

  it('sends every function and state machine to a log group of the stack, none to one Lambda would create', () => {
    const groups = new Set(ofType(custom, 'AWS::Logs::LogGroup').map(([id]) => id));
    const ref = (v: any) => v?.Ref ?? v?.['Fn::GetAtt']?.[0];
    for (const [id, fn] of ofType(custom, 'AWS::Lambda::Function'))
      expect([id, groups.has(ref(fn.Properties!.LoggingConfig?.LogGroup))]).toEqual([id, true]);
    for (const [id, sm] of ofType(custom, 'AWS::StepFunctions::StateMachine')) {
      const dest =
        sm.Properties!.LoggingConfiguration?.Destinations?.[0]?.CloudWatchLogsLogGroup?.LogGroupArn;
      expect([id, groups.has(ref(dest))]).toEqual([id, true]);
    }
  });

  it('refuses a retention CloudWatch Logs does not offer, naming the ones it does', () => {
    const base = JSON.parse(JSON.stringify(loadStageConfig('dev'))) as object;
    expect(() => parseStageConfig({ ...base, logRetentionDays: 100 }, 'x.json')).toThrow(
      /logRetentionDays: CloudWatch Logs keeps logs for one of 1, 3, .*, 90, 120, .*, 3653 days/,
    );
  });
});

describe('the Lambda functions', () => {
  const { stack, resolver } = dev;
  const fns = [stack.apiFunction, stack.reconcileFunction];
  const cfnOf = (fn: (typeof fns)[number]) =>
    resolver.resource(stack.getLogicalId(fn.node.defaultChild as CfnElement)).Properties!;

  it('are told their own timeout, the one Lambda enforces, and read it as their configuration', () => {
    for (const fn of fns) {
      const p = cfnOf(fn);
      const env = (resolver.resolve(p.Environment) as { Variables: Record<string, string> }).Variables;
      expect(Number(env.LLMCAP_FUNCTION_TIMEOUT_SECONDS)).toBe(p.Timeout);
      expect(loadConfig(env).functionTimeoutSeconds).toBe(p.Timeout);
    }
    expect(cfnOf(stack.apiFunction).Timeout).toBe(API_TIMEOUT_SECONDS);
    const [, integration] = ofType(dev, 'AWS::ApiGatewayV2::Integration')[0]!;
    expect(integration.Properties!.TimeoutInMillis).toBeGreaterThanOrEqual(API_TIMEOUT_SECONDS * 1000);
  });

  it('carry no AWS managed policy, and write their own log group only', async () => {
    const roles = rolesOf(resolver);
    const groupName = (fn: (typeof fns)[number]) =>
      resolver.resolve(cfnOf(fn).LoggingConfig.LogGroup) as string;
    const stream = (group: string) =>
      `arn:aws:logs:${dev.config.region}:${dev.config.account}:log-group:${group}:log-stream:2026/01/01/[$LATEST]0123456789abcdef`;
    const [api, reconcile] = [stack.apiFunction, stack.reconcileFunction];
    const pairs: [typeof api, typeof api][] = [
      [api, reconcile],
      [reconcile, api],
    ];
    for (const [fn, other] of pairs) {
      const role = roles.find((r) => r.arn === resolver.resolve(cfnOf(fn).Role))!;
      expect(resolver.resource(role.logicalId).Properties!.ManagedPolicyArns).toBeUndefined();
      const put = (group: string) =>
        decide(
          { principal: role, action: 'logs:PutLogEvents', resource: stream(group) },
          { account: dev.config.account, resourcePolicies: new Map() },
        );
      expect(await put(groupName(fn))).toBe('Allowed');
      expect(await put(groupName(other))).not.toBe('Allowed');
      expect(await put('/aws/lambda/someone-else')).not.toBe('Allowed');
    }
  });
});
