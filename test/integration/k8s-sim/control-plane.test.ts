import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { ControlPlane } from '../../../local/control-plane';
import { reconcileUntil, testControlPlane } from '../../helpers/control-plane';

/** `npm start` writes .llmcap/kubeconfig; the command docs/k8s-sim.md shows works against it as written. */

let cp: ControlPlane;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'k8s-cp-'));
  cp = await testControlPlane('k8scp', { kubeconfigPath: join(dir, '.llmcap', 'kubeconfig') });
});
afterAll(async () => {
  await cp.stop();
  rmSync(dir, { recursive: true, force: true });
});

const kubectl = (...args: string[]) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile('kubectl', ['--cache-dir', join(dir, 'cache'), ...args], { cwd: dir }, (err, stdout, stderr) =>
      resolve({ code: err ? 1 : 0, stdout, stderr }),
    );
  });

it('writes a kubeconfig for the cluster DescribeCluster names, and kubectl sees the nodes of the declared computes', async () => {
  const kc = parse(readFileSync(join(dir, '.llmcap', 'kubeconfig'), 'utf8'));
  expect(kc.clusters[0].cluster.server).toBe(cp.sim.kubernetes?.endpoint);
  expect(kc.clusters[0].cluster['certificate-authority-data']).toBe(cp.sim.kubernetes?.caData);
  // The declared models provision their node groups; their instances join as nodes.
  await reconcileUntil(cp, async () => {
    const out = await kubectl('--kubeconfig', '.llmcap/kubeconfig', 'get', 'nodes', '-o', 'name');
    return out.stdout.trim().split('\n').filter(Boolean).length >= 2;
  });
  const out = await kubectl('--kubeconfig', '.llmcap/kubeconfig', 'get', 'nodes', '-L', 'llmcap.dev/compute');
  expect(out.stdout).toMatch(/COMPUTE/);
  expect(out.stdout).toContain('gpu-l4-1x');
  expect(out.stdout).toContain('cpu-small');
  const pods = await kubectl('--kubeconfig', '.llmcap/kubeconfig', 'get', 'pods', '-A', '-o', 'wide');
  expect(pods.code).toBe(0);
  const node = out.stdout.split('\n')[1]?.split(/\s+/)[0] as string;
  const described = await kubectl('--kubeconfig', '.llmcap/kubeconfig', 'describe', 'node', node);
  expect(described.stdout).toMatch(/eks\.amazonaws\.com\/nodegroup=llmcap-local-/);
  expect(described.stdout).toMatch(/HolderIdentity:\s+ip-/);
});
