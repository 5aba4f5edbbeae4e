import './polyfill';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createDispatcher, type Json, type TaskDispatcher } from './dispatcher';
import { LocalStateMachine, loadDefinition, type RunnerHooks, type RunnerTiming } from './runner';

/**
 * A local Step Functions endpoint: enough of the awsJson1_0 protocol (StartExecution, DescribeExecution,
 * ListExecutions, StopExecution) for the unmodified @aws-sdk/client-sfn, so that the reconcile code starts
 * workflows locally by endpoint override alone. Executions run in-process from the ASL files. Names follow
 * Standard workflows' rule: a name is taken for as long as its execution is kept, which is while it runs and
 * for 90 days after it closes, on this server's clock.
 */

export type ExecutionStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

export interface LocalExecutionRecord {
  executionArn: string;
  stateMachineArn: string;
  name: string;
  input: string;
  status: ExecutionStatus;
  startDate: Date;
  stopDate?: Date;
  output?: string;
  error?: string;
  cause?: string;
  /** The library's event log: StateEntered, StateRetried, StateFailed, ... */
  events: Record<string, unknown>[];
  /** Billable state transitions: states entered (Map iterations included) plus retries. */
  transitions: number;
  done: Promise<void>;
  abort(): void;
}

export interface LocalStepFunctionsOptions {
  port?: number;
  host?: string;
  region?: string;
  account?: string;
  /** Prefix of the state machine names, like the stack's `llmcap-<stage>`. */
  namePrefix?: string;
  eksEndpoint?: string;
  autoscalingEndpoint?: string;
  dynamodbEndpoint?: string;
  tableName: string;
  clusterName: string;
  nodeRoleArn?: string;
  statemachinesDir?: string;
  timing?: RunnerTiming;
  /** Dates executions and decides when a closed one is forgotten; default the wall clock. */
  clock?: { now(): number };
  log?: (line: string) => void;
}

/** How long Step Functions keeps a closed Standard execution, and with it its name. */
export const RETENTION_MS = 90 * 86_400_000;

export interface LocalStepFunctions {
  endpoint: string;
  stateMachineArns: { provision: string; scale: string; delete: string };
  executions: Map<string, LocalExecutionRecord>;
  /** Set or clear at any time; every execution of every state machine consults it. */
  hooks: RunnerHooks;
  execution(arnOrName: string): LocalExecutionRecord | undefined;
  /** Resolves once no execution is running (including ones started while waiting). */
  waitForIdle(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

class ApiError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

const WORKFLOWS = {
  provision: 'provision-nodegroup',
  scale: 'scale-nodegroup',
  delete: 'delete-nodegroup',
} as const;
// Step Functions' rule for execution names: 1-80 characters, none of whitespace, brackets, wildcards or controls.
const NAME_OK = /^[^\s<>{}[\]?*"#%\\^|~`$&,;:/\p{Cc}]{1,80}$/u;

const epoch = (d: Date | undefined) => (d ? d.getTime() / 1000 : undefined);

function sameJson(a: string, b: string): boolean {
  try {
    return JSON.stringify(JSON.parse(a)) === JSON.stringify(JSON.parse(b));
  } catch {
    return a === b;
  }
}

export async function startLocalStepFunctions(opts: LocalStepFunctionsOptions): Promise<LocalStepFunctions> {
  const region = opts.region ?? process.env.AWS_REGION ?? 'us-east-1';
  const account = opts.account ?? '000000000000';
  const prefix = opts.namePrefix ?? 'llmcap-local';
  const log = opts.log ?? (() => undefined);
  const dir = opts.statemachinesDir ?? join(__dirname, '..', '..', 'statemachines');
  const substitutions = {
    ClusterName: opts.clusterName,
    NodeRoleArn: opts.nodeRoleArn ?? `arn:aws:iam::${account}:role/${prefix}-node`,
    TableName: opts.tableName,
  };
  const dispatcher: TaskDispatcher = createDispatcher({
    region,
    endpoints: {
      eks: opts.eksEndpoint,
      autoscaling: opts.autoscalingEndpoint ?? opts.eksEndpoint,
      dynamodb: opts.dynamodbEndpoint,
    },
  });

  const hooks: RunnerHooks = {};
  const machines = new Map<string, { name: string; machine: LocalStateMachine }>();
  const arns = {} as LocalStepFunctions['stateMachineArns'];
  for (const [kind, file] of Object.entries(WORKFLOWS) as [keyof typeof WORKFLOWS, string][]) {
    const name = `${prefix}-${file}`;
    const arn = `arn:aws:states:${region}:${account}:stateMachine:${name}`;
    const def = loadDefinition(join(dir, `${file}.asl.json`), substitutions);
    machines.set(arn, { name, machine: new LocalStateMachine(def, dispatcher, opts.timing, hooks) });
    arns[kind] = arn;
  }

  const executions = new Map<string, LocalExecutionRecord>();
  const clock = opts.clock ?? { now: () => Date.now() };

  /** Forgets executions closed for longer than the retention: their names may be used again. */
  function expire(): void {
    const cutoff = clock.now() - RETENTION_MS;
    for (const [arn, r] of executions)
      if (r.status !== 'RUNNING' && r.stopDate && r.stopDate.getTime() <= cutoff) executions.delete(arn);
  }

  function startExecution(stateMachineArn: string, name: string, input: string): LocalExecutionRecord {
    const sm = machines.get(stateMachineArn)!;
    const executionArn = `arn:aws:states:${region}:${account}:execution:${sm.name}:${name}`;
    const handle = sm.machine.run(JSON.parse(input) as Json, {
      executionArn,
      executionName: name,
      stateMachineArn,
      stateMachineName: sm.name,
    });
    const rec: LocalExecutionRecord = {
      executionArn,
      stateMachineArn,
      name,
      input,
      status: 'RUNNING',
      startDate: new Date(clock.now()),
      events: [],
      transitions: 0,
      done: Promise.resolve(),
      abort: handle.abort,
    };
    const collect = (async () => {
      for await (const ev of handle.events) {
        rec.events.push(ev);
        if (ev.type === 'StateEntered' || ev.type === 'StateRetried') rec.transitions++;
      }
    })();
    rec.done = handle.result
      .then(
        async (output) => {
          await collect;
          rec.status = 'SUCCEEDED';
          rec.output = JSON.stringify(output ?? null);
        },
        async (e: Error) => {
          await collect.catch(() => undefined);
          if (rec.status === 'ABORTED') return;
          const failed = rec.events.find((x) => x.type === 'ExecutionFailed');
          rec.status =
            e.name === 'ExecutionTimeoutError'
              ? 'TIMED_OUT'
              : e.name === 'ExecutionAbortedError'
                ? 'ABORTED'
                : 'FAILED';
          rec.error = (failed?.Error as string | undefined) ?? e.name;
          const cause = failed?.Cause ?? e.message;
          rec.cause = typeof cause === 'string' ? cause : JSON.stringify(cause);
        },
      )
      .finally(() => {
        rec.stopDate ??= new Date(clock.now());
        log(`execution ${name} ${rec.status}${rec.error ? ` (${rec.error}: ${rec.cause})` : ''}`);
      });
    executions.set(executionArn, rec);
    log(`execution ${name} started on ${sm.name}`);
    return rec;
  }

  // ListExecutions gives this much of each execution; DescribeExecution adds its input, output and error.
  const summary = (r: LocalExecutionRecord) => ({
    executionArn: r.executionArn,
    stateMachineArn: r.stateMachineArn,
    name: r.name,
    status: r.status,
    startDate: epoch(r.startDate),
    stopDate: epoch(r.stopDate),
  });

  const describe = (r: LocalExecutionRecord) => ({
    ...summary(r),
    input: r.input,
    inputDetails: { included: true },
    ...(r.output !== undefined ? { output: r.output, outputDetails: { included: true } } : {}),
    ...(r.error !== undefined ? { error: r.error, cause: r.cause } : {}),
  });

  const operations: Record<string, (body: Record<string, unknown>) => unknown> = {
    StartExecution(body) {
      const arn = String(body.stateMachineArn ?? '');
      if (!machines.has(arn))
        throw new ApiError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${arn}'`);
      const name = body.name === undefined ? randomUUID() : String(body.name);
      if (!NAME_OK.test(name)) throw new ApiError('InvalidName', `Invalid Name: '${name}'`);
      const input = body.input === undefined ? '{}' : String(body.input);
      try {
        JSON.parse(input);
      } catch {
        throw new ApiError('InvalidExecutionInput', 'Invalid Execution Input: not valid JSON');
      }
      expire();
      const existing = executions.get(
        `arn:aws:states:${region}:${account}:execution:${machines.get(arn)!.name}:${name}`,
      );
      if (existing) {
        // As in AWS: the same name and input while running is idempotent; a closed execution's name, or a
        // running one's with another input, is refused until the execution is forgotten.
        if (existing.status === 'RUNNING' && sameJson(existing.input, input)) {
          return { executionArn: existing.executionArn, startDate: epoch(existing.startDate) };
        }
        throw new ApiError('ExecutionAlreadyExists', `Execution Already Exists: '${existing.executionArn}'`);
      }
      const rec = startExecution(arn, name, input);
      return { executionArn: rec.executionArn, startDate: epoch(rec.startDate) };
    },
    DescribeExecution(body) {
      expire();
      const rec = executions.get(String(body.executionArn ?? ''));
      if (!rec)
        throw new ApiError('ExecutionDoesNotExist', `Execution Does Not Exist: '${body.executionArn}'`);
      return describe(rec);
    },
    ListExecutions(body) {
      const arn = String(body.stateMachineArn ?? '');
      if (!machines.has(arn))
        throw new ApiError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${arn}'`);
      expire();
      const filter = body.statusFilter as string | undefined;
      const all = [...executions.values()]
        .filter((r) => r.stateMachineArn === arn && (!filter || r.status === filter))
        .sort((a, b) => b.startDate.getTime() - a.startDate.getTime());
      const max = Math.min(Math.max(Number(body.maxResults ?? 100) || 100, 1), 1000);
      const start = body.nextToken ? Number(Buffer.from(String(body.nextToken), 'base64').toString()) : 0;
      const page = all.slice(start, start + max);
      return {
        executions: page.map(summary),
        ...(start + max < all.length
          ? { nextToken: Buffer.from(String(start + max)).toString('base64') }
          : {}),
      };
    },
    StopExecution(body) {
      const rec = executions.get(String(body.executionArn ?? ''));
      if (!rec)
        throw new ApiError('ExecutionDoesNotExist', `Execution Does Not Exist: '${body.executionArn}'`);
      if (rec.status === 'RUNNING') {
        rec.status = 'ABORTED';
        rec.stopDate = new Date(clock.now());
        rec.error = body.error === undefined ? undefined : String(body.error);
        rec.cause = body.cause === undefined ? undefined : String(body.cause);
        rec.abort();
      }
      return { stopDate: epoch(rec.stopDate) };
    },
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, {
          'content-type': 'application/x-amz-json-1.0',
          'x-amzn-requestid': randomUUID(),
        });
        res.end(JSON.stringify(body));
      };
      try {
        const target = String(req.headers['x-amz-target'] ?? '');
        const op = target.startsWith('AWSStepFunctions.')
          ? operations[target.slice('AWSStepFunctions.'.length)]
          : undefined;
        if (req.method !== 'POST' || !op)
          throw new ApiError('UnknownOperationException', `unsupported operation ${target || req.method}`);
        const raw = Buffer.concat(chunks).toString('utf8');
        send(200, op(raw ? (JSON.parse(raw) as Record<string, unknown>) : {}));
      } catch (e) {
        const err = e instanceof ApiError ? e : new ApiError('InternalFailure', (e as Error).message, 500);
        send(err.status, { __type: `com.amazonaws.swf.service.v2.model#${err.type}`, message: err.message });
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const endpoint = `http://${opts.host ?? '127.0.0.1'}:${addr.port}`;

  async function waitForIdle(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const running = [...executions.values()].filter((r) => r.status === 'RUNNING');
      if (!running.length) return;
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`still running after ${timeoutMs} ms: ${running.map((r) => r.name).join(', ')}`);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(running.map((r) => r.done)),
        new Promise((r) => {
          timer = setTimeout(r, left);
        }),
      ]);
      clearTimeout(timer);
    }
  }

  return {
    endpoint,
    stateMachineArns: arns,
    executions,
    hooks,
    execution: (arnOrName) =>
      executions.get(arnOrName) ?? [...executions.values()].find((r) => r.name === arnOrName),
    waitForIdle,
    async stop() {
      for (const r of executions.values())
        if (r.status === 'RUNNING') operations.StopExecution!({ executionArn: r.executionArn });
      await Promise.allSettled([...executions.values()].map((r) => r.done));
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections?.();
      await dispatcher.destroy();
    },
  };
}

/** The environment that points lambdas/service/workflows.ts at this local Step Functions. */
export function workflowEnv(
  s: Pick<LocalStepFunctions, 'endpoint' | 'stateMachineArns'>,
): Record<string, string> {
  return {
    LLMCAP_SFN_ENDPOINT: s.endpoint,
    LLMCAP_PROVISION_SM_ARN: s.stateMachineArns.provision,
    LLMCAP_SCALE_SM_ARN: s.stateMachineArns.scale,
    LLMCAP_DELETE_SM_ARN: s.stateMachineArns.delete,
  };
}
