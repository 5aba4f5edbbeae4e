import { DeleteNodegroupCommand, DescribeNodegroupCommand, TagResourceCommand } from '@aws-sdk/client-eks';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { foreignMessage, legacyComputeId } from '../../../lambdas/domain/nodegroup';
import { documentClient, eksClient } from '../../../lambdas/shared/clients';
import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, reconcileUntil, testControlPlane } from '../../helpers/control-plane';

/**
 * Which work and which node groups belong to which compute, end to end on the local control plane: a compute
 * deleted and created again under the same name, a node group of that name someone else made, and computes
 * stored before incarnation ids existed. Stage `local`: groups are llmcap-local-<compute>.
 */

let cp: ControlPlane;
beforeAll(async () => {
  cp = await testControlPlane('own');
});
afterAll(() => cp.stop());

const call = (method: string, path: string, body?: unknown) => httpApi(cp)(method, path, body);
const compute = async (name: string) => (await call('GET', `/v1/computes/${name}`)).body;
const group = (name: string) => cp.sim.admin.state().nodegroups.find((g) => g.name === name);

/** A shared model of `replicas` replicas, one per node of a cpu-small clone (2 cores of its 3.4). */
const cpuModel = (name: string, on: string, replicas: number) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name },
  spec: {
    source: `hf://org/${name}/model-q4_k_m.gguf`,
    engine: 'llamacpp',
    profiles: [{ name: 'cpu', gpus: 0, cpuCores: 2, minMemoryGb: 4, compute: on }],
    scaling: { min: replicas, max: replicas },
  },
});

async function computeWithModel(name: string, replicas = 1): Promise<void> {
  expect((await call('POST', '/v1/computes/cpu-small/clone', { name })).status).toBe(201);
  expect((await call('POST', '/v1/models', cpuModel(`m-${name}`, name, replicas))).status).toBe(201);
}

const workflowsOf = (s: Awaited<ReturnType<ControlPlane['reconcile']>>, name: string) =>
  s.workflows.filter((w) => w.compute === name);

describe('a compute deleted and created again', () => {
  it('provisions on the first pass after it is created again, under names Step Functions has not seen', async () => {
    await computeWithModel('cpu-again');
    await reconcileUntil(cp, async () => (await compute('cpu-again')).status.nodegroupStatus === 'ACTIVE');
    const first = await compute('cpu-again');

    expect((await call('DELETE', '/v1/models/m-cpu-again')).status).toBe(204);
    expect((await call('DELETE', '/v1/computes/cpu-again')).status).toBe(202);
    await reconcileUntil(cp, async () => (await call('GET', '/v1/computes/cpu-again')).status === 404);
    expect(group('llmcap-local-cpu-again')).toBeUndefined();

    // Same name, same spec, same model: generation 1 again, as on the first day.
    await computeWithModel('cpu-again');
    const again = await compute('cpu-again');
    expect(again.metadata.uid).not.toBe(first.metadata.uid);
    const pass = await cp.reconcile();
    expect(workflowsOf(pass, 'cpu-again')).toEqual([
      {
        compute: 'cpu-again',
        kind: 'provision',
        outcome: 'started',
        executionName: `cpu-again-provision-g1-${again.metadata.uid}`,
      },
    ]);
    await cp.sfn.waitForIdle(10_000);
    expect((await compute('cpu-again')).status).toMatchObject({ nodegroupStatus: 'ACTIVE', desiredNodes: 1 });
    expect(group('llmcap-local-cpu-again')?.tags).toEqual({
      'llmcap:stage': 'local',
      'llmcap:compute': 'cpu-again',
      'llmcap:compute-id': again.metadata.uid,
    });
    // Its execution recorded for it: the next pass finds nothing that "ended without recording".
    await cp.reconcile();
    expect((await compute('cpu-again')).status.workflow).toMatchObject({
      executionName: `cpu-again-provision-g1-${again.metadata.uid}`,
      state: 'SUCCEEDED',
    });
  });
});

describe("a node group of the compute's name that is not llmcap's", () => {
  it('is left alone: FOREIGN with the reason, no workflow pass after pass, and NodegroupFailed fires', async () => {
    cp.sim.admin.createNodegroup({ name: 'llmcap-local-cpu-taken', tags: { team: 'data' }, desiredSize: 1 });
    await computeWithModel('cpu-taken', 2);
    const pass = await cp.reconcile();
    expect(workflowsOf(pass, 'cpu-taken')).toMatchObject([{ kind: 'provision', outcome: 'started' }]);
    await cp.sfn.waitForIdle(10_000);

    const c = await compute('cpu-taken');
    const owner = { stage: 'local', compute: 'cpu-taken', computeId: c.metadata.uid, legacy: false };
    expect(c.status).toMatchObject({
      nodegroupStatus: 'FOREIGN',
      statusMessage: foreignMessage('llmcap-local-cpu-taken', { team: 'data' }, owner),
    });
    for (let i = 0; i < 3; i++) {
      const s = await cp.reconcile();
      await cp.sfn.waitForIdle(10_000);
      expect(workflowsOf(s, 'cpu-taken')).toEqual([]);
      expect(s.computes.find((x) => x.compute === 'cpu-taken')).toMatchObject({
        status: 'FOREIGN',
        failed: true,
      });
    }
    expect(
      cp.transitions.some((t) => t.kind === 'NodegroupFailed' && t.subject === 'cpu-taken' && t.alarm),
    ).toBe(true);
    // Their group is as they made it: not scaled to the 2 nodes llmcap wanted, not retagged.
    expect(group('llmcap-local-cpu-taken')).toMatchObject({
      tags: { team: 'data' },
      scalingConfig: { desiredSize: 1 },
    });
  });

  it('gets the compute its own group once that group is deleted (runbook: aws eks delete-nodegroup)', async () => {
    await eksClient().send(
      new DeleteNodegroupCommand({ clusterName: 'llmcap-local', nodegroupName: 'llmcap-local-cpu-taken' }),
    );
    await reconcileUntil(cp, async () => {
      const s = (await compute('cpu-taken')).status;
      return s.nodegroupStatus === 'ACTIVE' && s.desiredNodes === 2;
    });
    expect(group('llmcap-local-cpu-taken')?.tags['llmcap:compute']).toBe('cpu-taken');
  });

  it('becomes FOREIGN when its own group is replaced by someone else, and is then never scaled', async () => {
    cp.sim.admin.deleteNodegroup('llmcap-local-cpu-taken');
    cp.sim.admin.createNodegroup({ name: 'llmcap-local-cpu-taken', tags: { team: 'other' }, desiredSize: 1 });
    const pass = await cp.reconcile();
    expect(workflowsOf(pass, 'cpu-taken')).toEqual([]);
    expect((await compute('cpu-taken')).status.nodegroupStatus).toBe('FOREIGN');
    expect(group('llmcap-local-cpu-taken')?.scalingConfig.desiredSize).toBe(1);
  });

  it('is adopted once tagged with the compute id, when it really is this compute (runbook: aws eks tag-resource)', async () => {
    const c = await compute('cpu-taken');
    // aws eks describe-nodegroup ... --query nodegroup.nodegroupArn, then aws eks tag-resource.
    const described = await eksClient().send(
      new DescribeNodegroupCommand({ clusterName: 'llmcap-local', nodegroupName: 'llmcap-local-cpu-taken' }),
    );
    const arn = described.nodegroup!.nodegroupArn!;
    await eksClient().send(
      new TagResourceCommand({
        resourceArn: arn,
        tags: { 'llmcap:stage': 'local', 'llmcap:compute': 'cpu-taken', 'llmcap:compute-id': c.metadata.uid },
      }),
    );
    await reconcileUntil(cp, async () => {
      const s = (await compute('cpu-taken')).status;
      return s.nodegroupStatus === 'ACTIVE' && s.desiredNodes === 2;
    });
  });

  it('deletes a FOREIGN compute at once and leaves that group to its owner', async () => {
    cp.sim.admin.createNodegroup({ name: 'llmcap-local-cpu-gone', tags: { team: 'data' } });
    expect((await call('POST', '/v1/computes/cpu-small/clone', { name: 'cpu-gone' })).status).toBe(201);
    expect((await call('POST', '/v1/models', cpuModel('m-cpu-gone', 'cpu-gone', 1))).status).toBe(201);
    await cp.reconcile();
    await cp.sfn.waitForIdle(10_000);
    expect((await compute('cpu-gone')).status.nodegroupStatus).toBe('FOREIGN');
    expect((await call('DELETE', '/v1/models/m-cpu-gone')).status).toBe(204);
    expect((await call('DELETE', '/v1/computes/cpu-gone')).status).toBe(204);
    await cp.reconcile();
    expect(group('llmcap-local-cpu-gone')).toMatchObject({ status: 'ACTIVE', tags: { team: 'data' } });
  });
});

describe('a compute stored before incarnation ids existed', () => {
  it("keeps its node group (an older llmcap's tags), is scaled under a derived id, and is never rewritten for it", async () => {
    const createdAt = '2025-06-01T12:00:00.000Z';
    const legacy = {
      pk: 'COMPUTE',
      sk: 'cpu-old',
      name: 'cpu-old',
      builtin: false,
      spec: (await compute('cpu-small')).spec,
      version: 1,
      createdAt,
      createdBy: 'someone',
      updatedAt: createdAt,
      updatedBy: 'someone',
      status: { nodegroupStatus: 'ACTIVE', desiredNodes: 1, readyNodes: 1 },
      generation: 3,
    };
    await documentClient().send(new PutCommand({ TableName: cp.table, Item: legacy }));
    cp.sim.admin.createNodegroup({
      name: 'llmcap-local-cpu-old',
      tags: { 'llmcap:stage': 'local', 'llmcap:compute': 'cpu-old' },
      desiredSize: 1,
      maxSize: 4,
    });
    expect((await call('POST', '/v1/models', cpuModel('m-cpu-old', 'cpu-old', 2))).status).toBe(201);

    const id = legacyComputeId('cpu-old', createdAt);
    expect((await compute('cpu-old')).metadata.uid).toBe(id);
    const pass = await cp.reconcile();
    expect(workflowsOf(pass, 'cpu-old')).toEqual([
      { compute: 'cpu-old', kind: 'scale', outcome: 'started', executionName: `cpu-old-scale-g4-${id}` },
    ]);
    await reconcileUntil(cp, async () => (await compute('cpu-old')).status.desiredNodes === 2);
    expect(group('llmcap-local-cpu-old')?.scalingConfig.desiredSize).toBe(2);
    const stored = await documentClient().send(
      new GetCommand({ TableName: cp.table, Key: { pk: 'COMPUTE', sk: 'cpu-old' } }),
    );
    expect(stored.Item?.uid).toBeUndefined();
  });
});
