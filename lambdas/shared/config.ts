import * as z from 'zod';
import { FORMS_SENTENCE, type Principal, parsePrincipal } from '../domain/principal';

/**
 * The runtime configuration of every Lambda and of the local control plane, from the environment, checked
 * once at start so that a misconfigured deploy fails loudly on its first request rather than half-working.
 */
const csv = z
  .string()
  .optional()
  .transform((s) =>
    (s ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  );

/** Platform admins: each an IAM principal in one of the forms of docs/security.md, or the start fails. */
const principals = csv.transform((list, ctx): Principal[] => {
  const out: Principal[] = [];
  for (const s of list) {
    const r = parsePrincipal(s);
    if (r.ok) out.push(r.value);
    else ctx.addIssue({ code: 'custom', message: `${s}: ${r.problem}; each admin is ${FORMS_SENTENCE}` });
  }
  return out;
});

export const RuntimeConfigSchema = z.object({
  LLMCAP_STAGE: z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,15}$/, 'a stage is 1-16 lowercase letters, digits or -')
    .default('local'),
  LLMCAP_TABLE: z.string().min(3).default('llmcap'),
  LLMCAP_ADMINS: principals,
  LLMCAP_CLUSTER: z.string().min(1).default('llmcap-local'),
  LLMCAP_SUBNETS: csv,
  LLMCAP_COOLDOWN_SECONDS: z.coerce.number().int().min(0).default(600),
  /** The reconcile Lambda that POST /v1/reconcile invokes (name or ARN); set on the api Lambda only. */
  LLMCAP_RECONCILE_FUNCTION: z.string().min(1).optional(),
  /** Minutes between scheduled reconciles: the period of the alarms on what each pass reports. */
  LLMCAP_RECONCILE_RATE_MINUTES: z.coerce.number().int().min(1).max(60).default(1),
  /**
   * `deploy`: the reconciler runs the model servers of what is admitted (docs/workloads.md); `off` (the default
   * when unset): it keeps the node groups only and leaves the pods to the platform's own tooling.
   */
  LLMCAP_WORKLOADS: z.enum(['deploy', 'off']).default('off'),
});

export interface RuntimeConfig {
  stage: string;
  table: string;
  admins: readonly Principal[];
  cluster: string;
  subnetIds: string[];
  cooldownSeconds: number;
  reconcileFunction?: string;
  reconcileRateMinutes: number;
  deployWorkloads: boolean;
}

let cached: RuntimeConfig | undefined;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): RuntimeConfig {
  const parsed = RuntimeConfigSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`llmcap configuration is invalid: ${lines}`);
  }
  const e = parsed.data;
  return {
    stage: e.LLMCAP_STAGE,
    table: e.LLMCAP_TABLE,
    admins: e.LLMCAP_ADMINS,
    cluster: e.LLMCAP_CLUSTER,
    subnetIds: e.LLMCAP_SUBNETS,
    cooldownSeconds: e.LLMCAP_COOLDOWN_SECONDS,
    ...(e.LLMCAP_RECONCILE_FUNCTION ? { reconcileFunction: e.LLMCAP_RECONCILE_FUNCTION } : {}),
    reconcileRateMinutes: e.LLMCAP_RECONCILE_RATE_MINUTES,
    deployWorkloads: e.LLMCAP_WORKLOADS === 'deploy',
  };
}

/** The configuration of this process; tests and the local control plane reset it after changing env. */
export function config(): RuntimeConfig {
  cached ??= loadConfig();
  return cached;
}

export function resetConfig(): void {
  cached = undefined;
}
