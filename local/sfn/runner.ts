import './polyfill';
import { readFileSync } from 'node:fs';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import type { Json, TaskDispatcher } from './dispatcher';

/**
 * Executes an ASL file locally with aws-local-stepfunctions: the same text CDK deploys, with the same
 * definitionSubstitutions, every Task dispatched to real SDK clients, and Wait and Retry intervals scaled by
 * configuration so that a 30-second poll can take milliseconds in a test. Deadlines a Choice compares times
 * against (Timestamp*Path into the input) are brought closer by the same factor, so a wait budget keeps its
 * proportion to the shortened polls.
 */

export interface RunnerTiming {
  /** Factor applied to every Wait (Seconds or SecondsPath); 1 = real time. */
  waitScale?: number;
  /** Upper bound of one Wait, in real seconds, after scaling. */
  maxWaitSeconds?: number;
  /** Factor applied to Retry IntervalSeconds and MaxDelaySeconds (backoff is kept); default waitScale. */
  retryScale?: number;
}

type StateDef = Record<string, unknown> & { Type: string };
type Definition = { StartAt: string; States: Record<string, StateDef> } & Record<string, unknown>;

/** Fills `${Name}` placeholders as CDK definitionSubstitutions do; a placeholder left unfilled is an error. */
export function substitute(text: string, substitutions: Record<string, string>): string {
  const out = text.replace(/\$\{([A-Za-z0-9_]+)\}/g, (m, key: string) => substitutions[key] ?? m);
  const left = [...new Set([...out.matchAll(/\$\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]))];
  if (left.length) throw new Error(`no substitution for ${left.map((k) => `\${${k}}`).join(', ')}`);
  return out;
}

export function loadDefinition(file: string, substitutions: Record<string, string>): Definition {
  return JSON.parse(substitute(readFileSync(file, 'utf8'), substitutions)) as Definition;
}

/** Visits every state, including those of Map item processors and Parallel branches. */
function eachState(def: { States: Record<string, StateDef> }, fn: (name: string, s: StateDef) => void): void {
  for (const [name, s] of Object.entries(def.States)) {
    fn(name, s);
    const proc = (s.ItemProcessor ?? s.Iterator) as Definition | undefined;
    if (proc) eachState(proc, fn);
    for (const b of (s.Branches as Definition[] | undefined) ?? []) eachState(b, fn);
  }
}

/** Reads `$.a.b` from a document; other JSONPath forms are not needed for wait durations. */
function readPath(doc: unknown, path: string): unknown {
  if (!path.startsWith('$.')) return undefined;
  let cur: unknown = doc;
  for (const part of path.slice(2).split('.')) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

function writePath(doc: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.slice(2).split('.');
  let cur = doc;
  for (const part of parts.slice(0, -1)) cur = cur[part] as Record<string, unknown>;
  cur[parts[parts.length - 1] as string] = value;
}

const TIMESTAMP_PATH_RULES = [
  'TimestampEqualsPath',
  'TimestampLessThanPath',
  'TimestampGreaterThanPath',
  'TimestampLessThanEqualsPath',
  'TimestampGreaterThanEqualsPath',
];

/** The `$.x` paths of the timestamps Choice rules compare against, nested And/Or/Not included. */
function timestampPaths(rule: Record<string, unknown>, out: Set<string>): void {
  for (const k of TIMESTAMP_PATH_RULES) if (typeof rule[k] === 'string') out.add(rule[k] as string);
  for (const r of [...((rule.And ?? rule.Or ?? []) as Record<string, unknown>[]), rule.Not]) {
    if (r && typeof r === 'object') timestampPaths(r as Record<string, unknown>, out);
  }
}

/** Test instrumentation: runs before a Task state calls its service (e.g. to make EKS busy at that moment). */
export interface RunnerHooks {
  beforeTask?: (stateName: string, resource: string, parameters: unknown) => Promise<void> | void;
}

export interface ExecutionContext {
  executionArn: string;
  executionName: string;
  stateMachineArn: string;
  stateMachineName: string;
  roleArn?: string;
}

export interface RunHandle {
  result: Promise<Json>;
  abort(): void;
  events: AsyncGenerator<Record<string, unknown>>;
}

export class LocalStateMachine {
  private readonly scaled: Definition;
  private readonly taskResources = new Map<string, string>();
  private readonly secondsPathWaits = new Map<string, string>();
  private readonly deadlinePaths = new Set<string>();
  private readonly timing: Required<Pick<RunnerTiming, 'waitScale' | 'retryScale'>> & RunnerTiming;

  constructor(
    readonly definition: Definition,
    private readonly dispatcher: TaskDispatcher,
    timing: RunnerTiming = {},
    private readonly hooks: RunnerHooks = {},
  ) {
    // Validates the definition as written; the scaled copy below has fractional intervals that the ASL schema
    // would refuse, so it runs unvalidated.
    new StateMachine(definition as unknown as StateMachineDefinition);
    const waitScale = timing.waitScale ?? 1;
    this.timing = { ...timing, waitScale, retryScale: timing.retryScale ?? waitScale };
    // JSON round trip rather than structuredClone: under jest the latter makes objects of another realm,
    // which the library does not recognise as plain objects (and then skips their "x.$" fields).
    this.scaled = JSON.parse(JSON.stringify(definition)) as Definition;
    eachState(this.scaled, (name, s) => {
      if (s.Type === 'Task') {
        if (this.taskResources.has(name)) throw new Error(`Task state name ${name} is used twice`);
        this.taskResources.set(name, s.Resource as string);
      }
      if (s.Type === 'Wait' && typeof s.Seconds === 'number') s.Seconds = this.waitSeconds(s.Seconds);
      if (s.Type === 'Wait' && typeof s.SecondsPath === 'string')
        this.secondsPathWaits.set(name, s.SecondsPath);
      if (s.Type === 'Choice')
        for (const rule of s.Choices as Record<string, unknown>[]) timestampPaths(rule, this.deadlinePaths);
      for (const r of (s.Retry as Record<string, number>[] | undefined) ?? []) {
        r.IntervalSeconds = (r.IntervalSeconds ?? 1) * this.timing.retryScale;
        if (r.MaxDelaySeconds !== undefined) r.MaxDelaySeconds *= this.timing.retryScale;
      }
    });
  }

  private waitSeconds(seconds: number): number {
    const s = seconds * this.timing.waitScale;
    return this.timing.maxWaitSeconds !== undefined ? Math.min(s, this.timing.maxWaitSeconds) : s;
  }

  /** The input as this runner's shortened time sees it: each deadline as far from now as waits are shortened. */
  private scaledInput(input: Json): Json {
    if (this.timing.waitScale === 1 || typeof input !== 'object' || input === null) return input;
    const copy = JSON.parse(JSON.stringify(input)) as Record<string, unknown>;
    const now = Date.now();
    for (const path of this.deadlinePaths) {
      const v = readPath(copy, path);
      const t = typeof v === 'string' ? Date.parse(v) : Number.NaN;
      if (Number.isFinite(t) && t > now)
        writePath(copy, path, new Date(now + (t - now) * this.timing.waitScale).toISOString());
    }
    return copy as Json;
  }

  run(input: Json, ctx: ExecutionContext): RunHandle {
    const taskResourceLocalHandlers = Object.fromEntries(
      [...this.taskResources].map(([name, resource]) => [
        name,
        async (params: unknown) => {
          await this.hooks.beforeTask?.(name, resource, params);
          return this.dispatcher.dispatch(resource, params);
        },
      ]),
    );
    // SecondsPath waits read the execution input (our workflows keep pollSeconds at the top level).
    const waitTimeOverrides: Record<string, number> = {};
    for (const [name, path] of this.secondsPathWaits) {
      const v = readPath(input, path);
      if (typeof v === 'number') waitTimeOverrides[name] = Math.round(this.waitSeconds(v) * 1000);
    }
    const machine = new StateMachine(this.scaled as unknown as StateMachineDefinition, {
      validationOptions: { noValidate: true },
    });
    const exec = machine.run(this.scaledInput(input) as never, {
      overrides: { taskResourceLocalHandlers: taskResourceLocalHandlers as never, waitTimeOverrides },
      context: {
        Execution: {
          Id: ctx.executionArn,
          Name: ctx.executionName,
          RoleArn: ctx.roleArn ?? 'arn:aws:iam::000000000000:role/local',
        },
        StateMachine: { Id: ctx.stateMachineArn, Name: ctx.stateMachineName },
        // The library fixes the context at start; a getter gives $$.State.EnteredTime the time it is read.
        State: {
          get EnteredTime() {
            return new Date().toISOString();
          },
        },
      },
    });
    return {
      result: exec.result as Promise<Json>,
      abort: exec.abort,
      events: exec.eventLogs as unknown as AsyncGenerator<Record<string, unknown>>,
    };
  }
}
