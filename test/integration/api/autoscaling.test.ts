import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { documentClient } from '../../../lambdas/shared/clients';
import { recordDemand } from '../../../lambdas/store/demand';
import { type TestApi, testApi } from '../../helpers/api';

/**
 * Autoscaling over HTTP against DynamoDB Local (issue 33): the policy in a model's spec with every refusal in
 * one answer, and the wake a gateway calls, with tenancy: a model the caller may not see answers as a missing one.
 */

const EDITOR = 'arn:aws:iam::111111111111:role/as-editor';
const STRANGER = 'arn:aws:iam::111111111111:role/as-stranger';

const manifest = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Model',
  metadata: { name, owner: 'team:as' },
  spec: {
    source: `hf://org/${name}`,
    engine: 'vllm',
    profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16 }],
    scaling: { min: 0, max: 4 },
    autoscaling: { metric: 'vllm:num_requests_waiting', targetPerReplica: 2, scaleToZeroAfterSeconds: 600 },
    ...spec,
  },
});

let api: TestApi;
beforeAll(async () => {
  api = await testApi();
  expect((await api.call('POST', '/v1/scopes', { name: 'org:as' })).status).toBe(201);
  expect((await api.call('POST', '/v1/scopes', { name: 'team:as', parent: 'org:as' })).status).toBe(201);
  await api.call('PUT', `/v1/scopes/team:as/members/${encodeURIComponent(EDITOR)}`, { role: 'editor' });
});

const item = async (pk: string, model: string) =>
  (
    await documentClient().send(
      new GetCommand({ TableName: api.table, Key: { pk, sk: model }, ConsistentRead: true }),
    )
  ).Item;
const workloadItem = (model: string) => item('WORKLOAD', model);

describe('the policy', () => {
  it('is stored and read back as sent', async () => {
    const r = await api.as(EDITOR).call('POST', '/v1/models', manifest('as-chat'));
    expect(r.status).toBe(201);
    expect(r.body.spec.autoscaling).toEqual({
      metric: 'vllm:num_requests_waiting',
      targetPerReplica: 2,
      scaleToZeroAfterSeconds: 600,
    });
  });

  it('refuses an engine without metrics and scale to zero above min 0, every issue in one 400', async () => {
    const r = await api
      .as(EDITOR)
      .call('POST', '/v1/models', manifest('as-bad', { engine: 'ollama', scaling: { min: 1, max: 2 } }));
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.body.errors).toEqual([
      {
        path: 'spec.autoscaling',
        message: expect.stringContaining('engine ollama serves no Prometheus metrics'),
      },
      {
        path: 'spec.autoscaling.scaleToZeroAfterSeconds',
        message: expect.stringContaining('needs scaling.min 0 (it is 1)'),
      },
    ]);
    expect((await api.call('GET', '/v1/models/as-bad')).status).toBe(404);
  });

  it('refuses a scale to min 1 that would leave scaleToZeroAfterSeconds behind', async () => {
    const r = await api.as(EDITOR).call('PUT', '/v1/models/as-chat/scaling', { min: 1, max: 4 });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(r.body)).toContain('scaleToZeroAfterSeconds needs scaling.min 0');
    expect((await api.call('GET', '/v1/models/as-chat')).body.spec.scaling).toEqual({ min: 0, max: 4 });
  });
});

describe('a wake', () => {
  it('asks for one replica and answers 202 with the expected seconds to Ready and their parts', async () => {
    const r = await api.as(EDITOR).call('POST', '/v1/models/as-chat/wake');
    expect(r.status).toBe(202);
    expect(r.body).toEqual({
      model: 'as-chat',
      desiredReplicas: 1,
      running: 0,
      expectedSecondsToReady: 420,
      nodeBootSeconds: 180,
      imagePullSeconds: 120,
      modelLoadSeconds: 120,
      basis: 'default',
    });
    // The loop's state, and what admission reads as the model's demand (its DEMAND item, which wakes it).
    const woken = (await workloadItem('as-chat'))?.autoscaling;
    expect(woken).toMatchObject({ desired: 1, wokenAt: expect.any(String) });
    expect(await item('DEMAND', 'as-chat')).toMatchObject({ desired: 1, wokenAt: woken.wokenAt });
  });

  it('writes nothing on a dry run', async () => {
    await api.as(EDITOR).call('POST', '/v1/models', manifest('as-dry'));
    const r = await api.as(EDITOR).call('POST', '/v1/models/as-dry/wake?dryRun=All');
    expect(r.status).toBe(202);
    expect(await workloadItem('as-dry')).toBeUndefined();
    expect(await item('DEMAND', 'as-dry')).toBeUndefined();
  });

  it('answers a stranger as if the model did not exist, and refuses a model that does not autoscale', async () => {
    const hidden = await api.as(STRANGER).call('POST', '/v1/models/as-chat/wake');
    const missing = await api.as(STRANGER).call('POST', '/v1/models/as-none/wake');
    expect(hidden.status).toBe(404);
    expect(hidden.body.detail).toBe(missing.body.detail.replace('as-none', 'as-chat'));
    await api.as(EDITOR).call('POST', '/v1/models', manifest('as-fixed', { autoscaling: undefined }));
    const fixed = await api.as(EDITOR).call('POST', '/v1/models/as-fixed/wake');
    expect(fixed.status).toBe(409);
    expect(fixed.body).toMatchObject({ reason: 'NotAutoscaled' });
  });
});

describe('the demand admission reads', () => {
  it('is the DEMAND item, or for a model without one the WORKLOAD item a table kept from before them', async () => {
    await api
      .as(EDITOR)
      .call('POST', '/v1/models', manifest('as-legacy', { scaling: { min: 0, max: 4, target: 1 } }));
    // A reconciler of the version before DEMAND items stored the answer in the WORKLOAD item only.
    await documentClient().send(
      new PutCommand({
        TableName: api.table,
        Item: {
          pk: 'WORKLOAD',
          sk: 'as-legacy',
          model: 'as-legacy',
          observedAt: new Date().toISOString(),
          running: 0,
          total: 0,
          pods: [],
          podReasons: [],
          autoscaling: { metric: 'vllm:num_requests_waiting', history: [], desired: 3 },
        },
      }),
    );
    await api.admitter.run();
    await api.admitter.settled();
    const st = (await api.as(EDITOR).call('GET', '/v1/models/as-legacy')).body.status;
    // Wanted 3 (its target is 1): admitted, or pending where the builtin L4 compute is full.
    expect(st.admitted + st.pending).toBe(3);
  });

  it("is what a dry run's preview decides on, as the admitter will", async () => {
    await api
      .as(EDITOR)
      .call('POST', '/v1/models', manifest('as-preview', { scaling: { min: 0, max: 4, target: 1 } }));
    await recordDemand({ model: 'as-preview', desired: 3, at: new Date().toISOString() });
    await api.admitter.settled();
    // A change that keeps the autoscaling: the preview wants what load asks (3), not the target (1).
    const dry = await api
      .as(EDITOR)
      .call(
        'PUT',
        '/v1/models/as-preview/resources?dryRun=All',
        { cpuCores: 3, memoryGb: 16 },
        { settle: false },
      );
    expect(dry.status).toBe(200);
    expect(dry.body.status.admitted + dry.body.status.pending).toBe(3);
  });
});
