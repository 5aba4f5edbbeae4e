import { ApiError, type Client, NetworkError } from './client';
import { type Context, EXIT, num, UsageError } from './command';
import { type Item, itemsOf, type Kind, nameOf } from './kinds';
import { columnWidths, type Row, tableLine, toYaml } from './render';

/**
 * Following the API over time, as kubectl's watch and wait do: `get -w` polls a list and prints the rows that
 * changed; `apply --wait` polls what it applied until it is decided (and Ready). The API has no watch stream:
 * lists answer an ETag of their content, so a poll that finds nothing new costs a 304 and no body.
 */

/** Ctrl-C ends a watch or a wait cleanly: the loop stops at its next step and the command returns. */
export function interruptible(): { stopped(): boolean; sleep(ms: number): Promise<void>; dispose(): void } {
  let stopped = false;
  let wake: (() => void) | undefined;
  const onSignal = () => {
    stopped = true;
    wake?.();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    stopped: () => stopped,
    sleep: (ms) =>
      stopped
        ? Promise.resolve()
        : new Promise<void>((r) => {
            const t = setTimeout(r, ms);
            wake = () => {
              clearTimeout(t);
              r();
            };
          }),
    dispose() {
      process.removeListener('SIGINT', onSignal);
      process.removeListener('SIGTERM', onSignal);
    },
  };
}

/** `--interval SECONDS` between polls (default 2): a list read every two seconds is cheap for API Gateway. */
export function intervalMs(ctx: Context): number {
  const s = num(ctx.args.values, 'interval');
  if (s === undefined) return 2000;
  if (s <= 0) throw new UsageError(`--interval must be a positive number of seconds, not ${s}`);
  return s * 1000;
}

/** A poll that failed on the way (network, 5xx) is tried again; a refusal (4xx) ends the command. */
function transient(e: unknown): boolean {
  return e instanceof NetworkError || (e instanceof ApiError && e.status >= 500);
}

/** Columns that change with the clock alone: a row is not printed again because it aged. */
const CLOCK_COLUMNS = new Set(['AGE', 'OBSERVED']);

/**
 * `get KIND -w`: the list as `get` prints it, then each row again whenever it changes (a row that goes is
 * printed once more, marked deleted), until Ctrl-C. With -o json, yaml or name, each changed item is printed
 * in that form. `pick` narrows the list as `get` does (pods by name).
 */
export async function watchList(
  ctx: Context,
  client: Client,
  kind: Kind,
  path: string,
  format: string,
  pick: (items: Item[]) => Item[],
  interval: number,
  chunkSize?: number,
): Promise<void> {
  const wide = format === 'wide';
  const columns = kind.columns(wide);
  const clock = columns.map((c) => CLOCK_COLUMNS.has(c));
  const keyOf = (i: Item) => `${i.metadata?.owner ?? ''}/${nameOf(i)}/${i.namespace ?? ''}`;
  const rowOf = (i: Item): Row => kind.row(i, wide);
  const print = (items: { item: Item; deleted?: boolean }[]) => {
    for (const { item, deleted } of items) {
      if (format === 'json') ctx.out(JSON.stringify(deleted ? { deleted: true, item } : item));
      else if (format === 'yaml') ctx.out(`---\n${toYaml(deleted ? { deleted: true, item } : item)}`);
      else if (format === 'name') ctx.out(`${kind.name}/${nameOf(item)}${deleted ? ' deleted' : ''}`);
      else ctx.out(tableLine(deleted ? [...rowOf(item), '<deleted>'] : rowOf(item), widths));
    }
  };
  const seen = new Map<string, { item: Item; sig: string }>();
  const sig = (i: Item) => JSON.stringify(rowOf(i).filter((_, n) => !clock[n]));
  let widths: number[] = [];
  let etag: string | undefined;
  let first = true;
  const stop = interruptible();
  try {
    while (!stop.stopped()) {
      let res: Awaited<ReturnType<Client['request']>> | undefined;
      try {
        // The first page goes with the ETag of a list that was one page (304 when nothing changed); when more
        // pages follow, they are read too, and the list has no ETag to ask with next time.
        const first = await client.request('GET', client.pagePath(path, chunkSize), undefined, {
          ...(etag ? { 'if-none-match': etag } : {}),
        });
        res = first.status === 304 ? first : await client.list(path, chunkSize, first);
      } catch (e) {
        if (!transient(e) || first) throw e;
        ctx.err(`warning: ${(e as Error).message}; trying again`);
      }
      if (res && res.status !== 304) {
        const tag = res.headers.etag;
        etag = typeof tag === 'string' ? tag : undefined;
        const items = pick(itemsOf(res.body));
        const changed: { item: Item; deleted?: boolean }[] = [];
        const now = new Set<string>();
        for (const i of items) {
          const k = keyOf(i);
          now.add(k);
          const s = sig(i);
          if (seen.get(k)?.sig !== s) changed.push({ item: i });
          seen.set(k, { item: i, sig: s });
        }
        for (const [k, v] of seen)
          if (!now.has(k)) {
            changed.push({ item: v.item, deleted: true });
            seen.delete(k);
          }
        if (first) {
          widths = columnWidths(
            columns,
            items.map((i) => rowOf(i)),
          );
          if (format === 'table' || format === 'wide') ctx.out(tableLine(columns, widths));
          if (!items.length && (format === 'table' || format === 'wide'))
            ctx.err(`No ${kind.plural} found yet; watching.`);
          first = false;
        }
        print(changed);
      }
      await stop.sleep(interval);
    }
  } finally {
    stop.dispose();
  }
}

/** `apply --wait`'s budget: --timeout SECONDS, else 2 minutes to be decided, 15 with --running (nodes start). */
export function waitBudgetMs(ctx: Context, running: boolean): number {
  const s = num(ctx.args.values, 'timeout');
  if (s !== undefined && s <= 0)
    throw new UsageError(`--timeout must be a positive number of seconds, not ${s}`);
  return (s ?? (running ? 900 : 120)) * 1000;
}

interface Waited {
  done: boolean;
  /** Where the model stands, in the progress line and in the timeout's message. */
  text: string;
}

const replicas = (n: number) => `${n} replica${n === 1 ? '' : 's'}`;

/**
 * Whether the model answer `m` shows the decision on the version applied: its status is of that version (when
 * the API says which version its status is of) and no replica waits with reason Queued, which is how a write
 * whose admission the admitter has not decided yet says so.
 */
export function decidedState(m: Item, version: number | undefined): Waited {
  const s = m.status ?? {};
  const of = s.observedVersion ?? s.observedGeneration;
  if (version !== undefined && typeof of === 'number' && of < version)
    return { done: false, text: `waiting for admission of version ${version} (status is of version ${of})` };
  const reasons: Item[] = Array.isArray(s.reasons) ? s.reasons : [];
  const queued = reasons
    .filter((r) => r.reason === 'Queued')
    .reduce((n, r) => n + (Number(r.replicas) || 0), 0);
  if (queued) return { done: false, text: `${replicas(queued)} Queued for admission` };
  const why = [...new Set(reasons.map((r) => r.reason))].join(', ');
  const borrowed = s.borrowed ? ` (${s.borrowed} borrowed)` : '';
  return {
    done: true,
    text: `decided: ${s.admitted ?? 0} admitted${borrowed}, ${s.pending ?? 0} pending${why ? ` (${why})` : ''}`,
  };
}

/** Whether every admitted replica of `m` has a Ready pod; a model admitted nothing runs when it asks for none. */
export function runningState(m: Item, pods: Item[]): Waited {
  const s = m.status ?? {};
  const admitted = Number(s.admitted ?? 0);
  const target = Number(s.targetReplicas ?? m.spec?.scaling?.target ?? m.spec?.scaling?.min ?? 0);
  const ready = pods.filter((p) => p.ready).length;
  const notReady = [...new Set(pods.filter((p) => !p.ready).map((p) => p.reason ?? p.phase))].join(', ');
  const pending = s.pending
    ? `, ${s.pending} pending (${(s.reasons ?? []).map((r: Item) => r.reason).join(', ')})`
    : '';
  const text = `${ready}/${admitted} pods Ready${notReady ? ` (others ${notReady})` : ''}${pending}`;
  return { done: admitted > 0 ? ready >= admitted : target === 0, text };
}

/**
 * `apply --wait`: reads each model applied until it is decided (and with `running`, Ready), printing a line on
 * stderr each time where one stands changes. On timeout or Ctrl-C, one line names each model still waiting
 * and for what, and the exit code is 3.
 */
export async function waitForModels(
  ctx: Context,
  client: Client,
  applied: Item[],
  o: { running: boolean; timeoutMs: number },
): Promise<number> {
  const started = Date.now();
  const models = applied.map((i) => ({
    name: nameOf(i),
    owner: (i.metadata?.owner as string | undefined) || undefined,
    version: typeof i.metadata?.version === 'number' ? (i.metadata.version as number) : undefined,
    state: undefined as Waited | undefined,
  }));
  const stop = interruptible();
  let pause = 100;
  try {
    for (;;) {
      for (const m of models) {
        if (m.state?.done) continue;
        let next: Waited;
        try {
          const owner = m.owner ? `?owner=${encodeURIComponent(m.owner)}` : '';
          const item = (await client.get(`/v1/models/${encodeURIComponent(m.name)}${owner}`)).body as Item;
          next = decidedState(item, m.version);
          if (next.done && o.running) {
            const body = (await client.list(`/v1/pods?model=${encodeURIComponent(m.name)}`)).body as Item;
            const pods = itemsOf(body);
            if (!pods.length && body?.message) throw new UsageError(`--running cannot tell: ${body.message}`);
            next = runningState(item, pods);
          }
        } catch (e) {
          if (!transient(e)) throw e;
          ctx.err(`warning: ${(e as Error).message}; trying again`);
          continue;
        }
        if (next.text !== m.state?.text) ctx.err(`model/${m.name}: ${next.text}`);
        m.state = next;
      }
      const waiting = models.filter((m) => !m.state?.done);
      if (!waiting.length) return EXIT.ok;
      const still = waiting.map((m) => `model/${m.name} (${m.state?.text ?? 'not read yet'})`).join('; ');
      const took = Math.round((Date.now() - started) / 1000);
      if (stop.stopped()) {
        ctx.err(`error: interrupted after ${took} s; still waiting: ${still}`);
        return EXIT.server;
      }
      const left = o.timeoutMs - (Date.now() - started);
      if (left <= 0) {
        const what = o.running ? 'decided and Ready' : 'decided';
        ctx.err(
          `error: timed out after ${took} s waiting for the models to be ${what}; still waiting: ${still}`,
        );
        return EXIT.server;
      }
      await stop.sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, 2000);
    }
  } finally {
    stop.dispose();
  }
}
