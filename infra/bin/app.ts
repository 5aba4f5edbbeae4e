import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { LlmcapStack } from '../stacks/llmcap-stack';
import { loadStageConfig, type StageConfig } from '../stage-config';

/**
 * `npx cdk synth -c stage=prod`: one stack per stage, checked by cdk-nag AwsSolutions on every synth. The stage
 * is always named: a default would deploy the example config (account 123456789012) to whoever runs it.
 */
const app = new App();
const stage = app.node.tryGetContext('stage') as string | undefined;

/** A mistake of the one who runs the synth: said alone, not inside a Node stack trace. */
function stop(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

if (!stage) {
  stop(
    'name the stage to synthesize or deploy: npx cdk synth -c stage=<stage> (or deploy, diff), with its config in config/stages/<stage>.json',
  );
}
let config: StageConfig;
try {
  config = loadStageConfig(stage);
} catch (e) {
  stop((e as Error).message);
}
new LlmcapStack(app, `llmcap-${config.stage}`, {
  config,
  env: { account: config.account, region: config.region },
  description: `llmcap control plane (${config.stage})`,
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
