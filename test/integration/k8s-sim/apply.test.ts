import {
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
} from '@kubernetes/client-node';
import { cpuGroup, type K8sHarness, k8sHarness, modelDeployment, statusOf } from './helpers';

/**
 * Server-side apply through @kubernetes/client-node's generic object API, as the reconciler will use it:
 * the field manager owns what it applies, someone else's edits of other fields survive, its own fields are
 * restored with force, and a conflict without force is the API server's 409.
 */

let h: K8sHarness;
beforeEach(async () => {
  h = await k8sHarness();
  await h.nodegroup('cpu', cpuGroup('cpu-small', 1));
});
afterEach(async () => {
  await h.close();
});

const ours = (replicas = 1, extraLabels: Record<string, string> = {}) => {
  const d = modelDeployment('emb', {
    compute: 'cpu-small',
    taintKey: 'llmcap.dev/compute',
    replicas,
    probes: false,
  });
  d.metadata.labels = { ...d.metadata.labels, ...extraLabels };
  return d as unknown as KubernetesObject;
};

const apply = (obj: KubernetesObject, force = true) =>
  h.objects.patch(obj, undefined, undefined, 'llmcap', force, PatchStrategy.ServerSideApply);

const read = () => h.apps.readNamespacedDeployment({ name: 'emb', namespace: 'default' });

it('creates on first apply, and a repeated apply changes nothing, not even the resourceVersion', async () => {
  const created = (await apply(ours())) as V1Deployment;
  expect(created.metadata?.managedFields?.map((m) => [m.manager, m.operation])).toEqual([
    ['llmcap', 'Apply'],
  ]);
  const before = (await read()).metadata?.resourceVersion;
  await apply(ours());
  expect((await read()).metadata?.resourceVersion).toBe(before);
});

it("keeps another manager's fields, restores ours with force, and refuses without it", async () => {
  await apply(ours(1, { tier: 'gold' }));
  // Someone scales it by hand and adds an env var and an annotation.
  await h.apps.patchNamespacedDeployment(
    {
      name: 'emb',
      namespace: 'default',
      fieldManager: 'kubectl-edit',
      body: {
        metadata: { annotations: { 'team.example/owner': 'alice' } },
        spec: {
          replicas: 3,
          template: { spec: { containers: [{ name: 'server', env: [{ name: 'DEBUG', value: '1' }] }] } },
        },
      },
    },
    setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
  );
  expect((await read()).spec?.replicas).toBe(3);
  const refused = await statusOf(apply(ours(1, { tier: 'gold' }), false));
  expect(refused).toEqual({
    code: 409,
    body: expect.objectContaining({
      reason: 'Conflict',
      message: 'Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas',
      details: {
        causes: [
          {
            reason: 'FieldManagerConflict',
            message: 'conflict with "kubectl-edit" using apps/v1',
            field: '.spec.replicas',
          },
        ],
      },
    }),
  });
  await apply(ours(1, { tier: 'gold' }));
  const d = await read();
  expect(d.spec?.replicas).toBe(1);
  expect(d.metadata?.annotations?.['team.example/owner']).toBe('alice');
  expect(d.spec?.template?.spec?.containers?.[0]?.env).toEqual([{ name: 'DEBUG', value: '1' }]);
  // Dropping a label from our config removes it; what others own stays.
  await apply(ours(1));
  const e = await read();
  expect(e.metadata?.labels).toEqual({ 'llmcap.dev/model': 'emb' });
  expect(e.metadata?.annotations?.['team.example/owner']).toBe('alice');
  const mine = e.metadata?.managedFields?.find((m) => m.manager === 'llmcap');
  expect(mine?.fieldsV1).toMatchObject({ 'f:spec': { 'f:replicas': {} } });
  const theirs = e.metadata?.managedFields?.find((m) => m.manager === 'kubectl-edit');
  expect(theirs?.fieldsV1).not.toHaveProperty(['f:spec', 'f:replicas']);
});

it('lists every conflict, grouped by manager, when several fields are taken', async () => {
  await apply(ours(1));
  await h.apps.patchNamespacedDeployment(
    {
      name: 'emb',
      namespace: 'default',
      fieldManager: 'helm',
      body: {
        spec: { replicas: 2, template: { spec: { nodeSelector: { 'llmcap.dev/compute': 'other' } } } },
      },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  const refused = await statusOf(apply(ours(1), false));
  expect(refused.body.message).toBe(
    'Apply failed with 2 conflicts: conflicts with "helm" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.nodeSelector',
  );
});
