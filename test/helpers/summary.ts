import { stageAlarms } from '../../lambdas/domain/alarms';
import type { ReconcileSummary } from '../../lambdas/service/reconcile';

/** Reconcile summaries as a pass reports them, for feeding the real publishMetrics and syncAlarms. */

export const scopeReport = (name: string, gpus: number, limit?: number) => ({
  scope: name,
  hasQuota: true,
  guarantee: { gpus: 2, cores: 0, memoryGb: 0 },
  limit: limit === undefined ? {} : { gpus: limit },
  usage: { gpus, cores: 8, memoryGb: 32 },
  borrowed: { gpus: 0, cores: 0, memoryGb: 0 },
  atLimit: limit !== undefined && gpus >= limit,
  overLimit: false,
  pending: {},
  pendingReplicas: 0,
});

export const computeReport = (
  name: string,
  failed: boolean,
  status = failed ? 'CREATE_FAILED' : 'ACTIVE',
) => ({
  compute: name,
  status,
  desiredNodes: 1,
  readyNodes: failed ? 0 : 1,
  neededNodes: 1,
  lowerBoundNodes: 1,
  costPerHour: 1,
  failed,
  ...(failed ? { statusMessage: 'AsgInstanceLaunchFailures: Could not launch On-Demand Instances.' } : {}),
  action: 'none',
});

export function passSummary(p: {
  scopes?: ReturnType<typeof scopeReport>[];
  computes?: ReturnType<typeof computeReport>[];
  atLimit?: string[];
  errors?: string[];
}): ReconcileSummary {
  return {
    startedAt: new Date().toISOString(),
    durationMs: 42,
    scopes: p.scopes ?? [],
    computes: p.computes ?? [],
    atLimit: p.atLimit ?? [],
    admission: { admitted: 0, released: 0, victims: 0, pendingReplicas: 0, commits: 0 },
    workflows: [],
    awsCalls: 0,
    errors: p.errors ?? [],
  } as unknown as ReconcileSummary;
}

/** The stage alarms of a stage `prod` with placeholder function, state machine and queue names. */
export const prodStageAlarms = () =>
  stageAlarms({
    stage: 'prod',
    rateMinutes: 1,
    reconcileFunctionName: 'llmcap-prod-reconcile',
    admitterFunctionName: 'llmcap-prod-admitter',
    stateMachineArns: { provision: 'p', scale: 's', delete: 'd' },
    reconcileFailuresQueueName: 'llmcap-prod-ReconcileFailures',
  });
