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
    else {
      const took = ((Date.now() - started) / 1000).toFixed(1);
      const body = r.body && typeof r.body === 'object' && Object.keys(r.body).length ? r.body : undefined;
      ctx.out(
        f === 'yaml' ? toYaml(r.body ?? {}) : `reconcile done in ${took} s${body ? `\n${toYaml(body)}` : ''}`,
      );
    }
    return EXIT.ok;
  },
};
