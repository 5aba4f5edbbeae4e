import {
  type Command,
  EXIT,
  format,
  int,
  OUTPUT_OPTION,
  positionals,
  seg,
  str,
  UsageError,
} from '../command';
import { quotaParts } from '../kinds';
import { type Amounts, amounts, type Resource, toJson, toYaml } from '../render';
import { get } from './resources';

/** `quota set|get|delete`: quotas by scope, with `gpus=8,cores=64,memory=512` for amounts. */

const KEYS: Record<string, Resource> = {
  gpus: 'gpus',
  gpu: 'gpus',
  cores: 'cores',
  cpu: 'cores',
  cpus: 'cores',
  memory: 'memoryGb',
  mem: 'memoryGb',
  memorygb: 'memoryGb',
};

/** Parses `gpus=8,cores=64,memory=512Gi`; `none` (limits only) removes a dimension: unlimited. */
export function parseAmounts(text: string, flag: string, allowNone: boolean): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [k, v, ...rest] = part.split('=');
    const key = KEYS[(k ?? '').trim().toLowerCase()];
    if (!key || v === undefined || rest.length) {
      throw new UsageError(`--${flag} takes gpus=N,cores=N,memory=GB; cannot read ${part}`);
    }
    const value = v.trim().toLowerCase();
    if (value === 'none' && allowNone) {
      out[key] = null;
      continue;
    }
    const n = Number(value.replace(/gi?b?$/, ''));
    if (value === '' || !Number.isFinite(n) || n < 0) {
      throw new UsageError(`--${flag} ${key} must be a number ≥ 0${allowNone ? ' or none' : ''}, not ${v}`);
    }
    out[key] = n;
  }
  if (!Object.keys(out).length) throw new UsageError(`--${flag} names no resource`);
  return out;
}

function merge(base: Amounts | undefined, change: Record<string, number | null>): Amounts {
  const out: Amounts = { ...(base ?? {}) };
  for (const [k, v] of Object.entries(change)) {
    if (v === null) delete out[k as Resource];
    else out[k as Resource] = v;
  }
  return out;
}

export const quotaSet: Command = {
  name: 'quota set',
  summary: "Set a scope's guarantee and limit",
  usage: ['quota set SCOPE [--guarantee gpus=N,cores=N,memory=GB] [--limit gpus=N,...] [--replace]'],
  help: `Changes only the dimensions given, keeping the rest of the current quota (read, then written with
If-Match so a concurrent change is not lost). A limit dimension set to none is unlimited; a guarantee
dimension never set is 0.

Options:
  --guarantee AMOUNTS  e.g. gpus=8,cores=64,memory=512 (memory in GiB)
  --limit AMOUNTS      e.g. gpus=16 or gpus=none
  --replace            send exactly what is given, forgetting the current quota
  --if-version N       refuse (409) unless the quota is still at version N
  -o json|yaml         print the quota

Examples:
  llmcap quota set team:ml --guarantee gpus=8,cores=64,memory=512 --limit gpus=16
  llmcap quota set project:chat --limit gpus=none`,
  options: {
    guarantee: { type: 'string' },
    limit: { type: 'string' },
    replace: { type: 'boolean' },
    'if-version': { type: 'string' },
    ...OUTPUT_OPTION,
  },
  async run(ctx) {
    const [scope] = positionals(ctx.args, 1, 1, 'SCOPE (e.g. team:ml)');
    const f = format(ctx.args.values, ['table', 'json', 'yaml']);
    const g = str(ctx.args.values, 'guarantee');
    const l = str(ctx.args.values, 'limit');
    if (g === undefined && l === undefined) throw new UsageError('quota set needs --guarantee or --limit');
    const gChange = g === undefined ? {} : parseAmounts(g, 'guarantee', false);
    const lChange = l === undefined ? {} : parseAmounts(l, 'limit', true);
    const client = await ctx.client();
    const path = `/v1/quotas/${seg(scope!)}`;
    const current = ctx.args.values.replace ? undefined : await client.find(path);
    const now = current ? quotaParts(current) : {};
    const guarantee = merge(now.guarantee, gChange);
    const limit = merge(now.limit, lChange);
    const version = int(ctx.args.values, 'if-version') ?? current?.metadata?.version;
    const r = await client.request(
      'PUT',
      path,
      { guarantee, ...(Object.keys(limit).length ? { limit } : {}) },
      typeof version === 'number' ? { 'if-match': `"${version}"` } : {},
    );
    if (f === 'json') ctx.out(toJson(r.body));
    else if (f === 'yaml') ctx.out(toYaml(r.body));
    else {
      const shown = r.body && typeof r.body === 'object' ? quotaParts(r.body) : { guarantee, limit };
      ctx.out(
        `quota/${scope} set: guarantee ${amounts(shown.guarantee, 'none')}; limit ${amounts(shown.limit, 'none (unlimited)')}`,
      );
    }
    return EXIT.ok;
  },
};

export const quotaGet: Command = {
  name: 'quota get',
  summary: 'Show quotas: all, or those of the scopes named',
  usage: ['quota get [SCOPE...] [-o table|json|yaml]'],
  help: `The same as llmcap get quotas [SCOPE...].

Example:
  llmcap quota get team:ml -o yaml`,
  options: OUTPUT_OPTION,
  run(ctx) {
    return get.run({ ...ctx, args: { ...ctx.args, positionals: ['quotas', ...ctx.args.positionals] } });
  },
};

export const quotaDelete: Command = {
  name: 'quota delete',
  summary: "Remove a scope's quota (its guarantee becomes the sum of its children's)",
  usage: ['quota delete SCOPE...'],
  async run(ctx) {
    const scopes = positionals(ctx.args, 1, Number.POSITIVE_INFINITY, 'SCOPE');
    const client = await ctx.client();
    for (const s of scopes) {
      await client.request('DELETE', `/v1/quotas/${seg(s)}`);
      ctx.out(`quota/${s} deleted`);
    }
    return EXIT.ok;
  },
};

export const QUOTA_COMMANDS = [quotaSet, quotaGet, quotaDelete];
