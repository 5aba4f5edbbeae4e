import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type Command,
  type Context,
  EXIT,
  EXIT_CODES_HELP,
  GLOBAL_HELP,
  GLOBAL_OPTIONS,
  makeClientFactory,
  type OptionSpec,
  parse,
  UsageError,
} from './command';
import { ALARM_COMMANDS } from './commands/alarm';
import { capacity } from './commands/capacity';
import { makeCompletion } from './commands/completion';
import { consoleCommand } from './commands/console';
import { costs } from './commands/costs';
import { MODEL_COMMANDS } from './commands/model';
import { QUOTA_COMMANDS } from './commands/quota';
import { reconcile } from './commands/reconcile';
import { apply, del, describe, get } from './commands/resources';
import { SCOPE_COMMANDS } from './commands/scope';
import { errorText, exitCodeOf } from './errors';

/** The `llmcap` entry: finds the command in argv, parses its options, runs it, and exits with its code. */

export const COMMANDS: Command[] = [
  apply,
  get,
  describe,
  del,
  ...MODEL_COMMANDS,
  ...QUOTA_COMMANDS,
  ...SCOPE_COMMANDS,
  capacity,
  costs,
  consoleCommand,
  reconcile,
  ...ALARM_COMMANDS,
  makeCompletion(() => COMMANDS),
];

export const GROUPS: Record<string, string> = {
  alarm: "Check that the stage's alarms reach on-call",
  model: 'Change one field of a model: scale, resources, class, owner',
  quota: 'Set, show and remove quotas of scopes',
  scope: 'Create scopes and manage their members',
};

const VERSION = (() => {
  try {
    return JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')).version as string;
  } catch {
    return 'unknown';
  }
})();

function mainHelp(): string {
  const top = COMMANDS.filter((c) => !c.name.includes(' '));
  const rows: [string, string][] = [
    ...top.slice(0, 4).map((c): [string, string] => [c.name, c.summary]),
    ...Object.entries(GROUPS),
    ...top.slice(4).map((c): [string, string] => [c.name, c.summary]),
  ];
  const w = Math.max(...rows.map(([n]) => n.length)) + 3;
  return `llmcap: GPU capacity for self-hosted LLMs on EKS, from the command line.

Usage: llmcap COMMAND [ARGS] [OPTIONS]

Commands:
${rows.map(([n, s]) => `  ${n.padEnd(w)}${s}`).join('\n')}
  ${'version'.padEnd(w)}Print the CLI version

Run 'llmcap COMMAND --help' for a command's options and examples.

The endpoint: --endpoint, else $LLMCAP_ENDPOINT, else the ApiUrl output of --stack / $LLMCAP_STACK, else
the local control plane at http://127.0.0.1:3000. Requests to https endpoints other than localhost are
signed with SigV4 (service execute-api) using the default AWS credential chain; LLMCAP_SIGN=always|never
overrides that.

${GLOBAL_HELP}

${EXIT_CODES_HELP}`;
}

function groupHelp(group: string): string {
  const subs = COMMANDS.filter((c) => c.name.startsWith(`${group} `));
  const w = Math.max(...subs.map((c) => c.name.length)) + 3;
  return `${GROUPS[group]}.

Usage:
${subs.flatMap((c) => c.usage.map((u) => `  llmcap ${u}`)).join('\n')}

Commands:
${subs.map((c) => `  ${c.name.padEnd(w)}${c.summary}`).join('\n')}

Run 'llmcap ${group} COMMAND --help' for its options.`;
}

function commandHelp(c: Command): string {
  return `${c.summary}.

Usage:
${c.usage.map((u) => `  llmcap ${u}`).join('\n')}
${c.help ? `\n${c.help}\n` : ''}
${GLOBAL_HELP}

${EXIT_CODES_HELP}`;
}

/** Options taking a value, so that finding the command word can step over `--endpoint URL get ...`. */
function valueOptions(): Set<string> {
  const s = new Set<string>();
  const add = (opts: Record<string, OptionSpec> | undefined) => {
    for (const [name, o] of Object.entries(opts ?? {})) {
      if (o.type !== 'string') continue;
      s.add(`--${name}`);
      if (o.short) s.add(`-${o.short}`);
    }
  };
  add(GLOBAL_OPTIONS);
  for (const c of COMMANDS) add(c.options);
  return s;
}

/** Indices of the first `n` words that are not options or option values. */
function wordIndices(argv: string[], n: number): number[] {
  const takesValue = valueOptions();
  const out: number[] = [];
  for (let i = 0; i < argv.length && out.length < n; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (a.startsWith('-') && a !== '-') {
      if (takesValue.has(a)) i++;
      continue;
    }
    out.push(i);
  }
  return out;
}

export async function main(argv: string[], io = defaultIo()): Promise<number> {
  const [first, second] = wordIndices(argv, 2);
  const word = first === undefined ? undefined : argv[first];
  const wantsHelp = argv.includes('--help') || argv.includes('-h');
  if (word === undefined || word === 'help') {
    const topic = word === 'help' && second !== undefined ? argv[second] : undefined;
    if (!topic) {
      io.out(mainHelp());
      // No command (`llmcap`, `llmcap --region`) is a usage error; asking for help is not.
      return word === undefined && !wantsHelp ? EXIT.usage : EXIT.ok;
    }
    return main([topic, ...argv.slice((second ?? 0) + 1), '--help'], io);
  }
  if (word === 'version' || argv.includes('--version')) {
    io.out(`llmcap ${VERSION}`);
    return EXIT.ok;
  }
  let name = word;
  const drop = [first!];
  if (GROUPS[word]) {
    const sub = second === undefined ? undefined : argv[second];
    if (sub === undefined || (sub === 'help' && !COMMANDS.some((c) => c.name === `${word} help`))) {
      io.out(groupHelp(word));
      return sub === undefined && !wantsHelp ? EXIT.usage : EXIT.ok;
    }
    name = `${word} ${sub}`;
    drop.push(second!);
  }
  const cmd = COMMANDS.find((c) => c.name === name);
  if (!cmd) {
    const where = GROUPS[word] ? `llmcap ${word} --help` : 'llmcap --help';
    io.err(`error: unknown command ${name}; ${where} lists the commands`);
    return EXIT.usage;
  }
  if (wantsHelp) {
    io.out(commandHelp(cmd));
    return EXIT.ok;
  }
  const rest = argv.filter((_, i) => !drop.includes(i));
  try {
    const args = parse(rest, cmd.options ?? {});
    const ctx: Context = {
      args,
      client: makeClientFactory(args.values),
      out: io.out,
      err: io.err,
      readStdin: io.readStdin,
    };
    return (await cmd.run(ctx)) ?? EXIT.ok;
  } catch (e) {
    io.err(errorText(e));
    if (e instanceof UsageError) io.err(`Run 'llmcap ${cmd.name} --help' for usage.`);
    return exitCodeOf(e);
  }
}

interface Io {
  out(s: string): void;
  err(s: string): void;
  readStdin(): Promise<string>;
}

function defaultIo(): Io {
  return {
    out: (s) => process.stdout.write(`${s}\n`),
    err: (s) => process.stderr.write(`${s}\n`),
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
  };
}

/** Runs the CLI on process.argv and sets the exit code; the launcher (bin/llmcap.js) calls this. */
export function runCli(): void {
  main(process.argv.slice(2)).then(
    (code) => {
      // exitCode, not exit(): output piped to another program must drain first.
      process.exitCode = code;
    },
    (e) => {
      process.stderr.write(`${errorText(e)}\n`);
      process.exitCode = EXIT.server;
    },
  );
}

if (require.main === module) runCli();
