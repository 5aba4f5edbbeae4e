import { randomUUID } from 'node:crypto';
import { type ControlPlane, startControlPlane } from '../../../local/control-plane';

let cp: ControlPlane;
beforeAll(async () => {
  cp = await startControlPlane({
    port: 0,
    dynamodbEndpoint: process.env.LLMCAP_DYNAMODB_ENDPOINT,
    simPort: 0,
    reconcileSeconds: 0,
    table: `cp-${randomUUID().slice(0, 8)}`,
  });
});
afterAll(() => cp.stop());

const req = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  fetch(`${cp.apiUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });

describe('the local control plane over HTTP', () => {
  it('answers healthz and serves the built-ins with derived fields', async () => {
    expect(((await (await req('GET', '/v1/healthz')).json()) as any).status).toBe('ok');
    const list = (await (await req('GET', '/v1/computes')).json()) as any;
    expect(list.items).toHaveLength(7);
    const cpu = list.items.find((c: any) => c.metadata.name === 'cpu-medium');
    expect(cpu.status.allocatable).toEqual({ millicores: 7910, memoryMiB: 31203, gpus: 0 });
    expect(cpu.status.taint).toBe('llmcap.dev/compute=cpu-medium:NO_SCHEDULE');
  });

  it('creates, applies, clones, renames and deletes a compute as local-admin', async () => {
    const m = {
      apiVersion: 'llmcap/v1',
      kind: 'Compute',
      metadata: { name: 'cpu-tiny' },
      spec: { node: { instanceType: 'm7i.large', cpu: 2, memoryGb: 8 }, cost: { perHour: 0.1008 } },
    };
    expect((await req('POST', '/v1/computes', m)).status).toBe(201);
    const applied = await req('PUT', '/v1/computes/cpu-tiny', {
      ...m,
      spec: { ...m.spec, nodeGroup: { maxNodes: 2 } },
    });
    expect(applied.status).toBe(200);
    expect(applied.headers.get('etag')).toBe('"2"');
    expect((await req('POST', '/v1/computes/cpu-tiny/clone', { name: 'cpu-tiny-2' })).status).toBe(201);
    expect((await req('POST', '/v1/computes/cpu-tiny-2/rename', { name: 'cpu-tiny-3' })).status).toBe(201);
    expect((await req('DELETE', '/v1/computes/cpu-tiny-3')).status).toBe(204);
    expect((await req('GET', '/v1/computes/cpu-tiny-3')).status).toBe(404);
  });

  it('takes the caller from x-llmcap-principal: a stranger cannot change a built-in', async () => {
    const cur = await (await req('GET', '/v1/computes/cpu-small')).json();
    const r = await req('PUT', '/v1/computes/cpu-small', cur, {
      'x-llmcap-principal': 'arn:aws:iam::000000000000:user/someone-else',
    });
    expect(r.status).toBe(403);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
  });

  it('answers malformed JSON and oversized bodies with problem+json', async () => {
    const bad = await req('POST', '/v1/computes', '{"kind":');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).errors[0].message).toBe('malformed JSON');
    const big = await req('POST', '/v1/computes', JSON.stringify({ x: 'y'.repeat(257 * 1024) }));
    expect(big.status).toBe(413);
  });
});
