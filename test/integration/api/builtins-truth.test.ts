import { parseBuiltins } from '../../../lambdas/shared/builtin-config';
import { testApi } from '../../helpers/api';
import { dumpTable } from '../../helpers/dump';

/**
 * The built-in computes are resolved against what AWS says when they are loaded (issue 17 §2), through the same
 * DescribeInstanceTypes and Price List calls as a compute write (here the cloud simulator's snapshot): the file
 * may leave the facts out, and a file that disagrees with EC2 stops the load, loudly, writing nothing.
 */

/** An API whose config/computes.yaml holds `raw` (parsed as the file is). */
const withBuiltins = (raw: unknown[]) => {
  const computes = parseBuiltins(raw);
  return testApi({ deps: { builtins: { computes: () => computes, models: () => [] } } });
};

it('fills in what config/computes.yaml leaves out, and says where each price comes from', async () => {
  const api = await withBuiltins([
    { name: 'bare-l4', spec: { node: { instanceType: 'g6.2xlarge' }, nodeGroup: { maxNodes: 2 } } },
    {
      name: 'priced-cpu',
      spec: { node: { instanceType: 'm7i.xlarge' }, nodeGroup: { maxNodes: 1 }, cost: { perHour: 0.1 } },
    },
  ]);
  const l4 = await api.call('GET', '/v1/computes/bare-l4');
  expect(l4.status).toBe(200);
  expect(l4.body.spec.node).toMatchObject({
    cpu: 8,
    memoryGb: 32,
    gpu: { type: 'L4', count: 1, memoryGb: 22.4 }, // EC2's 22888 MiB
    amiType: 'AL2023_x86_64_NVIDIA',
  });
  expect(l4.body.spec.cost.perHour).toBe(0.9776);
  expect(l4.body.status.cost.source).toBe('on-demand');
  // A price the file sets is a platform decision, and the status says whose.
  const cpu = await api.call('GET', '/v1/computes/priced-cpu');
  expect(cpu.body.spec.cost.perHour).toBe(0.1);
  expect(cpu.body.status.cost).toMatchObject({
    source: 'set-by-admin',
    setBy: 'config/computes.yaml',
    onDemandPerHour: 0.2016,
  });
});

it('refuses a file that disagrees with EC2 on every request, naming the file, each compute and the true values', async () => {
  const api = await withBuiltins([
    {
      name: 'lying-p5',
      spec: { node: { instanceType: 'p5.48xlarge', cpu: 4, memoryGb: 16 }, nodeGroup: { maxNodes: 1 } },
    },
    { name: 'typo', spec: { node: { instanceType: 'g6.2xlarg' }, nodeGroup: { maxNodes: 1 } } },
    { name: 'fine', spec: { node: { instanceType: 'm7i.xlarge' }, nodeGroup: { maxNodes: 1 } } },
  ]);
  const before = await dumpTable();
  for (const path of ['/v1/computes', '/v1/computes/fine']) {
    const r = await api.call('GET', path);
    expect(r.status).toBe(503);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.body.detail).toMatch(
      /^the built-in computes cannot be loaded: config\/computes\.yaml does not match/,
    );
    expect(r.body.detail).toContain('lying-p5: spec.node.cpu: p5.48xlarge has 192 vCPUs, not 4');
    expect(r.body.detail).toContain('2048 GiB');
    expect(r.body.detail).toMatch(/typo: spec\.node\.instanceType: .*g6\.2xlarge/);
    expect(r.body.detail).not.toMatch(/fine:/);
  }
  // Not even the built-ins that agree are written: the file is fixed as a whole.
  expect(await dumpTable()).toEqual(before);
});
