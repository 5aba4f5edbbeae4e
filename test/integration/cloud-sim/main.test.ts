import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateNodegroupCommand, DescribeNodegroupCommand, EKSClient } from '@aws-sdk/client-eks';
import { CLUSTER, createInput } from './helpers';

const root = join(__dirname, '../../..');

/** `npm run cloud-sim` is `tsx local/cloud-sim/main.ts`; run it the same way, on a free port. */
function startMain(env: Record<string, string>): {
  child: ChildProcess;
  output: () => string;
  endpoint: Promise<string>;
} {
  const child = spawn(join(root, 'node_modules/.bin/tsx'), ['local/cloud-sim/main.ts'], {
    cwd: root,
    env: { ...process.env, LLMCAP_SIM_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const endpoint = new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolve(m[1] as string);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`cloud-sim exited with ${code}: ${out}`)));
  });
  return { child, output: () => out, endpoint };
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });

it('serves both APIs, prints how to use the AWS CLI, scales time and stops cleanly on Ctrl-C', async () => {
  const run = startMain({ LLMCAP_SIM_TIME_SCALE: '0.001', LLMCAP_SIM_SEED: '5', LLMCAP_SIM_QUIET: '1' });
  try {
    const endpoint = await run.endpoint;
    expect(run.output()).toContain(`--endpoint-url ${endpoint}`);
    expect(run.output()).toContain('cluster llmcap-local, seed 5');
    const eks = new EKSClient({ endpoint, region: 'us-west-2', maxAttempts: 1 });
    await eks.send(
      new CreateNodegroupCommand(
        createInput('cli', { scalingConfig: { minSize: 0, maxSize: 1, desiredSize: 1 } }),
      ),
    );
    await new Promise((r) => setTimeout(r, 300)); // 2 minutes at 0.001
    const { nodegroup } = await eks.send(
      new DescribeNodegroupCommand({ clusterName: CLUSTER, nodegroupName: 'cli' }),
    );
    expect(nodegroup?.status).toBe('ACTIVE');
    eks.destroy();
    const asg = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'Action=DescribeAutoScalingGroups&Version=2011-01-01',
    });
    expect(await asg.text()).toContain('<LifecycleState>InService</LifecycleState>');
    // The banner's kubectl line: the kubeconfig from the admin endpoint reaches the simulated cluster.
    expect(run.output()).toContain(
      `curl -s ${endpoint}/_sim/kubeconfig > kubeconfig && kubectl --kubeconfig kubeconfig get nodes`,
    );
    const dir = mkdtempSync(join(tmpdir(), 'cloud-sim-kc-'));
    writeFileSync(join(dir, 'kubeconfig'), await (await fetch(`${endpoint}/_sim/kubeconfig`)).text());
    await new Promise((r) => setTimeout(r, 200)); // the node registers and becomes Ready (50 s at 0.001)
    const nodes = await new Promise<string>((resolve, reject) =>
      execFile(
        'kubectl',
        [
          '--kubeconfig',
          join(dir, 'kubeconfig'),
          '--cache-dir',
          join(dir, 'cache'),
          'get',
          'nodes',
          '--no-headers',
        ],
        (e, out, err) => (e ? reject(new Error(err)) : resolve(out)),
      ),
    );
    expect(nodes).toMatch(/^ip-\S+\.ec2\.internal\s+Ready\s/);
    rmSync(dir, { recursive: true, force: true });
    run.child.kill('SIGINT');
    expect(await exited(run.child)).toBe(0);
    expect(run.output()).toContain('stopping');
  } finally {
    if (run.child.exitCode === null) run.child.kill('SIGKILL');
  }
});
