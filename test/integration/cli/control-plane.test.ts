import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { type ControlPlane, startControlPlane } from '../../../local/control-plane';
import { holdAdmitter } from '../../helpers/passes';
import { inProcess, llmcap } from './run';

/**
 * The CLI as a process against the local control plane (DynamoDB Local, the real API handler): every verb
 * with routes on the server today (computes, models, sources), output formats, errors and exit codes.
 */

let cp: ControlPlane;
let dir: string;
const run = (
  args: string[],
  opts: { input?: string; env?: Record<string, string>; onStderr?: (e: string) => void } = {},
) => llmcap(args, { endpoint: cp.apiUrl, ...opts });

beforeAll(async () => {
  cp = await startControlPlane({
    port: 0,
    simPort: 0,
    reconcileSeconds: 0,
    dynamodbEndpoint: process.env.LLMCAP_DYNAMODB_ENDPOINT,
    table: `cli-${randomUUID().slice(0, 8)}`,
  });
  dir = mkdtempSync(join(tmpdir(), 'llmcap-cli-'));
});
afterAll(() => cp.stop());

const compute = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Compute',
  metadata: { name },
  spec: { node: { instanceType: 'm7i.large', cpu: 2, memoryGb: 8 }, cost: { perHour: 0.1008 }, ...extra },
});

const model = (name: string, fallback?: string) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name },
  spec: {
    source: `hf://acme/${name}-GGUF`,
    engine: 'llamacpp',
    profiles: [{ name: 'cpu', gpus: 0, cpuCores: 1, minMemoryGb: 2 }],
    scaling: { min: 0, max: 2 },
    ...(fallback ? { fallback } : {}),
  },
});

const yamlDocs = (...docs: unknown[]) => docs.map((d) => JSON.stringify(d)).join('\n---\n');

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

describe('llmcap against the local control plane', () => {
  it('lists computes as a table, json, yaml and names', async () => {
    const t = await run(['get', 'computes']);
    expect(t.code).toBe(0);
    expect(t.stdout.split('\n')[0]).toMatch(/^NAME\s+INSTANCE\s+GPU\s+CPU\s+MEMORY\s+NODEGROUP/);
    expect(t.stdout).toMatch(/gpu-l4-1x\s+g6\.2xlarge\s+1×L4\s+8\s+32Gi\s+ABSENT/);

    const j = await run(['get', 'computes', '-o', 'json']);
    expect(JSON.parse(j.stdout).items).toHaveLength(7);

    const y = await run(['get', 'co', 'cpu-small', 'gpu-l4-1x', '-o', 'yaml']);
    const docs = parseAllDocuments(y.stdout) as any[];
    expect(docs.map((d) => d.toJS().metadata.name)).toEqual(['cpu-small', 'gpu-l4-1x']);

    const one = await run(['get', 'compute', 'cpu-small', '-o', 'json']);
    expect(JSON.parse(one.stdout).status.allocatable).toMatchObject({ millicores: 3920, gpus: 0 });

    const n = await run(['get', 'computes', '-o', 'name']);
    expect(n.stdout.trim().split('\n')).toContain('compute/cpu-medium');
  });

  it('applies computes and models from a multi-document file in dependency order', async () => {
    // The model comes before its fallback in the file: apply must add the fallback first.
    const f = file(
      'stack.yaml',
      yamlDocs(model('cli-chat', 'cli-small'), model('cli-small'), compute('cli-cpu')),
    );
    const r = await run(['apply', '-f', f]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual([
      'compute/cli-cpu created',
      'model/cli-small created',
      'model/cli-chat created',
    ]);
    const again = await run(['apply', '-f', f]);
    expect(again.stdout).toContain('compute/cli-cpu unchanged');
    expect(again.stdout).toContain('model/cli-chat unchanged');

    const dry = await run(['apply', '-f', f, '--dry-run']);
    expect(dry.stdout.trim().split('\n')[0]).toBe('compute/cli-cpu unchanged (dry run)');
  });

  it('round-trips get -o yaml through apply, and reads JSON from stdin', async () => {
    const y = await run(['get', 'compute', 'cli-cpu', '-o', 'yaml']);
    const edited = y.stdout.replace(/maxNodes: 4/, 'maxNodes: 3');
    expect(edited).not.toBe(y.stdout);
    const r = await run(['apply', '-f', '-'], { input: edited });
    expect(r.stdout.trim()).toBe('compute/cli-cpu configured');
    const j = await run(['get', 'compute', 'cli-cpu', '-o', 'json']);
    expect(JSON.parse(j.stdout).spec.nodeGroup.maxNodes).toBe(3);

    const s = await run(['apply', '-f', '-'], { input: JSON.stringify([compute('cli-json')]) });
    expect(s.code).toBe(0);
    expect(s.stdout.trim()).toBe('compute/cli-json created');
  });

  it('describes a compute and a model in words', async () => {
    const c = await run(['describe', 'compute', 'cli-cpu']);
    expect(c.code).toBe(0);
    expect(c.stdout).toMatch(
      /Allocatable:\s+1930 m CPU, 6627 MiB, 0 GPU per node \(EKS's formula; no node of the type seen yet\)/,
    );
    expect(c.stdout).toMatch(/Taint:\s+llmcap\.dev\/compute=cli-cpu:NO_SCHEDULE/);
    // The node group's name with the id its tags must carry.
    expect(c.stdout).toMatch(/Node group:\s+llmcap-\S+-cli-cpu \(llmcap:compute-id=[0-9a-hjkmnp-tv-z]{12}\)/);
    const m = await run(['describe', 'model', 'cli-chat']);
    expect(m.stdout).toMatch(/Fallback:\s+cli-small/);
    expect(m.stdout).toMatch(/Profiles \(in order of preference\):\n\s+NAME\s+GPUS/);
  });

  it('applies a model with autoscaling and wakes it with model wake', async () => {
    const m = model('cli-auto');
    const spec = {
      ...m.spec,
      autoscaling: {
        metric: 'llamacpp:requests_deferred',
        targetPerReplica: 1,
        scaleToZeroAfterSeconds: 300,
      },
    };
    const a = await run(['apply', '-f', '-'], { input: JSON.stringify({ ...m, spec }) });
    expect(a.stdout.trim()).toBe('model/cli-auto created');
    const w = await run(['model', 'wake', 'cli-auto']);
    expect(w.stderr).toBe('');
    expect(w.stdout.trim()).toBe(
      'model/cli-auto woken: 1 replica(s) wanted; expected Ready in about 420 s (default node boot, image pull and model load times)',
    );
    const plain = await run(['model', 'wake', 'cli-small']);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain('has no spec.autoscaling');
  });

  it('changes models with model scale, resources, class and owner', async () => {
    const s = await run(['model', 'scale', 'cli-small', '--min', '1', '--max', '3', '--target', '2']);
    expect(s.code).toBe(0);
    expect(s.stdout).toContain('model/cli-small scaled (min 1, target 2, max 3)');
    const r = await run(['model', 'resources', 'cli-small', '--memory', '3', '--cores', '1.5', '-o', 'json']);
    expect(JSON.parse(r.stdout).spec.profiles[0]).toMatchObject({ minMemoryGb: 3, cpuCores: 1.5 });
    const c = await run(['model', 'class', 'cli-small', 'opportunistic']);
    expect(c.stdout).toContain('class set to opportunistic');
    // The owner must be a scope that exists.
    expect((await run(['scope', 'create', 'org:cli-owner'])).code).toBe(0);
    // A shared model falls back on cli-small: giving cli-small to one tenant would put it out of cli-chat's reach.
    const refused = await run(['model', 'owner', 'cli-small', 'org:cli-owner']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /fallback cli-small is owned by scope org:cli-owner, outside the reach of a shared model/,
    );
    const o = await run(['model', 'owner', 'cli-chat', 'org:cli-owner', '-o', 'yaml']);
    expect(o.stderr).toBe('');
    expect(o.code).toBe(0);
    expect(o.stdout).toContain('owner: org:cli-owner');
    expect((await run(['model', 'owner', 'cli-chat', 'none'])).stdout).toContain('shared');
    const cleared = await run(['model', 'class', 'cli-small', 'none', '-o', 'json']);
    expect(JSON.parse(cleared.stdout).spec.class).toBeUndefined();
    const stale = await run(['model', 'scale', 'cli-small', '--min', '1', '--max', '2', '--if-version', '1']);
    expect(stale.code).toBe(2);
    expect(stale.stderr).toContain('Conflict (409');
    const w = await run(['get', 'models', '-o', 'wide']);
    expect(w.stdout).toMatch(/cli-chat\s+shared\s+opportunistic/);
    const src = await run(['get', 'sources']);
    expect(src.stdout).toMatch(/hf:\/\/acme\/cli-chat-GGUF\s+cli-chat/);
  });

  it('prints every field issue on its own line and exits 2 when the API refuses', async () => {
    const bad = compute('cli-bad');
    (bad.spec.node as any).cpu = -2;
    (bad.spec.node as any).speed = 'fast';
    const r = await run(['apply', '-f', file('bad.json', JSON.stringify(bad))]);
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toMatch(
      /^error: compute\/cli-bad: Invalid request \(400\): the request has 2 invalid field/,
    );
    expect(lines).toContain("  spec.node: unknown field(s) 'speed'");
    expect(lines.some((l) => /^ {2}spec\.node\.cpu: /.test(l))).toBe(true);

    const m = await run(['model', 'scale', 'cli-small', '--min', '3', '--max', '1']);
    expect(m.code).toBe(2);
    expect(m.stderr).toMatch(/^ {2}spec\.scaling\.min: /m);
  });

  it('acts as another principal with --as, and shows the 403', async () => {
    const y = await run(['get', 'compute', 'cpu-small', '-o', 'yaml']);
    const r = await run(['apply', '-f', '-', '--as', 'arn:aws:iam::000000000000:user/someone-else'], {
      input: y.stdout,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: compute\/cpu-small: Forbidden \(403\)/);
  });

  it('exits 4 for what does not exist and 1 for usage errors, sending nothing for a bad manifest', async () => {
    const nf = await run(['get', 'compute', 'no-such-compute']);
    expect(nf.code).toBe(4);
    expect(nf.stderr).toContain('error: compute/no-such-compute: Not found (404)');
    const d = await run(['describe', 'model', 'no-such-model']);
    expect(d.code).toBe(4);

    const bad = await run(['apply', '-f', '-'], {
      input: yamlDocs(compute('cli-never'), { apiVersion: 'v2', kind: 'Pod', metadata: {} }),
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('<stdin>#2: apiVersion must be llmcap/v1');
    expect((await run(['get', 'compute', 'cli-never'])).code).toBe(4);

    const yamlErr = await run(['apply', '-f', '-'], { input: 'kind: [unclosed' });
    expect(yamlErr.code).toBe(1);
    expect(yamlErr.stderr).toContain('not valid YAML or JSON');

    const flag = await run(['get', 'computes', '--bogus']);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain("Unknown option '--bogus'");
    // The rest of the usage errors are caught before any request: checked in-process, quicker.
    for (const args of [
      ['get', 'widgets'],
      ['get', 'computes', '-o', 'xml'],
      ['frobnicate'],
      ['model', 'scale', 'x', '--min', 'one', '--max', '2'],
      ['model', 'scale', 'x', '--min', '1'],
      ['quota', 'set', 'team:ml'],
      ['quota', 'set', 'team:ml', '--guarantee', 'gpus=-1'],
      ['scope', 'members', 'team:ml', '--add', 'alice'],
      ['apply', '-f', join(dir, 'missing.yaml')],
      ['apply'],
      ['delete', 'compute'],
      ['capacity', '--resource', 'bananas'],
      ['capacity', 'team:ml', '--consolidation'],
    ]) {
      expect([args, (await inProcess(args)).code]).toEqual([args, 1]);
    }
  });

  it('deletes by name and by file, with --ignore-not-found', async () => {
    const d = await run(['delete', 'compute', 'cli-json']);
    expect(d.code).toBe(0);
    expect(d.stdout.trim()).toBe('compute/cli-json deleted');
    expect((await run(['delete', 'compute', 'cli-json'])).code).toBe(4);
    expect((await run(['delete', 'compute', 'cli-json', '--ignore-not-found'])).code).toBe(0);

    const f = join(dir, 'stack.yaml');
    const r = await run(['delete', '-f', f]);
    expect(r.stderr).toBe('');
    // Models before the compute, the dependent model before its fallback.
    expect(r.stdout.trim().split('\n')).toEqual([
      'model/cli-chat deleted',
      'model/cli-small deleted',
      'compute/cli-cpu deleted',
    ]);
  });

  it('manages scopes, members and quotas, and shows capacity (tenancy routes)', async () => {
    const f = file(
      'tenancy.yaml',
      yamlDocs(
        {
          apiVersion: 'llmcap/v1',
          kind: 'Quota',
          metadata: { name: 'team:cli' },
          spec: { guarantee: { gpus: 8 }, limit: { gpus: 12 } },
        },
        {
          apiVersion: 'llmcap/v1',
          kind: 'Scope',
          metadata: { name: 'team:cli' },
          spec: { parent: 'org:cli' },
        },
        { apiVersion: 'llmcap/v1', kind: 'Scope', metadata: { name: 'org:cli' }, spec: {} },
      ),
    );
    const a = await run(['apply', '-f', f]);
    expect(a.stderr).toBe('');
    expect(a.stdout.trim().split('\n')).toEqual([
      'scope/org:cli created',
      'scope/team:cli created',
      'quota/team:cli created',
    ]);
    const p = await run(['scope', 'create', 'project:cli-chat', '--parent', 'team:cli']);
    expect(p.stdout.trim()).toBe('scope/project:cli-chat created under team:cli');
    const m = await run([
      'scope',
      'members',
      'team:cli',
      '--add',
      'arn:aws:iam::000000000000:role/cli-lead=admin',
    ]);
    expect(m.code).toBe(0);
    const q = await run(['quota', 'set', 'team:cli', '--guarantee', 'cores=64', '--limit', 'gpus=16']);
    expect(q.stdout.trim()).toBe('quota/team:cli set: guarantee gpus=8,cores=64; limit gpus=16');
    const d = await run(['describe', 'scope', 'team:cli']);
    expect(d.stdout).toMatch(/arn:aws:iam::000000000000:role\/cli-lead\s+admin/);
    expect(d.stdout).toMatch(/Limit:\s+gpus=16/);
    // Where its models run, fixed when it was made.
    expect(d.stdout).toMatch(/^Namespace:\s+llmcap-local-team-cli-[a-z2-7]{5}$/m);
    const c = await run(['capacity', 'team:cli']);
    expect(c.code).toBe(0);
    expect(c.stdout).toMatch(/^team:cli\s+\[░{8}·{8}\] {2}0\/8\/16/m);
    expect(c.stdout).toMatch(/^ {2}project:cli-chat\s/m);
  });

  it('shows what consolidation would do before it acts (capacity --consolidation)', async () => {
    const t = await run(['capacity', '--consolidation']);
    expect(t.code).toBe(0);
    expect(t.stdout).toMatch(
      /^Now \$\d+\.\d{4}\/h; placed afresh \$\d+\.\d{4}\/h: saves \$-?\d+\.\d{4}\/h \(acts at \$\d+\.\d{4}\/h or more\)\.$/m,
    );
    const j = JSON.parse((await run(['capacity', '--consolidation', '-o', 'json'])).stdout);
    expect(Object.keys(j).sort()).toEqual(
      [
        'acts',
        'currentPerHour',
        'enabled',
        'held',
        'inFlight',
        'moves',
        'nodes',
        'others',
        'plannedPerHour',
        'savingPerHour',
        'thresholdPerHour',
      ].sort(),
    );
  });

  it('exits 3 when the API cannot be reached', async () => {
    const r = await llmcap(['get', 'computes'], { endpoint: 'http://127.0.0.1:9' });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('cannot reach http://127.0.0.1:9');
  });
});

describe('llmcap help', () => {
  const commands = [
    ['apply'],
    ['get'],
    ['describe'],
    ['delete'],
    ['model', 'scale'],
    ['model', 'resources'],
    ['model', 'class'],
    ['model', 'owner'],
    ['quota', 'set'],
    ['quota', 'get'],
    ['quota', 'delete'],
    ['scope', 'create'],
    ['scope', 'members'],
    ['capacity'],
    ['reconcile'],
    ['completion'],
  ];

  it('answers --help on every command, with the exit codes', async () => {
    for (const c of commands) {
      const r = await inProcess([...c, '--help']);
      expect([c, r.code]).toEqual([c, 0]);
      expect(r.stdout).toContain(`llmcap ${c.join(' ')}`);
      expect(r.stdout).toContain('Exit codes:');
    }
    // Through the launcher npx llmcap runs (tsx), so that it is started as a process at least once here.
    const top = await llmcap(['--help'], { launcher: true });
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('4  not found (404)');
    expect((await inProcess(['help', 'model', 'scale'])).stdout).toContain('--target N');
    expect((await inProcess(['model', '--help'])).stdout).toContain('llmcap model owner NAME SCOPE|none');
    expect((await inProcess([])).code).toBe(1);
  });

  it('prints a bash completion script', async () => {
    const r = await llmcap(['completion', 'bash']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('complete -F _llmcap llmcap');
    expect(r.stdout).toContain('scale resources class owner');
  });
});

// Last: a reconcile creates node groups, which the listings above expect to be ABSENT.
describe('llmcap reconcile', () => {
  it('queues a pass, waits for it with a progress line, and summarizes it; others are refused with exit 2', async () => {
    const r = await run(['reconcile']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^reconcile done in \d+\.\d s \(pass \d{8}T\d{9}Z-[0-9a-f]{8}\)\nadmission: \d+ admitted, \d+ released, \d+ taken back, \d+ replicas pending\nworkflows: /,
    );
    const id = /\(pass (\S+)\)/.exec(r.stdout)![1]!;
    expect(r.stderr).toContain(`reconcile ${id}: QUEUED, 0 s`);
    const j = await run(['reconcile', '-o', 'json']);
    expect(JSON.parse(j.stdout)).toMatchObject({
      state: 'SUCCEEDED',
      summary: { admission: expect.any(Object), computes: expect.any(Array) },
    });
    const someone = await run(['reconcile', '--as', 'arn:aws:iam::111111111111:role/someone']);
    expect(someone.code).toBe(2);
    expect(someone.stderr).toMatch(/platform admins/);
  });

  it('keeps waiting while the pass runs, and prints the summary once it has ended', async () => {
    const hold = await holdAdmitter(cp);
    let released = false;
    let sawRunning!: () => void;
    const running = new Promise<void>((r) => {
      sawRunning = r;
    });
    try {
      const cli = run(['reconcile'], {
        onStderr: (e) => {
          if (/: RUNNING, \d+ s/.test(e)) sawRunning();
        },
      });
      // The pass holds (it waits for the admitter) until the CLI has reported it RUNNING: the CLI must wait.
      const seen = await Promise.race([running.then(() => true), cli.then(() => false)]);
      expect(seen).toBe(true);
      await hold.release();
      released = true;
      const r = await cli;
      expect(r.code).toBe(0);
      expect(r.stderr).toMatch(/: QUEUED, 0 s\n(.*\n)*.*: RUNNING, \d+ s\n(.*\n)*.*: SUCCEEDED, \d+ s/);
      expect(r.stdout).toMatch(/^reconcile done in \d+\.\d s \(pass /);
    } finally {
      if (!released) await hold.release();
    }
  });

  it('prints only the id with --no-wait; waits for a pass by id; lists the latest passes', async () => {
    const r = await run(['reconcile', '--no-wait']);
    expect(r.code).toBe(0);
    const id = r.stdout.trim();
    expect(id).toMatch(/^\d{8}T\d{9}Z-[0-9a-f]{8}$/);
    const w = await run(['reconcile', id]);
    expect(w.code).toBe(0);
    expect(w.stdout).toContain(`(pass ${id})`);
    const l = await run(['reconcile', '--list', '--limit', '2']);
    expect(l.code).toBe(0);
    const lines = l.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^PASS\s+STATE\s+TRIGGER\s+STARTED\s+DURATION\s+WORKFLOWS\s+ERRORS$/);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(new RegExp(`^${id}\\s+SUCCEEDED\\s+api\\s`));
    expect((await run(['reconcile', '20200101T000000000Z-00000000'])).code).toBe(4);
    expect((await run(['reconcile', '--limit', '2'])).stderr).toMatch(/--limit goes with --list/);
  });
});
