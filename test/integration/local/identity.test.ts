import type { ControlPlane } from '../../../local/control-plane';
import { iamAuthorizerOf, LOCAL_ADMIN } from '../../../local/identity';
import { CI_ROLE, IAM_USER, ROOT } from '../../fixtures/apigw-iam';
import { testControlPlane } from '../../helpers/control-plane';
import { llmcap } from '../cli/run';

/**
 * The local caller: `x-llmcap-principal` names the signer in the forms of docs/security.md, the local API
 * presents it as API Gateway's IAM authorizer would, and the handler matches it as it does in AWS.
 */

const SSO_ADMIN_ROLE =
  'arn:aws:iam::000000000000:role/aws-reserved/sso.amazonaws.com/us-east-1/AWSReservedSSO_PlatformAdmin_0123456789abcdef';

let cp: ControlPlane;
beforeAll(async () => {
  cp = await testControlPlane('identity', { admins: [LOCAL_ADMIN, SSO_ADMIN_ROLE] });
});
afterAll(() => cp.stop());

const send = (method: string, path: string, principal?: string, body?: unknown) =>
  fetch(`${cp.apiUrl}${path}`, {
    method,
    headers: {
      'content-type': 'application/json',
      ...(principal === undefined ? {} : { 'x-llmcap-principal': principal }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });

describe('the local caller', () => {
  it('is the IAM user local-admin, a platform admin, when no header names one', async () => {
    const r = await send('POST', '/v1/scopes', undefined, { name: 'org:local' });
    expect(r.status).toBe(201);
    expect(((await r.json()) as any).metadata.createdBy).toBe('arn:aws:iam::000000000000:user/local-admin');
  });

  it('acts as a session of a role named in the header, matched to the admin role despite its path', async () => {
    const r = await send('POST', '/v1/scopes', SSO_ADMIN_ROLE, { name: 'org:sso' });
    expect(r.status).toBe(201);
    expect(((await r.json()) as any).metadata.createdBy).toBe(
      'arn:aws:sts::000000000000:assumed-role/AWSReservedSSO_PlatformAdmin_0123456789abcdef/llmcap-local',
    );
  });

  it('is not an admin as the same role name in another account', async () => {
    const other = SSO_ADMIN_ROLE.replace('000000000000', '111111111111');
    expect((await send('POST', '/v1/scopes', other, { name: 'org:other' })).status).toBe(403);
  });

  it('refuses an empty header with 401, as any name that is no principal: it does not fall back to the admin', async () => {
    const before = await send('GET', '/v1/scopes');
    expect(before.status).toBe(200);
    const r = await send('POST', '/v1/scopes', '', { name: 'org:empty' });
    expect(r.status).toBe(401);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    expect(((await r.json()) as any).detail).toContain("the caller '' is not an identity llmcap recognises");
    const names = ((await (await send('GET', '/v1/scopes')).json()) as any).items.map(
      (s: any) => s.metadata.name,
    );
    expect(names).not.toContain('org:empty');
  });

  it.each(['constructor', '__proto__', 'toString', 'local-admin'])(
    'refuses a header that is no principal (%s) with 401 naming the forms',
    async (name) => {
      const r = await send('GET', '/v1/scopes', name);
      expect(r.status).toBe(401);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
      expect(((await r.json()) as any).detail).toContain(
        'arn:aws:sts::<account>:assumed-role/<role>/<session>',
      );
    },
  );
});

describe('the CLI', () => {
  it('sends --as as the header, and shows why a bare name is not a caller', async () => {
    const ok = await llmcap(['--as', SSO_ADMIN_ROLE, 'scope', 'create', 'org:cli'], { endpoint: cp.apiUrl });
    expect(ok).toMatchObject({ code: 0, stderr: '' });
    const bare = await llmcap(['--as', 'chat-dev', 'get', 'scopes'], { endpoint: cp.apiUrl });
    expect(bare.code).not.toBe(0);
    expect(bare.stderr).toContain('Unauthenticated (401)');
    expect(bare.stderr).toContain("'chat-dev' is not an ARN");
    const empty = await llmcap(['--as', '', 'scope', 'create', 'org:cli-empty'], { endpoint: cp.apiUrl });
    expect(empty.code).not.toBe(0);
    expect(empty.stderr).toContain('Unauthenticated (401)');
  });
});

describe('the authorizer block the local API builds', () => {
  it('has the fields AWS documents, shaped as AWS fills them for a user, a session and the root user', () => {
    const fields = Object.keys(IAM_USER).sort();
    const user = iamAuthorizerOf('arn:aws:iam::000000000000:user/ops/chat-dev');
    expect(Object.keys(user).sort()).toEqual(fields);
    expect(user).toMatchObject({
      accountId: '000000000000',
      userArn: 'arn:aws:iam::000000000000:user/ops/chat-dev',
    });
    expect(user.userId).toMatch(/^AIDA[A-Z2-7]{17}$/);
    expect(user.callerId).toBe(user.userId);

    const session = iamAuthorizerOf('arn:aws:iam::000000000000:role/ci/llmcap-deployer');
    expect(Object.keys(session).sort()).toEqual(fields);
    expect(session.userArn).toBe('arn:aws:sts::000000000000:assumed-role/llmcap-deployer/llmcap-local');
    expect(session.accessKey).toMatch(/^ASIA/);
    // As in CI_ROLE: <role id>:<session name>.
    expect(session.userId).toMatch(/^AROA[A-Z2-7]{17}:llmcap-local$/);
    expect(CI_ROLE.userId).toMatch(/^AROA[A-Z0-9]+:GitHubActions$/);

    const root = iamAuthorizerOf('arn:aws:iam::000000000000:root');
    expect(root).toMatchObject({ callerId: '000000000000', userId: '000000000000' });
    expect(ROOT.userId).toBe(ROOT.accountId);
  });
});

describe('the admins of a local control plane', () => {
  it('are checked before anything starts, each mistake named', async () => {
    await expect(
      testControlPlane('bad-admins', { admins: ['local-admin', 'arn:aws:iam::0:role/x', LOCAL_ADMIN] }),
    ).rejects.toThrow(
      /LLMCAP_ADMINS: local-admin: 'local-admin' is not an ARN.*arn:aws:iam::0:role\/x: the account '0' is not 12 digits/s,
    );
  });
});
