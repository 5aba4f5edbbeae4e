import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Every LLMCAP_* variable the local control plane reads is documented where users look for it: README's table,
 * docs/local.md's Settings, and `npm start -- --help`. The simulators' own variables are docs/cloud-sim.md's.
 */

const ROOT = join(__dirname, '..', '..', '..');

/** Read elsewhere and documented there: the CLI's endpoint (README "CLI"), a bench knob of local/sfn/measure.ts. */
const NOT_NPM_START = new Set(['LLMCAP_ENDPOINT', 'LLMCAP_STACK', 'LLMCAP_BENCH_SCALE']);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return f === 'cloud-sim' || f === 'k8s-sim' ? [] : sources(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

// A read, not an assignment (the control plane sets LLMCAP_WORKLOADS and others for the Lambda code).
const read = /\benv\.(LLMCAP_[A-Z0-9_]+)\b(?!\s*=[^=])/g;
const variables = [
  ...new Set(
    sources(join(ROOT, 'local')).flatMap((p) =>
      [...readFileSync(p, 'utf8').matchAll(read)].map((m) => m[1]!),
    ),
  ),
]
  .filter((v) => !NOT_NPM_START.has(v))
  .sort();

it('finds the variables it checks', () => {
  expect(variables).toEqual(expect.arrayContaining(['LLMCAP_ADMINS', 'LLMCAP_SUBNETS', 'LLMCAP_STAGE']));
});

it.each(['README.md', 'docs/local.md'])('%s names every variable npm start reads', (doc) => {
  const text = readFileSync(join(ROOT, doc), 'utf8');
  expect(variables.filter((v) => !text.includes(`\`${v}\``))).toEqual([]);
});

it('npm start -- --help lists every variable npm start reads', () => {
  const help = execFileSync(
    join(ROOT, 'node_modules', '.bin', 'tsx'),
    [join(ROOT, 'local', 'start.ts'), '--help'],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  );
  expect(variables.filter((v) => !new RegExp(`^\\s+${v}\\s`, 'm').test(help))).toEqual([]);
});
