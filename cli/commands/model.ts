import {
  type Command,
  type Context,
  EXIT,
  format,
  int,
  num,
  OUTPUT_OPTION,
  positionals,
  seg,
  str,
  UsageError,
} from '../command';
import { kindNamed } from '../kinds';
import { toJson, toYaml } from '../render';
import { waitBudgetMs, waitForModels } from '../watch';
import { printItems } from './resources';

/** `model scale|resources|class|owner`: the catalog verbs that change one field of a model. */

const IF_VERSION = {
  'if-version': { type: 'string' as const },
  wait: { type: 'boolean' as const },
  running: { type: 'boolean' as const },
  timeout: { type: 'string' as const },
};
const IF_VERSION_HELP = `  --if-version N      refuse (409) unless the model is still at version N
  --wait              then wait until the admitter has decided this version, and print the decision
  --running           with --wait: also until every admitted replica has a Ready pod
  --timeout SECONDS   with --wait: give up after this long (default 120, with --running 900): exit code 3`;

async function change(ctx: Context, name: string, sub: string, body: unknown, said: string) {
  const f = format(ctx.args.values, ['table', 'json', 'yaml']);
  const v = int(ctx.args.values, 'if-version');
  const wait = ctx.args.values.wait === true;
  const running = ctx.args.values.running === true;
  if (running && !wait) throw new UsageError(`--running goes with --wait: llmcap model ... --wait --running`);
  const budget = wait ? waitBudgetMs(ctx, running) : 0;
  const client = await ctx.client();
  const r = await client.request(
    'PUT',
    `/v1/models/${seg(name)}/${sub}`,
    body,
    v === undefined ? {} : { 'if-match': `"${v}"` },
  );
  if (f === 'json') ctx.out(toJson(r.body));
  else if (f === 'yaml') ctx.out(toYaml(r.body));
  else {
    ctx.out(`model/${name} ${said}`);
    if (r.body?.metadata) printItems(ctx, kindNamed('model'), [r.body], true);
  }
  // The write is stored as intent; its admission is the admitter's, moments later (apply --wait alike).
  if (!wait || !r.body?.metadata) return EXIT.ok;
  return waitForModels(ctx, client, [r.body], { running, timeoutMs: budget });
}

export const modelScale: Command = {
  name: 'model scale',
  summary: 'Set min, max and target replicas of a model',
  usage: ['model scale NAME --min N --max N [--target N]'],
  help: `Options:
  --min N             replicas started together, all or none (0: scaled to zero, opportunistic)
  --max N             most replicas
  --target N          replicas wanted, between min and max (default: min)
${IF_VERSION_HELP}
  -o json|yaml        print the model

Example:
  llmcap model scale qwen3-8b --min 1 --max 4 --target 2`,
  options: {
    min: { type: 'string' },
    max: { type: 'string' },
    target: { type: 'string' },
    ...IF_VERSION,
    ...OUTPUT_OPTION,
  },
  async run(ctx) {
    const [name] = positionals(ctx.args, 1, 1, 'model NAME');
    const min = int(ctx.args.values, 'min');
    const max = int(ctx.args.values, 'max');
    const target = int(ctx.args.values, 'target');
    if (min === undefined || max === undefined) throw new UsageError('model scale needs --min and --max');
    const body = { min, max, ...(target === undefined ? {} : { target }) };
    return change(ctx, name!, 'scaling', body, `scaled (min ${min}, target ${target ?? min}, max ${max})`);
  },
};

export const modelResources: Command = {
  name: 'model resources',
  summary: 'Set memory and CPU cores of one profile, or of every profile',
  usage: ['model resources NAME --memory GB --cores N [--profile PROFILE]'],
  help: `Options:
  --memory GB         minMemoryGb of each replica
  --cores N           cpuCores of each replica
  --profile PROFILE   only this profile (default: every profile)
${IF_VERSION_HELP}
  -o json|yaml        print the model

Example:
  llmcap model resources llama-3-3-70b --profile l40sx4 --memory 200 --cores 40`,
  options: {
    memory: { type: 'string' },
    cores: { type: 'string' },
    profile: { type: 'string' },
    ...IF_VERSION,
    ...OUTPUT_OPTION,
  },
  async run(ctx) {
    const [name] = positionals(ctx.args, 1, 1, 'model NAME');
    const memoryGb = num(ctx.args.values, 'memory');
    const cpuCores = num(ctx.args.values, 'cores');
    const profile = str(ctx.args.values, 'profile');
    if (memoryGb === undefined || cpuCores === undefined) {
      throw new UsageError('model resources needs --memory and --cores');
    }
    return change(
      ctx,
      name!,
      'resources',
      { ...(profile ? { profile } : {}), memoryGb, cpuCores },
      `resources set (${memoryGb} GiB, ${cpuCores} cores, ${profile ? `profile ${profile}` : 'every profile'})`,
    );
  },
};

/** The classes of lambdas/domain/model.ts, and none to clear it. */
const CLASS_WORDS = ['critical', 'standard', 'opportunistic', 'none'];

export const modelClass: Command = {
  name: 'model class',
  summary: 'Set the class of a model: critical, standard, opportunistic, or none (implied by scaling)',
  usage: ['model class NAME critical|standard|opportunistic|none'],
  help: `A critical model runs only within its owner's guarantee and is never taken back; standard may borrow;
opportunistic may borrow and is displaced first. none clears the class: min ≥ 1 means standard, 0 means
opportunistic.

Options:
${IF_VERSION_HELP}
  -o json|yaml        print the model

Example:
  llmcap model class qwen3-8b critical`,
  options: { ...IF_VERSION, ...OUTPUT_OPTION },
  async run(ctx) {
    const [name, cls] = positionals(ctx.args, 2, 2, 'model NAME and CLASS');
    if (!CLASS_WORDS.includes(cls!))
      throw new UsageError(`CLASS must be one of ${CLASS_WORDS.join(', ')}, not ${cls}`);
    const value = cls === 'none' ? '' : cls!;
    return change(ctx, name!, 'class', { class: value }, value ? `class set to ${value}` : 'class cleared');
  },
};

export const modelOwner: Command = {
  name: 'model owner',
  summary: 'Hand a model to a scope, or make it shared (none)',
  usage: ['model owner NAME SCOPE|none'],
  help: `A model's replicas count against its owner's quota; a shared model (none) counts against no scope.

Options:
${IF_VERSION_HELP}
  -o json|yaml        print the model

Example:
  llmcap model owner qwen3-8b team:ml`,
  options: { ...IF_VERSION, ...OUTPUT_OPTION },
  async run(ctx) {
    const [name, owner] = positionals(ctx.args, 2, 2, 'model NAME and SCOPE (or none)');
    const value = owner === 'none' || owner === '' ? '' : owner!;
    return change(ctx, name!, 'owner', { owner: value }, value ? `owned by ${value}` : 'shared');
  },
};

export const modelWake: Command = {
  name: 'model wake',
  summary: 'Wake an autoscaled model at zero; prints the expected time to Ready',
  usage: ['model wake NAME'],
  help: `Asks for max(min, 1) replicas of a model with spec.autoscaling (what a gateway calls when a request
arrives for a model at zero); the next reconcile pass admits them like a start.

Options:
  -o json|yaml        print the answer

Example:
  llmcap model wake qwen3-8b`,
  options: { ...OUTPUT_OPTION },
  async run(ctx) {
    const [name] = positionals(ctx.args, 1, 1, 'model NAME');
    const f = format(ctx.args.values, ['table', 'json', 'yaml']);
    const client = await ctx.client();
    const r = await client.request('POST', `/v1/models/${seg(name!)}/wake`);
    if (f === 'json') ctx.out(toJson(r.body));
    else if (f === 'yaml') ctx.out(toYaml(r.body));
    else {
      const b = r.body as {
        desiredReplicas: number;
        running: number;
        expectedSecondsToReady: number;
        basis: string;
        compute?: string;
      };
      const eta =
        b.running > 0
          ? `${b.running} replica(s) already serve`
          : `expected Ready in about ${b.expectedSecondsToReady} s (${b.basis === 'observed' ? `node boot, image pull and model load as last seen on ${b.compute}` : 'default node boot, image pull and model load times'})`;
      ctx.out(`model/${name} woken: ${b.desiredReplicas} replica(s) wanted; ${eta}`);
    }
    return EXIT.ok;
  },
};

export const MODEL_COMMANDS = [modelScale, modelResources, modelClass, modelOwner, modelWake];
