import { P } from '../../../soak/lib/fixture';
import { checkResponse } from '../../../soak/lib/fuzz';
import { setupFuzzWorld } from '../../../soak/lib/fuzz-fixture';
import { invokeInProcess, jsonClient } from '../../../soak/lib/invoke';
import { testApi } from '../../helpers/api';
import { dumpTable } from '../../helpers/dump';

/**
 * Bad input the fuzzer found answered with 500 (docs/design.md §4: "5xx never for bad input"), pinned one by one
 * so that each reads as a plain repro; fixed in 5539e49 and kept here as regressions.
 */

beforeAll(async () => {
  await testApi({ admins: [P.platform] });
  await setupFuzzWorld(jsonClient(invokeInProcess, P.platform));
});

const send = (method: string, path: string, body?: unknown) =>
  invokeInProcess({
    method,
    path,
    principal: P.platform,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

async function refusedCleanly(method: string, path: string, body?: unknown) {
  const before = await dumpTable();
  const r = await send(method, path, body);
  expect({ status: r.status, problem: checkResponse({ method, path }, r) }).toEqual({
    status: expect.any(Number),
    problem: undefined,
  });
  expect(r.status).toBeGreaterThanOrEqual(400);
  expect(r.status).toBeLessThan(500);
  expect(await dumpTable()).toEqual(before);
}

describe('a path parameter that is not valid percent-encoding (router.ts decodeURIComponent throws URIError)', () => {
  it.each([
    ['GET', '/v1/computes/%E0%A4%A'],
    ['GET', '/v1/models/%zz'],
    ['DELETE', '/v1/scopes/project:a/members/%'],
  ])('%s %s answers 4xx, not 500', async (method, path) => {
    await refusedCleanly(method, path);
  });
});

describe('a compute name longer than a DynamoDB sort key may be (1024 bytes) reaches GetItem unvalidated', () => {
  const long = 'y'.repeat(1100);
  it.each([
    ['GET', `/v1/computes/${long}`, undefined],
    ['DELETE', `/v1/computes/${long}`, undefined],
    ['POST', `/v1/computes/${long}/clone`, { name: 'fz-clone' }],
  ])('%s /v1/computes/<1100 characters>... answers 4xx, not 500', async (method, path, body) => {
    await refusedCleanly(method, path, body);
  });
});

describe('numbers the schemas accept but DynamoDB cannot store (|x| < 1e-130)', () => {
  const compute = (spec: Record<string, unknown>) => ({
    apiVersion: 'llmcap/v1',
    kind: 'Compute',
    metadata: { name: 'tiny', owner: 'project:a' },
    spec: {
      node: { instanceType: 'm7i.xlarge', cpu: 4, memoryGb: 16 },
      cost: { perHour: 0.2 },
      ...spec,
    },
  });
  it('POST /v1/computes with node.memoryGb 5e-324 answers 400, not 500', async () => {
    await refusedCleanly(
      'POST',
      '/v1/computes',
      compute({ node: { instanceType: 'm7i.xlarge', cpu: 4, memoryGb: 5e-324 } }),
    );
  });
  it('POST /v1/computes with cost.perHour 1e-200 answers 400, not 500', async () => {
    await refusedCleanly('POST', '/v1/computes', compute({ cost: { perHour: 1e-200 } }));
  });
  it('PUT /v1/quotas/project:a with guarantee.cores 1e-200 answers 400, not 500', async () => {
    await refusedCleanly('PUT', '/v1/quotas/project:a', { guarantee: { gpus: 1, cores: 1e-200 } });
  });
});
