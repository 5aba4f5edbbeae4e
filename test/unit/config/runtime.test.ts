import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { loadConfig, RuntimeConfigSchema } from '../../../lambdas/shared/config';

/** Every LLMCAP_* variable the Lambda code reads is checked once, in lambdas/shared/config.ts. */

const ROOT = join(__dirname, '..', '..', '..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('the runtime configuration', () => {
  it('is the only reader of process.env.LLMCAP_* in lambdas/ (the three inlined config files aside)', () => {
    const raw = sources(join(ROOT, 'lambdas')).flatMap((p) =>
      [...readFileSync(p, 'utf8').matchAll(/process\.env\.(LLMCAP_[A-Z_]+)/g)].map(
        (m) => `${relative(ROOT, p)}: ${m[1]}`,
      ),
    );
    expect(raw).toEqual([
      'lambdas/shared/builtin-config.ts: LLMCAP_CONFIG_COMPUTES',
      'lambdas/shared/builtin-config.ts: LLMCAP_CONFIG_CATALOG',
      'lambdas/shared/builtin-config.ts: LLMCAP_CONFIG_ENGINES',
    ]);
  });

  it('names every LLMCAP_* variable the stack sets on a Lambda', () => {
    const stack = readFileSync(join(ROOT, 'infra', 'stacks', 'llmcap-stack.ts'), 'utf8');
    const set = new Set([...stack.matchAll(/\b(LLMCAP_[A-Z_]+)\b/g)].map((m) => m[1]!));
    set.delete('LLMCAP_ENDPOINT'); // a stack output for the CLI, not a Lambda's variable
    const known = Object.keys(RuntimeConfigSchema.shape);
    expect([...set].filter((v) => !known.includes(v))).toEqual([]);
  });

  it('reads the workflows, the topic and the endpoints, and refuses what is not one', () => {
    const arn = (kind: string) => `arn:aws:states:eu-west-1:123456789012:stateMachine:llmcap-prod-${kind}`;
    const c = loadConfig({
      LLMCAP_PROVISION_SM_ARN: arn('provision'),
      LLMCAP_SCALE_SM_ARN: arn('scale'),
      LLMCAP_ALARM_TOPIC_ARN: 'arn:aws:sns:eu-west-1:123456789012:llmcap-prod-OnCall',
      LLMCAP_SFN_ENDPOINT: '',
      LLMCAP_EKS_ENDPOINT: 'http://127.0.0.1:4510',
      AWS_REGION: 'eu-west-1',
    });
    expect(c.stateMachines).toEqual({ provision: arn('provision'), scale: arn('scale') });
    expect(c.alarmTopicArn).toBe('arn:aws:sns:eu-west-1:123456789012:llmcap-prod-OnCall');
    expect(c.endpoints).toEqual({ eks: 'http://127.0.0.1:4510' });
    expect(c.region).toBe('eu-west-1');
    expect(() =>
      loadConfig({ LLMCAP_DELETE_SM_ARN: 'llmcap-prod-delete', LLMCAP_DYNAMODB_ENDPOINT: 'localhost:8000' }),
    ).toThrow(
      /LLMCAP_DELETE_SM_ARN: an ARN such as arn:aws:states:.*; LLMCAP_DYNAMODB_ENDPOINT: an http\(s\) URL/,
    );
  });
});
