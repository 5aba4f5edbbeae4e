import type { Limits } from './config';

/**
 * Service Quotas (JSON 1.1, X-Amz-Target `ServiceQuotasV20190624.<Operation>`): GetServiceQuota and
 * GetAWSDefaultServiceQuota for the quotas llmcap reads (docs/cloud-sim.md). A quota set to `null` has no applied
 * value: GetServiceQuota answers NoSuchResourceException for it, as AWS does ("if the applied quota value is not
 * available for a quota, the quota is not retrieved"), and GetAWSDefaultServiceQuota its default. The two EKS quotas are the limits the simulated EKS enforces (Limits), so
 * setting one changes both the answer and CreateNodegroup's refusal. Shapes as botocore's service-quotas model
 * and moto 5.2.1 (which models only vpc): `{"Quota": {...}}`, errors `{"__type", "Message"}` with HTTP 400.
 */

export const SERVICE_QUOTAS_TARGET = 'ServiceQuotasV20190624.';

interface QuotaDef {
  serviceCode: 'eks' | 'ec2';
  quotaCode: string;
  quotaName: string;
  /** AWS/Usage dimension `Class` of an EC2 vCPU quota. */
  usageClass?: string;
  /** The value the simulator answers unless set. */
  value: number;
}

const SERVICE_NAMES = {
  eks: 'Amazon Elastic Kubernetes Service (Amazon EKS)',
  ec2: 'Amazon Elastic Compute Cloud (Amazon EC2)',
} as const;

/** The EKS codes that are the simulated EKS's limits. */
const LIMIT_OF: Record<string, keyof Limits> = {
  'L-6D54EA21': 'nodegroupsPerCluster',
  'L-BD136A63': 'nodesPerNodegroup',
};

/**
 * The quotas answered. EKS's are AWS's defaults (30 node groups per cluster, 450 nodes per group). AWS publishes
 * no default for the EC2 vCPU quotas and gives a new account 5 Standard vCPUs and none for GPUs, on which nothing
 * of the built-in fleet could run; the simulator answers an established account's values instead (values
 * seen in public listings) and a test or `PATCH /_sim/quotas` sets a new account's.
 */
export const DEFAULT_QUOTAS: readonly QuotaDef[] = [
  { serviceCode: 'eks', quotaCode: 'L-6D54EA21', quotaName: 'Managed node groups per cluster', value: 30 },
  { serviceCode: 'eks', quotaCode: 'L-BD136A63', quotaName: 'Nodes per managed node group', value: 450 },
  ...(
    [
      [
        'L-1216C47A',
        'Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances',
        'Standard/OnDemand',
        1920,
      ],
      ['L-DB2E81BA', 'Running On-Demand G and VT instances', 'G/OnDemand', 768],
      ['L-417A185B', 'Running On-Demand P instances', 'P/OnDemand', 768],
      ['L-1945791B', 'Running On-Demand Inf instances', 'Inf/OnDemand', 128],
      ['L-2C3B7624', 'Running On-Demand Trn instances', 'Trn/OnDemand', 128],
      ['L-74FC7D96', 'Running On-Demand F instances', 'F/OnDemand', 128],
      ['L-7295265B', 'Running On-Demand X instances', 'X/OnDemand', 128],
      ['L-6E869C2A', 'Running On-Demand DL instances', 'DL/OnDemand', 128],
      [
        'L-34B43A08',
        'All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests',
        'Standard/Spot',
        1920,
      ],
      ['L-3819A6DF', 'All G and VT Spot Instance Requests', 'G/Spot', 768],
      ['L-7212CCBC', 'All P Spot Instance Requests', 'P/Spot', 768],
    ] as const
  ).map(([quotaCode, quotaName, usageClass, value]) => ({
    serviceCode: 'ec2' as const,
    quotaCode,
    quotaName,
    usageClass,
    value,
  })),
];

export class ServiceQuotasError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export class ServiceQuotasService {
  private readonly values = new Map<string, number>();
  /** Codes with no applied value (set to null): only their AWS default is answered. */
  private readonly unapplied = new Set<string>();
  constructor(
    private readonly opts: { region: string; accountId: string; limits: Limits },
    initial: Record<string, number> = {},
  ) {
    this.set(initial);
  }

  /** Every quota with the value it is answered with, null where none is applied (admin GET /_sim/quotas). */
  list(): Record<string, number | null> {
    return Object.fromEntries(
      DEFAULT_QUOTAS.map((q) => [q.quotaCode, this.unapplied.has(q.quotaCode) ? null : this.value(q)]),
    );
  }

  /**
   * Sets quotas by code; null removes the applied value (the default still holds, and is what the simulated EKS
   * enforces). An unknown code or a value that is neither null nor a number ≥ 0 is refused, nothing set.
   */
  set(values: Record<string, unknown>): void {
    for (const [code, v] of Object.entries(values)) {
      if (!DEFAULT_QUOTAS.some((q) => q.quotaCode === code))
        throw new Error(
          `unknown quota code ${code}: the simulator answers ${DEFAULT_QUOTAS.map((q) => q.quotaCode).join(', ')}`,
        );
      if (v !== null && (typeof v !== 'number' || !(v >= 0)))
        throw new Error(`quota ${code} must be a number >= 0, or null for no applied value`);
    }
    for (const [code, v] of Object.entries(values) as [string, number | null][]) {
      const def = DEFAULT_QUOTAS.find((q) => q.quotaCode === code)!;
      if (v === null) this.unapplied.add(code);
      else this.unapplied.delete(code);
      const value = v ?? def.value;
      const limit = LIMIT_OF[code];
      if (limit) this.opts.limits[limit] = value;
      else this.values.set(code, value);
    }
  }

  private value(q: QuotaDef): number {
    const limit = LIMIT_OF[q.quotaCode];
    return limit ? this.opts.limits[limit] : (this.values.get(q.quotaCode) ?? q.value);
  }

  handle(operation: string, body: Record<string, unknown>): unknown {
    if (operation !== 'GetServiceQuota' && operation !== 'GetAWSDefaultServiceQuota')
      throw new ServiceQuotasError(
        'UnknownOperationException',
        `The simulator answers GetServiceQuota and GetAWSDefaultServiceQuota only, not ${operation}.`,
      );
    const serviceCode = body.ServiceCode;
    const quotaCode = body.QuotaCode;
    if (typeof serviceCode !== 'string' || !/^[a-zA-Z][a-zA-Z0-9-]{1,63}$/.test(serviceCode))
      throw new ServiceQuotasError('IllegalArgumentException', 'ServiceCode is missing or invalid.');
    if (typeof quotaCode !== 'string' || quotaCode.length === 0 || quotaCode.length > 128)
      throw new ServiceQuotasError('IllegalArgumentException', 'QuotaCode is missing or invalid.');
    const q = DEFAULT_QUOTAS.find((d) => d.serviceCode === serviceCode && d.quotaCode === quotaCode);
    // moto's words for a quota it does not know.
    if (!q)
      throw new ServiceQuotasError(
        'NoSuchResourceException',
        'This service is not available in the current Region. Choose a different Region or a different service.',
      );
    const isDefault = operation === 'GetAWSDefaultServiceQuota';
    if (!isDefault && this.unapplied.has(q.quotaCode))
      throw new ServiceQuotasError(
        'NoSuchResourceException',
        `The request failed because the specified quota has no applied value: ${q.serviceCode}/${q.quotaCode}. Use GetAWSDefaultServiceQuota for its default.`,
      );
    const { region, accountId } = this.opts;
    return {
      Quota: {
        ServiceCode: q.serviceCode,
        ServiceName: SERVICE_NAMES[q.serviceCode],
        // AWS's default quotas are named without the account (arn:aws:servicequotas:<region>::<service>/<code>).
        QuotaArn: `arn:aws:servicequotas:${region}:${isDefault ? '' : accountId}:${q.serviceCode}/${q.quotaCode}`,
        QuotaCode: q.quotaCode,
        QuotaName: q.quotaName,
        Value: isDefault ? q.value : this.value(q),
        Unit: 'None',
        Adjustable: true,
        GlobalQuota: false,
        ...(q.usageClass
          ? {
              UsageMetric: {
                MetricNamespace: 'AWS/Usage',
                MetricName: 'ResourceCount',
                MetricDimensions: { Class: q.usageClass, Resource: 'vCPU', Service: 'EC2', Type: 'Resource' },
                MetricStatisticRecommendation: 'Maximum',
              },
            }
          : {}),
        QuotaAppliedAtLevel: 'ACCOUNT',
      },
    };
  }
}
