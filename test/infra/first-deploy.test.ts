import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadStageConfig } from '../../infra/stage-config';
import { inlinedConfig } from '../../lambdas/shared/builtin-config';

/**
 * The traps of a first deploy (docs/operations.md): a synth that names no stage must not fall back to the
 * example config and its account 123456789012, a stage config error is said alone rather than inside a Node
 * stack trace, and a stage can declare its own models (start with none) without touching config/catalog.yaml.
 */

const ROOT = join(__dirname, '..', '..');

function cdkSynth(...args: string[]) {
  const r = spawnSync('npx', ['cdk', 'synth', '--no-notices', '-q', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' },
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('cdk synth', () => {
  it('without -c stage= fails at once, saying how to name the stage', () => {
    const r = cdkSynth();
    expect(r.status).not.toBe(0);
    expect(r.out).toContain('name the stage to synthesize or deploy: npx cdk synth -c stage=<stage>');
    expect(r.out).not.toMatch(/^\s+at /m);
    expect(r.out).not.toContain('123456789012');
  }, 120_000);

  it('prints a stage config error alone, without a stack trace', () => {
    const r = cdkSynth('-c', 'stage=no-such-stage');
    expect(r.status).not.toBe(0);
    expect(r.out).toContain("no stage config for 'no-such-stage': create ");
    expect(r.out).not.toMatch(/^\s+at /m);
  }, 120_000);
});

describe("a stage's own catalog", () => {
  let root: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'llmcap-first-deploy-'));
    mkdirSync(join(root, 'config', 'stages'), { recursive: true });
    cpSync(join(ROOT, 'config', 'stages', 'dev.json'), join(root, 'config', 'stages', 'dev.json'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const stage = (extra: Record<string, unknown>) => {
    const dev = JSON.parse(readFileSync(join(ROOT, 'config', 'stages', 'dev.json'), 'utf8'));
    writeFileSync(
      join(root, 'config', 'stages', 'prod.json'),
      JSON.stringify({ ...dev, stage: 'prod', ...extra }),
    );
  };

  it('is config/catalog.yaml unless the stage config names another', () => {
    stage({});
    mkdirSync(join(root, 'config'), { recursive: true });
    cpSync(join(ROOT, 'config', 'catalog.yaml'), join(root, 'config', 'catalog.yaml'));
    expect(loadStageConfig('prod', root).catalog).toBe('config/catalog.yaml');
  });

  it('is refused, named, when the file it names does not exist', () => {
    stage({ catalog: 'config/catalog-prod.yaml' });
    expect(() => loadStageConfig('prod', root)).toThrow(
      /prod\.json is invalid:\n {2}catalog: config\/catalog-prod\.yaml does not exist/,
    );
  });

  it('is deployed instead of config/catalog.yaml: here every declared model at 0 replicas, so no node starts', () => {
    const zero = readFileSync(join(ROOT, 'config', 'catalog.yaml'), 'utf8').replace(
      /scaling: \{[^}]*\}/g,
      'scaling: { min: 0, max: 2, target: 0 }',
    );
    writeFileSync(join(root, 'config', 'catalog-prod.yaml'), zero);
    stage({ catalog: 'config/catalog-prod.yaml' });
    const config = loadStageConfig('prod', root);
    const own = JSON.parse(
      inlinedConfig({ path: join(root, config.catalog), shown: config.catalog }).LLMCAP_CONFIG_CATALOG!,
    );
    const shared = JSON.parse(inlinedConfig().LLMCAP_CONFIG_CATALOG!);
    expect(own.map((m: any) => m.name)).toEqual(shared.map((m: any) => m.name));
    expect(own.map((m: any) => [m.spec.scaling.min, m.spec.scaling.target])).toEqual(own.map(() => [0, 0]));
    expect(shared.some((m: any) => m.spec.scaling.min > 0)).toBe(true);
  });

  it('is checked as config/catalog.yaml is, its own file named in the error', () => {
    writeFileSync(join(root, 'config', 'catalog-prod.yaml'), '- name: Bad_Name\n  spec: {}\n');
    expect(() =>
      inlinedConfig({ path: join(root, 'config', 'catalog-prod.yaml'), shown: 'config/catalog-prod.yaml' }),
    ).toThrow(/^config\/catalog-prod\.yaml is invalid: /);
  });
});
