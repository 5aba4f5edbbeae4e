import type { Context } from 'aws-lambda';
import { resetApp } from '../../../lambdas/api/app';
import { handler } from '../../../lambdas/api/handler';
import { resetConfig } from '../../../lambdas/shared/config';
import {
  CI_ROLE,
  IAM_USER,
  type Iam,
  iamEvent,
  OTHER_ACCOUNT_CI,
  OTHER_ACCOUNT_JANE,
  OTHER_USER,
  ROOT,
  SSO_ALICE,
  SSO_BOB,
  SSO_JANE,
  SSO_PLATFORM_ROLE,
} from '../../fixtures/apigw-iam';
import { dumpTable } from '../../helpers/dump';
import { freshTable } from '../../helpers/table';

/**
 * Callers as API Gateway's IAM authorizer presents them in AWS, through the API Lambda's real handler, against
 * DynamoDB Local: admins and members configured as roles (with their paths), users, sessions and a root, and
 * callers that only look like them (the same role name in another account, another session of a role).
 */

const context = {
  awsRequestId: 'identity-test',
  functionName: 'llmcap-api',
  getRemainingTimeInMillis: () => 30_000,
} as unknown as Context;

async function call(iam: Iam, method: string, path: string, body?: unknown) {
  const res = await handler(iamEvent(iam, method, path, body), context);
  return {
    status: res.statusCode,
    type: res.headers?.['content-type'],
    body: res.body ? JSON.parse(res.body as string) : undefined,
  };
}

const enc = encodeURIComponent;
const member = (scope: string, principal: string, role: string, as: Iam = SSO_JANE) =>
  call(as, 'PUT', `/v1/scopes/${enc(scope)}/members/${enc(principal)}`, { role });
const scopesSeenBy = async (iam: Iam) =>
  ((await call(iam, 'GET', '/v1/scopes')).body.items as { metadata: { name: string } }[])
    .map((s) => s.metadata.name)
    .sort();

beforeAll(async () => {
  await freshTable('identity');
  // As the stage config would set them: the SSO permission set's role (with its path) and a user with a path.
  process.env.LLMCAP_ADMINS = `${SSO_PLATFORM_ROLE},arn:aws:iam::123456789012:user/ops/deployer`;
  resetConfig();
  resetApp();
});

describe('platform admins', () => {
  it('recognises an admin signed in through IAM Identity Center, configured as the role with its path', async () => {
    const r = await call(SSO_JANE, 'POST', '/v1/scopes', { name: 'org:acme' });
    expect(r.status).toBe(201);
    expect(r.body.metadata.createdBy).toBe(SSO_JANE.userArn);
    expect((await call(SSO_JANE, 'POST', '/v1/scopes', { name: 'team:ml', parent: 'org:acme' })).status).toBe(
      201,
    );
  });

  it('recognises an IAM user admin by its ARN with its path', async () => {
    expect((await call(IAM_USER, 'POST', '/v1/scopes', { name: 'org:ops' })).status).toBe(201);
  });

  it('does not take the same role name in another account for the admin', async () => {
    const r = await call(OTHER_ACCOUNT_JANE, 'POST', '/v1/scopes', { name: 'org:other' });
    expect(r.status).toBe(403);
    expect(await scopesSeenBy(OTHER_ACCOUNT_JANE)).toEqual([]);
  });
});

describe('members', () => {
  beforeAll(async () => {
    expect(
      (await member('team:ml', 'arn:aws:iam::123456789012:role/ci/llmcap-deployer', 'admin')).status,
    ).toBe(200);
    expect((await member('team:ml', SSO_ALICE.userArn, 'viewer')).status).toBe(200);
    expect((await member('org:ops', 'arn:aws:iam::123456789012:root', 'viewer')).status).toBe(200);
  });

  it('gives every session of a role member its role: the CI role administers team:ml', async () => {
    const r = await call(CI_ROLE, 'POST', '/v1/scopes', { name: 'project:ci', parent: 'team:ml' });
    expect(r.status).toBe(201);
    expect(await scopesSeenBy(CI_ROLE)).toEqual(['org:acme', 'project:ci', 'team:ml']);
  });

  it('does not give the role to a role of the same name in another account', async () => {
    expect((await call(OTHER_ACCOUNT_CI, 'GET', '/v1/scopes/team:ml')).status).toBe(404);
    expect(await scopesSeenBy(OTHER_ACCOUNT_CI)).toEqual([]);
  });

  it('gives a session member its role, and not the other sessions of the same role', async () => {
    expect(await scopesSeenBy(SSO_ALICE)).toEqual(['org:acme', 'project:ci', 'team:ml']);
    expect(
      (await call(SSO_ALICE, 'POST', '/v1/scopes', { name: 'project:y', parent: 'team:ml' })).status,
    ).toBe(403);
    expect(await scopesSeenBy(SSO_BOB)).toEqual([]);
  });

  it('gives a root member to the root user only, not to the account', async () => {
    expect(await scopesSeenBy(ROOT)).toEqual(['org:ops']);
    expect(await scopesSeenBy(OTHER_USER)).toEqual([]);
  });

  it('holds one entry per principal: another spelling of the same role replaces it', async () => {
    // The CI role without its path is the same role: it replaces the entry written with the path.
    const r = await member('team:ml', 'arn:aws:iam::123456789012:role/llmcap-deployer', 'viewer');
    expect(r.status).toBe(200);
    expect(r.body.spec.members).toEqual({
      'arn:aws:iam::123456789012:role/llmcap-deployer': 'viewer',
      [SSO_ALICE.userArn]: 'viewer',
    });
    expect((await call(CI_ROLE, 'POST', '/v1/scopes', { name: 'project:z', parent: 'team:ml' })).status).toBe(
      403,
    );
    // ... and removing either spelling removes it.
    const del = await call(
      SSO_JANE,
      'DELETE',
      `/v1/scopes/team:ml/members/${enc('arn:aws:iam::123456789012:role/ci/llmcap-deployer')}`,
    );
    expect(del.status).toBe(204);
    expect(await scopesSeenBy(CI_ROLE)).toEqual([]);
  });

  it.each([
    ['alice', /not an ARN/],
    ['arn:aws:iam::1234:role/ml', /not 12 digits/],
    ['arn:aws:iam::123456789012:role/ml-*', /wildcards are not supported/],
    ['arn:aws:iam::123456789012:group/ml', /group is not a principal/],
    ['arn:aws:sts::123456789012:federated-user/alice', /federated user cannot be named/],
    ['arn:aws:s3:::ml-bucket', /not an IAM principal/],
  ])('refuses %s as a member with 400, naming the accepted forms, and writes nothing', async (p, problem) => {
    const before = await dumpTable();
    const r = await member('team:ml', p, 'viewer');
    expect(r.status).toBe(400);
    expect(r.type).toBe('application/problem+json');
    expect(r.body.detail).toContain('arn:aws:iam::<account>:role/<name>');
    expect(r.body.detail).toContain('arn:aws:sts::<account>:assumed-role/<role>/<session>');
    expect(r.body.detail).toContain('arn:aws:iam::<account>:user/<name>');
    expect(r.body.detail).toContain('arn:aws:iam::<account>:root');
    expect(r.body.errors).toEqual([{ path: 'principal', message: expect.stringMatching(problem) }]);
    expect(await dumpTable()).toEqual(before);
  });
});

describe('the caller', () => {
  it('is refused with 401 when the accountId API Gateway gives is not the ARN account', async () => {
    const r = await call({ ...SSO_JANE, accountId: '210987654321' }, 'GET', '/v1/scopes');
    expect(r.status).toBe(401);
    expect(r.body.detail).toMatch(/accountId 210987654321 is not the account of/);
  });

  it('may be a federated user, whom no principal names: it reads what is shared and nothing else', async () => {
    const fed: Iam = {
      ...IAM_USER,
      accessKey: 'ASIAIOSFODNN7FEDERAT',
      callerId: '123456789012:bob',
      userArn: 'arn:aws:sts::123456789012:federated-user/bob',
      userId: '123456789012:bob',
    };
    expect((await call(fed, 'GET', '/v1/computes')).status).toBe(200);
    expect(await scopesSeenBy(fed)).toEqual([]);
  });
});
