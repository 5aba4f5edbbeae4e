import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import {
  CreateSubnetCommand,
  CreateVpcCommand,
  DescribeSubnetsCommand,
  EC2Client,
} from '@aws-sdk/client-ec2';
import { type CloudSim, startCloudSim } from '../../../local/cloud-sim';

/**
 * EC2 DescribeSubnets, which the reconciler reads for the zones a compute's node group will launch in before it
 * has one (issue 32 §3): the simulator answered side by side with moto 5.2.1, an independent implementation, by
 * the same SDK client llmcap uses. moto makes its subnets with CreateSubnet; the simulator's are the cluster's.
 */

const hasMoto = spawnSync('moto_server', ['--help']).status === 0;
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
let sim: CloudSim;
let moto: ChildProcess | undefined;
let motoUrl: string;

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

beforeAll(async () => {
  sim = await startCloudSim({ port: 0, seed: 7 });
  if (!hasMoto) return;
  const port = await freePort();
  motoUrl = `http://127.0.0.1:${port}`;
  moto = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    if (
      await fetch(`${motoUrl}/moto-api/`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('moto_server did not start');
}, 30_000);
afterAll(async () => {
  moto?.kill('SIGKILL');
  await sim.stop();
});

const client = (endpoint: string) => new EC2Client({ endpoint, region: 'us-east-1', credentials });
const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: Error) => e,
  );

(hasMoto ? it : it.skip)(
  'answers DescribeSubnets in moto’s shape: the zone of each subnet, and NotFound for a bad id',
  async () => {
    const m = client(motoUrl);
    const vpc = (await m.send(new CreateVpcCommand({ CidrBlock: '10.0.0.0/16' }))).Vpc!.VpcId!;
    const made = await m.send(
      new CreateSubnetCommand({ VpcId: vpc, CidrBlock: '10.0.1.0/24', AvailabilityZone: 'us-east-1b' }),
    );
    const [fromMoto] = (await m.send(new DescribeSubnetsCommand({ SubnetIds: [made.Subnet!.SubnetId!] })))
      .Subnets!;
    // The cluster's second subnet is in us-east-1b (DescribeCluster's order).
    const s = client(sim.endpoint);
    const [fromSim] = (await s.send(new DescribeSubnetsCommand({ SubnetIds: ['subnet-0a1b2c3d4e5f60002'] })))
      .Subnets!;
    expect(fromMoto!.AvailabilityZone).toBe('us-east-1b');
    expect(fromSim).toMatchObject({
      SubnetId: 'subnet-0a1b2c3d4e5f60002',
      AvailabilityZone: 'us-east-1b',
      State: 'available',
    });
    // Every member moto fills is there, of the same type, but the ones only a made subnet has.
    const shape = (o: object) =>
      Object.entries(o)
        .filter(([k]) => k !== 'PrivateDnsNameOptionsOnLaunch')
        .map(([k, v]) => `${k}:${Array.isArray(v) ? 'array' : typeof v}`)
        .sort();
    expect(shape(fromSim!)).toEqual(shape(fromMoto!));
    // A subnet named first here takes the zone of its place, as CreateNodegroup's list would give it, for good.
    const fresh = ['subnet-0bbbbbbbbbbbbbbb1', 'subnet-0bbbbbbbbbbbbbbb2'];
    const zones = async () =>
      (await s.send(new DescribeSubnetsCommand({ SubnetIds: fresh }))).Subnets!.map(
        (x) => x.AvailabilityZone,
      );
    expect(await zones()).toEqual(['us-east-1a', 'us-east-1b']);
    fresh.reverse();
    expect(await zones()).toEqual(['us-east-1b', 'us-east-1a']);
    // Both answer a malformed id alike.
    const [e1, e2] = await Promise.all(
      [m, s].map((c) => failure(c.send(new DescribeSubnetsCommand({ SubnetIds: ['bogus'] })))),
    );
    expect(e2?.name).toBe(e1?.name);
    expect(e2?.message).toBe(e1?.message);
    expect(e2?.name).toBe('InvalidSubnetID.NotFound');
  },
);
