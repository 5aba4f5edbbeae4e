import { execFile } from 'node:child_process';
import { join } from 'node:path';

/**
 * The workloads bench as BENCHMARKS.md tells a reader to size it (BENCH_COMPUTES, BENCH_MODELS), run the way
 * `npm run bench` loads it: it prints its table and then its process ends by itself. A process that does not end
 * has something its control plane's stop left running: the passes once ran the tests' admitter beside the
 * control plane's, a second stream poller that nothing stopped, and the bench polled the stopped DynamoDB Local
 * ("connect ECONNREFUSED") until killed.
 */

const ROOT = join(__dirname, '..', '..', '..');

it('prints the workloads table and exits on its own, nothing left polling after the control plane stops', async () => {
  // The child's own settings only: no port or endpoint of this worker's environment.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LLMCAP_')));
  const run = await new Promise<{
    code: number | null;
    signal: string | null;
    stdout: string;
    stderr: string;
  }>((resolve) => {
    execFile(
      join(ROOT, 'node_modules', '.bin', 'tsx'),
      ['bench/reconcile-workloads.ts'],
      // Far beyond the ~20 s it takes: a bench that never exits is killed here and fails below.
      { cwd: ROOT, env: { ...env, BENCH_COMPUTES: '2', BENCH_MODELS: '6' }, timeout: 150_000 },
      (err, stdout, stderr) => {
        const e = err as (Error & { code?: number; signal?: string }) | null;
        resolve({ code: e ? (e.code ?? null) : 0, signal: e?.signal ?? null, stdout, stderr });
      },
    );
  });
  expect({ code: run.code, signal: run.signal, polling: /ECONNREFUSED/.test(run.stderr) }).toEqual({
    code: 0,
    signal: null,
    polling: false,
  });
  expect(run.stdout).toMatch(/^\| steady \| \d+ ms \|/m);
  expect(run.stdout).toMatch(/Measured: the steady pass made 0 writes .*: met\./);
}, 180_000);
