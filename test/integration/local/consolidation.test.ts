import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, passesUntil, reconcileUntil, testControlPlane } from '../../helpers/control-plane';
import { decided, holdAdmitter } from '../../helpers/passes';

/**
 * Consolidation acts (issue 34 §3) on the local control plane, with the pods the simulated cluster runs: after
 * churn on the built-in L4 compute, a cheaper L4 pool is added; the plan shown before shows the moves and the
 * saving; then the admitter moves the replicas surge-first (each model's Ready replicas never fewer than it
 * had), the reconciler removes the nodes they leave, and what runs costs what the plan said.
 */

let cp: ControlPlane;
let call: ReturnType<typeof httpApi>;

const model = (name: string, replicas: number) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name },
  spec: {
    source: `hf://org/${name}`,
    engine: 'vllm',
    // No compute named: any L4 node will do, so consolidation may move it.
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 2, minMemoryGb: 8 }],
    scaling: { min: 1, max: 4, target: replicas },
  },
});
const status = async (name: string) => (await call('GET', `/v1/models/${name}`)).body.status;
const compute = async (name: string) => (await call('GET', `/v1/computes/${name}`)).body.status;
const podsOn = async (name: string) =>
  ((await status(name)).pods as { compute: string; ready: boolean }[])
    .filter((p) => p.ready)
    .map((p) => p.compute)
    .sort();
const plan = async () => (await call('GET', '/v1/capacity?consolidation=true')).body;

beforeAll(async () => {
  cp = await testControlPlane('consolidation', {
    consolidation: { enabled: true, minSavingShare: 0.01, minSavingPerHour: 0.1, movesPerModelPerHour: 4 },
  });
  call = httpApi(cp);
});
afterAll(() => cp.stop());

describe('consolidation on the local control plane', () => {
  it('moves replicas to a cheaper compute surge-first, never below the Ready replicas a model had, and frees the nodes', async () => {
    // Churn on the built-in gpu-l4-1x (beside the declared qwen3-8b, which needs more memory than the cheap pool has).
    expect((await call('POST', '/v1/models', model('chat-a', 1))).status).toBe(201);
    expect((await call('POST', '/v1/models', model('chat-b', 1))).status).toBe(201);
    expect((await call('PUT', '/v1/models/chat-a/scaling', { min: 1, max: 4, target: 2 })).status).toBe(200);
    expect((await call('DELETE', '/v1/models/chat-b')).status).toBeLessThan(300);
    expect((await call('POST', '/v1/models', model('chat-c', 1))).status).toBe(201);
    await decided(() => call('GET', '/v1/models/chat-c'));
    const wanted = { 'chat-a': 2, 'chat-c': 1 } as const;
    await reconcileUntil(cp, async () => {
      for (const [m, n] of Object.entries(wanted)) if ((await status(m)).running !== n) return false;
      return true;
    });
    expect(await podsOn('chat-a')).toEqual(['gpu-l4-1x', 'gpu-l4-1x']);
    const dearBefore = (await compute('gpu-l4-1x')).desiredNodes;

    // A cheaper pool of 1-GPU nodes: the plan is shown before the admitter acts on it.
    const held = await holdAdmitter(cp);
    const pool = {
      apiVersion: 'llmcap/v1',
      kind: 'Compute',
      metadata: { name: 'l4-small' },
      spec: {
        node: {
          instanceType: 'g6.xlarge',
          cpu: 4,
          memoryGb: 16,
          gpu: { type: 'L4', count: 1, memoryGb: 24 },
        },
        nodeGroup: { maxNodes: 4 },
        cost: { perHour: 0.5 },
      },
    };
    expect((await call('POST', '/v1/computes', pool)).status).toBe(201);
    const before = await plan();
    await held.release();
    expect(before).toMatchObject({ acts: true, enabled: true, inFlight: [] });
    expect(before.moves.map((m: { model: string; to: string }) => `${m.model}>${m.to}`).sort()).toEqual([
      'chat-a>l4-small',
      'chat-a>l4-small',
      'chat-c>l4-small',
    ]);
    expect(before.nodes).toEqual([
      { compute: 'gpu-l4-1x', before: dearBefore, after: dearBefore - 3, perHour: 0.9776 },
      { compute: 'l4-small', before: 0, after: 3, perHour: 0.5 },
    ]);
    expect(before.savingPerHour).toBeCloseTo(3 * (0.9776 - 0.5), 6);

    // Pass by pass: no model ever has fewer Ready replicas than it had, and the moves go one at a time.
    await passesUntil(
      cp,
      async () =>
        (await compute('gpu-l4-1x')).desiredNodes === dearBefore - 3 &&
        (await podsOn('chat-a')).join() === 'l4-small,l4-small' &&
        (await podsOn('chat-c')).join() === 'l4-small',
      async () => {
        for (const [m, n] of Object.entries(wanted))
          expect((await status(m)).running).toBeGreaterThanOrEqual(n);
      },
    );
    // Each move started, and ended with the new replica Ready (none given up), as the models' events tell.
    const moves = async (m: string) => {
      const items = (await call('GET', `/v1/models/${m}/events`)).body.items as {
        reason: string;
        count: number;
      }[];
      const n = (reason: string) => items.filter((e) => e.reason === reason).reduce((k, e) => k + e.count, 0);
      return { started: n('Moving'), finished: n('Moved'), abandoned: n('MoveAbandoned') };
    };
    expect(await moves('chat-a')).toEqual({ started: 2, finished: 2, abandoned: 0 });
    expect(await moves('chat-c')).toEqual({ started: 1, finished: 1, abandoned: 0 });

    // The nodes left are gone, and what runs now costs what the plan said it would.
    const after = await plan();
    expect(after).toMatchObject({ moves: [], inFlight: [] });
    expect(after.currentPerHour).toBeCloseTo(before.plannedPerHour, 6);
    expect((await compute('l4-small')).desiredNodes).toBe(3);
  });
});
