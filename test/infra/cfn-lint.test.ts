import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadStageConfig } from '../../infra/stage-config';
import { synthStage } from '../helpers/cfn';

/**
 * AWS's own linter, cfn-lint (a prerequisite of the tests, like Java: README.md), accepts the stack of every
 * stage config in config/stages/ with the settings and written-down exceptions of .cfnlintrc. A control
 * template with a known fault shows that the linter ran and reports: a linter that finds nothing because it
 * could not read its input must not pass.
 */

const ROOT = join(__dirname, '..', '..');
const stages = readdirSync(join(ROOT, 'config', 'stages'))
  .filter((f) => f.endsWith('.json'))
  .map((f) => f.slice(0, -'.json'.length));

interface Finding {
  Rule: { Id: string };
  Message: string;
  Filename: string;
  Location: { Path: (string | number)[] };
}

function cfnLint(files: string[], region: string): Finding[] {
  const r = spawnSync(
    'cfn-lint',
    ['--config-file', join(ROOT, '.cfnlintrc'), '--format', 'json', '--regions', region, '--', ...files],
    { cwd: ROOT, encoding: 'utf8' },
  );
  if (r.error)
    throw new Error(
      `cfn-lint could not be run (${r.error.message}): it is a prerequisite of the tests, see README.md (pip install cfn-lint)`,
    );
  // 0: nothing found; 2, 4, 8 (or their sum): errors, warnings, informational findings. Anything else is a crash.
  if (r.status !== 0 && !r.stdout.trim().startsWith('['))
    throw new Error(`cfn-lint failed (exit ${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout || '[]') as Finding[];
}

let dir: string;
/** A copy of the repository's stage configs with one a user added in another region, as operations.md says. */
let userRoot: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'llmcap-cfn-lint-'));
  userRoot = join(dir, 'repo');
  cpSync(join(ROOT, 'config'), join(userRoot, 'config'), { recursive: true });
  const dev = JSON.parse(readFileSync(join(ROOT, 'config', 'stages', 'dev.json'), 'utf8'));
  writeFileSync(
    join(userRoot, 'config', 'stages', 'prod.json'),
    JSON.stringify({ ...dev, stage: 'prod', account: '210987654321', region: 'eu-west-1' }),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("finds nothing in the stack of any stage config, a user's own in another region too, and finds a known fault in a control template", () => {
  expect(stages.length).toBeGreaterThan(0);
  const byRegion = new Map<string, string[]>();
  let control: string | undefined;
  let controlId = '';
  const all = [...stages.map((stage) => [ROOT, stage] as const), [userRoot, 'prod'] as const];
  for (const [root, stage] of all) {
    const { config, template } = synthStage(loadStageConfig(stage, root));
    const file = join(dir, `llmcap-${stage}-${config.region}.template.json`);
    writeFileSync(file, JSON.stringify(template, null, 1));
    byRegion.set(config.region, [...(byRegion.get(config.region) ?? []), file]);
    if (!control) {
      // The faults this stack once had: OutputPath on a Succeed state (E3601) and a DependsOn on a role that
      // a GetAtt already orders (W3005).
      const faulty = structuredClone(template);
      const [id, sm] = Object.entries(faulty.Resources).find(
        ([, r]) => r.Type === 'AWS::StepFunctions::StateMachine',
      )!;
      const asl = JSON.parse(sm.Properties!.DefinitionString);
      asl.States.Done.OutputPath = '$';
      sm.Properties!.DefinitionString = JSON.stringify(asl);
      sm.DependsOn = [sm.Properties!.RoleArn['Fn::GetAtt'][0]];
      control = join(dir, 'control.template.json');
      writeFileSync(control, JSON.stringify(faulty, null, 1));
      controlId = id;
      byRegion.set(config.region, [...(byRegion.get(config.region) ?? []), control]);
    }
  }
  const findings = [...byRegion].flatMap(([region, files]) => cfnLint(files, region));
  const [ofControl, ofStages] = [
    findings.filter((f) => f.Filename === control),
    findings.filter((f) => f.Filename !== control),
  ];
  expect(ofStages.map((f) => `${f.Rule.Id} ${f.Filename}: ${f.Message}`)).toEqual([]);
  expect([...byRegion.keys()].sort()).toEqual(['eu-west-1', 'us-east-1']);
  expect(ofControl.map((f) => [f.Rule.Id, f.Location.Path.slice(0, 2)]).sort()).toEqual([
    ['E3601', ['Resources', controlId]],
    ['W3005', ['Resources', controlId]],
  ]);
}, 120_000);
