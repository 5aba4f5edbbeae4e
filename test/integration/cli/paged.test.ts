import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ControlPlane, startControlPlane } from '../../../local/control-plane';
import { llmcap } from './run';

/**
 * The CLI reads a list a page at a time (`--chunk-size`, the API's ?limit and ?continue) and prints it as one:
 * the same output whatever the page size, every item once, against the local control plane.
 */

let cp: ControlPlane;
const run = (args: string[]) => llmcap(args, { endpoint: cp.apiUrl });

const compute = (name: string) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Compute',
  metadata: { name },
  spec: { node: { instanceType: 'm7i.large', cpu: 2, memoryGb: 8 }, cost: { perHour: 0.1008 } },
});
const model = (name: string) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name },
  spec: {
    source: `hf://acme/${name}-GGUF`,
    engine: 'llamacpp',
    profiles: [{ name: 'cpu', gpus: 0, cpuCores: 1, minMemoryGb: 2, compute: 'paged-c1' }],
    scaling: { min: 0, max: 1 },
  },
});
const NAMES = ['paged-c1', 'paged-c2', 'paged-c3', 'paged-c4', 'paged-c5'];
const MODELS = ['paged-m1', 'paged-m2', 'paged-m3', 'paged-m4', 'paged-m5'];

beforeAll(async () => {
  cp = await startControlPlane({
    port: 0,
    simPort: 0,
    reconcileSeconds: 0,
    dynamodbEndpoint: process.env.LLMCAP_DYNAMODB_ENDPOINT,
    table: `cli-paged-${randomUUID().slice(0, 8)}`,
  });
  const f = join(mkdtempSync(join(tmpdir(), 'llmcap-paged-')), 'all.json');
  writeFileSync(f, JSON.stringify({ items: [...NAMES.map(compute), ...MODELS.map(model)] }));
  const r = await run(['apply', '-f', f]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
}, 120_000);
afterAll(() => cp?.stop());

describe('llmcap get across pages', () => {
  it.each(['computes', 'models'])(
    'prints every %s once, as one list, whatever the chunk size',
    async (kind) => {
      for (const o of ['table', 'json', 'name']) {
        const one = await run(['get', kind, '-o', o, '--chunk-size', '1000']);
        expect(one.code).toBe(0);
        for (const size of ['1', '2']) {
          const paged = await run(['get', kind, '-o', o, '--chunk-size', size]);
          expect({ size, o, code: paged.code, stderr: paged.stderr }).toEqual({
            size,
            o,
            code: 0,
            stderr: '',
          });
          expect(paged.stdout).toBe(one.stdout);
        }
      }
      const names = (await run(['get', kind, '-o', 'name', '--chunk-size', '2'])).stdout.trim().split('\n');
      expect(new Set(names).size).toBe(names.length);
      const mine = kind === 'computes' ? NAMES : MODELS;
      expect(names.filter((n) => mine.some((m) => n.endsWith(`/${m}`)))).toHaveLength(mine.length);
      // A json list is one document with no paging left in it.
      const json = JSON.parse((await run(['get', kind, '-o', 'json', '--chunk-size', '2'])).stdout);
      expect(Object.keys(json)).toEqual(['items']);
    },
  );

  it('describes every item across pages', async () => {
    const one = await run(['describe', 'computes', '--chunk-size', '1000']);
    const paged = await run(['describe', 'computes', '--chunk-size', '2']);
    expect(paged.code).toBe(0);
    // Ages move on between the two runs: "changed 6s ago" is compared as "changed ? ago".
    const aged = (t: string) => t.replace(/\b\d+[smhd]( ago)/g, '?$1');
    expect(aged(paged.stdout)).toBe(aged(one.stdout));
    for (const n of NAMES) expect(paged.stdout).toContain(n);
  });

  it('watches a list of several pages: every row once, then a row added on a later page', async () => {
    const stop = new AbortController();
    let out = '';
    const running = llmcap(
      ['get', 'computes', '-w', '--chunk-size', '2', '--interval', '0.2', '-o', 'name'],
      {
        endpoint: cp.apiUrl,
        interrupt: stop.signal,
        onStdout: (t) => {
          out = t;
        },
      },
    );
    const until = async (ok: () => boolean, what: string) => {
      for (let i = 0; i < 300 && !ok(); i++) await new Promise((r) => setTimeout(r, 100));
      if (!ok()) throw new Error(`never saw ${what}: ${out}`);
    };
    await until(() => NAMES.every((n) => out.includes(`compute/${n}\n`)), 'every compute');
    const first = out.split('\n').filter(Boolean);
    const api = (await fetch(`${cp.apiUrl}/v1/computes?limit=1000`).then((r) => r.json())) as {
      items: { metadata: { name: string } }[];
    };
    expect([...first].sort()).toEqual(api.items.map((i) => `compute/${i.metadata.name}`).sort());
    const f = join(mkdtempSync(join(tmpdir(), 'llmcap-paged-')), 'late.json');
    writeFileSync(f, JSON.stringify(compute('zz-paged-late')));
    expect((await run(['apply', '-f', f])).code).toBe(0);
    await until(() => out.includes('compute/zz-paged-late\n'), 'the compute added on the last page');
    stop.abort();
    const r = await running;
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    // Only the new row is printed again: nothing that did not change.
    expect(r.stdout.split('\n').filter(Boolean).slice(first.length)).toEqual(['compute/zz-paged-late']);
  });

  it('refuses a chunk size the API cannot page with, saying why', async () => {
    for (const size of ['0', '1001', 'x']) {
      const r = await run(['get', 'models', '--chunk-size', size]);
      expect({ size, code: r.code }).toEqual({ size, code: 1 });
      expect(r.stderr).toMatch(/--chunk-size must be/);
    }
  });
});
