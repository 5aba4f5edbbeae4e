import './polyfill';
import { readFileSync } from 'node:fs';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { processWide } from '../process-wide';
import type { Json, TaskDispatcher } from './dispatcher';

/**
 * Executes an ASL file locally with aws-local-stepfunctions: the same text CDK deploys, with the same
 * definitionSubstitutions, every Task dispatched to real SDK clients, and Wait and Retry intervals scaled by
 * configuration so that a 30-second poll can take milliseconds in a test. A Choice that compares the time of
 * a step with a deadline (a Timestamp*Path rule) reads that time from the execution's own clock, on which each
 * Wait lasts as long as the definition says: a budget of 40 polls 15 s apart runs out after 40 polls however
 * slowly a loaded machine runs the steps in between. (Deadlines scaled like the waits did not: the steps'
 * real milliseconds, nothing beside 15 s in AWS, ate a 1.2 s budget under load.) Every other time the
 * execution reads or writes ($$.State.EnteredTime in items) stays the wall clock.
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

const TIMESTAMP_PATH_RULES = [
  'TimestampEqualsPath',
  'TimestampLessThanPath',
  'TimestampGreaterThanPath',
  'TimestampLessThanEqualsPath',
  'TimestampGreaterThanEqualsPath',
];

/** The `$.x` variables of the Choice rules that compare a time with a timestamp path, nested ones included. */
function timestampVariables(rule: Record<string, unknown>, out: Set<string>): void {
  if (TIMESTAMP_PATH_RULES.some((k) => typeof rule[k] === 'string') && typeof rule.Variable === 'string')
    out.add(rule.Variable);
  for (const r of [...((rule.And ?? rule.Or ?? []) as Record<string, unknown>[]), rule.Not]) {
    if (r && typeof r === 'object') timestampVariables(r as Record<string, unknown>, out);
  }
}

/** The execution's events as they are read, each shown to its clock first. */
async function* observed(
  events: AsyncGenerator<Record<string, unknown>>,
  clock: ExecutionClock,
): AsyncGenerator<Record<string, unknown>> {
  for await (const ev of events) {
    clock.observe(ev);
    yield ev;
  }
}

/** What a Wait state lasts as written: its Seconds, or the number at its SecondsPath in the execution input. */
type WaitLength = { seconds: number } | { path: string };

/**
 * The clock a deadline is compared with in one execution: the wall clock, moved on after each Wait by what the
 * Wait should have lasted less what it did (Retry intervals, shortened too, count as they ran).
 */
class ExecutionClock {
  private ahead = 0;
  private readonly entered = new Map<string, number>();

  constructor(
    private readonly waits: Map<string, WaitLength>,
    private readonly input: unknown,
  ) {}

  now(): number {
    return Date.now() + this.ahead;
  }

  /** Fed every event of the execution, in order. */
  observe(ev: Record<string, unknown>): void {
    const state = ev.state as { name: string; type: string } | undefined;
    if (state?.type !== 'Wait') return;
    const key = `${state.name}#${ev.index ?? ''}`;
    const at = ev.timestamp as number;
    if (ev.type === 'StateEntered') this.entered.set(key, at);
    if (ev.type !== 'StateExited') return;
    const from = this.entered.get(key);
    const length = this.waits.get(state.name);
    this.entered.delete(key);
    if (from === undefined || !length) return;
    const seconds = 'seconds' in length ? length.seconds : readPath(this.input, length.path);
    if (typeof seconds === 'number') this.ahead += Math.max(0, seconds * 1000 - (at - from));
  }
}

/** The context field the rewritten definition reads a deadline comparison's time from. */
const DEADLINE_CLOCK = '$$.State.DeadlineClock';

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

/**
 * The library's ASL check compiles its JSON schema on every call (~0.1 s of CPU), and a test run starts the
 * same three definitions in most files: a definition's validity is a value, so one check per process (processWide)
 * is enough. The files' definitions differ only in their table name (a random suffix per file), which stands in
 * payload templates, as CDK's definitionSubstitutions put it: literals there are free JSON to the ASL schema, so
 * the key blanks them and definitions that differ only there share one check.
 */
function validateOnce(definition: Definition): void {
  // A definition that fails throws out of processWide and is not remembered.
  processWide(`sfn.valid:${JSON.stringify(validityKey(definition))}`, () => {
    new StateMachine(definition as unknown as StateMachineDefinition);
    return true;
  });
}

/** The fields whose object value is a payload template: a key ending in `.$` holds a path, any other a literal. */
const PAYLOAD_TEMPLATES = new Set(['Parameters', 'ResultSelector', 'ItemSelector']);

/** The definition with every string literal of its payload templates blanked (paths and everything else kept). */
export function validityKey(node: unknown, inTemplate = false): unknown {
  if (Array.isArray(node)) return node.map((v) => validityKey(v, inTemplate));
  if (typeof node === 'string') return inTemplate ? '' : node;
  if (typeof node !== 'object' || node === null) return node;
  return Object.fromEntries(
    Object.entries(node).map(([k, v]) => [
      k,
      inTemplate && k.endsWith('.$') ? v : validityKey(v, inTemplate || PAYLOAD_TEMPLATES.has(k)),
    ]),
  );
}

export class LocalStateMachine {
  private readonly scaled: Definition;
  private readonly taskResources = new Map<string, string>();
  private readonly secondsPathWaits = new Map<string, string>();
  /** Each Wait's length as written, for the execution clock. */
  private readonly waitLengths = new Map<string, WaitLength>();
  private readonly timing: Required<Pick<RunnerTiming, 'waitScale' | 'retryScale'>> & RunnerTiming;

  constructor(
    readonly definition: Definition,
    private readonly dispatcher: TaskDispatcher,
    timing: RunnerTiming = {},
    private readonly hooks: RunnerHooks = {},
  ) {
    // Validates the definition as written; the scaled copy below has fractional intervals that the ASL schema
    // would refuse, so it runs unvalidated.
    validateOnce(definition);
    const waitScale = timing.waitScale ?? 1;
    this.timing = { ...timing, waitScale, retryScale: timing.retryScale ?? waitScale };
    // JSON round trip rather than structuredClone: under jest the latter makes objects of another realm,
    // which the library does not recognise as plain objects (and then skips their "x.$" fields).
    this.scaled = JSON.parse(JSON.stringify(definition)) as Definition;
    const deadlineVariables = new Set<string>();
    eachState(this.scaled, (_, s) => {
      if (s.Type === 'Choice')
        for (const rule of s.Choices as Record<string, unknown>[])
          timestampVariables(rule, deadlineVariables);
    });
    eachState(this.scaled, (name, s) => {
      if (s.Type === 'Wait' && typeof s.Seconds === 'number')
        this.waitLengths.set(name, { seconds: s.Seconds });
      if (s.Type === 'Wait' && typeof s.SecondsPath === 'string')
        this.waitLengths.set(name, { path: s.SecondsPath });
      // The step time a deadline rule compares reads the execution clock instead of the wall clock.
      for (const [field, base] of [
        ['ResultSelector', (s.ResultPath as string | undefined) ?? '$'],
        ['Parameters', s.Type === 'Pass' ? ((s.ResultPath as string | undefined) ?? '$') : undefined],
      ] as const) {
        const sel = s[field] as Record<string, unknown> | undefined;
        if (!sel || base === undefined) continue;
        for (const [k, v] of Object.entries(sel))
          if (
            v === '$$.State.EnteredTime' &&
            k.endsWith('.$') &&
            deadlineVariables.has(`${base === '$' ? '$' : base}.${k.slice(0, -2)}`)
          )
            sel[k] = DEADLINE_CLOCK;
      }
      if (s.Type === 'Task') {
        if (this.taskResources.has(name)) throw new Error(`Task state name ${name} is used twice`);
        this.taskResources.set(name, s.Resource as string);
      }
      if (s.Type === 'Wait' && typeof s.Seconds === 'number') s.Seconds = this.waitSeconds(s.Seconds);
      if (s.Type === 'Wait' && typeof s.SecondsPath === 'string')
        this.secondsPathWaits.set(name, s.SecondsPath);
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
    const clock = new ExecutionClock(this.waitLengths, input);
    const exec = machine.run(input as never, {
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
          get DeadlineClock() {
            return new Date(clock.now()).toISOString();
          },
        },
      },
    });
    return {
      result: exec.result as Promise<Json>,
      abort: exec.abort,
      events: observed(exec.eventLogs as unknown as AsyncGenerator<Record<string, unknown>>, clock),
    };
  }
}
