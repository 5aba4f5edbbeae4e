import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { ConsolidationPolicySchema, DEFAULT_CONSOLIDATION } from '../lambdas/domain/consolidation';
import { FORMS_SENTENCE, parsePrincipal } from '../lambdas/domain/principal';

/** The retention periods CloudWatch Logs accepts (PutRetentionPolicy), in days. */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
];

/** A route's throttle; API Gateway's account-level default is 10,000 requests per second, burst 5,000. */
const throttle = (rate: number, burst: number) =>
  z.strictObject({
    ratePerSecond: z.number().int().min(1).max(10000).default(rate),
    burst: z.number().int().min(1).max(5000).default(burst),
  });

/**
 * The stage config: everything that differs between deployments, checked with zod before any construct is
 * built, so that a typo fails `cdk synth` with the field named instead of producing a broken stack.
 */
export const StageConfigSchema = z.strictObject({
  stage: z.string().regex(/^[a-z][a-z0-9-]{0,15}$/, 'a stage is 1-16 lowercase letters, digits or -'),
  account: z.string().regex(/^\d{12}$/, 'an AWS account id is 12 digits'),
  region: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'an AWS region such as us-east-1'),
  clusterName: z.string().regex(/^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$/, 'the name of an existing EKS cluster'),
  subnetIds: z
    .array(z.string().regex(/^subnet-[0-9a-f]{8,17}$/, 'a subnet id such as subnet-0abc1234'))
    .min(1),
  /** The node role for the node groups; the stack creates one when omitted. */
  nodeRoleArn: z
    .string()
    .regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/, 'an IAM role ARN')
    .optional(),
  /** Principals that administer the platform, in the forms of docs/security.md (checked as the API checks them). */
  admins: z
    .array(
      z.string().superRefine((s, ctx) => {
        const r = parsePrincipal(s);
        if (!r.ok) ctx.addIssue({ code: 'custom', message: `${r.problem}; an admin is ${FORMS_SENTENCE}` });
      }),
    )
    .min(1),
  onCall: z
    .strictObject({
      emails: z.array(z.email()).default([]),
      httpsEndpoints: z.array(z.url().startsWith('https://', 'on-call endpoints must use https')).default([]),
    })
    .default({ emails: [], httpsEndpoints: [] }),
  /** Minutes between scheduled reconciles. */
  reconcileRate: z.number().int().min(1).max(60).default(1),
  /** Minutes a compute must need fewer nodes before it scales down. */
  scaleDownCooldown: z.number().int().min(0).max(1440).default(10),
  /**
   * Consolidation (docs/design.md §3.5, lambdas/domain/consolidation.ts): with `enabled` (off by default: a move
   * restarts a model server), the admitter moves replicas to a cheaper placement only when it saves at least both the share of the pool's cost per hour and the dollars per hour; at most
   * `movesPerModelPerHour` replicas of a model move in any hour, and critical models not inside the windows.
   */
  consolidation: ConsolidationPolicySchema.default(DEFAULT_CONSOLIDATION),
  /**
   * API Gateway throttling per route, in requests per second and the burst above it: writes (POST, PUT, PATCH,
   * DELETE) take DynamoDB transactions and may start workflows, so they default tighter than reads.
   */
  api: z
    .strictObject({
      reads: throttle(50, 100).default({ ratePerSecond: 50, burst: 100 }),
      writes: throttle(10, 20).default({ ratePerSecond: 10, burst: 20 }),
      /**
       * How old a reading of the table a model write's first decision may use, in milliseconds (0: none); its
       * commit's conditions catch what changed since (docs/architecture.md, "How writes commit").
       */
      writeSnapshotMs: z.number().int().min(0).max(10_000).default(1000),
    })
    .default({
      reads: { ratePerSecond: 50, burst: 100 },
      writes: { ratePerSecond: 10, burst: 20 },
      writeSnapshotMs: 1000,
    }),
  /** Days CloudWatch Logs keeps every log group of the stage (functions, API access logs, state machines). */
  logRetentionDays: z
    .number()
    .int()
    .refine((d) => LOG_RETENTION_DAYS.includes(d), {
      message: `CloudWatch Logs keeps logs for one of ${LOG_RETENTION_DAYS.join(', ')} days`,
    })
    .default(90),
  /**
   * true: the reconciler runs the model servers of what is admitted (docs/workloads.md), through an EKS access
   * entry the stack creates; false: it keeps the node groups only and the platform deploys the pods itself.
   */
  deployWorkloads: z.boolean().default(true),
  /**
   * The declared models of this stage, a YAML file in the form of config/catalog.yaml, as a path from the
   * repository root: what one stage starts on its first deploy need not be what another runs.
   */
  catalog: z
    .string()
    .regex(/^[\w./-]+\.ya?ml$/, 'a YAML file in the repository, such as config/catalog-prod.yaml')
    .default('config/catalog.yaml'),
});

export type StageConfig = z.output<typeof StageConfigSchema>;

export function parseStageConfig(raw: unknown, source: string): StageConfig {
  const r = StageConfigSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`).join('\n');
    throw new Error(`stage config ${source} is invalid:\n${lines}`);
  }
  return r.data;
}

/** Reads config/stages/<stage>.json; cdk.json context `stageConfig` may override it for one-off stacks. */
export function loadStageConfig(stage: string, root = process.cwd()): StageConfig {
  const file = join(root, 'config', 'stages', `${stage}.json`);
  if (!existsSync(file)) {
    throw new Error(`no stage config for '${stage}': create ${file} (config/stages/dev.json is an example)`);
  }
  const config = parseStageConfig(JSON.parse(readFileSync(file, 'utf8')), file);
  if (!existsSync(join(root, config.catalog))) {
    throw new Error(
      `stage config ${file} is invalid:\n  catalog: ${config.catalog} does not exist (copy config/catalog.yaml to it, or leave catalog out)`,
    );
  }
  return config;
}
