import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type CloudSim, startCloudSim } from '../../../local/cloud-sim';
import {
  renderJson,
  SNAPSHOT_DIR,
  snapshotRegions,
  stageRegions,
} from '../../../scripts/refresh-aws-snapshot';

/**
 * There is no account here, so the refresh script is checked against the simulator: `npm run
 * refresh-aws-snapshot`, as docs/cloud-sim.md shows it, with the real SDK clients pointed at the simulator by
 * AWS_ENDPOINT_URL_EC2 and AWS_ENDPOINT_URL_PRICING, must write back the snapshot the simulator serves, byte
 * for byte but for the header that says when and from where. It asks for the regions the checked-in snapshot
 * has, not those of config/stages: a stage a user adds in another region (docs/operations.md) must not
 * break the suite, so the round trip runs in a copy of the repository with such a stage too.
 */

const ROOT = join(__dirname, '..', '..', '..');
const run = promisify(execFile);
let sim: CloudSim;
let tmp: string;
beforeAll(async () => {
  sim = await startCloudSim({ port: 0, seed: 7 });
  tmp = mkdtempSync(join(tmpdir(), 'llmcap-snapshot-'));
});
afterAll(async () => {
  rmSync(tmp, { recursive: true, force: true });
  await sim.stop();
});

/** A copy of what the script reads (the script, the code it imports, config/), with a stage of the user's own. */
function copyWithUserStage(): string {
  const copy = join(tmp, 'repo');
  for (const d of ['scripts', 'lambdas', 'config']) cpSync(join(ROOT, d), join(copy, d), { recursive: true });
  for (const f of ['package.json', 'tsconfig.json']) cpSync(join(ROOT, f), join(copy, f));
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  const dev = JSON.parse(readFileSync(join(ROOT, 'config', 'stages', 'dev.json'), 'utf8'));
  writeFileSync(
    join(copy, 'config', 'stages', 'prod.json'),
    JSON.stringify({ ...dev, stage: 'prod', region: 'eu-west-1' }),
  );
  return copy;
}

async function roundTrip(root: string, out: string): Promise<void> {
  const regions = snapshotRegions(join(root, 'config', 'aws'));
  await run(
    'npm',
    [
      'run',
      '--silent',
      'refresh-aws-snapshot',
      '--',
      '--out',
      out,
      '--date',
      '2026-12-03',
      '--regions',
      regions.join(','),
    ],
    {
      cwd: root,
      env: { ...process.env, AWS_ENDPOINT_URL_EC2: sim.endpoint, AWS_ENDPOINT_URL_PRICING: sim.endpoint },
    },
  );
  expect(readdirSync(out).sort()).toEqual(['instance-types.json', ...regions.map((r) => `prices-${r}.json`)]);
  for (const [file, list] of [
    ['instance-types.json', 'instanceTypes'],
    ...regions.map((r) => [`prices-${r}.json`, 'priceList'] as const),
  ] as const) {
    const checkedIn = readFileSync(join(SNAPSHOT_DIR, file), 'utf8');
    const fresh = JSON.parse(readFileSync(join(out, file), 'utf8'));
    expect(fresh.retrievedAt).toBe('2026-12-03');
    expect(fresh.source).toMatch(/scripts\/refresh-aws-snapshot\.ts/);
    expect(fresh[list].length).toBeGreaterThan(80);
    expect(renderJson({ ...JSON.parse(checkedIn), [list]: fresh[list] })).toBe(checkedIn);
  }
}

it('regenerates the snapshot it serves: the round trip through the real SDK clients changes nothing', async () => {
  expect(snapshotRegions()).toEqual(['us-east-1']);
  const out = mkdtempSync(join(tmp, 'out-'));
  await roundTrip(ROOT, out);
});

it('still does with a stage of the user in another region, which a refresh without --regions would fetch', async () => {
  const copy = copyWithUserStage();
  expect(stageRegions(join(copy, 'config', 'stages'))).toEqual(['eu-west-1', 'us-east-1']);
  const out = mkdtempSync(join(tmp, 'out-'));
  await roundTrip(copy, out);
}, 120_000);
