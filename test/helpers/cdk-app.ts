/**
 * The App props of every test synthesis: without CDK's built-in CloudFormation validation (`cdk synth` keeps
 * it). Without cdk.json's @aws-cdk/core:validateAgainstDefaultRules it only warns, so it fails no test, yet its
 * WASM engine cost each test file about 9 s of CPU to start.
 */
export const TEST_APP_PROPS = { builtinCloudFormationValidation: false } as const;
