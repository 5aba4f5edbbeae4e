import { statSync } from 'node:fs';
import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { LAMBDA_EXTERNAL_MODULES } from '../../infra/constructs/bundling';
import { inlinedConfig } from '../../lambdas/shared/builtin-config';

const ROOT = join(__dirname, '..', '..');

/**
 * The api Lambda's bundle as infra/constructs/llmcap-function.ts has CDK build it: minified, CommonJS, the SDK
 * and `yaml` left out, the config files inlined. Only the target differs (node22, what runs it here, not the
 * runtime's node24). Written to `file`; a process that loads it from outside the repository finds the SDK
 * with NODE_PATH=<repo>/node_modules.
 */
export async function bundleApi(file: string): Promise<{ file: string; bytes: number; metafile: Metafile }> {
  const { metafile } = await build({
    entryPoints: [join(ROOT, 'lambdas', 'api', 'handler.ts')],
    bundle: true,
    minify: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    outfile: file,
    metafile: true,
    external: LAMBDA_EXTERNAL_MODULES,
    define: Object.fromEntries(
      Object.entries(inlinedConfig()).map(([k, v]) => [`process.env.${k}`, JSON.stringify(v)]),
    ),
    logLevel: 'silent',
  });
  return { file, bytes: statSync(file).size, metafile };
}

export const REPO_NODE_MODULES = join(ROOT, 'node_modules');
