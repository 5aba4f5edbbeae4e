/**
 * What every Lambda's bundle leaves out, kept apart from llmcap-function.ts (which loads the CDK) so that the
 * API bundle the benchmark measures and the tests run is built as the deployed one is. The SDK v3 ships in the
 * Node 24 runtime; `yaml` is only reached when no inlined config exists.
 */
export const LAMBDA_EXTERNAL_MODULES = ['@aws-sdk/*', '@smithy/*', 'yaml'];
