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

/**
 * The API Lambda's timeout, in seconds: API Gateway gives an HTTP API integration at most 30 s. The stack's
 * function construct sets LLMCAP_FUNCTION_TIMEOUT_SECONDS from the timeout it deploys, so code that must know
 * how long an invocation can last (an Idempotency-Key's claim) reads the figure Lambda enforces.
 */
export const API_TIMEOUT_SECONDS = 29;

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
  /** This function's timeout as deployed (Lambda allows 1-900 s); the local API runs with the API's. */
  LLMCAP_FUNCTION_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(900).default(API_TIMEOUT_SECONDS),
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
  functionTimeoutSeconds: number;
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
    functionTimeoutSeconds: e.LLMCAP_FUNCTION_TIMEOUT_SECONDS,
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
