import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ControlPlane } from '../../../local/control-plane';
import { reconcileUntil, testControlPlane } from '../../helpers/control-plane';
import { read } from './doc-commands';

/**
 * Every AWS CLI and kubectl command of docs/operations.md, taken from the document (its sh blocks and its inline
 * code) and run as written, through bash and the real `aws` CLI, against a local control plane that has
 * provisioned the catalog's node groups: each must succeed and show what the runbook reads it for. A command
 * of a service the local control plane does not run (CloudFormation, Lambda's configuration, Scheduler, Logs
 * Insights, SQS, the kubeconfig of a real cluster) is listed below with the reason; a new command in the
 * document that is in neither list fails the test, so the runbooks cannot drift from what can be tried.
 */

const run = promisify(execFile);
const hasCli = spawnSync('aws', ['--version']).status === 0;

/** `service operation` of the commands a deployed stage alone can answer, with why. */
const DEPLOY_ONLY: Record<string, string> = {
  'sts get-caller-identity': 'checks your AWS credentials; the local control plane takes any',
  'cloudformation describe-stacks':
    'reads the deployed stack; locally there is no stack (the test sets what it gives)',
  'cloudformation describe-stack-resources': 'reads the deployed stack; locally there is no stack',
  'lambda get-function': "reads the deployed function's configuration; the local Lambda serves Invoke only",
  'lambda get-function-configuration':
    "reads the deployed function's configuration; the local Lambda serves Invoke only",
  'scheduler get-schedule': 'locally the schedule runs in process (docs/local.md)',
  'lambda list-event-source-mappings':
    "the admitter's mapping; locally the stream is read in process (local/stream-source.ts)",
  'logs start-query': 'Logs Insights: locally the function log is the terminal',
  'logs get-query-results': 'Logs Insights: locally the function log is the terminal',
  'sqs get-queue-attributes': "the stack's on-failure queue; locally failed events are kept in process",
  'sqs receive-message': "the stack's on-failure queue; locally failed events are kept in process",
  'sqs delete-message': "the stack's on-failure queue; locally failed events are kept in process",
  'sqs purge-queue': "the stack's on-failure queue; locally failed events are kept in process",
  'eks update-kubeconfig': 'writes a kubeconfig for a real cluster; locally it is .llmcap/kubeconfig',
  'ec2 describe-network-interfaces':
    'the simulator has no VPC; a DELETE_FAILED group is simulated by a fault',
  'eks delete-nodegroup': 'a repair of a real cluster; the simulator serves it (test/integration/cloud-sim)',
  'eks tag-resource': 'a repair of a real cluster; the simulator serves it (test/integration/cloud-sim)',
  'cloudwatch delete-alarms': 'shown with "..." for the names of alarms left behind',
  'dynamodb delete-item': 'a repair; get-item before it shows the item is reachable',
  'kubectl apply': 'a first-deploy step against a real cluster; npm start applies the same file itself',
  'service-quotas request-service-quota-increase':
    "asks AWS support for more; locally a quota is set with the simulator's PATCH /_sim/quotas (cloud-sim.md)",
  'service-quotas list-requested-service-quota-change-history':
    'follows a request to AWS support; the simulator grants none, so it has none to list',
};

/** The AWS CLI and kubectl commands of the document, continuation lines joined, in order. */
function commands(md: string): string[] {
  const out: string[] = [];
  for (const block of md.matchAll(/^```(?:sh|bash|shell)\n([\s\S]*?)^```$/gm)) {
    for (const raw of block[1]!.replace(/\\\n\s*/g, ' ').split('\n')) {
      const line = raw.trim().replace(/^sleep \d+; /, '');
      if (/^([A-Z_]+=\$\()?(aws|kubectl) /.test(line)) out.push(line);
    }
  }
  // Inline code that is a whole command, as in "`aws cloudwatch describe-alarm-history ...` shows ...".
  // A bare name in prose ("check the group with `aws eks describe-nodegroup`") refers to a command shown in full.
  for (const m of md.replace(/```[\s\S]*?```/g, '').matchAll(/`((?:aws|kubectl) [^`]+)`/g))
    if (/ --?[a-z]/.test(m[1]!)) out.push(m[1]!.replace(/\s*\n\s*/g, ' '));
  return out;
}

const opOf = (cmd: string) => {
  const m = /(?:^|\$\()(aws|kubectl) ([a-z0-9-]+)(?: ([a-z0-9-]+))?/.exec(cmd)!;
  return m[1] === 'kubectl' ? `kubectl ${m[2]}` : `${m[2]} ${m[3]}`;
};

(hasCli ? describe : describe.skip)('the AWS CLI and kubectl commands of docs/operations.md', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await testControlPlane('ops-runbooks');
    // The catalog's two node groups up, so that each runbook has something to show.
    await reconcileUntil(
      cp,
      async () => cp.sim.admin.state().nodegroups.filter((ng) => ng.status === 'ACTIVE').length >= 2,
    );
  }, 120_000);
  afterAll(() => cp?.stop());

  it('are all either run below or listed as needing a deployed stage', () => {
    const all = commands(read('docs/operations.md'));
    expect(all.length).toBeGreaterThan(20);
    const unknown = all.filter((c) => !(opOf(c) in DEPLOY_ONLY) && !(opOf(c) in CHECKS));
    expect(unknown).toEqual([]);
  });

  /** What each command served locally must show, from its output (JSON unless the command says otherwise). */
  const CHECKS: Record<string, (out: string) => void> = {
    // The stage config's address, subscribed by the stack and not confirmed yet: what step 7 looks for.
    'sns list-subscriptions-by-topic': (out) =>
      expect(out).toMatch(/email\s*\|\s*oncall@example\.com\s*\|\s*PendingConfirmation/),
    'sns subscribe': (out) => expect(out).toMatch(/SubscriptionArn/),
    'cloudwatch set-alarm-state': (out) => expect(out).toBe(''),
    'cloudwatch describe-alarm-history': (out) =>
      expect(JSON.parse(out).AlarmHistoryItems[0].HistorySummary).toMatch(
        /^Successfully executed action arn:aws:sns:/,
      ),
    'cloudwatch get-metric-statistics': (out) => {
      const points = JSON.parse(out).Datapoints;
      expect(points.length).toBeGreaterThan(0);
      expect(points.reduce((n: number, p: { Sum: number }) => n + p.Sum, 0)).toBeGreaterThanOrEqual(1);
    },
    'eks describe-nodegroup': (out) => expect(JSON.parse(out)).toMatchObject({ status: 'ACTIVE' }),
    // The G and VT instances' vCPU quota the runbook reads before a GPU compute: the simulator's default.
    'service-quotas get-service-quota': (out) =>
      expect(JSON.parse(out).Quota).toMatchObject({ QuotaCode: 'L-DB2E81BA', Value: expect.any(Number) }),
    'autoscaling describe-scaling-activities': (out) =>
      expect(JSON.parse(out).Activities[0]).toMatchObject({
        Description: expect.stringMatching(/^Launching a new EC2 instance: i-/),
        StatusCode: 'Successful',
      }),
    'stepfunctions list-executions': (out) => expect(out).not.toMatch(/error/i),
    // The compute's nodes, as ReplicasUnscheduled's runbook lists them: the built-in's node is there.
    'kubectl get': (out) =>
      expect(JSON.parse(out).items[0].metadata.labels).toMatchObject({ 'llmcap.dev/compute': 'gpu-l4-1x' }),
    'stepfunctions describe-execution': (out) =>
      expect(JSON.parse(out)).toMatchObject({ status: 'SUCCEEDED' }),
    'dynamodb get-item': () => undefined,
  };

  it('run as written against the local control plane, each showing what its runbook reads', async () => {
    const stage = 'local';
    const region = cp.sim.region;
    // kubectl reaches the simulated cluster as an operator's would reach EKS (eks update-kubeconfig).
    const kubeconfig = join(mkdtempSync(join(tmpdir(), 'ops-runbooks-')), 'kubeconfig');
    cp.sim.kubernetes!.writeKubeconfig(kubeconfig);
    const account = cp.sfn.stateMachineArns.provision.split(':')[4]!;
    const cluster = cp.sim.clusterName;
    const gpu = cp.sim.admin.state().nodegroups.find((ng) => ng.name.endsWith('gpu-l4-1x'))!;
    const env = {
      ...process.env,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_DEFAULT_REGION: region,
      AWS_PAGER: '',
      AWS_ENDPOINT_URL_CLOUDWATCH: cp.sim.endpoint,
      AWS_ENDPOINT_URL_SNS: cp.sim.endpoint,
      AWS_ENDPOINT_URL_EKS: cp.sim.endpoint,
      AWS_ENDPOINT_URL_AUTO_SCALING: cp.sim.endpoint,
      AWS_ENDPOINT_URL_SFN: cp.sfn.endpoint,
      AWS_ENDPOINT_URL_DYNAMODB: cp.dynamodbEndpoint,
      // The runbooks' placeholders, and what their CloudFormation lookups give for the local stage.
      STAGE: stage,
      CLUSTER: cluster,
      REGION: region,
      ACCOUNT: account,
      TOPIC: cp.alarmTopicArn,
      FN: cp.reconcileFunction,
      ADMITTER: cp.admitterFunction,
      TABLE: cp.table,
      SM: `arn:aws:states:${region}:${account}:stateMachine:llmcap-${stage}-provision-nodegroup`,
      USER: 'runbook-test',
      KUBECONFIG: kubeconfig,
    };
    expect(env.SM).toBe(cp.sfn.stateMachineArns.provision);
    // What the stack does for the stage config's onCall.emails.
    await runAws(env, [
      'sns',
      'subscribe',
      '--topic-arn',
      cp.alarmTopicArn,
      '--protocol',
      'email',
      '--notification-endpoint',
      'oncall@example.com',
    ]);
    const provisioned = await runAws(env, [
      'stepfunctions',
      'list-executions',
      '--state-machine-arn',
      cp.sfn.stateMachineArns.provision,
      '--query',
      'executions[0].name',
      '--output',
      'text',
    ]);
    const fill = (cmd: string) =>
      cmd
        .replaceAll('llmcap-<stage>', `llmcap-${stage}`)
        .replaceAll('<stage>', stage)
        .replaceAll('<asg from above>', gpu.autoScalingGroup.name)
        .replaceAll('<compute>', 'gpu-l4-1x')
        .replaceAll('<name>', provisioned.trim())
        .replace(/\$\{?REGION\}?/g, region)
        .replace(/^[A-Z_]+=\$\((.*)\)$/, '$1');
    const failed: string[] = [];
    const ran: string[] = [];
    for (const shown of commands(read('docs/operations.md'))) {
      const check = CHECKS[opOf(shown)];
      if (!check) continue;
      // JSON output unless the command asks for another, so that the checks read it.
      const cmd = /--output /.test(shown) ? fill(shown) : `${fill(shown)} --output json`;
      // Asynchronously: the simulators answering it run in this process.
      const r = await new Promise<{ status: number; stdout: string; stderr: string }>((resolve) =>
        execFile('bash', ['-c', cmd], { env }, (err, stdout, stderr) =>
          resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
      ran.push(opOf(shown));
      try {
        if (r.status !== 0) throw new Error(`exit ${r.status}: ${r.stderr.trim()}`);
        check(r.stdout.trim());
      } catch (e) {
        failed.push(`${shown}\n  ${(e as Error).message.split('\n').slice(0, 6).join('\n  ')}`);
      }
    }
    expect(failed).toEqual([]);
    expect(new Set(ran)).toEqual(new Set(Object.keys(CHECKS)));
  }, 180_000);
});

async function runAws(env: NodeJS.ProcessEnv, args: string[]): Promise<string> {
  return (await run('aws', args, { env })).stdout;
}
