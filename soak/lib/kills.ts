import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../local/dynamodb-local';
import { enc, l4Model, P, setupTenancy } from './fixture';
import { invokeHttp, type JsonClient, jsonClient } from './invoke';

/**
 * Kills: `npm start -- --persist` runs as its own process group (the API, DynamoDB Local's JVM, the simulators)
 * while writers send creates, scalings, deletes and quota changes; at a random moment of the burst the whole
 * group gets SIGKILL, as an operator's `kill -9` or a crashed laptop would. After the restart on the same data,
 * every write that was answered 2xx must be there: a model created or scaled at least at the version answered,
 * a model deleted gone, the quota at least at the version answered. A write still in flight at the kill may have
 * landed or not; either is allowed, nothing else is.
 */

export interface KillReport {
  kills: number;
  /** Writes answered 2xx before their kill, over all kills. */
  acknowledged: number;
  /** Acknowledged writes not found after the restart, as `<write>: <what was found>`. */
  lost: string[];
  /** Writes in flight at the kills (answered nothing; may or may not have landed). */
  inFlight: number;
  durationMs: number;
}

export interface KillOptions {
  kills: number;
  /** Concurrent model writers in each burst (one more writes the quota). */
  writers?: number;
  log?: (line: string) => void;
}

const REPO = join(__dirname, '..', '..');

interface Running {
  child: ChildProcess;
  url: string;
}

/** `npm start -- --persist` as npm runs it (tsx local/start.ts), leading a process group of its own. */
async function start(dataRoot: string, ports: { api: number; sim: number }): Promise<Running> {
  const child = spawn(
    join(REPO, 'node_modules', '.bin', 'tsx'),
    [join(REPO, 'local', 'start.ts'), '--persist'],
    {
      // --persist keeps the data under .llmcap/ of the working directory.
      cwd: dataRoot,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        // As a shell would start it: nothing of a control plane this process ran before (its endpoints, table).
        ...Object.fromEntries(
          Object.entries(process.env).filter(([k]) => !/^(LLMCAP_|AWS_ENDPOINT)/.test(k)),
        ),
        LLMCAP_PORT: String(ports.api),
        LLMCAP_SIM_PORT: String(ports.sim),
        LLMCAP_ADMINS: P.platform,
        LLMCAP_RECONCILE_SECONDS: '0',
        POWERTOOLS_LOG_LEVEL: 'SILENT',
      },
    },
  );
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const url = `http://127.0.0.1:${ports.api}`;
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${out}`);
    if (/^Ready\./m.test(out)) return { child, url };
    await new Promise((r) => setTimeout(r, 200));
  }
  killGroup(child);
  throw new Error(`npm start was not ready within 180 s:\n${out}`);
}

/** SIGKILL to every process of the group, then waits until none is left (the JVM's file is then closed). */
function killGroup(child: ChildProcess): Promise<void> {
  const pgid = child.pid!;
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    return Promise.resolve();
  }
  return new Promise((res) => {
    const poll = () => {
      try {
        process.kill(-pgid, 0);
        setTimeout(poll, 50);
      } catch {
        res();
      }
    };
    poll();
  });
}

/** What the last answered write of one resource left, and the write still in flight for it, if any. */
interface Expect {
  what: string;
  /** `exists` at least at `version`, or `deleted`. */
  state: 'exists' | 'deleted';
  version: number;
  pending?: 'write' | 'delete';
}

export async function runKills(o: KillOptions): Promise<KillReport> {
  const t0 = Date.now();
  const log = o.log ?? (() => undefined);
  const writers = o.writers ?? 8;
  const dataRoot = mkdtempSync(join(tmpdir(), 'llmcap-kills-'));
  const ports = { api: await freePort(), sim: await freePort() };
  const report: KillReport = { kills: 0, acknowledged: 0, lost: [], inFlight: 0, durationMs: 0 };
  const models = new Map<string, Expect>();
  const quota: Expect = { what: 'quota project:a', state: 'exists', version: 0 };
  let running = await start(dataRoot, ports);
  try {
    await setupTenancy(jsonClient(invokeHttp(running.url), P.platform));
    let serial = 0;
    for (let k = 0; k < o.kills; k++) {
      const admin = jsonClient(invokeHttp(running.url), P.platform);
      let killed = false;
      let acked = 0;
      let firstAck!: () => void;
      const started = new Promise<void>((r) => {
        firstAck = r;
      });
      const ack = () => {
        if (killed) return false;
        acked++;
        report.acknowledged++;
        firstAck();
        return true;
      };
      // Each writer creates a model, scales it, deletes it, and again under a new name: names never repeat,
      // so a model found after its acknowledged delete was not deleted.
      const modelWriter = async () => {
        for (;;) {
          const name = `kb-${++serial}`;
          const e: Expect = { what: `model ${name}`, state: 'deleted', version: 0, pending: 'write' };
          const created = await send(admin, 'POST', '/v1/models', l4Model(name, 'project:a'));
          if (!created) return;
          if (created.status !== 201 || !ack()) continue;
          models.set(name, { ...e, state: 'exists', version: created.body.metadata.version });
          for (const max of [2, 3]) {
            models.get(name)!.pending = 'write';
            const r = await send(admin, 'PUT', `/v1/models/${name}/scaling`, { min: 0, max });
            if (!r) return;
            if (r.status === 200 && ack())
              models.set(name, { ...e, state: 'exists', version: r.body.metadata.version });
          }
          models.get(name)!.pending = 'delete';
          const d = await send(admin, 'DELETE', `/v1/models/${name}`);
          if (!d) return;
          if (d.status === 204 && ack()) models.set(name, { ...e, state: 'deleted', version: 0 });
        }
      };
      // One writer moves project:a's GPU limit between 8 and 9: each answer names the quota's new version.
      const quotaWriter = async () => {
        for (let i = 0; ; i++) {
          quota.pending = 'write';
          const r = await send(admin, 'PUT', '/v1/quotas/project:a', {
            guarantee: { gpus: 2 },
            limit: { gpus: 8 + (i % 2) },
          });
          if (!r) return;
          if (r.status === 200 && ack()) quota.version = r.body.metadata.version;
        }
      };
      const burst = Promise.all([...Array.from({ length: writers }, modelWriter), quotaWriter()]);
      await started;
      // Somewhere in the burst, past its first answers: the writers are mid-request nearly all the time.
      await new Promise((r) => setTimeout(r, 500 + Math.random() * 2500));
      killed = true;
      await killGroup(running.child);
      await burst;
      report.kills++;
      const inFlight = [...models.values(), quota].filter((e) => e.pending).length;
      report.inFlight += inFlight;
      running = await start(dataRoot, ports);
      const lost = await check(jsonClient(invokeHttp(running.url), P.platform), models, quota);
      report.lost.push(...lost);
      log(
        `kill ${k + 1}: ${acked} writes acknowledged in the burst (${report.acknowledged} in all), ${inFlight} in flight; lost ${lost.length}${lost.length ? `: ${lost.join('; ')}` : ''}`,
      );
      for (const e of [...models.values(), quota]) e.pending = undefined;
      // Models deleted and checked gone stay gone (names never repeat): no need to ask again.
      for (const [n, e] of models) if (e.state === 'deleted') models.delete(n);
    }
  } finally {
    await killGroup(running.child);
    rmSync(dataRoot, { recursive: true, force: true });
  }
  report.durationMs = Date.now() - t0;
  return report;
}

/** A write's answer, or undefined when the control plane is gone (killed mid-request). */
async function send(admin: JsonClient, method: string, path: string, body?: unknown) {
  try {
    return await admin(method, path, body);
  } catch {
    return undefined;
  }
}

/**
 * The acknowledged writes not found, each expectation then moved to what was found: a write in flight at the
 * kill either landed or not, and the next kill's check starts from whichever it was.
 */
async function check(admin: JsonClient, models: Map<string, Expect>, quota: Expect): Promise<string[]> {
  const lost: string[] = [];
  for (const [name, e] of models) {
    const r = await admin('GET', `/v1/models/${enc(name)}`);
    if (e.state === 'deleted') {
      if (r.status !== 404) lost.push(`${e.what} deleted: found at version ${r.body?.metadata?.version}`);
    } else if (r.status === 404) {
      if (e.pending !== 'delete') lost.push(`${e.what} at version ${e.version}: gone`);
      e.state = 'deleted';
    } else {
      if (r.body.metadata.version < e.version)
        lost.push(`${e.what} at version ${e.version}: found at version ${r.body.metadata.version}`);
      e.version = r.body.metadata.version;
    }
  }
  const q = await admin('GET', '/v1/quotas/project:a');
  const version = q.body?.metadata?.version ?? 0;
  if (version < quota.version)
    lost.push(`${quota.what} at version ${quota.version}: found at version ${version}`);
  quota.version = version;
  return lost;
}
