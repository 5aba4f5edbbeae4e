import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';
import { FORMS_SENTENCE, parsePrincipal } from '../lambdas/domain/principal';

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
  api: z
    .strictObject({
      throttleRatePerSecond: z.number().int().min(1).max(10000).default(50),
      throttleBurst: z.number().int().min(1).max(5000).default(100),
    })
    .default({ throttleRatePerSecond: 50, throttleBurst: 100 }),
  logRetentionDays: z.number().int().min(1).max(3653).default(90),
  /**
   * true: the reconciler runs the model servers of what is admitted (docs/workloads.md), through an EKS access
   * entry the stack creates; false: it keeps the node groups only and the platform deploys the pods itself.
   */
  deployWorkloads: z.boolean().default(true),
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
  return parseStageConfig(JSON.parse(readFileSync(file, 'utf8')), file);
}
