import { type TestApi, testApi } from '../../helpers/api';
import { dumpTable } from '../../helpers/dump';

/** What the API does with bodies it cannot or must not read: a clear problem+json, and nothing written. */

const scope = { name: 'org:input' };

let api: TestApi;
beforeAll(async () => {
  api = await testApi();
});

/** A valid compute manifest whose `status` is the given JSON text. */
const computeWithStatus = (status: string) =>
  JSON.stringify({
    apiVersion: 'llmcap/v1',
    kind: 'Compute',
    metadata: { name: 'deep' },
    spec: {
      node: { instanceType: 'g6.2xlarge', cpu: 8, memoryGb: 32, gpu: { type: 'L4', count: 1, memoryGb: 24 } },
      nodeGroup: { maxNodes: 3 },
      cost: { perHour: 0.9776 },
    },
    status: 0,
  }).replace('"status":0', `"status":${status.replace('{"a":}', '{}')}`);

/** A JSON text nested `depth` levels deep, as an attacker would send it to exhaust the stack. */
const nested = (depth: number, open = '[', close = ']') => `${open.repeat(depth)}${close.repeat(depth)}`;

describe('deeply nested bodies', () => {
  it.each([
    ['arrays', '/v1/scopes', nested(100_000)],
    // A compute's `status` is ignored on input, so nothing but the depth limit stands between it and recursion.
    [
      'objects in a field the schema ignores',
      '/v1/computes',
      computeWithStatus(nested(20_000, '{"a":', '}')),
    ],
  ])('answers nested %s with 400 problem+json naming the limit, and writes nothing', async (_, path, raw) => {
    const before = await dumpTable();
    const r = await api.call('POST', path, undefined, { raw });
    expect(r.status).toBe(400);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.body.detail).toMatch(/nested deeper than 32/);
    expect(r.body.errors).toEqual([{ path: '(body)', message: expect.stringMatching(/at most 32/) }]);
    expect(await dumpTable()).toEqual(before);
  });
});

describe('the content type of a write', () => {
  it.each([
    ['text/plain'],
    ['application/x-www-form-urlencoded'],
    ['multipart/form-data; boundary=x'],
    ['text/plain; note=json'],
    ['application/jsonp'],
    [''],
  ])('answers a POST sent as %p with 415 problem+json, and writes nothing', async (type) => {
    const before = await dumpTable();
    const r = await api.call('POST', '/v1/scopes', scope, { headers: { 'content-type': type } });
    expect(r.status).toBe(415);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.body.detail).toMatch(/application\/json/);
    expect(await dumpTable()).toEqual(before);
  });

  it('answers a PUT without a JSON content type with 415', async () => {
    const r = await api.call(
      'PUT',
      '/v1/computes/plain',
      { apiVersion: 'llmcap/v1' },
      { headers: { 'content-type': 'text/plain' } },
    );
    expect(r.status).toBe(415);
  });

  it.each([['application/json'], ['application/json; charset=utf-8'], ['APPLICATION/JSON;charset=UTF-8']])(
    'accepts %p',
    async (type) => {
      const name = `org:ct-${type.replace(/[^a-z]/gi, '').toLowerCase()}${type.length}`;
      const r = await api.call('POST', '/v1/scopes', { name }, { headers: { 'content-type': type } });
      expect(r.status).toBe(201);
    },
  );
});
