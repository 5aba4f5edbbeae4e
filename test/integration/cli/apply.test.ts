import { randomUUID } from 'node:crypto';
import { type ControlPlane, startControlPlane } from '../../../local/control-plane';
import { inProcess } from './run';

/**
 * `llmcap get KIND -o yaml | llmcap apply -f -` against the local control plane (issue 18 §1, §2): every kind
 * reports unchanged and writes nothing, a stale manifest is refused, a declared model names the file, and
 * --dry-run decides on the server without writing.
 */

let cp: ControlPlane;
// The CLI's main() in this process: what is checked here is what the server answers a round trip, and the
// CLI as a process (exit codes, stdin, stdout) is test/integration/cli/control-plane.test.ts's.
const run = (args: string[], input?: string) => inProcess(args, { endpoint: cp.apiUrl, input });

beforeAll(async () => {
  cp = await startControlPlane({
    port: 0,
    simPort: 0,
    reconcileSeconds: 0,
    dynamodbEndpoint: process.env.LLMCAP_DYNAMODB_ENDPOINT,
    table: `cli-apply-${randomUUID().slice(0, 8)}`,
  });
  const setup = [
    ['scope', 'create', 'org:rt'],
    ['scope', 'create', 'team:rt', '--parent', 'org:rt'],
    ['scope', 'members', 'team:rt', '--add', 'arn:aws:iam::000000000000:role/rt-lead=admin'],
    ['quota', 'set', 'team:rt', '--guarantee', 'gpus=2', '--limit', 'gpus=4'],
  ];
  for (const a of setup) expect((await run(a)).code).toBe(0);
});
afterAll(() => cp.stop());

describe('get -o yaml | apply -f -', () => {
  it.each(['computes', 'models', 'quotas', 'scopes'])(
    'reports every %s unchanged and writes nothing',
    async (kind) => {
      const y = await run(['get', kind, '-o', 'yaml']);
      expect(y.code).toBe(0);
      const a = await run(['apply', '-f', '-'], y.stdout);
      expect(a.stderr).toBe('');
      expect(a.code).toBe(0);
      const lines = a.stdout.trim().split('\n');
      expect(lines.length).toBeGreaterThan(0);
      for (const l of lines) expect(l).toMatch(/ unchanged$/);
      expect((await run(['get', kind, '-o', 'yaml'])).stdout).toBe(y.stdout);
    },
  );

  it('refuses a changed declared model with 409 naming config/catalog.yaml and the field', async () => {
    const y = await run(['get', 'model', 'qwen3-8b', '-o', 'yaml']);
    const edited = y.stdout.replace(/max: 4/, 'max: 3');
    expect(edited).not.toBe(y.stdout);
    const a = await run(['apply', '-f', '-'], edited);
    expect(a.code).toBe(2);
    expect(a.stderr).toContain('config/catalog.yaml');
    expect(a.stderr).toContain('spec.scaling.max');
  });

  it('refuses a quota edited from a stale read (409) and keeps the newer one', async () => {
    const stale = (await run(['get', 'quota', 'team:rt', '-o', 'yaml'])).stdout;
    expect((await run(['quota', 'set', 'team:rt', '--limit', 'gpus=6'])).code).toBe(0);
    const a = await run(['apply', '-f', '-'], stale.replace(/gpus: 2/, 'gpus: 3'));
    expect(a.code).toBe(2);
    expect(a.stderr).toMatch(/409|version/);
    const now = JSON.parse((await run(['get', 'quota', 'team:rt', '-o', 'json'])).stdout);
    expect(now.spec).toEqual({ guarantee: { gpus: 2 }, limit: { gpus: 6 } });
  });

  it('removes the members a scope manifest no longer lists', async () => {
    const y = (await run(['get', 'scope', 'team:rt', '-o', 'yaml'])).stdout;
    const edited = y.replace(/members:\n(\s+.*\n)+?(?=\S)/, 'members: {}\n');
    expect(edited).not.toBe(y);
    const a = await run(['apply', '-f', '-'], edited);
    expect(a.stdout.trim()).toBe('scope/team:rt configured');
    expect(JSON.parse((await run(['get', 'scope', 'team:rt', '-o', 'json'])).stdout).spec.members).toEqual(
      {},
    );
  });

  it('--dry-run decides on the server and changes nothing', async () => {
    const before = (await run(['get', 'computes', '-o', 'yaml'])).stdout;
    const edited = before.replace(/maxNodes: 4/, 'maxNodes: 3');
    const a = await run(['apply', '-f', '-', '--dry-run'], edited);
    expect(a.code).toBe(0);
    expect(a.stdout).toMatch(/ configured \(dry run\)$/m);
    expect((await run(['get', 'computes', '-o', 'yaml'])).stdout).toBe(before);
    const bad = await run(['apply', '-f', '-', '--dry-run'], edited.replace(/cpu: \d+/, 'cpu: -1'));
    expect(bad.code).toBe(2);
  });
});

describe('what a caller sent that looks like a key (issue 30 §5)', () => {
  const SOURCE = 's3://my-bucket/llama3~abcdefgh/weights';
  const MEMBER = 'arn:aws:iam::000000000000:role/tools~abcdefgh/rt-bot';

  it('comes back as sent, and get -o yaml | apply -f - changes nothing', async () => {
    const manifest = `apiVersion: llmcap/v1
kind: Model
metadata: {name: tilde-source, owner: team:rt}
spec:
  source: "${SOURCE}"
  engine: vllm
  profiles:
    - {name: l4, gpus: 1, gpuType: L4, cpuCores: 4}
  scaling: {min: 0, max: 1}
`;
    const created = await run(['apply', '-f', '-'], manifest);
    expect(created.stderr).toBe('');
    expect(created.stdout.trim()).toBe('model/tilde-source created');
    const y = await run(['get', 'model', 'tilde-source', '-o', 'yaml']);
    expect(y.stdout).toContain(SOURCE);
    const again = await run(['apply', '-f', '-'], y.stdout);
    expect(again.stdout.trim()).toBe('model/tilde-source unchanged');
    const now = JSON.parse((await run(['get', 'model', 'tilde-source', '-o', 'json'])).stdout);
    expect(now.spec.source).toBe(SOURCE);
    expect(now.metadata.version).toBe(1);
  });

  it('holds for a member whose IAM path has a ~ in it', async () => {
    expect((await run(['scope', 'members', 'team:rt', '--add', `${MEMBER}=viewer`])).code).toBe(0);
    const y = (await run(['get', 'scope', 'team:rt', '-o', 'yaml'])).stdout;
    expect(y).toContain(MEMBER);
    expect((await run(['apply', '-f', '-'], y)).stdout.trim()).toBe('scope/team:rt unchanged');
    const members = JSON.parse((await run(['get', 'scope', 'team:rt', '-o', 'json'])).stdout).spec.members;
    expect(members[MEMBER]).toBe('viewer');
  });
});

describe('apply -f of manifests with several faults', () => {
  const faulty = `apiVersion: llmcap/v1
kind: Scope
metadata: {name: team:rt}
spec:
  parent: org:rt
  members:
    - {principal: "arn:aws:iam::000000000000:role/rt-lead", role: admin}
    - {principal: "arn:aws:iam::000000000000:role/rt-dev", role: boss}
    - {principal: "arn:aws:iam::000000000000:role/rt-lead", role: viewer}
---
apiVersion: llmcap/v1
kind: Quota
metadata: {name: team:rt}
spec: {guarantee: {gpus: 4, cores: many}, limit: {gpus: 2}}
---
apiVersion: llmcap/v1
kind: Model
metadata: {name: faulty}
spec:
  source: hf://Qwen/Qwen3-8B
  engine: vllm
  profiles:
    - {name: l4, gpus: one, gpuType: L4, cpuCores: 4}
    - {name: l4, gpus: 1, gpuType: L4, cpuCores: 4}
  scaling: {min: 3, max: 1}
`;

  it('prints every issue of every manifest with its path in the file, and writes nothing', async () => {
    const kinds = ['scopes', 'quotas', 'models'];
    const before = await Promise.all(kinds.map(async (k) => (await run(['get', k, '-o', 'yaml'])).stdout));
    const a = await run(['apply', '-f', '-'], faulty);
    expect(a.code).toBe(2);
    const lines = a.stderr.split('\n');
    for (const want of [
      /^ {2}spec\.members\[1\]\.role: /,
      /^ {2}spec\.members\[2\]: repeats members\[0\] \(arn:aws:iam::000000000000:role\/rt-lead\); list each member once$/,
      /^ {2}spec\.guarantee\.cores: .*expected number/,
      /^ {2}spec\.limit\.gpus: limit\.gpus \(2\) is below guarantee\.gpus \(4\); raise the limit or lower the guarantee$/,
      /^ {2}spec\.profiles\[0\]\.gpus: .*expected number/,
      /^ {2}spec\.scaling\.min: scaling\.min \(3\) is above scaling\.max \(1\); raise max or lower min$/,
      /^ {2}spec\.profiles\[1\]\.name: profile name l4 is already the name of spec\.profiles\[0\]/,
    ]) {
      expect(lines).toContainEqual(expect.stringMatching(want));
    }
    const after = await Promise.all(kinds.map(async (k) => (await run(['get', k, '-o', 'yaml'])).stdout));
    expect(after).toEqual(before);
  });
});
