import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * One cloud assembly directory for the test file that loads this module, removed when the file ends. An App
 * without `outdir` makes a new `cdk.out*` directory in the system temp dir on every synthesis and never removes
 * it: about 4 MB (11 directories) left behind by each `npm test`. (Not CDK_OUTDIR: an App that sees it synthesizes again at exit.)
 */
const outdir = mkdtempSync(join(tmpdir(), 'llmcap-test-cdk.out-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

/**
 * The App props of every test synthesis: without CDK's built-in CloudFormation validation (`cdk synth` keeps
 * it). Without cdk.json's @aws-cdk/core:validateAgainstDefaultRules it only warns, so it fails no test, yet its
 * WASM engine cost each test file about 9 s of CPU to start.
 */
export const TEST_APP_PROPS = { builtinCloudFormationValidation: false, outdir } as const;
