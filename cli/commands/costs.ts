import { type Command, EXIT, format, int, OUTPUT_OPTION, positionals, str, UsageError } from '../command';
import { table, toJson, toYaml } from '../render';

/** `costs`: what each scope the caller may read costs per hour now and over a period (GET /v1/costs). */

interface CostsBody {
  from: string;
  to: string;
  currency: string;
  samples: number;
  latestAt?: string;
  scopes: { scope: string; perHour: number; cost: number }[];
  computes: {
    compute: string;
    owner?: string;
    nodes: number;
    perHour: number;
    idlePerHour: number;
    cost: number;
    idle: number;
  }[];
  total?: { perHour: number; cost: number };
}

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since 7d` as a start time before `to`; an ISO time is passed as it is. */
function sinceToFrom(since: string, to: Date): string {
  const m = /^(\d+)([mhd])$/.exec(since);
  if (m) return new Date(to.getTime() - Number(m[1]) * UNITS[m[2]!]!).toISOString();
  if (!Number.isNaN(Date.parse(since))) return since;
  throw new UsageError(`--since is a duration such as 30m, 12h or 7d, or an ISO 8601 time, not ${since}`);
}

const money = (x: number) => `$${x.toFixed(x < 10 ? 4 : 2)}`;

export const costs: Command = {
  name: 'costs',
  summary: 'What each scope costs per hour now and over a period, and each compute its idle cost',
  usage: ['costs [SCOPE] [--since 24h|ISO] [--to ISO] [-o table|json|yaml]'],
  help: `A node's price is shared by the replicas on it in proportion to their dominant resource share (the
largest fraction of the node's GPUs, CPU or memory one asks for); what no replica uses is its compute's idle
cost. The reconciler keeps one sample a pass for 35 days; the period is at most 31 days. You see the scopes you
may read; with SCOPE, that scope and those beneath it.

Options:
  --since D   start of the period: a duration back from --to (30m, 12h, 7d) or an ISO 8601 time (default 24h)
  --to T      end of the period, ISO 8601 (default now)

Examples:
  llmcap costs
  llmcap costs team:ml --since 7d`,
  options: {
    since: { type: 'string' },
    to: { type: 'string' },
    buckets: { type: 'string' },
    ...OUTPUT_OPTION,
  },
  async run(ctx) {
    const [scope] = positionals(ctx.args, 0, 1, 'SCOPE');
    const f = format(ctx.args.values);
    const toArg = str(ctx.args.values, 'to');
    const to = toArg ? new Date(toArg) : new Date();
    if (Number.isNaN(to.getTime())) throw new UsageError(`--to is an ISO 8601 time, not ${toArg}`);
    const q = new URLSearchParams({ from: sinceToFrom(str(ctx.args.values, 'since') ?? '24h', to) });
    if (toArg) q.set('to', toArg);
    if (scope) q.set('scope', scope);
    const buckets = int(ctx.args.values, 'buckets');
    if (buckets !== undefined) q.set('buckets', String(buckets));
    const body = (await (await ctx.client()).get<CostsBody>(`/v1/costs?${q}`)).body;
    if (f === 'json' || f === 'yaml') {
      ctx.out(f === 'json' ? toJson(body) : toYaml(body));
      return EXIT.ok;
    }
    const out = [`Costs from ${body.from} to ${body.to} (${body.samples} samples, ${body.currency})`, ''];
    if (!body.scopes.length) out.push('No scope you can read has had replicas on nodes in this period.');
    else
      out.push(
        table(
          ['SCOPE', 'PER HOUR NOW', 'PERIOD'],
          body.scopes.map((s) => [s.scope, money(s.perHour), money(s.cost)]),
        ),
      );
    if (body.computes.length)
      out.push(
        '',
        table(
          ['COMPUTE', 'OWNER', 'NODES', 'PER HOUR', 'IDLE PER HOUR', 'PERIOD', 'IDLE IN PERIOD'],
          body.computes.map((c) => [
            c.compute,
            c.owner ?? '(platform)',
            c.nodes,
            money(c.perHour),
            money(c.idlePerHour),
            money(c.cost),
            money(c.idle),
          ]),
        ),
      );
    if (body.total)
      out.push(
        '',
        `Total: ${money(body.total.perHour)} per hour now, ${money(body.total.cost)} in the period`,
      );
    ctx.out(out.join('\n'));
    return EXIT.ok;
  },
};
