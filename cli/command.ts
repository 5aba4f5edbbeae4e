import { parseArgs } from 'node:util';
import { Client, normalizeEndpoint, resolveEndpoint, shouldSign } from './client';

/** What every command is made of, the options every command accepts, and the exit codes scripts rely on. */

export const EXIT = {
  ok: 0,
  /** Bad flags or arguments, an unreadable manifest, or local configuration (credentials, region, stack). */
  usage: 1,
  /** The API refused the request (4xx other than 404): invalid input, forbidden, conflict. */
  refused: 2,
  /** A server error (5xx), a network failure, or anything unexpected. */
  server: 3,
  /** The resource does not exist (404). */
  notFound: 4,
} as const;

export const EXIT_CODES_HELP = `Exit codes:
  0  success
  1  usage error: bad flags or arguments, an unreadable or invalid manifest, missing credentials/region
  2  the API refused the request (400, 401, 403, 409, 413: anything 4xx but 404)
  3  server error (5xx), network failure or timeout
  4  not found (404)
  When several resources are processed (apply, delete), the code is that of the first failure.`;

export class UsageError extends Error {
  override name = 'UsageError';
}

export type OptionSpec = { type: 'string' | 'boolean'; short?: string; multiple?: boolean };

export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  endpoint: { type: 'string' },
  stack: { type: 'string' },
  region: { type: 'string' },
  as: { type: 'string' },
  timeout: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};

export const GLOBAL_HELP = `Global options:
  --endpoint URL     the API (default: $LLMCAP_ENDPOINT, else --stack, else http://127.0.0.1:3000)
  --stack NAME       read the endpoint from the ApiUrl output of this CloudFormation stack ($LLMCAP_STACK)
  --region REGION    AWS region for signing and for --stack (default: from the endpoint host, $AWS_REGION)
  --as PRINCIPAL     local control plane only: act as this IAM principal ARN, e.g.
                     arn:aws:iam::000000000000:user/chat-dev; a role ARN acts as a session of it
                     ($LLMCAP_PRINCIPAL; default arn:aws:iam::000000000000:user/local-admin)
  --timeout SECONDS  give up on a request after this long (default 60)
  -h, --help         help for the command`;

export const OUTPUT_OPTION: Record<string, OptionSpec> = { output: { type: 'string', short: 'o' } };

export type Values = Record<string, string | boolean | string[] | undefined>;

export interface Args {
  values: Values;
  positionals: string[];
}

export interface Context {
  args: Args;
  client(): Promise<Client>;
  out(text: string): void;
  err(text: string): void;
  readStdin(): Promise<string>;
}

export interface Command {
  /** `get`, or `model scale` for a group's subcommand. */
  name: string;
  summary: string;
  /** Synopsis lines, without the leading `llmcap`. */
  usage: string[];
  /** Options and examples, shown by --help. */
  help?: string;
  options?: Record<string, OptionSpec>;
  run(ctx: Context): Promise<number | undefined>;
}

export function parse(argv: string[], options: Record<string, OptionSpec>): Args {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...GLOBAL_OPTIONS, ...options },
      allowPositionals: true,
      strict: true,
    });
    return { values: values as Values, positionals };
  } catch (e) {
    // node's messages name the option; drop its advice about '--' which rarely helps here.
    throw new UsageError((e as Error).message.replace(/ To specify a positional argument.*$/s, ''));
  }
}

export function str(v: Values, name: string): string | undefined {
  const x = v[name];
  return typeof x === 'string' ? x : undefined;
}

export function list(v: Values, name: string): string[] {
  const x = v[name];
  return Array.isArray(x) ? x : typeof x === 'string' ? [x] : [];
}

export function int(v: Values, name: string): number | undefined {
  const s = str(v, name);
  if (s === undefined) return undefined;
  if (!/^\d+$/.test(s)) throw new UsageError(`--${name} must be a whole number, not ${s}`);
  return Number(s);
}

export function num(v: Values, name: string): number | undefined {
  const s = str(v, name);
  if (s === undefined) return undefined;
  const n = Number(s);
  if (s.trim() === '' || !Number.isFinite(n)) throw new UsageError(`--${name} must be a number, not ${s}`);
  return n;
}

export type Format = 'table' | 'wide' | 'json' | 'yaml' | 'name';

export function format(v: Values, allowed: Format[] = ['table', 'json', 'yaml']): Format {
  const f = (str(v, 'output') ?? 'table') as Format;
  if (!allowed.includes(f)) throw new UsageError(`-o must be one of ${allowed.join(', ')}, not ${f}`);
  return f;
}

/** Path segments are encoded: principals are ARNs with ':' and '/'; scopes have ':'. */
export const seg = (s: string) => encodeURIComponent(s);

export function positionals(args: Args, min: number, max: number, what: string): string[] {
  const p = args.positionals;
  if (p.length < min) throw new UsageError(`missing ${what}`);
  if (p.length > max) throw new UsageError(`unexpected argument ${p[max]}`);
  return p;
}

export function makeClientFactory(values: Values): () => Promise<Client> {
  let client: Promise<Client> | undefined;
  return () => {
    client ??= (async () => {
      const region = str(values, 'region');
      const endpoint = normalizeEndpoint(
        await resolveEndpoint({ endpoint: str(values, 'endpoint'), stack: str(values, 'stack'), region }),
      );
      const timeout = str(values, 'timeout') ?? process.env.LLMCAP_TIMEOUT;
      const seconds = timeout === undefined ? 60 : Number(timeout);
      if (!Number.isFinite(seconds) || seconds <= 0) {
        throw new UsageError(`--timeout must be a positive number of seconds, not ${timeout}`);
      }
      const sign = shouldSign(endpoint);
      const principal = str(values, 'as') ?? process.env.LLMCAP_PRINCIPAL;
      if (sign && str(values, 'as')) {
        process.stderr.write(
          'warning: --as is ignored by a deployed API: the identity is the AWS principal that signs\n',
        );
      }
      return new Client({ endpoint, sign, region, principal, timeoutMs: seconds * 1000 });
    })();
    return client;
  };
}
