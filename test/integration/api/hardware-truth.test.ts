import { type TestApi, testApi } from '../../helpers/api';
import { dumpTable } from '../../helpers/dump';
import { roleArn } from '../../helpers/principals';

/**
 * A compute's hardware and price are what AWS says, not what its manifest claims (issue 17 §2): every write is
 * resolved against EC2 DescribeInstanceTypes and the Price List, here the cloud simulator's snapshot of them,
 * reached by the API's real SDK clients through AWS_ENDPOINT_URL_EC2 / _PRICING (test/helpers/global-setup.ts).
 */

const TEAM_ADMIN = roleArn('ml-admin');
const STAGE_SUBNETS = ['subnet-0a1b2c3d4e5f60001', 'subnet-0a1b2c3d4e5f60002'];

const manifest = (name: string, spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) => ({
  apiVersion: 'llmcap/v1',
  kind: 'Compute',
  metadata: { name, ...metadata },
  spec,
});

let api: TestApi;
const saved = process.env.LLMCAP_SUBNETS;
beforeAll(async () => {
  process.env.LLMCAP_SUBNETS = STAGE_SUBNETS.join(',');
  api = await testApi();
  expect((await api.call('POST', '/v1/scopes', { name: 'org:acme' })).status).toBe(201);
  expect((await api.call('POST', '/v1/scopes', { name: 'team:ml', parent: 'org:acme' })).status).toBe(201);
  const grant = await api.call('PUT', `/v1/scopes/team:ml/members/${encodeURIComponent(TEAM_ADMIN)}`, {
    role: 'admin',
  });
  expect(grant.status).toBe(200);
});
afterAll(() => {
  if (saved === undefined) delete process.env.LLMCAP_SUBNETS;
  else process.env.LLMCAP_SUBNETS = saved;
});

const errorsOf = (r: { body: { errors?: { path: string; message: string }[] } }) =>
  Object.fromEntries((r.body.errors ?? []).map((e) => [e.path, e.message]));

describe('the instance type is the truth', () => {
  it('refuses a p5.48xlarge declared as 4 vCPUs, no GPU and 0.01 USD/h, naming the true values', async () => {
    const before = await dumpTable();
    const lie = manifest('cheap-p5', {
      node: { instanceType: 'p5.48xlarge', cpu: 4, memoryGb: 16, amiType: 'AL2023_x86_64_STANDARD' },
      cost: { perHour: 0.01 },
    });
    for (const [method, path] of [
      ['POST', '/v1/computes'],
      ['PUT', '/v1/computes/cheap-p5'],
    ] as const) {
      const r = await api
        .as(TEAM_ADMIN)
        .call(method, path, { ...lie, metadata: { ...lie.metadata, owner: 'team:ml' } });
      expect(r.status).toBe(400);
      expect(r.headers['content-type']).toBe('application/problem+json');
      const e = errorsOf(r);
      expect(e['spec.node.cpu']).toContain('192 vCPUs');
      expect(e['spec.node.memoryGb']).toContain('2048 GiB');
      expect(e['spec.node.amiType']).toContain('AL2023_x86_64_NVIDIA');
      expect(e['spec.cost.perHour']).toContain('only a platform admin may set a price');
    }
    expect(await dumpTable()).toEqual(before);
  });

  it('fills in what the manifest leaves out, and the status says the cost is the on-demand price', async () => {
    const r = await api.call(
      'POST',
      '/v1/computes',
      manifest('h100', { node: { instanceType: 'p5.48xlarge' } }),
    );
    expect(r.status).toBe(201);
    expect(r.body.spec.node).toMatchObject({
      cpu: 192,
      memoryGb: 2048,
      gpu: { type: 'H100', count: 8, memoryGb: 80, resource: 'nvidia.com/gpu' },
      amiType: 'AL2023_x86_64_NVIDIA',
    });
    expect(r.body.spec.cost.perHour).toBe(55.04);
    expect(r.body.status.cost).toMatchObject({ perHour: 55.04, source: 'on-demand', region: 'us-east-1' });
    // What was read can be applied back unchanged, by a tenant too: the on-demand price is no override.
    const again = await api.call('PUT', '/v1/computes/h100', r.body);
    expect(again.status).toBe(200);
    expect(again.body.status.cost.source).toBe('on-demand');
  });

  it('refuses an instance type EC2 does not offer, suggesting the near names', async () => {
    const r = await api.call(
      'POST',
      '/v1/computes',
      manifest('typo', { node: { instanceType: 'g6.2xlrage' } }),
    );
    expect(r.status).toBe(400);
    expect(errorsOf(r)['spec.node.instanceType']).toMatch(
      /g6\.2xlrage is not an instance type .*g6\.2xlarge/,
    );
  });

  it('refuses an AMI type that does not fit the architecture or the accelerator', async () => {
    const cases = [
      ['m7g.xlarge', 'AL2023_x86_64_STANDARD', 'AL2023_ARM_64_STANDARD'],
      ['g6.2xlarge', 'AL2023_x86_64_STANDARD', 'AL2023_x86_64_NVIDIA'],
      ['inf2.xlarge', 'AL2023_x86_64_NVIDIA', 'AL2023_x86_64_NEURON'],
      ['m7i.xlarge', 'AL2023_x86_64_NVIDIA', 'AL2023_x86_64_STANDARD'],
    ] as const;
    for (const [instanceType, amiType, fits] of cases) {
      const r = await api.call('POST', '/v1/computes', manifest('ami', { node: { instanceType, amiType } }));
      expect(r.status).toBe(400);
      expect(errorsOf(r)['spec.node.amiType']).toContain(fits);
    }
    const arm = await api.call(
      'POST',
      '/v1/computes',
      manifest('arm', { node: { instanceType: 'm7g.xlarge' } }),
    );
    expect(arm.status).toBe(201);
    expect(arm.body.spec.node.amiType).toBe('AL2023_ARM_64_STANDARD');
    const neuron = await api.call(
      'POST',
      '/v1/computes',
      manifest('inf', { node: { instanceType: 'inf2.xlarge' } }),
    );
    expect(neuron.status).toBe(201);
    expect(neuron.body.spec.node).toMatchObject({
      amiType: 'AL2023_x86_64_NEURON',
      gpu: { resource: 'aws.amazon.com/neuron', count: 1 },
    });
  });

  it('lets only a platform admin set another price, and the status says who set it', async () => {
    const spec = { node: { instanceType: 'g6.2xlarge' }, cost: { perHour: 0.5 } };
    const tenant = await api
      .as(TEAM_ADMIN)
      .call('POST', '/v1/computes', manifest('l4-team', spec, { owner: 'team:ml' }));
    expect(tenant.status).toBe(400);
    expect(errorsOf(tenant)['spec.cost.perHour']).toContain('0.9776');
    const onDemand = await api
      .as(TEAM_ADMIN)
      .call(
        'POST',
        '/v1/computes',
        manifest('l4-team', { node: { instanceType: 'g6.2xlarge' } }, { owner: 'team:ml' }),
      );
    expect(onDemand.status).toBe(201);
    expect(onDemand.body.status.cost).toMatchObject({ perHour: 0.9776, source: 'on-demand' });
    const admin = await api.call('POST', '/v1/computes', manifest('l4-reserved', spec));
    expect(admin.status).toBe(201);
    expect(admin.body.status.cost).toMatchObject({
      perHour: 0.5,
      source: 'set-by-admin',
      onDemandPerHour: 0.9776,
    });
  });

  it("refuses subnets that are not the stage's", async () => {
    const stray = await api.call(
      'POST',
      '/v1/computes',
      manifest('subnets', {
        node: { instanceType: 'm7i.xlarge' },
        nodeGroup: { maxNodes: 2, subnetIds: [STAGE_SUBNETS[0], 'subnet-0123456789abcdef0'] },
      }),
    );
    expect(stray.status).toBe(400);
    expect(errorsOf(stray)['spec.nodeGroup.subnetIds']).toContain('subnet-0123456789abcdef0 is not one');
    const ok = await api.call(
      'POST',
      '/v1/computes',
      manifest('subnets', {
        node: { instanceType: 'm7i.xlarge' },
        nodeGroup: { subnetIds: [STAGE_SUBNETS[1]] },
      }),
    );
    expect(ok.status).toBe(201);
  });

  it("lets platform admins limit the instance families of a scope's computes, and enforces it beneath", async () => {
    const set = (principal: string | undefined, scope: string, instanceFamilies: unknown) =>
      api.call(
        'PUT',
        `/v1/scopes/${scope}/instance-families`,
        { instanceFamilies },
        principal ? { principal } : {},
      );
    expect((await set(TEAM_ADMIN, 'team:ml', ['g6'])).status).toBe(403);
    const typo = await set(undefined, 'org:acme', ['g6', 'g9x']);
    expect(typo.status).toBe(400);
    expect(errorsOf(typo)['instanceFamilies[1]']).toContain('no g9x instance types');
    const ok = await set(undefined, 'org:acme', ['m7i', 'g6']);
    expect(ok.status).toBe(200);
    expect(ok.body.spec.instanceFamilies).toEqual(['g6', 'm7i']);

    const team = (name: string, instanceType: string) =>
      api
        .as(TEAM_ADMIN)
        .call('POST', '/v1/computes', manifest(name, { node: { instanceType } }, { owner: 'team:ml' }));
    const p5 = await team('team-p5', 'p5.48xlarge');
    expect(p5.status).toBe(400);
    expect(errorsOf(p5)['spec.node.instanceType']).toBe(
      'org:acme may use the instance families g6 or m7i, not p5: choose one of those, or ask a platform admin',
    );
    expect((await team('team-g6', 'g6.xlarge')).status).toBe(201);
    // The platform's own computes are not the scope's: no limit binds them.
    expect(
      (
        await api.call(
          'POST',
          '/v1/computes',
          manifest('platform-p5', { node: { instanceType: 'p5.4xlarge' } }),
        )
      ).status,
    ).toBe(201);

    expect((await set(undefined, 'org:acme', null)).body.spec.instanceFamilies).toBeUndefined();
    expect((await team('team-p5', 'p5.48xlarge')).status).toBe(201);
  });

  it("refuses to narrow a scope's families while its computes (or those beneath) use one left out, naming each", async () => {
    // team:ml (beneath org:acme) owns g6 computes (l4-team, team-g6) and a p5 one (team-p5); the platform owns p5 too.
    const narrow = (families: string[], dryRun = false) =>
      api.call('PUT', `/v1/scopes/org:acme/instance-families${dryRun ? '?dryRun=All' : ''}`, {
        instanceFamilies: families,
      });
    const before = await dumpTable();
    for (const dryRun of [true, false]) {
      const r = await narrow(['g6', 'm7i'], dryRun);
      expect(r.status).toBe(409);
      expect(r.body.reason).toBe('FamilyInUse');
      expect(r.body.detail).toMatch(/^team-p5 uses an instance family the new list for org:acme leaves out/);
      expect(r.body.errors).toEqual([
        {
          path: 'computes.team-p5',
          message:
            'compute team-p5 (owned by team:ml) uses p5.48xlarge, family p5, which org:acme would no longer allow: delete it or change its instance type first, or keep p5 in the list',
        },
      ]);
    }
    // The preview of an acceptable list answers the scope it would leave and writes nothing.
    const preview = await narrow(['g6', 'p5'], true);
    expect(preview.status).toBe(200);
    expect(preview.body.spec.instanceFamilies).toEqual(['g6', 'p5']);
    expect(await dumpTable()).toEqual(before);
    expect((await narrow(['g6', 'p5'])).status).toBe(200);
    expect((await api.call('GET', '/v1/scopes/org:acme')).body.spec.instanceFamilies).toEqual(['g6', 'p5']);
    // Once the p5 compute is gone, the narrower list is accepted.
    expect((await api.call('DELETE', '/v1/computes/team-p5')).status).toBe(204);
    expect((await narrow(['g6'])).status).toBe(200);
  });
});
