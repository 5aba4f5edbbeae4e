import type { Client } from '../client';
import {
  type Command,
  type Context,
  EXIT,
  format,
  int,
  OUTPUT_OPTION,
  positionals,
  seg,
  UsageError,
} from '../command';
import { table, toJson, toYaml } from '../render';

/**
 * `reconcile`: queue a reconcile pass (platform admins), follow it with a progress line, and show its summary.
 * The API answers at once with the pass id (a pass can take minutes); the CLI then reads the pass until it
 * has SUCCEEDED or FAILED.
 */

interface Summary {
  admission?: { admitted: number; released: number; victims: number; pendingReplicas: number };
  workflows?: { compute: string; kind: string; outcome: string }[];
  atLimit?: string[];
  errors?: string[];
  computes?: { compute: string; status: string; readyNodes: number; neededNodes: number }[];
  workloads?: { repaired?: { object: string; by: string }[] };
}

export interface Pass {
  id: string;
  state: 'QUEUED' | 'RUNNING' | 'SUCCEEDED' | 'FAILED';
  trigger?: string;
  startedAt?: string;
  queuedAt?: string;
  durationMs?: number;
  error?: string;
  summary?: Summary;
  digest?: { workflows: number; errors: number };
}

const done = (p: Pass) => p.state === 'SUCCEEDED' || p.state === 'FAILED';

/** The server fails a pass that misses its deadline (about 11 minutes at most), so this is only a backstop. */
const MAX_WAIT_MS = 20 * 60_000;
// The first read after 100 ms, then twice as long each time up to a second: a local pass ends in well under
// a second, which a fixed one-second wait always added; a long pass is still read once a second.
const FIRST_POLL_MS = 100;
const POLL_MS = 1000;

export const reconcile: Command = {
  name: 'reconcile',
  summary: 'Run a reconcile pass now, wait for it and show its summary (platform admins)',
  usage: [
    'reconcile [--no-wait] [-o table|json|yaml]',
    'reconcile PASS_ID [-o table|json|yaml]',
    'reconcile --list [--limit N] [-o table|json|yaml]',
  ],
  help: `Admits and places replicas, sizes node groups and starts the workflows that change them, as the
schedule does every minute, and prints what it decided. The API queues the pass and answers with its id; the
CLI shows its progress on stderr (state, seconds waited) until it has SUCCEEDED or FAILED. A request while
a pass is still queued joins that pass; one while a pass runs queues the next.

Options:
  --no-wait      print the pass id and return at once
  PASS_ID        wait for (or show) a pass queued earlier
  --list         the latest passes, newest first (--limit N, default 20, at most 100)

Exit codes of a pass: 0 SUCCEEDED; 3 FAILED (the error is on stderr).

Examples:
  llmcap reconcile
  id=$(llmcap reconcile --no-wait) && llmcap reconcile "$id"
  llmcap reconcile --list --limit 5`,
  options: {
    ...OUTPUT_OPTION,
    'no-wait': { type: 'boolean' },
    list: { type: 'boolean' },
    limit: { type: 'string' },
  },
  async run(ctx) {
    const [id] = positionals(ctx.args, 0, 1, '');
    const f = format(ctx.args.values);
    const v = ctx.args.values;
    const client = await ctx.client();
    if (v.list) {
      if (id) throw new UsageError('--list takes no pass id');
      return list(ctx, client, f, int(v, 'limit'));
    }
    if (v.limit !== undefined) throw new UsageError('--limit goes with --list');
    let pass: Pass;
    if (id) {
      pass = (await client.request<Pass>('GET', `/v1/reconcile/${seg(id)}`)).body;
    } else {
      pass = (await client.request<Pass>('POST', '/v1/reconcile')).body;
      if (v['no-wait']) {
        ctx.out(f === 'table' ? pass.id : f === 'json' ? toJson(pass) : toYaml(pass));
        return EXIT.ok;
      }
    }
    pass = await follow(ctx, client, pass);
    if (!done(pass)) {
      ctx.err(
        `error: reconcile pass ${pass.id} is still ${pass.state} after ${MAX_WAIT_MS / 60_000} minutes; 'llmcap reconcile ${pass.id}' waits again`,
      );
      return EXIT.server;
    }
    if (f === 'json') ctx.out(toJson(pass));
    else if (f === 'yaml') ctx.out(toYaml(pass));
    else if (pass.state === 'SUCCEEDED') ctx.out(summarize(pass));
    if (pass.state === 'FAILED') {
      ctx.err(`error: reconcile pass ${pass.id} FAILED: ${pass.error ?? 'no reason recorded'}`);
      return EXIT.server;
    }
    return EXIT.ok;
  },
};

/**
 * Reads the pass until it ends. On a terminal the progress line is rewritten in place; otherwise (a pipe, a
 * CI log) a line is printed on each change of state and every 30 s while it waits.
 */
async function follow(ctx: Context, client: Client, first: Pass): Promise<Pass> {
  const started = Date.now();
  const tty = process.stderr.isTTY === true;
  const line = (p: Pass) => `reconcile ${p.id}: ${p.state}, ${Math.round((Date.now() - started) / 1000)} s`;
  let pass = first;
  let said = '';
  let lastLine = 0;
  const show = (p: Pass) => {
    if (tty) {
      process.stderr.write(`\r\x1b[2K${line(p)}`);
    } else if (p.state !== said || Date.now() - lastLine >= 30_000) {
      ctx.err(line(p));
      lastLine = Date.now();
    }
    said = p.state;
  };
  show(pass);
  let wait = FIRST_POLL_MS;
  while (!done(pass) && Date.now() - started < MAX_WAIT_MS) {
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, POLL_MS);
    pass = (await client.request<Pass>('GET', `/v1/reconcile/${seg(pass.id)}`)).body;
    show(pass);
  }
  if (tty) process.stderr.write('\n');
  return pass;
}

async function list(ctx: Context, client: Client, f: string, limit: number | undefined): Promise<number> {
  const q = limit === undefined ? '' : `?limit=${limit}`;
  const items = (await client.request<{ items: Pass[] }>('GET', `/v1/reconcile${q}`)).body.items;
  if (f === 'json') ctx.out(toJson({ items }));
  else if (f === 'yaml') ctx.out(toYaml({ items }));
  else
    ctx.out(
      table(
        ['PASS', 'STATE', 'TRIGGER', 'STARTED', 'DURATION', 'WORKFLOWS', 'ERRORS'],
        items.map((p) => [
          p.id,
          p.state,
          p.trigger,
          p.startedAt ?? (p.queuedAt ? `queued ${p.queuedAt}` : undefined),
          p.durationMs === undefined ? undefined : `${(p.durationMs / 1000).toFixed(1)} s`,
          p.digest?.workflows,
          p.state === 'FAILED' ? p.error : p.digest?.errors,
        ]),
      ),
    );
  return EXIT.ok;
}

/** The pass in a few lines a person reads at a glance; -o yaml or json shows everything. */
export function summarize(pass: Pass): string {
  const s = pass.summary ?? {};
  const took = ((pass.durationMs ?? 0) / 1000).toFixed(1);
  const lines = [`reconcile done in ${took} s (pass ${pass.id})`];
  if (s.admission) {
    const a = s.admission;
    lines.push(
      `admission: ${a.admitted} admitted, ${a.released} released, ${a.victims} taken back, ${a.pendingReplicas} replicas pending`,
    );
  }
  const wf = s.workflows ?? [];
  lines.push(
    wf.length
      ? `workflows: ${wf.map((w) => `${w.kind} ${w.compute} (${w.outcome})`).join(', ')}`
      : 'workflows: none needed',
  );
  const busy = (s.computes ?? []).filter((c) => c.neededNodes > 0 || c.status !== 'ABSENT');
  for (const c of busy)
    lines.push(`  ${c.compute}: ${c.status}, ${c.readyNodes} ready of ${c.neededNodes} needed`);
  if (s.atLimit?.length) lines.push(`at limit: ${s.atLimit.join(', ')}`);
  // Someone changed what llmcap runs, and the pass set it back: worth a line, not only a field in -o json.
  const repaired = s.workloads?.repaired ?? [];
  if (repaired.length)
    lines.push(`drift repaired: ${repaired.map((d) => `${d.object} (changed by ${d.by})`).join(', ')}`);
  for (const e of s.errors ?? []) lines.push(`error: ${e}`);
  return lines.join('\n');
}
