import { isDeepStrictEqual } from 'node:util';
import { ApiError, type Client, DEFAULT_CHUNK_SIZE, MAX_CHUNK_SIZE } from '../client';
import {
  type Command,
  type Context,
  EXIT,
  format,
  int,
  list,
  OUTPUT_OPTION,
  positionals,
  seg,
  str,
  UsageError,
} from '../command';
import { errorText, exitCodeOf } from '../errors';
import {
  eventLines,
  type Item,
  itemPath,
  itemsOf,
  KINDS,
  type Kind,
  kindNamed,
  membersOf,
  nameOf,
} from '../kinds';
import { applyOrder, deleteOrder, type Manifest, readManifests } from '../manifests';
import { table, toJson, toYaml, toYamlStream } from '../render';
import { intervalMs, waitBudgetMs, waitForModels, watchList } from '../watch';

/** The kubectl-style verbs over every kind: get, describe, delete, apply. */

const KIND_LIST = KINDS.map((k) => k.plural).join(', ');

/** Prints items in the chosen format; a single named item is printed bare in json and yaml. */
export function printItems(ctx: Context, kind: Kind, items: Item[], single: boolean): void {
  const f = format(ctx.args.values, ['table', 'wide', 'json', 'yaml', 'name']);
  if (f === 'json') ctx.out(toJson(single ? items[0] : { items }));
  else if (f === 'yaml') ctx.out(single ? toYaml(items[0]) : toYamlStream(items));
  else if (f === 'name') ctx.out(items.map((i) => `${kind.name}/${nameOf(i)}`).join('\n'));
  else if (!items.length) ctx.err(`No ${kind.plural} found.`);
  else {
    const wide = f === 'wide';
    ctx.out(
      table(
        kind.columns(wide),
        items.map((i) => kind.row(i, wide)),
      ),
    );
  }
}

/** Runs `fn` for each name; failures are printed and the first one's exit code is returned. */
async function each<T>(ctx: Context, things: T[], label: (t: T) => string, fn: (t: T) => Promise<void>) {
  let code: number = EXIT.ok;
  for (const t of things) {
    try {
      await fn(t);
    } catch (e) {
      ctx.err(errorText(e, label(t)));
      if (code === EXIT.ok) code = exitCodeOf(e);
    }
  }
  return code;
}

/**
 * `--chunk-size N`: items per page of a list, as kubectl's flag. The API has no unlimited answer (one answer is
 * capped at 6 MB), so kubectl's 0 has no meaning here and is refused rather than quietly paged anyway.
 */
function chunkSize(ctx: Context): number {
  const n = int(ctx.args.values, 'chunk-size');
  if (n === undefined) return DEFAULT_CHUNK_SIZE;
  if (n < 1 || n > MAX_CHUNK_SIZE)
    throw new UsageError(
      `--chunk-size must be 1 to ${MAX_CHUNK_SIZE} items per request, not ${n}; the API always answers a list in pages, so there is no 0 (one request)`,
    );
  return n;
}

const CHUNK_HELP = `  --chunk-size N         items per request when listing (1 to ${MAX_CHUNK_SIZE}, default ${DEFAULT_CHUNK_SIZE}); every page
                         is read and printed as one list`;

/** `get pods` narrows the list with these, each a query parameter of GET /v1/pods. */
const POD_FILTERS = ['model', 'compute', 'node', 'namespace', 'ready'] as const;

export const get: Command = {
  name: 'get',
  summary: 'List resources, or show some by name',
  usage: [
    'get KIND [NAME...] [--owner SCOPE] [-o table|wide|json|yaml|name] [--chunk-size N]',
    'get pods [NAME...] [--model M] [--compute C] [--node N] [-n NAMESPACE] [--ready true|false]',
    'get KIND [NAME...] -w [--interval SECONDS]',
  ],
  help: `KIND is one of ${KIND_LIST} (singular or plural; also co, mo, sc, q, po).

Pods are the model servers llmcap runs, as the reconciler last observed them (its latest pass): the API
reads no cluster. STATUS is the phase of a Ready pod, else why it does not serve (Unschedulable,
CrashLoopBackOff, Unready, Starting); -o wide adds the pod's own message and when it was observed.

Options:
  -o, --output FORMAT    table (default), wide (more columns), json, yaml (a multi-document stream that
                         apply -f accepts), name (kind/name per line)
  --owner SCOPE          computes and models: the one owned by SCOPE (or shared), when you see two of NAME
  --model NAME           pods only: those of this model
  --compute NAME         pods only: those placed on this compute
  --node NAME            pods only: those on this node
  -n, --namespace NAME   pods only: those in this namespace
  --ready true|false     pods only: the Ready ones, or those that do not serve
  -w, --watch            after the list, print each row again whenever it changes (a row that goes is
                         printed once more, marked <deleted>), until Ctrl-C; the API is polled, and a poll
                         that finds nothing new is a 304 with no body
  --interval SECONDS     with -w: how often to poll (default 2)
${CHUNK_HELP}

Examples:
  llmcap get computes
  llmcap get model qwen3-8b -o yaml
  llmcap get computes -o yaml > computes.yaml && llmcap apply -f computes.yaml
  llmcap get pods --model qwen3-8b -o wide
  llmcap get pods --ready false
  llmcap get models -w
  llmcap get pods --model qwen3-8b -w`,
  options: {
    ...OUTPUT_OPTION,
    owner: { type: 'string' },
    model: { type: 'string' },
    compute: { type: 'string' },
    node: { type: 'string' },
    namespace: { type: 'string', short: 'n' },
    ready: { type: 'string' },
    watch: { type: 'boolean', short: 'w' },
    interval: { type: 'string' },
    'chunk-size': { type: 'string' },
  },
  async run(ctx) {
    const [kindWord, ...names] = positionals(ctx.args, 1, Number.POSITIVE_INFINITY, `KIND (${KIND_LIST})`);
    const kind = kindNamed(kindWord!);
    format(ctx.args.values, ['table', 'wide', 'json', 'yaml', 'name']);
    const filters = POD_FILTERS.filter((f) => str(ctx.args.values, f) !== undefined);
    if (kind.name !== 'pod' && filters.length)
      throw new UsageError(`--${filters[0]} narrows pods only: llmcap get pods --${filters[0]} ...`);
    const ready = str(ctx.args.values, 'ready');
    if (ready !== undefined && ready !== 'true' && ready !== 'false')
      throw new UsageError(`--ready must be true or false, not ${ready}`);
    const watching = ctx.args.values.watch === true;
    const interval = intervalMs(ctx);
    const chunk = chunkSize(ctx);
    if (!watching && str(ctx.args.values, 'interval') !== undefined)
      throw new UsageError('--interval goes with -w: llmcap get KIND -w --interval SECONDS');
    const client = await ctx.client();
    if (watching) {
      if (names.length && kind.listOnly && kind.name !== 'pod')
        throw new UsageError(`${kind.plural} can only be listed: llmcap get ${kind.plural} -w`);
      const q = new URLSearchParams(filters.map((f): [string, string] => [f, str(ctx.args.values, f)!]));
      const owner = str(ctx.args.values, 'owner');
      const wanted = new Set(names);
      // Names and --owner pick rows of the list, so one poll covers them all.
      const pick = (items: Item[]) =>
        items.filter(
          (i) =>
            (!wanted.size || wanted.has(nameOf(i))) &&
            (owner === undefined || (i.metadata?.owner || 'shared') === owner),
        );
      const f = format(ctx.args.values, ['table', 'wide', 'json', 'yaml', 'name']);
      const path = `${kind.path}${filters.length ? `?${q}` : ''}`;
      await watchList(ctx, client, kind, path, f, pick, interval, chunk);
      return EXIT.ok;
    }
    if (kind.name === 'pod') return getPods(ctx, client, kind, names, filters, chunk);
    if (!names.length) {
      const items = itemsOf((await client.list(kind.path, chunk)).body);
      printItems(ctx, kind, items, false);
      return EXIT.ok;
    }
    if (kind.listOnly) throw new UsageError(`${kind.plural} can only be listed: llmcap get ${kind.plural}`);
    const items: Item[] = [];
    const code = await each(
      ctx,
      names,
      (n) => `${kind.name}/${n}`,
      async (n) => {
        items.push((await client.get(itemPath(kind, n, str(ctx.args.values, 'owner')))).body);
      },
    );
    if (items.length) printItems(ctx, kind, items, names.length === 1);
    return code;
  },
};

/**
 * `get pods`: one read of GET /v1/pods with the filters; names pick pods from that list (there is no item
 * route), and a name not in it is reported like a missing resource.
 */
async function getPods(
  ctx: Context,
  client: Client,
  kind: Kind,
  names: string[],
  filters: readonly (typeof POD_FILTERS)[number][],
  chunk: number,
): Promise<number> {
  const q = new URLSearchParams(filters.map((f): [string, string] => [f, str(ctx.args.values, f)!]));
  const path = `${kind.path}${filters.length ? `?${q}` : ''}`;
  const body = (await client.list(path, chunk)).body as Item | undefined;
  let items = itemsOf(body);
  let code: number = EXIT.ok;
  if (names.length) {
    const wanted = new Set(names);
    items = items.filter((i) => wanted.has(nameOf(i)));
    for (const n of names) {
      if (items.some((i) => nameOf(i) === n)) continue;
      ctx.err(`error: pod/${n}: not found among the pods llmcap last observed`);
      code = EXIT.notFound;
    }
    if (!items.length) return code;
  }
  if (body?.message && !items.length) {
    ctx.err(String(body.message));
    return code;
  }
  printItems(ctx, kind, items, false);
  for (const t of body?.truncated ?? [])
    ctx.err(`note: model ${t.model} has ${t.total} pods; the list holds the first ${t.shown}`);
  return code;
}

export const describe: Command = {
  name: 'describe',
  summary: 'Explain resources in words: status, placements, why replicas wait',
  usage: ['describe KIND [NAME...] [--owner SCOPE] [--chunk-size N]'],
  help: `KIND is one of computes, models, scopes, quotas. Without NAME, every resource of the kind.

A compute or model ends with its recent events, newest first (kept 7 days): admission decisions (Admitted,
Released, a reason to wait such as Queued or OverQuota), take-backs, drift repaired, workflows started or
refused, failures. A repeat is counted: AGE reads "3m (x5 over 1h)".

Options:
  --owner SCOPE          computes and models: the one owned by SCOPE (or shared), when you see two of NAME
${CHUNK_HELP}

Examples:
  llmcap describe compute gpu-l4-1x
  llmcap describe model llama-3-3-70b`,
  options: { owner: { type: 'string' }, 'chunk-size': { type: 'string' } },
  async run(ctx) {
    const [kindWord, ...names] = positionals(ctx.args, 1, Number.POSITIVE_INFINITY, 'KIND');
    const kind = kindNamed(kindWord!);
    if (!kind.describe)
      throw new UsageError(`${kind.plural} cannot be described; try llmcap get ${kind.plural}`);
    const client = await ctx.client();
    const items: Item[] = [];
    let code: number = EXIT.ok;
    if (!names.length) items.push(...itemsOf((await client.list(kind.path, chunkSize(ctx))).body));
    else {
      code = await each(
        ctx,
        names,
        (n) => `${kind.name}/${n}`,
        async (n) => {
          items.push((await client.get(itemPath(kind, n, str(ctx.args.values, 'owner')))).body);
        },
      );
    }
    const texts: string[] = [];
    for (const i of items) {
      const text = await kind.describe!(i, client);
      if (!kind.events) {
        texts.push(text);
        continue;
      }
      // The item's own owner says which of two of its name, as --owner would.
      const owner = str(ctx.args.values, 'owner') ?? (i.metadata?.owner || undefined);
      const events = await client.get(itemPath(kind, nameOf(i), owner, '/events'));
      texts.push(`${text}\n\n${eventLines(itemsOf(events.body))}`);
    }
    if (texts.length) ctx.out(texts.join('\n\n'));
    else if (!names.length) ctx.err(`No ${kind.plural} found.`);
    return code;
  },
};

export const del: Command = {
  name: 'delete',
  summary: 'Delete resources by name, or those a manifest names',
  usage: [
    'delete KIND NAME... [--owner SCOPE] [--ignore-not-found]',
    'delete -f FILE|DIR|- [--ignore-not-found]',
  ],
  help: `KIND is one of computes, models, scopes, quotas. With -f, the manifests' resources are deleted in the
reverse of apply's order (models before computes, child scopes before parents).

A compute with a node group is deleted in the background: the API answers 202 and the compute shows
DELETING until the node group is gone.

Options:
  -f, --filename FILE    manifests to delete (repeatable; - is stdin; a directory means its *.yaml/json);
                         a manifest's metadata.owner says whose, as --owner does
  --owner SCOPE          computes and models: the one owned by SCOPE (or shared), when you see two of NAME
  --ignore-not-found     a resource that does not exist is not an error

Examples:
  llmcap delete compute cpu-tiny
  llmcap delete -f team-ml.yaml`,
  options: {
    filename: { type: 'string', short: 'f', multiple: true },
    owner: { type: 'string' },
    'ignore-not-found': { type: 'boolean' },
  },
  async run(ctx) {
    const files = list(ctx.args.values, 'filename');
    const ignore = ctx.args.values['ignore-not-found'] === true;
    let targets: { kind: Kind; name: string; owner?: string }[];
    if (files.length) {
      if (ctx.args.positionals.length) throw new UsageError('give either -f FILE or KIND NAME..., not both');
      const ms = deleteOrder(await readManifests(files, ctx.readStdin));
      targets = ms.map((m) => ({ kind: kindNamed(m.kind), name: m.name, owner: ownerOf(m) }));
    } else {
      const [kindWord, ...names] = positionals(ctx.args, 2, Number.POSITIVE_INFINITY, 'KIND and NAME');
      const kind = kindNamed(kindWord!);
      if (!kind.deletable) throw new UsageError(`${kind.plural} cannot be deleted`);
      const owner = str(ctx.args.values, 'owner');
      targets = names.map((name) => ({ kind, name, ...(owner ? { owner } : {}) }));
    }
    const client = await ctx.client();
    return each(
      ctx,
      targets,
      (t) => `${t.kind.name}/${t.name}`,
      async (t) => {
        try {
          const r = await client.request('DELETE', itemPath(t.kind, t.name, t.owner));
          ctx.out(
            r.status === 202
              ? `${t.kind.name}/${t.name} deletion requested (its node group is being deleted)`
              : `${t.kind.name}/${t.name} deleted`,
          );
        } catch (e) {
          if (ignore && e instanceof ApiError && e.status === 404) return;
          throw e;
        }
      },
    );
  },
};

export const apply: Command = {
  name: 'apply',
  summary: 'Create or update resources from manifests (YAML or JSON)',
  usage: [
    'apply -f FILE|DIR|- [-f ...] [--dry-run]',
    'apply -f FILE|DIR|- --wait [--running] [--timeout SECONDS]',
  ],
  help: `Applies computes, models, scopes and quotas in dependency order: scopes (parents first), quotas
(parents first), computes, then models (fallbacks first). Each resource is reported as created,
configured or unchanged (a manifest that is what is stored writes nothing: no new version); a failure
is reported and the others are still applied. A metadata.version in any manifest makes its write
conditional: 409 if the resource changed since (so a stale \`get -o yaml\` cannot overwrite a newer one).

  Compute, Model   PUT /v1/computes|models/NAME (create or replace)
  Scope            POST /v1/scopes {name, parent: spec.parent} when missing; then, if spec.members is
                   given ([{principal, role}] or {principal: role}), PUT /v1/scopes/NAME/members sets
                   them all in one write: members it no longer lists are removed
  Quota            PUT /v1/quotas/SCOPE {guarantee, limit} from spec (metadata.name is the scope)

Options:
  -f, --filename FILE  manifests (repeatable; - is stdin; a directory means its *.yaml, *.yml, *.json)
  --dry-run            send each write with ?dryRun=All: the server validates and decides (for a model:
                       what it would be admitted, borrow, wait for, and take back) and writes nothing
  --wait               then wait until every model applied is decided: its status is of the version
                       applied and no replica is still Queued for admission; a progress line on stderr
                       each time a model's state changes (computes, scopes and quotas are decided when
                       written)
  --running            with --wait: also until every admitted replica has a Ready pod (GET /v1/pods)
  --timeout SECONDS    with --wait: give up after this long (default 120, with --running 900): exit code
                       3 and a line naming what is still waiting and for what

Example manifest (team-ml.yaml):
  apiVersion: llmcap/v1
  kind: Scope
  metadata: {name: team:ml}
  spec:
    parent: org:acme
    members: [{principal: "arn:aws:iam::123456789012:role/ml-leads", role: admin}]
  ---
  apiVersion: llmcap/v1
  kind: Quota
  metadata: {name: team:ml}
  spec: {guarantee: {gpus: 8, cores: 64, memoryGb: 512}, limit: {gpus: 16}}

Examples:
  llmcap apply -f team-ml.yaml
  cat compute.json | llmcap apply -f -
  llmcap apply -f chat.yaml --wait --running --timeout 600`,
  options: {
    filename: { type: 'string', short: 'f', multiple: true },
    'dry-run': { type: 'boolean' },
    wait: { type: 'boolean' },
    running: { type: 'boolean' },
  },
  async run(ctx) {
    const files = list(ctx.args.values, 'filename');
    if (!files.length) throw new UsageError('apply needs -f FILE (or -f - for stdin)');
    if (ctx.args.positionals.length) throw new UsageError(`unexpected argument ${ctx.args.positionals[0]}`);
    const ms = applyOrder(await readManifests(files, ctx.readStdin));
    if (!ms.length) {
      ctx.err('No manifests found.');
      return EXIT.ok;
    }
    const label = (m: Manifest) => `${m.kind.toLowerCase()}/${m.name}`;
    const dryRun = ctx.args.values['dry-run'] === true;
    const wait = ctx.args.values.wait === true;
    const running = ctx.args.values.running === true;
    if (running && !wait)
      throw new UsageError('--running goes with --wait: llmcap apply -f FILE --wait --running');
    if (wait && dryRun)
      throw new UsageError('--wait waits for what was applied; a --dry-run applies nothing');
    const budget = wait ? waitBudgetMs(ctx, running) : 0;
    const client = await ctx.client();
    const models: Item[] = [];
    const code = await each(ctx, ms, label, async (m) => {
      const outcome = await applyOne(client, m, dryRun, (item) => {
        if (m.kind === 'Model') models.push(item);
      });
      ctx.out(`${label(m)} ${outcome}${dryRun ? ' (dry run)' : ''}`);
    });
    if (!wait || !models.length) return code;
    const waited = await waitForModels(ctx, client, models, { running, timeoutMs: budget });
    return code === EXIT.ok ? waited : code;
  },
};

type Outcome = string;

/** `?dryRun=All` (kubectl's convention): the server validates and decides, and writes nothing. */
const DRY_RUN = '?dryRun=All';

async function applyOne(
  client: Client,
  m: Manifest,
  dryRun: boolean,
  answered?: (item: Item) => void,
): Promise<Outcome> {
  switch (m.kind) {
    case 'Compute':
    case 'Model':
      return applyResource(client, kindNamed(m.kind), m, dryRun, answered);
    case 'Scope':
      return applyScope(client, m, dryRun);
    case 'Quota':
      return applyQuota(client, m, dryRun);
  }
}

/**
 * What the server did, read from the versions: it writes nothing for a manifest that is what it stores, so
 * the version stays; a dry run answers the next version without writing it.
 */
function outcomeOf(status: number, before: Item | undefined, after: Item | undefined): Outcome {
  if (!before || status === 201) return 'created';
  const [a, b] = [before.metadata?.version, after?.metadata?.version];
  // An answer without versions is compared by what apply sets: the spec and the owner.
  const same =
    a !== undefined && b !== undefined
      ? a === b
      : isDeepStrictEqual(before.spec, after?.spec) &&
        (before.metadata?.owner ?? '') === (after?.metadata?.owner ?? '');
  return same ? 'unchanged' : 'configured';
}

/** A manifest's metadata.version as If-Match, for the routes whose body is the spec alone. */
function ifMatch(m: Manifest): Record<string, string> {
  const v = m.body.metadata?.version;
  return v === undefined ? {} : { 'if-match': `"${v}"` };
}

/** The owner a manifest names, if any. */
function ownerOf(m: Manifest): string | undefined {
  const o = m.body.metadata?.owner;
  return typeof o === 'string' && o ? o : undefined;
}

async function applyResource(
  client: Client,
  kind: Kind,
  m: Manifest,
  dryRun: boolean,
  answered?: (item: Item) => void,
): Promise<Outcome> {
  const path = itemPath(kind, m.name);
  // Who sees two of the name reads the manifest's owner's, which is also the one the PUT changes.
  const before = await client.find(path).catch((e: unknown) => {
    if (!(e instanceof ApiError) || e.problem?.reason !== 'AmbiguousName') throw e;
    return client.find(itemPath(kind, m.name, ownerOf(m) ?? 'shared'));
  });
  // status is output only; leaving it out keeps a `get -o yaml` file small on the wire.
  const { status: _status, ...body } = m.body;
  const r = await client.request('PUT', `${path}${dryRun ? DRY_RUN : ''}`, body);
  answered?.(r.body);
  return outcomeOf(r.status, before, r.body) + previewText(r.body);
}

/** A model dry run's preview: what it would be admitted, borrow or wait for, and what it would take back. */
function previewText(body: Item | undefined): string {
  const st = body?.status;
  if (!st?.preview) return '';
  const parts = [`admitted ${st.admitted ?? 0}`];
  if (st.borrowed) parts.push(`borrowed ${st.borrowed}`);
  if (st.pending) {
    const why = (st.reasons ?? []).map((r: { reason: string }) => r.reason).join(', ');
    parts.push(`pending ${st.pending}${why ? ` (${why})` : ''}`);
  }
  for (const v of st.preview.takesBack ?? []) {
    parts.push(`takes back ${v.replicas} of ${v.model} (${v.reason})`);
  }
  return `: ${parts.join(', ')}`;
}

/**
 * A scope manifest is the desired state of the scope: created when missing (under spec.parent), then its
 * members set as a whole in one write (those it no longer lists are removed), pinned to metadata.version.
 */
async function applyScope(client: Client, m: Manifest, dryRun: boolean): Promise<Outcome> {
  const path = `/v1/scopes/${seg(m.name)}`;
  const q = dryRun ? DRY_RUN : '';
  const parent: string | undefined = m.body.spec?.parent || undefined;
  let before: Item | undefined = await client.find(path).catch(() => undefined);
  let created = false;
  if (!before) {
    try {
      const r = await client.request('POST', `/v1/scopes${q}`, {
        name: m.name,
        ...(parent ? { parent } : {}),
      });
      created = true;
      // A dry run stored nothing, so there are no members to set yet: the create is the whole answer.
      if (dryRun) return 'created';
      before = r.body;
    } catch (e) {
      // It exists (perhaps invisible to us, or created meanwhile): its members are still set below.
      const exists =
        e instanceof ApiError &&
        e.status === 409 &&
        (e.problem?.reason === 'AlreadyExists' || /already exists/i.test(e.problem?.detail ?? ''));
      if (!exists) throw e;
      before = await client.find(path).catch(() => undefined);
    }
  }
  const beforeParent = before?.spec?.parent ?? before?.parent;
  if (before && parent && beforeParent && beforeParent !== parent) {
    throw new ApiError(
      409,
      'POST',
      '/v1/scopes',
      {
        title: 'Conflict',
        detail: `scope ${m.name} exists under ${beforeParent}, not ${parent}; a scope cannot move (delete it and apply again)`,
        reason: 'AlreadyExists',
      },
      '',
    );
  }
  // No spec.members leaves the members as they are; a list (even an empty one) is all of them.
  if (m.body.spec?.members === undefined) return created ? 'created' : 'unchanged';
  // Sent as the manifest lists them, so that the server names a repeated member by its place in the list.
  const list = membersOf(m.body);
  const members = Array.isArray(m.body.spec.members)
    ? list
    : Object.fromEntries(list.map((x) => [x.principal, x.role]));
  const r = await inSpec(
    client.request('PUT', `${path}/members${q}`, { members }, created ? {} : ifMatch(m)),
  );
  const n = new Set(list.map((x) => x.principal)).size;
  if (created) return n ? `created (${n} member${n > 1 ? 's' : ''} set)` : 'created';
  return outcomeOf(r.status, before, r.body);
}

/**
 * For the routes whose body is the manifest's spec alone (a quota, a scope's members): the issue paths of a
 * refusal as the manifest has them (`limit.gpus` → `spec.limit.gpus`), so each points at a line of the file.
 */
async function inSpec<T>(request: Promise<T>): Promise<T> {
  try {
    return await request;
  } catch (e) {
    if (!(e instanceof ApiError) || !e.problem?.errors?.length) throw e;
    const at = (path: string) =>
      path === '(body)' ? 'spec' : path.startsWith('[') ? `spec${path}` : `spec.${path}`;
    const errors = e.problem.errors.map((i) => ({ ...i, path: at(i.path) }));
    const [only] = e.problem.errors;
    const detail =
      errors.length === 1 && only && e.problem.detail?.startsWith(`${only.path}: `)
        ? `${at(only.path)}${e.problem.detail.slice(only.path.length)}`
        : e.problem.detail;
    throw new ApiError(e.status, e.method, e.path, { ...e.problem, detail, errors }, e.raw);
  }
}

async function applyQuota(client: Client, m: Manifest, dryRun: boolean): Promise<Outcome> {
  const path = `/v1/quotas/${seg(m.name)}`;
  const spec = m.body.spec ?? {};
  const before = await client.find(path);
  const r = await inSpec(
    client.request(
      'PUT',
      `${path}${dryRun ? DRY_RUN : ''}`,
      { guarantee: spec.guarantee, ...(spec.limit !== undefined ? { limit: spec.limit } : {}) },
      ifMatch(m),
    ),
  );
  return outcomeOf(r.status, before, r.body);
}
