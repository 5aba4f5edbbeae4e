import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';

/**
 * The CLI as one JavaScript file, built once per test run: cli/bin/llmcap.js loads tsx and resolves and
 * transpiles some hundred modules on every start (~0.3 s of CPU), the bundle starts in ~0.2 s, and the CLI
 * tests start it some 200 times. The same sources and the same runCli(); the launcher itself is still run
 * where a test says it runs as a user types it (llmcap({ launcher: true })).
 */

const ROOT = join(__dirname, '..', '..');

/** The variable through which the integration run's global setup hands the bundle to test/integration/cli/run.ts. */
export const CLI_BUNDLE_ENV = 'LLMCAP_TEST_CLI_BUNDLE';

export async function buildCliBundle(): Promise<string> {
  const outfile = join(mkdtempSync(join(tmpdir(), 'llmcap-cli-bundle-')), 'llmcap.js');
  await build({
    // main.ts runs itself when it is the program (require.main === module), as the bundle's entry it is.
    entryPoints: [join(ROOT, 'cli', 'main.ts')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    outfile,
    logLevel: 'warning',
    // main.ts reads the version from ../package.json next to itself; in the bundle it is where the source is.
    define: { __dirname: JSON.stringify(join(ROOT, 'cli')) },
  });
  return outfile;
}
