import { type Command, EXIT, format, OUTPUT_OPTION, positionals } from '../command';
import { toJson, toYaml } from '../render';

/** `reconcile`: run a reconcile now (platform admins) and show its summary. */

export const reconcile: Command = {
  name: 'reconcile',
  summary: 'Run a reconcile now and show its summary (platform admins)',
  usage: ['reconcile [-o table|json|yaml]'],
  help: `Admits and places replicas, sizes node groups and starts the workflows that change them, as the
schedule does every minute, and prints what it decided.

Example:
  llmcap reconcile`,
  options: OUTPUT_OPTION,
  async run(ctx) {
    positionals(ctx.args, 0, 0, '');
    const f = format(ctx.args.values);
    const started = Date.now();
    const client = await ctx.client();
    const r = await client.request('POST', '/v1/reconcile');
    if (f === 'json') ctx.out(toJson(r.body ?? {}));
    else if (f === 'yaml') ctx.out(toYaml(r.body ?? {}));
    else ctx.out(summarize(r.body, ((Date.now() - started) / 1000).toFixed(1)));
    return EXIT.ok;
  },
};

interface Summary {
  admission?: { admitted: number; released: number; victims: number; pendingReplicas: number };
  workflows?: { compute: string; kind: string; outcome: string }[];
  atLimit?: string[];
  errors?: string[];
  computes?: { compute: string; status: string; readyNodes: number; neededNodes: number }[];
}

/** The pass in a few lines a person reads at a glance; -o yaml or json shows everything. */
function summarize(body: unknown, took: string): string {
  const s = (body ?? {}) as Summary;
  const lines = [`reconcile done in ${took} s`];
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
  for (const e of s.errors ?? []) lines.push(`error: ${e}`);
  return lines.join('\n');
}
