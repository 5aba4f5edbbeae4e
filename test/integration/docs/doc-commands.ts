import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CloudWatchClient, PutMetricAlarmCommand } from '@aws-sdk/client-cloudwatch';
import type { ControlPlane } from '../../../local/control-plane';
import { testControlPlane } from '../../helpers/control-plane';
import { llmcap, stubServer } from '../cli/run';

/**
 * Every `llmcap` command in the sh blocks of README.md and docs/local.md, run in the order shown against a
 * started local control plane (one per document, as a reader runs them in one `npm start`), and each must
 * succeed. One test file per document (commands.test.ts, local-commands.test.ts), so that the two run side by
 * side. A command that fails as shown is a doc that lies: fix the doc or the flow, never this list.
 * `--stack llmcap-prod` runs against a stand-in for a deployed stage: CloudFormation answering with the
 * control plane's URL as ApiUrl, and the stage's alarm in the simulator's CloudWatch.
 */

const ROOT = join(__dirname, '..', '..', '..');

interface DocCommand {
  /** The line as shown, for the failure message. */
  shown: string;
  args: string[];
  /** A heredoc's body, given on stdin. */
  input?: string;
}

/** Shell words, quotes removed; a `#` that starts a word ends the line. */
export function words(line: string): string[] {
  const out: string[] = [];
  let cur: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      if (end < 0) throw new Error(`unclosed quote in: ${line}`);
      cur = (cur ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (/\s/.test(c)) {
      if (cur !== undefined) out.push(cur);
      cur = undefined;
    } else if (c === '#' && cur === undefined) break;
    else cur = (cur ?? '') + c;
  }
  if (cur !== undefined) out.push(cur);
  return out;
}

/** The llmcap commands of a document's sh blocks; any other form of an llmcap line is an error here. */
export function docCommands(md: string): DocCommand[] {
  const out: DocCommand[] = [];
  for (const block of md.matchAll(/^```(?:sh|bash|shell)\n([\s\S]*?)^```$/gm)) {
    const lines = block[1]!.replace(/\\\n\s*/g, ' ').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!.trim();
      // The CLI, not llmcap/v1 or a header named x-llmcap-...
      if (!/(^|[\s(|;&])llmcap(\s|$)/.test(line) || line.startsWith('#')) continue;
      let m = /^npx llmcap (.*)$/.exec(line);
      if (m) {
        out.push({ shown: line, args: words(m[1]!) });
        continue;
      }
      m = /^source <\(npx llmcap ([^)]*)\)$/.exec(line);
      if (m) {
        out.push({ shown: line, args: words(m[1]!) });
        continue;
      }
      m = /^cat <<'(\w+)' \| npx llmcap (.*)$/.exec(line);
      if (m) {
        const end = lines.indexOf(m[1]!, i + 1);
        if (end < 0) throw new Error(`heredoc not closed: ${line}`);
        out.push({ shown: line, args: words(m[2]!), input: `${lines.slice(i + 1, end).join('\n')}\n` });
        i = end;
        continue;
      }
      throw new Error(`a doc line this test cannot run (teach docCommands its form): ${line}`);
    }
  }
  return out;
}

export const read = (f: string) => readFileSync(join(ROOT, f), 'utf8');

/** README's team-ml.yaml: the yaml block after "`team-ml.yaml` above:". */
function teamMlYaml(readme: string): string {
  const m = /`team-ml\.yaml` above:\n\n```yaml\n([\s\S]*?)^```$/m.exec(readme);
  if (!m) throw new Error('README no longer shows team-ml.yaml after "`team-ml.yaml` above:"');
  return m[1]!;
}

/** A deployed stage for --stack llmcap-prod: DescribeStacks gives the control plane's URL as its ApiUrl. */
async function deployedStage(cp: ControlPlane) {
  const cfn = await stubServer(() => ({
    status: 200,
    type: 'text/xml',
    raw: `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks><member><StackName>llmcap-prod</StackName><StackStatus>CREATE_COMPLETE</StackStatus><CreationTime>2026-01-01T00:00:00Z</CreationTime><Outputs><member><OutputKey>ApiUrl</OutputKey><OutputValue>${cp.apiUrl}/</OutputValue></member></Outputs></member></Stacks></DescribeStacksResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></DescribeStacksResponse>`,
  }));
  const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };
  const cw = new CloudWatchClient({ region: 'eu-west-1', endpoint: cp.sim.endpoint, credentials });
  await cw.send(
    new PutMetricAlarmCommand({
      AlarmName: 'llmcap-prod-ReconcileErrors',
      Namespace: 'llmcap',
      MetricName: 'ReconcileErrors',
      Dimensions: [{ Name: 'Stage', Value: 'prod' }],
      Statistic: 'Sum',
      Period: 60,
      EvaluationPeriods: 1,
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    }),
  );
  cw.destroy();
  return {
    env: {
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_ENDPOINT_URL_CLOUDFORMATION: cfn.url,
      AWS_ENDPOINT_URL_CLOUDWATCH: cp.sim.endpoint,
    },
    close: () => cfn.close(),
  };
}

/** The test of one document's commands: its own control plane, the commands in order. */
export function describeDocCommands(doc: string): void {
  describe(`every llmcap command in ${doc}`, () => {
    let cp: ControlPlane;
    let cwd: string;
    beforeAll(async () => {
      cp = await testControlPlane('doc-commands');
      // A checkout's working directory: examples/ as in the repository, and the files the document shows.
      cwd = mkdtempSync(join(tmpdir(), 'llmcap-doc-'));
      symlinkSync(join(ROOT, 'examples'), join(cwd, 'examples'));
      writeFileSync(join(cwd, 'team-ml.yaml'), teamMlYaml(read('README.md')));
    });
    afterAll(async () => {
      await cp.stop();
      rmSync(cwd, { recursive: true, force: true });
    });

    it('succeeds as shown, in order', async () => {
      const stage = await deployedStage(cp);
      const failed: string[] = [];
      try {
        for (const c of docCommands(read(doc))) {
          const r = await llmcap(c.args, {
            cwd,
            input: c.input,
            env: {
              LLMCAP_ENDPOINT: c.args.includes('--stack') ? undefined : cp.apiUrl,
              LLMCAP_SIM_PORT: new URL(cp.sim.endpoint).port,
              ...(c.args.includes('--stack') ? stage.env : {}),
            },
          });
          if (r.code !== 0) failed.push(`${c.shown}\n  exit ${r.code}: ${r.stderr.trim()}`);
        }
      } finally {
        await stage.close();
      }
      expect(failed).toEqual([]);
    }, 180_000);
  });
}
