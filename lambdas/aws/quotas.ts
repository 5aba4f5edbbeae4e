import type { AwsQuota } from '../domain/aws-quotas';
import { serviceQuotasClient } from '../shared/clients';
import { logger } from '../shared/logger';

/**
 * The values of the account's and cluster's AWS quotas, from Service Quotas GetServiceQuota (the applied value,
 * increases included), or GetAWSDefaultServiceQuota where the quota has no applied value (GetServiceQuota then
 * answers NoSuchResourceException, and the default is what AWS enforces). Cached per container for QUOTA_TTL_MS: quotas change when someone raises one, rarely, and
 * a pass or a create reads a handful. A quota Service Quotas does not answer (no permission, not offered in the
 * region, throttled) is undefined, which limits nothing: AWS still enforces it, as before llmcap read it.
 */

export const QUOTA_TTL_MS = 10 * 60_000;

interface Cached {
  at: number;
  value: Promise<number | undefined>;
}

// Per container, like the SDK clients (shared/clients.ts): a warm Lambda asks again only after the TTL.
let cache = new Map<string, Cached>();

export async function quotaValue(q: AwsQuota, now = Date.now()): Promise<number | undefined> {
  const key = `${q.serviceCode}/${q.code}`;
  const hit = cache.get(key);
  if (hit && now - hit.at < QUOTA_TTL_MS) return hit.value;
  // Required on first use, like the client: the API's cold start loads no SDK it does not call.
  const { GetServiceQuotaCommand, GetAWSDefaultServiceQuotaCommand } =
    require('@aws-sdk/client-service-quotas') as typeof import('@aws-sdk/client-service-quotas');
  const input = { ServiceCode: q.serviceCode, QuotaCode: q.code };
  const client = serviceQuotasClient();
  const value = client
    .send(new GetServiceQuotaCommand(input))
    .then(
      (out) => out.Quota?.Value,
      (e: Error) => {
        if (e.name !== 'NoSuchResourceException') throw e;
        return client.send(new GetAWSDefaultServiceQuotaCommand(input)).then((out) => out.Quota?.Value);
      },
    )
    .then(
      (v) => v,
      (e: Error) => {
        logger.warn('Service Quotas did not answer; the quota is not checked', {
          quota: key,
          error: `${e.name}: ${e.message}`,
        });
        // Not cached: the next caller asks again.
        if (cache.get(key)?.value === value) cache.delete(key);
        return undefined;
      },
    );
  cache.set(key, { at: now, value });
  return value;
}

/** The values of several quotas at once, by code (undefined where Service Quotas did not answer). */
export async function quotaValues(qs: readonly AwsQuota[]): Promise<Map<string, number | undefined>> {
  const unique = [...new Map(qs.map((q) => [q.code, q])).values()];
  const values = await Promise.all(unique.map((q) => quotaValue(q)));
  return new Map(unique.map((q, i) => [q.code, values[i]]));
}

/** For tests and the local control plane, which point the endpoint elsewhere or change a quota. */
export function resetQuotaCache(): void {
  cache = new Map();
}
