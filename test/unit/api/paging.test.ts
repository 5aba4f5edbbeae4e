import type { ApiRequest } from '../../../lambdas/api/http';
import {
  byNameAndOwner,
  DEFAULT_LIMIT,
  ListQuery,
  MAX_LIMIT,
  type Page,
  pageOf,
  parseListQuery,
} from '../../../lambdas/api/paging';
import { type AdmissionSummary, type Model, modelManifest } from '../../../lambdas/domain/model';
import { MAX_PODS_SHOWN, type PodView } from '../../../lambdas/domain/workloads';

/**
 * What a page of the largest model manifests weighs (computed, not timed): API Gateway refuses a proxy
 * Lambda's answer over 6 MB (6,291,456 bytes, the body escaped into the Lambda's JSON result), which one
 * unpaged GET /v1/models passed at a few thousand models.
 */

const LAMBDA_ANSWER_BYTES = 6 * 1024 * 1024;
const ARN = `arn:aws:iam::123456789012:role/${'p/'.repeat(250)}platform-admin-with-a-long-role-name/session-x`;
const long = (prefix: string, n = 50) => `${prefix}${'x'.repeat(n - prefix.length)}`;

/** The largest model the schemas allow: 16 profiles of 8 computes each, a 1 KB source, 50-character names. */
function largestModel(i: number): Model {
  const name = long(`m${String(i).padStart(5, '0')}-`);
  return {
    name,
    owner: long('project:', 40),
    declared: false,
    version: 999_999,
    createdAt: '2026-12-06T16:00:00.000Z',
    createdBy: ARN,
    updatedAt: '2026-12-06T16:00:00.000Z',
    updatedBy: ARN,
    spec: {
      source: `s3://${long('bucket-', 63)}/${'w'.repeat(1024 - 70)}`,
      engine: 'vllm',
      profiles: Array.from({ length: 16 }, (_, p) => ({
        name: long(`p${p}-`, 31),
        gpus: 8,
        gpuType: long('H100-', 32),
        cpuCores: 96,
        minMemoryGb: 1024,
        computes: Array.from({ length: 8 }, (_, c) => long(`c${p}-${c}-`)),
      })),
      scaling: { min: 1000, max: 1000, target: 1000 },
      class: 'standard',
    },
  } as Model;
}

const pod = (m: string, n: number): PodView => ({
  name: `${m}-${'a'.repeat(10)}-${String(n).padStart(5, '0')}`,
  model: m,
  namespace: long('llmcap-project-', 63),
  compute: long('c0-0-'),
  profile: long('p0-', 31),
  node: `ip-10-0-${n % 250}-${n % 250}.eu-central-1.compute.internal`,
  phase: 'Pending',
  ready: false,
  restarts: 99,
  reason: 'Unschedulable',
  message: `0/${n} nodes are available: ${'1 Insufficient nvidia.com/gpu, '.repeat(4)}preemption: not eligible`,
  createdAt: '2026-12-06T16:00:00.000Z',
});

/** Its status at the most: placed on every compute, waiting for every reason, taken back, and 50 pods. */
function largestStatus(m: Model): AdmissionSummary {
  const computes = m.spec.profiles.flatMap((p) => (p.computes ?? []).map((c) => ({ c, p: p.name })));
  const reason = {
    reason: 'LimitExceeded',
    message: `${long('team:', 40)} is at its limit of 64 GPUs (64 held); lower another model's replicas or raise the limit`,
    replicas: 1000,
  };
  return {
    admitted: 1000,
    borrowed: 1000,
    pending: 1000,
    placements: computes.map(({ c, p }) => ({ compute: c, profile: p, replicas: 125 })),
    reasons: Array.from({ length: 4 }, () => reason),
    takenBack: Array.from({ length: 8 }, () => ({
      ...reason,
      reason: 'Preempted',
      at: '2026-12-06T16:00:00.000Z',
      by: { model: long('m-'), unitId: 'u'.repeat(40), scope: long('team:', 40), class: 'standard' },
    })),
    running: 1000,
    total: 1000,
    pods: Array.from({ length: MAX_PODS_SHOWN }, (_, n) => pod(m.name, n)),
    podReasons: [{ reason: 'Unschedulable', message: reason.message, replicas: 1000 }],
    readyOn: Object.fromEntries(computes.map(({ c }) => [c, 125])),
  } as AdmissionSummary;
}

/** The answer the Lambda returns for GET /v1/models with this body, as API Gateway measures it. */
const lambdaBytes = (body: unknown) =>
  Buffer.byteLength(
    JSON.stringify({
      statusCode: 200,
      headers: { 'content-type': 'application/json', etag: `W/"${'x'.repeat(22)}"` },
      body: JSON.stringify(body),
    }),
    'utf8',
  );

const request = (query: Record<string, string> = {}): ApiRequest =>
  ({ method: 'GET', path: '/v1/models', query, params: {}, headers: {} }) as ApiRequest;

/** A typical model, as the benches and the examples write them: one profile, its admission decided. */
function typical(i: number) {
  const m = largestModel(i);
  const small = {
    ...m,
    name: `model-${i}`,
    owner: 'team:ml',
    createdBy: 'arn:aws:sts::123456789012:assumed-role/ml-dev/session',
    updatedBy: 'arn:aws:sts::123456789012:assumed-role/ml-dev/session',
    spec: {
      source: `hf://org/model-${i}`,
      engine: 'vllm',
      profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'gpu-l4' }],
      scaling: { min: 1, max: 2 },
    },
  } as Model;
  const status = {
    admitted: 1,
    borrowed: 0,
    pending: 0,
    placements: [{ compute: 'gpu-l4', profile: 'l4', replicas: 1 }],
    reasons: [],
    running: 1,
    total: 1,
    pods: [pod(small.name, 0)],
    podReasons: [],
  } as unknown as AdmissionSummary;
  return modelManifest(small, status);
}

describe('a page of models against the 6 MB answer', () => {
  const biggest = modelManifest(largestModel(0), largestStatus(largestModel(0)));
  const big = lambdaBytes(biggest);
  const small = lambdaBytes(typical(0));

  it('keeps a page of 10,000 typical models under 6 MB, where one answer of all of them is far over', async () => {
    // Printed for docs/design.md: a typical manifest, the largest, and a default page of each.
    process.stdout.write(
      `typical model manifest ${small} B, ${DEFAULT_LIMIT} of them ${small * DEFAULT_LIMIT} B; largest ${big} B, ${DEFAULT_LIMIT} of them ${big * DEFAULT_LIMIT} B\n`,
    );
    // The default keeps a page of typical manifests at a quarter of the limit or less; the largest need PAGE_BYTES.
    expect(small * DEFAULT_LIMIT).toBeLessThan(LAMBDA_ANSWER_BYTES / 4);
    expect(big * DEFAULT_LIMIT).toBeGreaterThan(LAMBDA_ANSWER_BYTES);
    const all = Array.from({ length: 10_000 }, (_, i) => i);
    const page = await pageOf(
      request(),
      all,
      (i) => [`model-${String(i).padStart(5, '0')}`],
      (p) => p.map(typical),
      parseListQuery(ListQuery, request()),
    );
    expect(page.items).toHaveLength(DEFAULT_LIMIT);
    expect(page.metadata?.remainingItemCount).toBe(10_000 - DEFAULT_LIMIT);
    expect(lambdaBytes(page)).toBeLessThan(LAMBDA_ANSWER_BYTES);
    expect(lambdaBytes({ items: all.map(typical) })).toBeGreaterThan(LAMBDA_ANSWER_BYTES);
  });

  it.each([DEFAULT_LIMIT, MAX_LIMIT])(
    'cuts a page of the largest manifests asked %i at a time below 6 MB, and the pages hold them all',
    async (limit) => {
      const models = Array.from({ length: 300 }, (_, i) => largestModel(i));
      const view = (ms: Model[]) => ms.map((m) => modelManifest(m, largestStatus(m)));
      const seen: string[] = [];
      let query: Record<string, string> = { limit: String(limit) };
      let pages = 0;
      for (;;) {
        const page: Page<ReturnType<typeof modelManifest>> = await pageOf(
          request(query),
          models,
          byNameAndOwner,
          view,
          parseListQuery(ListQuery, request(query)),
        );
        expect(lambdaBytes(page)).toBeLessThan(LAMBDA_ANSWER_BYTES);
        expect(page.items.length).toBeGreaterThan(0);
        seen.push(...page.items.map((m) => m.metadata.name));
        pages++;
        if (!page.metadata) break;
        query = { limit: String(limit), continue: page.metadata.continue };
      }
      expect(seen).toEqual(models.map((m) => m.name));
      expect(pages).toBeGreaterThan(Math.ceil(300 / limit));
    },
  );
});
