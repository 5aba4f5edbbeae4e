import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { LlmcapStack } from '../stacks/llmcap-stack';
import { loadStageConfig } from '../stage-config';

/** `npx cdk synth -c stage=prod`: one stack per stage, checked by cdk-nag AwsSolutions on every synth. */
const app = new App();
const stage = (app.node.tryGetContext('stage') as string | undefined) ?? 'dev';
const config = loadStageConfig(stage);
new LlmcapStack(app, `llmcap-${config.stage}`, {
  config,
  env: { account: config.account, region: config.region },
  description: `llmcap control plane (${config.stage})`,
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
