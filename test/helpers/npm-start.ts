import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

/**
 * `npm start` as a user runs it: a child process in the repository, in its own process group so that
 * stop() is the Ctrl-C of a terminal (SIGINT to the group). Its output is kept for the test to read.
 */

export const ROOT = join(__dirname, '..', '..');

/** The environment of a user's shell: nothing the test run set for itself (its DynamoDB, its endpoints). */
export function userEnv(over: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const k of Object.keys(env))
    if (k.startsWith('LLMCAP_') || k.startsWith('AWS_ENDPOINT_URL') || k === 'AWS_PROFILE') delete env[k];
  Object.assign(env, over);
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return env as NodeJS.ProcessEnv;
}

export interface NpmStart {
  child: ChildProcess;
  /** stdout and stderr as printed so far, in order. */
  output(): string;
  /** Resolves with the output once `done` holds for it; rejects if the process ends first or on timeout. */
  waitFor(done: (out: string) => boolean, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** Ctrl-C: SIGINT to the group, SIGKILL if it has not ended within 15 s. */
  stop(): Promise<number | null>;
}

export function npmStart(args: string[] = [], env: Record<string, string | undefined> = {}): NpmStart {
  const child = spawn('npm', ['start', ...(args.length ? ['--', ...args] : [])], {
    cwd: ROOT,
    env: userEnv(env),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const waiters = new Set<() => void>();
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const w of [...waiters]) w();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  let ended = false;
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      ended = true;
      for (const w of [...waiters]) w();
      resolve(code);
    }),
  );
  const waitFor = (done: (o: string) => boolean, timeoutMs = 60_000) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`npm start did not print what was expected within ${timeoutMs} ms:\n${out}`));
      }, timeoutMs);
      const check = () => {
        if (done(out)) {
          clearTimeout(timer);
          waiters.delete(check);
          resolve(out);
        } else if (ended) {
          clearTimeout(timer);
          waiters.delete(check);
          reject(
            new Error(`npm start ended (code ${child.exitCode}) before printing what was expected:\n${out}`),
          );
        }
      };
      waiters.add(check);
      check();
    });
  const signal = (s: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, s);
    } catch {
      // Already gone.
    }
  };
  const stop = async () => {
    if (!ended) {
      signal('SIGINT');
      const kill = setTimeout(() => signal('SIGKILL'), 15_000);
      await exited;
      clearTimeout(kill);
    }
    return exited;
  };
  return { child, output: () => out, waitFor, exited, stop };
}

/** The URL a banner line shows for a part, e.g. part('API') of "  API              http://127.0.0.1:3000/v1 (...)". */
export function bannerUrl(out: string, part: string): string | undefined {
  const m = new RegExp(`^  ${part}\\s+(https?://\\S+)`, 'm').exec(out);
  return m?.[1];
}

/** The banner is complete once the CLI line (the last one start.ts prints before Ready) is there. */
export const bannerDone = (out: string) => /^ {2}CLI {2,}.*$/m.test(out);
