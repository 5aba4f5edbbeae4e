import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { type CloudSim, startCloudSim } from '../../../local/cloud-sim';

/**
 * The AWS CLI commands docs/cloud-sim.md shows for instance types and prices, run as written against the
 * simulator: botocore is a second, independent reader of its XML and JSON.
 */

const run = promisify(execFile);
const hasCli = spawnSync('aws', ['--version']).status === 0;
const env = {
  ...process.env,
  AWS_ACCESS_KEY_ID: 'test',
  AWS_SECRET_ACCESS_KEY: 'test',
  AWS_DEFAULT_REGION: 'us-east-1',
  AWS_PAGER: '',
};

let sim: CloudSim;
beforeAll(async () => {
  sim = await startCloudSim({ port: 0, seed: 7 });
});
afterAll(() => sim.stop());

const aws = async (...args: string[]) =>
  JSON.parse(
    (await run('aws', [...args, '--endpoint-url', sim.endpoint, '--output', 'json'], { env })).stdout,
  );

(hasCli ? describe : describe.skip)(
  'the AWS CLI against the simulator, as docs/cloud-sim.md shows it',
  () => {
    it('describes instance types by name and by filter', async () => {
      const byName = await aws(
        'ec2',
        'describe-instance-types',
        '--instance-types',
        'g6.2xlarge',
        'p5.48xlarge',
      );
      expect(byName.InstanceTypes.map((t: any) => [t.InstanceType, t.VCpuInfo.DefaultVCpus]).sort()).toEqual([
        ['g6.2xlarge', 8],
        ['p5.48xlarge', 192],
      ]);
      const g6e = await aws('ec2', 'describe-instance-types', '--filters', 'Name=instance-type,Values=g6e.*');
      expect(g6e.InstanceTypes).toHaveLength(8);
    });

    it('gets an on-demand price', async () => {
      const out = await aws(
        'pricing',
        'get-products',
        '--service-code',
        'AmazonEC2',
        '--filters',
        'Type=TERM_MATCH,Field=instanceType,Value=g6.2xlarge',
        'Type=TERM_MATCH,Field=regionCode,Value=us-east-1',
      );
      expect(out.PriceList).toHaveLength(1);
      expect(JSON.parse(out.PriceList[0]).product.attributes.instanceType).toBe('g6.2xlarge');
    });
  },
);
