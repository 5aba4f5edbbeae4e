import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ADMIN, apiEvent, testApi } from '../../helpers/api';
import { bundleApi, REPO_NODE_MODULES } from '../../helpers/api-bundle';

/**
 * The API Lambda as deployed (its minified bundle, the SDK outside it as in the runtime) loads an AWS SDK
 * client's package only when a request needs that service: loading the SDK is most of a cold start, and the EKS
 * and CloudWatch packages alone took ~40 ms of it (BENCHMARKS.md, API Lambda). A fresh process serves reads
 * that need only DynamoDB with DynamoDB's package alone, and loads CloudWatch's when GET /v1/alarms asks it.
 */

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'llmcap-api-bundle-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Each step: the request, its status, and the SDK client packages the process had loaded after it. */
interface Step {
  step: string;
  status?: number;
  sdk: string[];
}

/** A fresh Node process loads the bundle, then serves `paths` in turn, as one Lambda container would. */
async function coldContainer(bundle: string, paths: string[]): Promise<Step[]> {
  const events = paths.map((p) => apiEvent('GET', p));
  const script = `
    const loaded = () => [...new Set(Object.keys(require.cache).flatMap((k) => k.match(/@aws-sdk\\/client-[a-z0-9-]+/g) ?? []))].sort();
    const steps = [];
    (async () => {
      const { handler } = require(${JSON.stringify(bundle)});
      steps.push({ step: 'load', sdk: loaded() });
      const context = { awsRequestId: 'cold', functionName: 'api', getRemainingTimeInMillis: () => 30000 };
      for (const event of ${JSON.stringify(events)}) {
        const r = await handler(event, context);
        steps.push({ step: event.rawPath + (event.rawQueryString ? '?' + event.rawQueryString : ''), status: r.statusCode, sdk: loaded() });
      }
      console.log(JSON.stringify(steps));
    })().catch((e) => { console.error(e); process.exit(1); });`;
  const out = await run(process.execPath, ['-e', script], {
    // The bundle is outside the repository: the SDK is found as the runtime's is, outside the bundle.
    env: { ...process.env, NODE_PATH: REPO_NODE_MODULES },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return JSON.parse(out.stdout.trim().split('\n').pop()!);
}

it('serves reads that need only DynamoDB with its SDK package alone, and loads CloudWatch for GET /v1/alarms', async () => {
  const api = await testApi({ admins: [ADMIN] });
  // The built-ins resolved and stored first, so the fresh process asks EC2 and the Price List nothing (as on
  // every cold start after the first; builtins-cold-start.test.ts).
  expect((await api.call('GET', '/v1/computes')).status).toBe(200);
  const { file } = await bundleApi(join(dir, 'api.js'));
  const steps = await coldContainer(file, [
    '/v1/computes',
    '/v1/capacity',
    '/v1/capacity?consolidation=true',
    '/v1/alarms',
  ]);
  const dynamo = ['@aws-sdk/client-dynamodb'];
  expect(steps).toEqual([
    { step: 'load', sdk: dynamo },
    { step: '/v1/computes', status: 200, sdk: dynamo },
    { step: '/v1/capacity', status: 200, sdk: dynamo },
    { step: '/v1/capacity?consolidation=true', status: 200, sdk: dynamo },
    { step: '/v1/alarms', status: 200, sdk: ['@aws-sdk/client-cloudwatch', ...dynamo] },
  ]);
});

it("bundles none of the reconciler's cluster, node group or workflow adapters, nor the admitter", async () => {
  const { metafile } = await bundleApi(join(dir, 'api-meta.js'));
  const inputs = Object.values(metafile.outputs).flatMap((o) =>
    Object.entries(o.inputs)
      .filter(([, i]) => i.bytesInOutput > 0)
      .map(([f]) => f),
  );
  // What only a reconcile pass or the admitter runs: a module here would be loaded (and its SDK with it) on
  // every API cold start, for nothing.
  const notTheApis = [
    'lambdas/aws/kubernetes.ts',
    'lambdas/aws/nodegroups.ts',
    'lambdas/aws/workflows.ts',
    'lambdas/service/reconcile.ts',
    'lambdas/service/admitter.ts',
    'lambdas/domain/moves.ts',
  ];
  expect(inputs.filter((f) => notTheApis.some((r) => f.endsWith(r)))).toEqual([]);
  expect(inputs.some((f) => f.endsWith('lambdas/api/handler.ts'))).toBe(true);
});
