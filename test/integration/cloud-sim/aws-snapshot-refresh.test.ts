import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type CloudSim, startCloudSim } from '../../../local/cloud-sim';
import { renderJson, SNAPSHOT_DIR } from '../../../scripts/refresh-aws-snapshot';

/**
 * There is no account here, so the refresh script is checked against the simulator: `npm run
 * refresh-aws-snapshot`, as docs/cloud-sim.md shows it, with the real SDK clients pointed at the simulator by
 * AWS_ENDPOINT_URL_EC2 and AWS_ENDPOINT_URL_PRICING, must write back the snapshot the simulator serves, byte
 * for byte but for the header that says when and from where.
 */

const run = promisify(execFile);
let sim: CloudSim;
let out: string;
beforeAll(async () => {
  sim = await startCloudSim({ port: 0, seed: 7 });
  out = mkdtempSync(join(tmpdir(), 'llmcap-snapshot-'));
});
afterAll(async () => {
  rmSync(out, { recursive: true, force: true });
  await sim.stop();
});

it('regenerates the snapshot it serves: the round trip through the real SDK clients changes nothing', async () => {
  await run('npm', ['run', '--silent', 'refresh-aws-snapshot', '--', '--out', out, '--date', '2026-12-03'], {
    cwd: join(__dirname, '..', '..', '..'),
    env: { ...process.env, AWS_ENDPOINT_URL_EC2: sim.endpoint, AWS_ENDPOINT_URL_PRICING: sim.endpoint },
  });
  // The regions come from config/stages: us-east-1 only.
  expect(readdirSync(out).sort()).toEqual(['instance-types.json', 'prices-us-east-1.json']);
  for (const [file, list] of [
    ['instance-types.json', 'instanceTypes'],
    ['prices-us-east-1.json', 'priceList'],
  ] as const) {
    const checkedIn = readFileSync(join(SNAPSHOT_DIR, file), 'utf8');
    const fresh = JSON.parse(readFileSync(join(out, file), 'utf8'));
    expect(fresh.retrievedAt).toBe('2026-12-03');
    expect(fresh.source).toMatch(/scripts\/refresh-aws-snapshot\.ts/);
    expect(fresh[list].length).toBeGreaterThan(80);
    expect(renderJson({ ...JSON.parse(checkedIn), [list]: fresh[list] })).toBe(checkedIn);
  }
});
