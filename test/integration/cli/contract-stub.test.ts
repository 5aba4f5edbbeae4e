import { CAPACITY, startContractStub } from './contract-stub';
import { llmcap } from './run';

/**
 * The verbs whose routes the local control plane does not serve yet (scopes, quotas, capacity),
 * run as a process against a stub that answers as docs/design.md §4 says. Switch to the control plane when the
 * routes land.
 */

let stub: Awaited<ReturnType<typeof startContractStub>>;
const run = (args: string[], input?: string) => llmcap(args, { endpoint: stub.url, input });

beforeAll(async () => {
  stub = await startContractStub();
});
afterAll(() => stub.close());

const doc = (kind: string, name: string, spec: unknown) =>
  JSON.stringify({ apiVersion: 'llmcap/v1', kind, metadata: { name }, spec });

describe('llmcap against the contract stub', () => {
  it('applies scopes, quotas, computes and models in dependency order', async () => {
    const file = [
      doc('Model', 'chat', { fallback: 'small' }),
      doc('Quota', 'team:ml', { guarantee: { gpus: 8, cores: 64, memoryGb: 512 }, limit: { gpus: 16 } }),
      doc('Scope', 'project:chat', { parent: 'team:ml' }),
      doc('Compute', 'cpu-tiny', { node: { instanceType: 'm7i.large', cpu: 2, memoryGb: 8 } }),
      doc('Scope', 'team:ml', { parent: 'org:acme', members: { 'arn:aws:iam::1:role/ml-leads': 'admin' } }),
      doc('Model', 'small', {}),
      doc('Quota', 'org:acme', { guarantee: { gpus: 16, cores: 128, memoryGb: 1024 } }),
      doc('Scope', 'org:acme', {}),
    ].join('\n---\n');
    stub.requests.length = 0;
    const r = await run(['apply', '-f', '-'], file);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual([
      'scope/org:acme created',
      'scope/team:ml created (1 member set)',
      'scope/project:chat created',
      'quota/org:acme created',
      'quota/team:ml created',
      'compute/cpu-tiny created',
      'model/small created',
      'model/chat created',
    ]);
    const writes = stub.requests.filter((q) => q.method !== 'GET').map((q) => `${q.method} ${q.path}`);
    expect(writes).toEqual([
      'POST /v1/scopes',
      'POST /v1/scopes',
      'PUT /v1/scopes/team%3Aml/members',
      'POST /v1/scopes',
      'PUT /v1/quotas/org%3Aacme',
      'PUT /v1/quotas/team%3Aml',
      'PUT /v1/computes/cpu-tiny',
      'PUT /v1/models/small',
      'PUT /v1/models/chat',
    ]);
    expect(stub.requests.find((q) => q.path === '/v1/quotas/team%3Aml' && q.method === 'PUT')!.body).toEqual({
      guarantee: { gpus: 8, cores: 64, memoryGb: 512 },
      limit: { gpus: 16 },
    });

    const again = await run(['apply', '-f', '-'], file);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('scope/team:ml unchanged\n');
    expect(again.stdout).toContain('quota/team:ml unchanged\n');
  });

  it('creates scopes and manages members', async () => {
    const c = await run(['scope', 'create', 'team:search', '--parent', 'org:acme']);
    expect(c.code).toBe(0);
    expect(c.stdout.trim()).toBe('scope/team:search created under org:acme');
    const dup = await run(['scope', 'create', 'team:search', '--parent', 'org:acme']);
    expect(dup.code).toBe(2);
    expect(dup.stderr).toContain('Conflict (409, AlreadyExists)');
    const bad = await run(['scope', 'create', 'Team_Search']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.split('\n')).toContain('  name: a scope is org:<id>, team:<id> or project:<id>');

    const add = await run([
      'scope',
      'members',
      'team:search',
      '--add',
      'arn:aws:iam::1:user/alice=editor',
      '--add',
      'bob=viewer',
    ]);
    expect(add.code).toBe(0);
    expect(add.stdout).toContain('scope/team:search: arn:aws:iam::1:user/alice is editor');
    const ls = await run(['scope', 'members', 'team:search']);
    expect(ls.stdout).toMatch(/^PRINCIPAL\s+ROLE\narn:aws:iam::1:user\/alice\s+editor\nbob\s+viewer\n$/);
    const rm = await run(['scope', 'members', 'team:search', '--remove', 'bob', '-o', 'json']);
    expect(rm.code).toBe(0);
    const json = await run(['scope', 'members', 'team:search', '-o', 'json']);
    expect(JSON.parse(json.stdout)).toEqual([{ principal: 'arn:aws:iam::1:user/alice', role: 'editor' }]);
    const role = await run(['scope', 'members', 'team:search', '--add', 'carol=owner']);
    expect(role.code).toBe(2);
    expect(role.stderr).toContain('  role: must be one of admin, editor, viewer');

    const list = await run(['get', 'scopes']);
    expect(list.stdout).toMatch(/team:ml\s+org:acme\s+1/);
    const d = await run(['describe', 'scope', 'team:ml']);
    expect(d.stdout).toMatch(/Parent:\s+org:acme/);
    expect(d.stdout).toMatch(/arn:aws:iam::1:role\/ml-leads\s+admin/);
    expect(d.stdout).toMatch(/Guarantee:\s+gpus=8,cores=64,memory=512/);
  });

  it('sets quotas by merging into the current one, with If-Match', async () => {
    const s = await run(['quota', 'set', 'team:search', '--guarantee', 'gpus=2,cores=16,memory=128Gi']);
    expect(s.code).toBe(0);
    expect(s.stdout.trim()).toBe(
      'quota/team:search set: guarantee gpus=2,cores=16,memory=128; limit none (unlimited)',
    );
    stub.requests.length = 0;
    const l = await run(['quota', 'set', 'team:search', '--limit', 'gpus=4,cores=32']);
    expect(l.stdout.trim()).toBe(
      'quota/team:search set: guarantee gpus=2,cores=16,memory=128; limit gpus=4,cores=32',
    );
    const put = stub.requests.find((q) => q.method === 'PUT')!;
    expect(put.headers['if-match']).toBe('"1"');
    const none = await run(['quota', 'set', 'team:search', '--limit', 'cores=none']);
    expect(none.stdout).toContain('limit gpus=4\n');

    const low = await run(['quota', 'set', 'team:search', '--limit', 'gpus=1']);
    expect(low.code).toBe(2);
    expect(low.stderr.split('\n')).toEqual([
      'error: Invalid request (400): team:search: a limit is at least the guarantee',
      '  limit.gpus: below the guarantee of 2',
      '',
    ]);
    const stale = await run(['quota', 'set', 'team:search', '--limit', 'gpus=8', '--if-version', '1']);
    expect(stale.code).toBe(2);
    expect(stale.stderr).toContain('VersionMismatch');

    const g = await run(['quota', 'get']);
    expect(g.stdout).toMatch(/SCOPE\s+GUARANTEE\s+LIMIT/);
    expect(g.stdout).toMatch(/team:search\s+gpus=2,cores=16,memory=128\s+gpus=4/);
    expect(g.stdout).toMatch(/org:acme\s+gpus=16,cores=128,memory=1024\s+unlimited/);
    const y = await run(['quota', 'get', 'team:ml', '-o', 'json']);
    expect(JSON.parse(y.stdout).spec.limit).toEqual({ gpus: 16 });
    expect((await run(['quota', 'get', 'project:none'])).code).toBe(4);
    const del = await run(['quota', 'delete', 'team:search']);
    expect(del.stdout.trim()).toBe('quota/team:search deleted');
    expect((await run(['quota', 'delete', 'team:search'])).code).toBe(4);
  });

  it('shows capacity per scope with bars, and why each pending replica waits', async () => {
    const r = await run(['capacity']);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^SCOPE\s+GPUS used\/guaranteed\/limit\s+BORROWED\s+AT LIMIT\s+PENDING$/);
    // Children indented under their parent; bar scaled to the limit: 8 within, 4 borrowed, room to 12.
    expect(lines[1]).toMatch(/^org:acme\s+\[█{8}░{3}·{5}\] {2}12\/16\/24\s+-\s+no\s+-$/);
    expect(lines[2]).toMatch(
      /^ {2}team:ml\s+\[█{11}▓{5}\] {2}12\/8\/12\s+gpus=4,cores=16\s+yes \(gpus\)\s+2 InsufficientQuota$/,
    );
    expect(lines[3]).toMatch(
      /^ {2}team:search\s+\[ {16}\]> 0\/0\/∞\s+cores=16,memory=112\s+no\s+1 Headroom$/,
    );
    expect(r.stdout).toContain('█ used within guarantee');
    expect(r.stdout).toMatch(
      /Pending replicas:\n\s+MODEL\s+OWNER\s+REPLICAS\s+REASON\s+WHY\n\s+llama-70b\s+team:ml\s+2\s+InsufficientQuota\s+team:ml is at its limit of 12 gpus; 8 more needed\n\s+embedder\s+team:search\s+1\s+Headroom\s+no compute/,
    );
    expect(r.stdout).toMatch(
      /Cluster headroom:\n\s+COMPUTE\s+NODES\s+MAX NODES\s+FREE\n\s+gpu-l40s-4x\s+1\s+1\s+gpus=0,cores=8,memory=64/,
    );

    const one = await run(['capacity', 'team:ml', '--resource', 'all']);
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(
      /^SCOPE\s+GPUS used\/guaranteed\/limit\s+CORES used\/guaranteed\/limit\s+MEMORY/,
    );
    expect(one.stdout).toContain('80/64/∞');
    expect(one.stdout).toContain('llama-70b');
    expect(one.stdout).not.toContain('embedder');

    const j = await run(['capacity', '-o', 'json']);
    expect(JSON.parse(j.stdout)).toEqual(CAPACITY);
    const broken = await run(['capacity', 'team:broken']);
    expect(broken.code).toBe(3);
    expect(broken.stderr).toContain('error: Internal error (500)');
  });
});
