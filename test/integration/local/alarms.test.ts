import {
  CloudWatchClient,
  DescribeAlarmsCommand,
  GetMetricDataCommand,
  ListMetricsCommand,
} from '@aws-sdk/client-cloudwatch';
import type { ControlPlane } from '../../../local/control-plane';
import { httpApi, testControlPlane } from '../../helpers/control-plane';
import { decided, until } from '../../helpers/passes';
import { type Subscriber, startSubscriber } from '../../helpers/subscriber';
import { llmcap } from '../cli/run';

/**
 * Alarms end to end on the local control plane: the real reconcile handler prints EMF, the simulated CloudWatch
 * extracts it and evaluates the alarms syncAlarms and the stage define, and SNS notifies an HTTP subscriber the
 * way an on-call HTTPS endpoint is notified in AWS. CloudWatch's clock is driven: one pass a minute.
 */

let cp: ControlPlane;
let sub: Subscriber;
let cw: CloudWatchClient;

beforeAll(async () => {
  sub = await startSubscriber();
  cp = await testControlPlane('alarms', { alertWebhook: sub.url });
  await cp.sim.sns.drain();
  cw = new CloudWatchClient({ endpoint: cp.sim.endpoint, region: 'us-east-1' });
});
afterAll(async () => {
  cw.destroy();
  await cp.stop();
  await sub.close();
});

const call = (method: string, path: string, body?: unknown) => httpApi(cp)(method, path, body);

const state = async (name: string) =>
  (await cw.send(new DescribeAlarmsCommand({ AlarmNames: [name] }))).MetricAlarms?.[0]?.StateValue;

const SCOPE_ALARM = 'llmcap-local-CapacityAtLimit-team:alarm';

describe('alarms on the local control plane', () => {
  beforeAll(async () => {
    expect((await call('POST', '/v1/scopes', { name: 'org:alarm' })).status).toBe(201);
    expect((await call('POST', '/v1/scopes', { name: 'team:alarm', parent: 'org:alarm' })).status).toBe(201);
    expect(
      (await call('PUT', '/v1/quotas/team:alarm', { guarantee: { cores: 2 }, limit: { cores: 2 } })).status,
    ).toBe(200);
  });

  it('gets the metrics from what the real handler prints, one per scope and per compute', async () => {
    await cp.reconcile();
    const list = async (MetricName: string) =>
      (await cw.send(new ListMetricsCommand({ Namespace: 'llmcap', MetricName }))).Metrics!.map((m) =>
        Object.fromEntries(m.Dimensions!.map((d) => [d.Name, d.Value])),
      );
    expect(await list('CapacityAtLimit')).toContainEqual({
      service: 'llmcap',
      stage: 'local',
      Scope: 'team:alarm',
    });
    const computes = await list('NodegroupFailed');
    for (const c of ['cpu-small', 'gpu-l4-1x', 'gpu-h100-8x'])
      expect(computes).toContainEqual({ service: 'llmcap', stage: 'local', Compute: c });
    expect(await list('ReconcilePasses')).toEqual([{ service: 'llmcap', stage: 'local' }]);
  });

  it('gets them from a pass requested with POST /v1/reconcile too, which the Lambda API ran', async () => {
    // Samples in the last day up to an hour ahead of the driven clock: an on-demand pass is stamped when it ran.
    const samples = async (
      Namespace: string,
      MetricName: string,
      Dimensions: { Name: string; Value: string }[],
    ) => {
      const out = await cw.send(
        new GetMetricDataCommand({
          StartTime: new Date(Date.now() - 86_400_000),
          EndTime: new Date(cp.clock.now() + 3_600_000),
          MetricDataQueries: [
            {
              Id: 'n',
              MetricStat: { Metric: { Namespace, MetricName, Dimensions }, Period: 60, Stat: 'SampleCount' },
            },
          ],
        }),
      );
      return (out.MetricDataResults?.[0]?.Values ?? []).reduce((a, b) => a + b, 0);
    };
    const passes = () =>
      samples('llmcap', 'ReconcilePasses', [
        { Name: 'service', Value: 'llmcap' },
        { Name: 'stage', Value: 'local' },
      ]);
    const invocations = () =>
      samples('AWS/Lambda', 'Invocations', [{ Name: 'FunctionName', Value: cp.reconcileFunction }]);
    const before = { passes: await passes(), invocations: await invocations() };
    const r = await call('POST', '/v1/reconcile');
    expect(r.status).toBe(202);
    await until(
      async () => (await call('GET', `/v1/reconcile/${r.body.id}`)).body,
      (p) => p.state === 'SUCCEEDED',
    );
    await cp.lambda.waitForIdle();
    expect({ passes: await passes(), invocations: await invocations() }).toEqual({
      passes: before.passes + 1,
      invocations: before.invocations + 1,
    });
  });

  it('raises the CapacityAtLimit alarm syncAlarms created for a scope at its limit, and on-call is told which scope', async () => {
    const model = {
      apiVersion: 'llmcap/v1',
      kind: 'Model',
      metadata: { name: 'alarm-embed', owner: 'team:alarm' },
      spec: {
        source: 'hf://org/alarm-embed-GGUF',
        engine: 'llamacpp',
        profiles: [{ name: 'cpu', gpus: 0, cpuCores: 2, minMemoryGb: 4, compute: 'cpu-small' }],
        scaling: { min: 1, max: 1 },
      },
    };
    expect((await call('POST', '/v1/models', model)).status).toBe(201);
    const added = await decided(() => call('GET', '/v1/models/alarm-embed'));
    expect({ status: added.status, admitted: added.body.status?.admitted, why: added.body.errors }).toEqual({
      status: 200,
      admitted: 1,
      why: undefined,
    });
    for (let i = 0; i < 3; i++) await cp.reconcile();
    expect(await state(SCOPE_ALARM)).toBe('ALARM');
    const got = sub.received.filter(
      (r) => r.alarm?.AlarmName === SCOPE_ALARM && r.alarm.NewStateValue === 'ALARM',
    );
    expect(got).toHaveLength(1);
    expect(got[0]!.envelope.Subject).toBe(`ALARM: "${SCOPE_ALARM}" in US East (N. Virginia)`);
    expect(got[0]!.alarm!.Trigger.Dimensions).toContainEqual({ name: 'Scope', value: 'team:alarm' });
    expect(got[0]!.alarm!.AlarmDescription).toMatch(
      /^Scope team:alarm .*Check: llmcap capacity team:alarm\. Runbook: docs\/operations\.md#capacityatlimit\. Last seen: at its limit: cores 2 of 2$/,
    );
    expect(got[0]!.alarm!.NewStateReason).toMatch(/^Threshold Crossed: 3 out of the last 5 datapoints/);
    expect(cp.transitions).toContainEqual(
      expect.objectContaining({
        alarmName: SCOPE_ALARM,
        kind: 'CapacityAtLimit',
        subject: 'team:alarm',
        to: 'ALARM',
      }),
    );
    expect((await call('DELETE', '/v1/models/alarm-embed')).status).toBe(204);
    for (let i = 0; i < 3; i++) await cp.reconcile();
    expect(sub.alarms(SCOPE_ALARM).map((a) => a.NewStateValue)).toEqual(['OK', 'ALARM', 'OK']);
  });

  it('pages ReconcileStale when no pass has run for 3 minutes, and clears once passes are back', async () => {
    const name = 'llmcap-local-ReconcileStale';
    await cp.reconcile();
    expect(await state(name)).toBe('OK');
    await cp.advance(2 * 60_000);
    expect(await state(name)).toBe('OK');
    await cp.advance(60_000);
    expect(await state(name)).toBe('ALARM');
    expect(sub.alarms(name).at(-1)).toMatchObject({
      NewStateValue: 'ALARM',
      Trigger: { MetricName: 'ReconcilePasses', TreatMissingData: 'breaching' },
    });
    await cp.reconcile();
    expect(await state(name)).toBe('OK');
  });

  it('llmcap alarm test sets a stage alarm to ALARM, the subscriber is notified, and it returns to OK', async () => {
    const before = sub.alarms('llmcap-local-ReconcileErrors').length;
    const r = await llmcap(['alarm', 'test'], {
      endpoint: cp.apiUrl,
      env: { AWS_ENDPOINT_URL_CLOUDWATCH: cp.sim.endpoint },
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('llmcap-local-ReconcileErrors: OK -> ALARM');
    expect(r.stdout).toContain(`CloudWatch notifies ${cp.alarmTopicArn} now`);
    await cp.sim.sns.drain();
    const test = sub.alarms('llmcap-local-ReconcileErrors').slice(before);
    expect(test.map((a) => a.NewStateValue)).toEqual(['ALARM']);
    expect(test[0]!.NewStateReason).toMatch(
      /^llmcap alarm test by .*: checking that this alarm reaches on-call/,
    );
    await cp.reconcile();
    expect(
      sub
        .alarms('llmcap-local-ReconcileErrors')
        .slice(before)
        .map((a) => a.NewStateValue),
    ).toEqual(['ALARM', 'OK']);
  });

  it('llmcap alarm test names the stage alarms when the one asked for does not exist', async () => {
    const r = await llmcap(['alarm', 'test', 'llmcap-local-Nope'], {
      endpoint: cp.apiUrl,
      env: { AWS_ENDPOINT_URL_CLOUDWATCH: cp.sim.endpoint },
    });
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(
      /no alarm llmcap-local-Nope in the local cloud simulator; the stage's alarms: .*llmcap-local-ReconcileStale.*, and \d+ per scope or compute/,
    );
  });
});
