import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { documentClient } from '../lambdas/shared/clients';
import { type ControlPlaneOptions, startControlPlane } from './control-plane';

/**
 * The local control plane (its HTTP API, the admitter driven by the table's stream, the simulators) in a process
 * of its own, for the bench and the soak: a deployed stage runs its API Lambdas apart from its admitter and from
 * the clients that call it, so what is measured there must not share an event loop with the clients' own work
 * (building requests, parsing every answer). The child prints one marked line, the API's URL and the environment
 * the control plane set (so the parent reads the same table and simulators), then answers each line on stdin:
 * `calls` with the DynamoDB calls it made since the last, by command and partition; `cpu` with the CPU time it
 * and the DynamoDB Local it started have used so far; `admitter off` and `admitter on` by disabling and enabling
 * the admitter's event source mapping; `settle` once the admitter
 * has decided every write so far; `stop` by stopping. It stops too when its stdin closes, so a parent that crashes
 * takes it (and the DynamoDB Local it started) down with it.
 */

/** An answer, marked apart from anything the control plane's logger prints on the same stdout. */
const MARK = '@control-plane ';
const say = (v: unknown) => console.log(`${MARK}${JSON.stringify(v)}`);

/** What the child is started with: plain data, as it crosses a process boundary. */
export type ProcessOptions = Pick<
  ControlPlaneOptions,
  'dynamodbEndpoint' | 'table' | 'admins' | 'simTimeScale' | 'reconcileSeconds' | 'cooldownSeconds'
>;

export interface ControlPlaneProcess {
  apiUrl: string;
  /** The LLMCAP_ and AWS_ variables the control plane set. */
  env: Record<string, string>;
  /** The DynamoDB calls it made since it was last asked, by command and partition. */
  calls(): Promise<Record<string, number>>;
  /** CPU milliseconds used so far: this process's, and the DynamoDB Local it started (Linux; absent elsewhere). */
  cpu(): Promise<CpuUsed>;
  /** Disables or enables the admitter's event source mapping; the writes' records wait in the stream meanwhile. */
  admitterMapping(enabled: boolean): Promise<void>;
  /** Resolves once its admitter has decided every write made so far. */
  settle(timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
}

export interface CpuUsed {
  controlPlaneMs: number;
  dynamodbMs?: number;
}

/** A process's CPU time from /proc (user + system, in clock ticks of 10 ms), or undefined where there is none. */
function procCpuMs(pid: number): number | undefined {
  try {
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis are fixed.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/** Starts the control plane in a child process and waits until its API answers. */
export async function spawnControlPlane(opts: ProcessOptions): Promise<ControlPlaneProcess> {
  const tsx = join(__dirname, '..', 'node_modules', '.bin', 'tsx');
  const child = spawn(tsx, [__filename, JSON.stringify(opts)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const answers = createInterface({ input: child.stdout! });
  const waiting: { resolve: (v: unknown) => void; reject: (e: Error) => void }[] = [];
  answers.on('line', (line) => {
    if (!line.startsWith(MARK)) return;
    const v = JSON.parse(line.slice(MARK.length));
    const w = waiting.shift();
    if (v?.error) w?.reject(new Error(v.error));
    else w?.resolve(v);
  });
  child.on('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`the control plane's process exited (${code})`));
  });
  const next = <T>() =>
    new Promise<T>((resolve, reject) => waiting.push({ resolve: resolve as (v: unknown) => void, reject }));
  const ask = <T>(line: string) => {
    const answer = next<T>();
    child.stdin!.write(`${line}\n`);
    return answer;
  };
  const ready = await next<{ apiUrl: string; env: Record<string, string> }>();
  return {
    ...ready,
    calls: () => ask<Record<string, number>>('calls'),
    cpu: () => ask<CpuUsed>('cpu'),
    admitterMapping: async (enabled) => {
      await ask(`admitter ${enabled ? 'on' : 'off'}`);
    },
    settle: async (timeoutMs) => {
      await ask(`settle ${timeoutMs}`);
    },
    async stop(): Promise<void> {
      const exited = new Promise((r) => child.once('exit', r));
      child.stdin!.end('stop\n');
      // Cleared once the child has exited: left running, it held the bench or soak open for 15 s after its end.
      let t: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((r) => (t = setTimeout(r, 15_000)))]);
      clearTimeout(t);
      child.kill();
    },
  };
}

async function main(): Promise<void> {
  const cp = await startControlPlane({
    port: 0,
    simPort: 0,
    ...(JSON.parse(process.argv[2]!) as ProcessOptions),
  });
  let calls: Record<string, number> = {};
  documentClient().middlewareStack.add(
    (next, context) => async (args) => {
      const pk = (args.input as { ExpressionAttributeValues?: Record<string, unknown> })
        .ExpressionAttributeValues?.[':pk'];
      const got = (args.input as { Key?: { pk?: unknown } }).Key?.pk;
      const command = `${String(context.commandName ?? '?').replace(/Command$/, '')}${pk ? ` ${pk}` : got ? ` ${got}` : ''}`;
      calls[command] = (calls[command] ?? 0) + 1;
      return next(args);
    },
    { step: 'initialize', name: 'processCalls', override: true },
  );
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      (e): e is [string, string] =>
        (e[0].startsWith('LLMCAP_') || e[0].startsWith('AWS_')) && e[1] !== undefined,
    ),
  );
  say({ apiUrl: cp.apiUrl, env });
  try {
    for await (const line of createInterface({ input: process.stdin })) {
      const [command, arg] = line.split(' ');
      if (command === 'calls') {
        say(calls);
        calls = {};
      } else if (command === 'cpu') {
        const used = process.cpuUsage();
        const dynamodbMs = cp.dynamodbPid ? procCpuMs(cp.dynamodbPid) : undefined;
        say({
          controlPlaneMs: Math.round((used.user + used.system) / 1000),
          ...(dynamodbMs !== undefined ? { dynamodbMs } : {}),
        });
      } else if (command === 'admitter') {
        cp.admitterMapping(arg === 'on');
        say({ admitter: arg });
      } else if (command === 'settle')
        await cp.admitterSettled(Number(arg)).then(
          () => say({ settled: true }),
          (e: Error) => say({ error: e.message }),
        );
      else if (command === 'stop') break;
    }
  } finally {
    await cp.stop();
  }
}

if (require.main === module)
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
