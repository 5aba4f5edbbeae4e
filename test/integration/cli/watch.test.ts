import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ControlPlane } from '../../../local/control-plane';
import { CLI_BUNDLE_ENV } from '../../helpers/cli-bundle';
import { httpApi, testControlPlane } from '../../helpers/control-plane';
import { llmcap } from './run';

/**
 * Watch and wait as kubectl users expect (issue 35 §3), the CLI as a process against the local control plane:
 * `get -w` prints the rows that change until Ctrl-C, `apply --wait` returns once a model is decided and with
 * --running once its pods are Ready, and gives up after --timeout naming what still waits; describe lists
 * the model's events.
 */

let cp: ControlPlane;
let dir: string;
const call = (method: string, path: string, body?: unknown) => httpApi(cp)(method, path, body);

beforeAll(async () => {
  cp = await testControlPlane('cli-watch');
  dir = mkdtempSync(join(tmpdir(), 'llmcap-watch-'));
});
afterAll(() => cp.stop());

const model = (name: string, min: number) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name },
  spec: {
    source: `hf://acme/${name}-GGUF`,
    engine: 'llamacpp',
    profiles: [{ name: 'cpu', gpus: 0, cpuCores: 1, minMemoryGb: 2, compute: 'cpu-small' }],
    scaling: { min, max: Math.max(min, 1) },
  },
});

function file(name: string, body: unknown): string {
  const p = join(dir, name);
  writeFileSync(p, JSON.stringify(body));
  return p;
}

const until = async (ok: () => boolean, what: string) => {
  for (let i = 0; i < 300 && !ok(); i++) await new Promise((r) => setTimeout(r, 100));
  if (!ok()) throw new Error(`never saw ${what}`);
};

it('get -w prints the list, then only the rows that change, and Ctrl-C ends it with exit code 0', async () => {
  expect((await call('POST', '/v1/models', model('w-one', 0))).status).toBe(201);
  expect((await call('POST', '/v1/models', model('w-two', 0))).status).toBe(201);
  const stop = new AbortController();
  let out = '';
  const running = llmcap(['get', 'models', '-w', '--interval', '0.2'], {
    endpoint: cp.apiUrl,
    interrupt: stop.signal,
    onStdout: (s) => {
      out = s;
    },
  });
  await until(() => /w-two/.test(out), 'the first list');
  const listed = out.split('\n').filter(Boolean);
  expect(listed[0]).toMatch(/^NAME\s+OWNER\s+CLASS\s+REPLICAS/);
  expect((await call('PUT', '/v1/models/w-one/scaling', { min: 1, max: 1 })).status).toBe(200);
  await until(
    () => /^w-one\s+shared\s+\S+\s+1\/1\s/m.test(out.split('\n').slice(listed.length).join('\n')),
    'the changed row',
  );
  expect((await call('DELETE', '/v1/models/w-two')).status).toBe(204);
  await until(() => /<deleted>/.test(out), 'the deleted row');
  stop.abort();
  const r = await running;
  expect(r.code).toBe(0);
  expect(r.stderr).toBe('');
  const lines = r.stdout.split('\n').filter(Boolean);
  // The list once, then w-one changed and w-two gone: nothing printed again that did not change.
  const after = lines.slice(listed.length);
  expect(after.every((l) => /^w-(one|two)\s/.test(l))).toBe(true);
  expect(after.filter((l) => l.startsWith('w-one')).at(-1)).toMatch(/^w-one\s+shared\s+\S+\s+1\/1\s+1-1\b/);
  expect(after.at(-1)).toMatch(/^w-two\s.*<deleted>$/);
});

it('apply --wait returns once the model is decided, saying how it was decided', async () => {
  const r = await llmcap(['apply', '-f', file('decided.json', model('w-decided', 1)), '--wait'], {
    endpoint: cp.apiUrl,
  });
  // Queued first when the admitter has not decided it by the first read, then decided.
  expect(r.stderr).toMatch(
    /^(model\/w-decided: 1 replica Queued for admission\n)?model\/w-decided: decided: 1 admitted, 0 pending\n$/,
  );
  expect(r.stdout).toBe('model/w-decided created\n');
  expect(r.code).toBe(0);
});

it('apply --wait --running gives up after --timeout with exit code 3, naming what still waits', async () => {
  // No reconcile pass runs here, so no node starts and no pod becomes Ready.
  const r = await llmcap(
    ['apply', '-f', file('stuck.json', model('w-stuck', 1)), '--wait', '--running', '--timeout', '2'],
    { endpoint: cp.apiUrl },
  );
  expect(r.code).toBe(3);
  expect(r.stderr).toMatch(
    /^(model\/w-stuck: 1 replica Queued for admission\n)?model\/w-stuck: 0\/1 pods Ready\n/,
  );
  expect(r.stderr).toMatch(
    /error: timed out after \d+ s waiting for the models to be decided and Ready; still waiting: model\/w-stuck \(0\/1 pods Ready\)\n$/,
  );
});

it('apply --wait --running returns once every admitted replica has a Ready pod', async () => {
  let done = false;
  const waiting = llmcap(
    ['apply', '-f', file('runs.json', model('w-runs', 1)), '--wait', '--running', '--timeout', '300'],
    { endpoint: cp.apiUrl },
  ).finally(() => {
    done = true;
  });
  // The reconciler's passes start the node and the pod, as the schedule would.
  for (let i = 0; i < 60 && !done; i++) {
    await cp.reconcile();
    await cp.sfn.waitForIdle(10_000);
    await new Promise((r) => setTimeout(r, 200));
  }
  const r = await waiting;
  expect(r.code).toBe(0);
  expect(r.stderr).toMatch(/model\/w-runs: 1\/1 pods Ready\n$/);
});

it('describe lists the model its events, newest first', async () => {
  const r = await llmcap(['describe', 'model', 'w-one'], { endpoint: cp.apiUrl });
  expect(r.code).toBe(0);
  const events = r.stdout.slice(r.stdout.indexOf('Events:'));
  expect(events).toMatch(
    /^Events:\n\s+TYPE\s+REASON\s+AGE\s+FROM\s+MESSAGE\n\s+Normal\s+Admitted\s+\S+\s+admitter\s+1 replica admitted \(was 0\)/,
  );
  const none = await llmcap(['describe', 'model', 'w-decided'], { endpoint: cp.apiUrl });
  expect(none.stdout).toMatch(/Events:\n.*\n\s+Normal\s+Admitted\s.*1 replica admitted \(was 0\)\n$/);
});

describe('completion', () => {
  // `llmcap` on PATH, and an `npx` that runs it as `npx llmcap` would in the repository.
  const bin = process.env[CLI_BUNDLE_ENV] || join(__dirname, '..', '..', '..', 'cli', 'bin', 'llmcap.js');
  // Asynchronously: the control plane the completion's own `llmcap get` asks runs in this process.
  const complete = async (words: string[]) => {
    const path = mkdtempSync(join(tmpdir(), 'llmcap-path-'));
    writeFileSync(join(path, 'llmcap'), `#!/bin/sh\nexec "${process.execPath}" "${bin}" "$@"\n`);
    writeFileSync(join(path, 'npx'), `#!/bin/sh\nshift\nexec "${process.execPath}" "${bin}" "$@"\n`);
    chmodSync(join(path, 'llmcap'), 0o755);
    chmodSync(join(path, 'npx'), 0o755);
    const script = [
      'source <(llmcap completion bash)',
      `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')})`,
      `COMP_CWORD=${words.length - 1}`,
      '_llmcap',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: bash's array expansion, not a template.
      'printf "%s\\n" "${COMPREPLY[@]}"',
    ].join('\n');
    const r = await promisify(execFile)('bash', ['-c', script], {
      env: { ...process.env, PATH: `${path}:${process.env.PATH}`, LLMCAP_ENDPOINT: cp.apiUrl },
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    return r.stdout.split('\n').filter(Boolean).sort();
  };

  it('completes the names of the resources the caller can read, for llmcap and npx llmcap', async () => {
    expect(await complete(['llmcap', 'describe', 'model', 'w-'])).toEqual([
      'w-decided',
      'w-one',
      'w-runs',
      'w-stuck',
    ]);
    expect(await complete(['npx', 'llmcap', 'get', 'computes', 'cpu-'])).toEqual(['cpu-medium', 'cpu-small']);
    expect(await complete(['npx', 'llmcap', 'model', 'scale', 'w-o'])).toEqual(['w-one']);
    expect(await complete(['llmcap', 'get', 'pods', '--model', 'w-r'])).toEqual(['w-runs']);
    expect(await complete(['npx', 'llmcap', 'desc'])).toEqual(['describe']);
  });
});
