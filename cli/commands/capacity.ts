import { type Command, EXIT, format, OUTPUT_OPTION, positionals, seg, str, UsageError } from '../command';
import { type CapacityRow, capacityItems, type Item, itemsOf } from '../kinds';
import {
  type Amounts,
  amounts,
  BAR_LEGEND,
  bar,
  figures,
  indent,
  RESOURCES,
  type Resource,
  type Row,
  table,
  toJson,
  toYaml,
} from '../render';

/** `capacity`: one row per scope with bars of usage against guarantee and limit, and why replicas wait. */

const TITLES: Record<Resource, string> = { gpus: 'GPUS', cores: 'CORES', memoryGb: 'MEMORY (GiB)' };

function resourcesFrom(word: string | undefined): Resource[] {
  if (word === undefined) return ['gpus'];
  if (word === 'all') return [...RESOURCES];
  const map: Record<string, Resource> = {
    gpus: 'gpus',
    gpu: 'gpus',
    cores: 'cores',
    cpu: 'cores',
    memory: 'memoryGb',
    mem: 'memoryGb',
    memorygb: 'memoryGb',
  };
  return word.split(',').map((w) => {
    const r = map[w.trim().toLowerCase()];
    if (!r) throw new UsageError(`--resource is gpus, cores, memory or all, not ${w}`);
    return r;
  });
}

/** Depth in the tree as far as the rows tell, so children are indented under their parents. */
function depths(rows: CapacityRow[]): Map<string, number> {
  const parent = new Map(rows.map((r) => [r.scope, r.parent]));
  const out = new Map<string, number>();
  for (const r of rows) {
    let d = 0;
    const seen = new Set<string>();
    for (let p = r.parent; p && parent.has(p) && !seen.has(p); p = parent.get(p)) {
      seen.add(p);
      d++;
    }
    out.set(r.scope, d);
  }
  return out;
}

/** Rows in tree order (each parent followed by its subtree) when parents are known; else as given. */
function treeOrder(rows: CapacityRow[]): CapacityRow[] {
  const names = new Set(rows.map((r) => r.scope));
  const kids = new Map<string | undefined, CapacityRow[]>();
  for (const r of rows) {
    const p = r.parent && names.has(r.parent) ? r.parent : undefined;
    kids.set(p, [...(kids.get(p) ?? []), r]);
  }
  const out: CapacityRow[] = [];
  const walk = (p: string | undefined) => {
    for (const r of kids.get(p) ?? []) {
      out.push(r);
      walk(r.scope);
    }
  };
  walk(undefined);
  return out.length === rows.length ? out : rows;
}

function atLimitText(r: CapacityRow): string {
  const which = RESOURCES.filter((k) => r.limit[k] !== undefined && (r.usage[k] ?? 0) >= r.limit[k]!);
  if (which.length) return `yes (${which.map((k) => (k === 'memoryGb' ? 'memory' : k)).join(',')})`;
  return r.atLimit ? 'yes' : 'no';
}

function pendingText(r: CapacityRow): string {
  const parts = Object.entries(r.pending)
    .filter(([, n]) => n > 0)
    .map(([reason, n]) => `${n} ${reason}`);
  return parts.length ? parts.join(', ') : '-';
}

interface Waiting {
  model: string;
  owner: string;
  replicas: number | string;
  reason: string;
  message: string;
}

/** Why each pending replica waits: from the capacity answer if it says, else from the models' status. */
async function waitingReplicas(
  rows: CapacityRow[],
  scoped: boolean,
  models: () => Promise<Item[]>,
): Promise<Waiting[]> {
  const out: Waiting[] = [];
  for (const r of rows) {
    for (const w of r.waiting) {
      out.push({
        model: w.model ?? '-',
        owner: r.scope,
        replicas: w.replicas ?? '?',
        reason: w.reason,
        message: w.message ?? '',
      });
    }
  }
  if (out.length) return out;
  const inView = new Set(rows.map((r) => r.scope));
  let items: Item[] = [];
  try {
    items = await models();
  } catch {
    items = [];
  }
  for (const m of items) {
    const owner = m.metadata?.owner || '';
    // Shared models count against no scope: they show in the whole-cluster view only.
    if (scoped && !inView.has(owner)) continue;
    for (const reason of m.status?.reasons ?? []) {
      out.push({
        model: m.metadata?.name,
        owner: owner || 'shared',
        replicas: reason.replicas ?? '?',
        reason: reason.reason,
        message: reason.message ?? '',
      });
    }
  }
  if (out.length) return out;
  // Counts without words: still say which scope waits for what.
  for (const r of rows) {
    for (const [reason, n] of Object.entries(r.pending)) {
      out.push({ model: '-', owner: r.scope, replicas: n, reason, message: '' });
    }
  }
  return out;
}

/** Anything: a table when it is a list of flat objects, YAML otherwise. */
function generic(value: unknown): string {
  const list: unknown = Array.isArray(value)
    ? value
    : value && typeof value === 'object'
      ? Object.values(value).find((v) => Array.isArray(v))
      : undefined;
  if (
    Array.isArray(list) &&
    list.length &&
    list.every((x) => x && typeof x === 'object' && !Array.isArray(x))
  ) {
    const keys = [...new Set(list.flatMap((x) => Object.keys(x as Item)))].slice(0, 10);
    const show = (v: unknown): string | number | undefined => {
      if (v === undefined || v === null) return undefined;
      if (typeof v === 'object') {
        const a = v as Amounts;
        return RESOURCES.some((r) => typeof a[r] === 'number') ? amounts(a) : JSON.stringify(v);
      }
      return v as string | number;
    };
    const rest =
      !Array.isArray(value) && value && typeof value === 'object'
        ? Object.fromEntries(Object.entries(value).filter(([, v]) => v !== list))
        : {};
    const head = Object.keys(rest).length ? `${toYaml(rest)}\n` : '';
    return (
      head +
      table(
        keys.map((k) => k.replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase()),
        list.map((x) => keys.map((k) => show((x as Item)[k])) as Row),
      )
    );
  }
  return toYaml(value);
}

/** `--consolidation`: the plan before it acts, as GET /v1/capacity?consolidation=true answers it. */
function consolidationText(body: Item): string {
  const money = (x: number) => `$${Number(x).toFixed(4)}/h`;
  const out = [
    `Now ${money(body.currentPerHour)}; placed afresh ${money(body.plannedPerHour)}: saves ${money(body.savingPerHour)} (acts at ${money(body.thresholdPerHour)} or more).`,
    !body.acts
      ? 'Consolidation does not act: the saving is below the threshold, or nothing would move.'
      : body.enabled === false
        ? 'Consolidation would act, but it is off for this stage (consolidation.enabled in the stage config): nothing moves.'
        : 'Consolidation acts: each model moves one replica at a time, the new one Ready before the old one goes.',
  ];
  // One row per (model, from, to), with how many replicas.
  const group = (moves: Item[]) => {
    const rows = new Map<string, Row>();
    for (const m of moves) {
      const key = `${m.model}\t${m.from}\t${m.to}`;
      const row = rows.get(key) ?? [m.model, m.owner ?? 'shared', m.from, m.to, 0];
      row[4] = Number(row[4]) + 1;
      rows.set(key, row);
    }
    return [...rows.values()];
  };
  const head = ['MODEL', 'OWNER', 'FROM', 'TO', 'REPLICAS'];
  if (body.moves?.length) out.push('', 'Moves:', indent(table(head, group(body.moves))));
  if (body.inFlight?.length) out.push('', 'Moving now:', indent(table(head, group(body.inFlight))));
  if (body.held?.length)
    out.push(
      '',
      'Held where they are:',
      indent(
        table(
          ['MODEL', 'OWNER', 'REPLICAS', 'WHY'],
          body.held.map((h: Item) => [h.model, h.owner ?? 'shared', h.replicas, h.reason]),
        ),
      ),
    );
  if (body.nodes?.length)
    out.push(
      '',
      'Nodes:',
      indent(
        table(
          ['COMPUTE', 'NOW', 'AFTER', 'PER NODE'],
          body.nodes.map((n: Item) => [n.compute, n.before, n.after, money(n.perHour)]),
        ),
      ),
    );
  const o = body.others ?? {};
  const hidden = [
    o.moves ? `${o.moves} move(s)` : '',
    o.inFlight ? `${o.inFlight} moving now` : '',
    o.held ? `${o.held} held model(s)` : '',
    o.computes ? `${o.computes} compute(s)` : '',
  ].filter(Boolean);
  if (hidden.length) out.push('', `And ${hidden.join(', ')} of scopes you cannot read.`);
  return out.join('\n');
}

export const capacity: Command = {
  name: 'capacity',
  summary: 'Capacity at a glance: usage against guarantee and limit per scope, and why replicas wait',
  usage: [
    'capacity [SCOPE] [--resource gpus|cores|memory|all] [-o table|json|yaml]',
    'capacity --consolidation [-o table|json|yaml]',
  ],
  help: `One row per scope (children indented under their parents): a bar of usage against guarantee and
limit, the figures used/guaranteed/limit (∞: no limit), whether the scope is at its limit, and its
pending replicas by reason; then each pending replica with the reason it waits, and the cluster headroom.

Bars: ${BAR_LEGEND}
      the bar is scaled to the limit; '>' after it means no limit, '!' means over the limit.

Options:
  --resource R   gpus (default), cores, memory, a comma-separated list, or all
  --width N      bar width in characters (default 16, or 10 with several resources)
  --consolidation
                 what consolidation would move to a cheaper placement, before it acts: the saving
                 per hour, the moves, the nodes freed (moves of scopes you cannot read are counted)
  -o json|yaml   the API's answer as it is

Examples:
  llmcap capacity
  llmcap capacity team:ml --resource all
  llmcap capacity --consolidation`,
  options: {
    resource: { type: 'string' },
    width: { type: 'string' },
    consolidation: { type: 'boolean' },
    ...OUTPUT_OPTION,
  },
  async run(ctx) {
    const [scope] = positionals(ctx.args, 0, 1, 'SCOPE');
    const f = format(ctx.args.values);
    const resources = resourcesFrom(str(ctx.args.values, 'resource'));
    const w = str(ctx.args.values, 'width');
    const barWidth = w === undefined ? (resources.length > 1 ? 10 : 16) : Number(w);
    if (!Number.isInteger(barWidth) || barWidth < 4 || barWidth > 80) {
      throw new UsageError(`--width must be a whole number from 4 to 80, not ${w}`);
    }
    const client = await ctx.client();
    if (ctx.args.values.consolidation === true) {
      if (scope) throw new UsageError('--consolidation shows the whole cluster: leave SCOPE out');
      const plan = (await client.get('/v1/capacity?consolidation=true')).body;
      ctx.out(f === 'json' ? toJson(plan) : f === 'yaml' ? toYaml(plan) : consolidationText(plan as Item));
      return EXIT.ok;
    }
    const body = (await client.get(scope ? `/v1/capacity/${seg(scope)}` : '/v1/capacity')).body;
    if (f === 'json') {
      ctx.out(toJson(body));
      return EXIT.ok;
    }
    if (f === 'yaml') {
      ctx.out(toYaml(body));
      return EXIT.ok;
    }
    const rows = treeOrder(capacityItems(body));
    const depth = depths(rows);
    const out: string[] = [];
    if (!rows.length) out.push('No scopes with quotas or usage.');
    else {
      out.push(
        table(
          [
            'SCOPE',
            ...resources.map((r) => `${TITLES[r]} used/guaranteed/limit`),
            'BORROWED',
            'AT LIMIT',
            'PENDING',
          ],
          rows.map((r) => [
            '  '.repeat(depth.get(r.scope) ?? 0) + r.scope,
            ...resources.map((k) => {
              const u = r.usage[k] ?? 0;
              const g = r.guarantee[k] ?? 0;
              const l = r.limit[k];
              return `${bar(u, g, l, barWidth)} ${figures(u, g, l)}`;
            }),
            amounts(
              Object.fromEntries(Object.entries(r.borrowed).filter(([, v]) => Number(v) > 0)) as Amounts,
              '-',
            ),
            atLimitText(r),
            pendingText(r),
          ]),
        ),
        '',
        BAR_LEGEND,
      );
    }
    const waiting = await waitingReplicas(rows, !!scope, async () =>
      itemsOf((await client.list('/v1/models')).body),
    );
    if (waiting.length) {
      out.push(
        '',
        'Pending replicas:',
        indent(
          table(
            ['MODEL', 'OWNER', 'REPLICAS', 'REASON', 'WHY'],
            waiting.map((x) => [x.model, x.owner, x.replicas, x.reason, x.message]),
          ),
        ),
      );
    } else if (rows.length) {
      out.push('', 'No replicas are pending.');
    }
    const cluster = (body as Item | undefined)?.cluster ?? (body as Item | undefined)?.headroom;
    if (cluster !== undefined) out.push('', 'Cluster headroom:', indent(generic(cluster)));
    ctx.out(out.join('\n'));
    return EXIT.ok;
  },
};
