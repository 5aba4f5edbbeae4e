import {
  GetAWSDefaultServiceQuotaCommand,
  GetServiceQuotaCommand,
  ServiceQuotasClient,
} from '@aws-sdk/client-service-quotas';
import { resetQuotaCache } from '../../../lambdas/aws/quotas';
import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, reconcileUntil, testControlPlane } from '../../helpers/control-plane';
import { dumpTable } from '../../helpers/dump';

/**
 * Quotas of the account and the cluster (issue 32 §5) on the local control plane: the simulator answers Service
 * Quotas' GetServiceQuota with AWS's EKS defaults, a test sets them lower, and llmcap refuses a compute beyond
 * the node group quota and asks for no node beyond a vCPU quota, saying which.
 */

let cp: ControlPlane;
let call: ReturnType<typeof httpApi>;
beforeAll(async () => {
  cp = await testControlPlane('aws-quotas');
  call = httpApi(cp);
});
afterAll(() => cp.stop());

const setQuotas = (values: Record<string, number | null>) => {
  cp.sim.admin.setQuotas(values);
  // The API and the reconciler run in this process: their cached values go with the change, as after the TTL.
  resetQuotaCache();
};

describe('quotas of the account and the cluster', () => {
  it("answers GetServiceQuota with AWS's defaults through the real SDK, and NoSuchResource for a code it does not know", async () => {
    const sq = new ServiceQuotasClient({ endpoint: cp.sim.endpoint, region: 'us-east-1' });
    const get = (ServiceCode: string, QuotaCode: string) =>
      sq.send(new GetServiceQuotaCommand({ ServiceCode, QuotaCode }));
    expect((await get('eks', 'L-6D54EA21')).Quota).toMatchObject({
      QuotaName: 'Managed node groups per cluster',
      Value: 30,
      Unit: 'None',
    });
    expect((await get('eks', 'L-BD136A63')).Quota?.Value).toBe(450);
    expect((await get('ec2', 'L-DB2E81BA')).Quota).toMatchObject({
      QuotaName: 'Running On-Demand G and VT instances',
      UsageMetric: { MetricDimensions: { Class: 'G/OnDemand', Resource: 'vCPU' } },
    });
    await expect(get('ec2', 'L-00000000')).rejects.toMatchObject({ name: 'NoSuchResourceException' });
    // docs/cloud-sim.md: `curl -X PATCH <sim>/_sim/quotas -d '{"L-6D54EA21": 10}'` sets what it answers.
    const patch = (body: unknown) =>
      fetch(`${cp.sim.endpoint}/_sim/quotas`, { method: 'PATCH', body: JSON.stringify(body) });
    expect(await (await patch({ 'L-6D54EA21': 10 })).json()).toMatchObject({ 'L-6D54EA21': 10 });
    expect((await get('eks', 'L-6D54EA21')).Quota?.Value).toBe(10);
    const bad = await patch({ 'L-NOPE': 1 });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toContain('unknown quota code L-NOPE');
    setQuotas({ 'L-6D54EA21': 30 });
    sq.destroy();
  });

  it('refuses a compute beyond the managed node groups quota with 409, naming it and how to raise it', async () => {
    const computes = (await call('GET', '/v1/computes')).body.items.length;
    setQuotas({ 'L-6D54EA21': computes + 1 });
    const manifest = (name: string) => ({
      apiVersion: 'llmcap/v1',
      kind: 'Compute',
      metadata: { name },
      spec: { node: { instanceType: 'm7i.xlarge' } },
    });
    expect((await call('POST', '/v1/computes', manifest('last-one'))).status).toBe(201);
    const before = await dumpTable();
    const r = await call('POST', '/v1/computes', manifest('one-too-many'));
    expect(r.status).toBe(409);
    expect(r.body.reason).toBe('AwsQuota');
    expect(r.body.detail).toContain('"Managed node groups per cluster" (L-6D54EA21)');
    expect(r.body.detail).toContain('aws service-quotas request-service-quota-increase --service-code eks');
    expect(await dumpTable()).toEqual(before);
    // The simulated EKS enforces the same value: CreateNodegroup beyond it is refused as in AWS.
    expect(cp.sim.admin.getQuotas()['L-6D54EA21']).toBe(computes + 1);
    setQuotas({ 'L-6D54EA21': 30 });
  });

  it('asks for no node beyond the vCPU quota of its class and says so in the compute status', async () => {
    // One g6.2xlarge (8 vCPUs) fits a quota of 12; a model of two 1-GPU replicas needs two more.
    setQuotas({ 'L-DB2E81BA': 12 });
    const model = {
      apiVersion: 'llmcap/v1',
      kind: 'Model',
      metadata: { name: 'two-l4' },
      spec: {
        source: 'hf://org/two-l4',
        engine: 'vllm',
        profiles: [{ name: 'p', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'gpu-l4-1x' }],
        scaling: { min: 2, max: 2 },
      },
    };
    expect((await call('POST', '/v1/models', model)).status).toBe(201);
    const status = async () => (await call('GET', '/v1/computes/gpu-l4-1x')).body.status;
    const first = await cp.reconcile();
    expect(first.workflows.filter((w) => w.compute === 'gpu-l4-1x').map((w) => w.kind)).toEqual([
      'provision',
    ]);
    // The built-in catalog's L4 model needs a node of its own: two more for this model.
    const needed = first.computes.find((c) => c.compute === 'gpu-l4-1x')!.neededNodes;
    expect(needed).toBeGreaterThanOrEqual(2);
    const short = needed - 1;
    expect(first.computes.find((c) => c.compute === 'gpu-l4-1x')?.pendingReason).toContain(
      `${short} of ${needed} nodes needed (${short * 8} vCPUs of g6.2xlarge) are beyond the account's quota "Running On-Demand G and VT instances" (L-DB2E81BA) of 12 vCPUs; raise it`,
    );
    await reconcileUntil(cp, async () => (await status()).readyNodes === 1);
    const s = await status();
    expect(s).toMatchObject({ neededNodes: needed, desiredNodes: 1 });
    expect(s.pendingReason).toContain('(L-DB2E81BA) of 12 vCPUs');
    // Passes at the quota start nothing: no scale AWS would fail to launch.
    const steady = await cp.reconcile();
    expect(steady.workflows.filter((w) => w.compute === 'gpu-l4-1x')).toEqual([]);

    // Raised: the other nodes are asked for and the reason goes.
    setQuotas({ 'L-DB2E81BA': 768 });
    await reconcileUntil(cp, async () => (await status()).readyNodes === needed);
    expect((await status()).pendingReason).toBeUndefined();
  });
  it("reads AWS's default for a quota with no applied value, where GetServiceQuota answers NoSuchResource", async () => {
    setQuotas({ 'L-6D54EA21': null });
    const sq = new ServiceQuotasClient({ endpoint: cp.sim.endpoint, region: 'us-east-1' });
    const input = { ServiceCode: 'eks', QuotaCode: 'L-6D54EA21' };
    await expect(sq.send(new GetServiceQuotaCommand(input))).rejects.toMatchObject({
      name: 'NoSuchResourceException',
    });
    expect((await sq.send(new GetAWSDefaultServiceQuotaCommand(input))).Quota).toMatchObject({
      QuotaArn: 'arn:aws:servicequotas:us-east-1::eks/L-6D54EA21',
      Value: 30,
    });
    sq.destroy();
    // The default still binds, as EKS enforces it: the 31st compute is refused.
    const manifest = (name: string) => ({
      apiVersion: 'llmcap/v1',
      kind: 'Compute',
      metadata: { name },
      spec: { node: { instanceType: 'm7i.xlarge' } },
    });
    const existing = (await call('GET', '/v1/computes')).body.items.length;
    const added = Array.from({ length: 30 - existing }, (_, i) => `filler-${i}`);
    for (const name of added) expect((await call('POST', '/v1/computes', manifest(name))).status).toBe(201);
    const before = await dumpTable();
    const r = await call('POST', '/v1/computes', manifest('thirty-first'));
    expect(r.status).toBe(409);
    expect(r.body.detail).toContain('"Managed node groups per cluster" (L-6D54EA21) of 30');
    expect(await dumpTable()).toEqual(before);
    for (const name of added) expect((await call('DELETE', `/v1/computes/${name}`)).status).toBeLessThan(300);
    setQuotas({ 'L-6D54EA21': 30 });
  });
});
