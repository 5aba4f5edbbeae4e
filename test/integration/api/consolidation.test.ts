import { type TestApi, testApi } from '../../helpers/api';
import { dumpTable } from '../../helpers/dump';

/**
 * GET /v1/capacity?consolidation=true (issue 34 §3): what consolidation would move, before it acts, against
 * DynamoDB Local. Two projects' models were admitted onto the cheapest built-in L4 compute (beside the declared
 * qwen3-8b, pinned there); a pool of 1-GPU nodes at less than half its price is added after. Each caller sees the moves of the models it can read, the others
 * counted without names.
 */

const DEV = 'arn:aws:iam::111111111111:role/dev';

const pool = (
  name: string,
  instanceType: string,
  cpu: number,
  memoryGb: number,
  gpus: number,
  perHour: number,
) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Compute',
  metadata: { name },
  spec: {
    node: { instanceType, cpu, memoryGb, gpu: { type: 'L4', count: gpus, memoryGb: 24 } },
    nodeGroup: { maxNodes: 10 },
    cost: { perHour },
  },
});
const model = (name: string, owner: string) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name, owner },
  spec: {
    source: `hf://org/${name}`,
    engine: 'vllm',
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 2, minMemoryGb: 8 }],
    scaling: { min: 1, max: 1 },
  },
});

let api: TestApi;
beforeAll(async () => {
  api = await testApi();
  for (const [name, parent] of [
    ['org:acme', undefined],
    ['team:t', 'org:acme'],
    ['project:a', 'team:t'],
    ['project:b', 'team:t'],
  ] as const)
    expect((await api.call('POST', '/v1/scopes', { name, ...(parent ? { parent } : {}) })).status).toBe(201);
  expect((await api.call('PUT', '/v1/quotas/team:t', { guarantee: { gpus: 8 } })).status).toBe(200);
  await api.call('PUT', `/v1/scopes/project:a/members/${encodeURIComponent(DEV)}`, { role: 'editor' });
  for (const [name, owner] of [
    ['chat-a', 'project:a'],
    ['chat-b', 'project:b'],
  ] as const)
    expect((await api.call('POST', '/v1/models', model(name, owner))).status).toBe(201);
  expect((await api.call('POST', '/v1/computes', pool('l4-small', 'g6.xlarge', 4, 16, 1, 0.4))).status).toBe(
    201,
  );
});

describe('GET /v1/capacity?consolidation=true', () => {
  it('shows a platform admin every move, the saving per hour and the nodes freed, and writes nothing', async () => {
    const before = await dumpTable();
    const r = await api.call('GET', '/v1/capacity?consolidation=true');
    expect(r.status).toBe(200);
    const { currentPerHour, plannedPerHour, savingPerHour, thresholdPerHour } = r.body;
    // The two replicas leave two 0.9776 $/h nodes for two 0.40 $/h ones; the declared qwen3-8b stays, pinned to
    // gpu-l4-1x (the admitter admitted it with the rest). The threshold is the larger of 5% of the pool and 1 $/h.
    expect(plannedPerHour).toBeCloseTo(currentPerHour - 2 * 0.9776 + 2 * 0.4, 6);
    expect(savingPerHour).toBeCloseTo(currentPerHour - plannedPerHour, 6);
    expect(thresholdPerHour).toBe(Math.max(1, Math.round(currentPerHour * 0.05 * 1e6) / 1e6));
    expect(r.body.acts).toBe(true);
    expect(r.body.moves).toHaveLength(2);
    expect(new Set(r.body.moves.map((m: any) => `${m.model} ${m.owner} >${m.to}`))).toEqual(
      new Set(['chat-a project:a >l4-small', 'chat-b project:b >l4-small']),
    );
    // The nodes the moves free, less the nodes they open, are the saving.
    const freed = r.body.nodes.filter((n: any) => n.compute !== 'l4-small');
    expect(r.body.nodes).toContainEqual({ compute: 'l4-small', before: 0, after: 2, perHour: 0.4 });
    expect(freed).toEqual([{ compute: 'gpu-l4-1x', before: 3, after: 1, perHour: 0.9776 }]);
    expect(2 * 0.9776 - 2 * 0.4).toBeCloseTo(savingPerHour, 6);
    expect(r.body.others).toEqual({ moves: 0, inFlight: 0, held: 0, computes: 0 });
    expect(await dumpTable()).toEqual(before);
  });

  it("names only the caller's own models' moves; the others are counted", async () => {
    const r = await api.as(DEV).call('GET', '/v1/capacity?consolidation=true');
    expect(r.status).toBe(200);
    expect(r.body.moves.map((m: any) => m.model)).toEqual(['chat-a']);
    expect(r.body.others.moves).toBe(1);
    expect(JSON.stringify(r.body)).not.toMatch(/chat-b|project:b/);
  });

  it('refuses a bad parameter, naming it', async () => {
    const r = await api.call('GET', '/v1/capacity?consolidation=yes');
    expect(r.status).toBe(400);
    expect(r.body.errors).toEqual([expect.objectContaining({ path: 'consolidation' })]);
  });
});
