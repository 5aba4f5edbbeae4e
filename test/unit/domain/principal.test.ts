import {
  matches,
  type Principal,
  PrincipalMap,
  parseCaller,
  parsePrincipal,
} from '../../../lambdas/domain/principal';

/** The identity model of docs/security.md: which configured principal names which caller. */

const principal = (s: string): Principal => {
  const r = parsePrincipal(s);
  if (!r.ok) throw new Error(`${s}: ${r.problem}`);
  return r.value;
};
const caller = (s: string, accountId?: string) => {
  const r = parseCaller(s, accountId);
  if (!r.ok) throw new Error(`${s}: ${r.problem}`);
  return r.value;
};

const SSO_ROLE =
  'arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_MLEngineer_0a1b2c3d4e5f6789';
const SSO_ALICE =
  'arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_MLEngineer_0a1b2c3d4e5f6789/alice@example.com';
const SSO_BOB =
  'arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_MLEngineer_0a1b2c3d4e5f6789/bob@example.com';

describe('which principal names which caller', () => {
  test.each([
    // A role names every session of it, whatever path the role has (session ARNs carry none).
    [SSO_ROLE, SSO_ALICE, true],
    [SSO_ROLE, SSO_BOB, true],
    ['arn:aws:iam::123456789012:role/AWSReservedSSO_MLEngineer_0a1b2c3d4e5f6789', SSO_ALICE, true],
    [
      'arn:aws:iam::123456789012:role/ci/llmcap-deployer',
      'arn:aws:sts::123456789012:assumed-role/llmcap-deployer/GitHubActions',
      true,
    ],
    // ... but not the same role name in another account, or another partition.
    [
      SSO_ROLE,
      'arn:aws:sts::210987654321:assumed-role/AWSReservedSSO_MLEngineer_0a1b2c3d4e5f6789/alice@example.com',
      false,
    ],
    [
      'arn:aws:iam::123456789012:role/llmcap-deployer',
      'arn:aws-cn:sts::123456789012:assumed-role/llmcap-deployer/GitHubActions',
      false,
    ],
    [
      'arn:aws:iam::123456789012:role/llmcap-deployer',
      'arn:aws:sts::123456789012:assumed-role/llmcap-deployer2/x1',
      false,
    ],
    // A session names that session only: one person under IAM Identity Center.
    [SSO_ALICE, SSO_ALICE, true],
    [SSO_ALICE, SSO_BOB, false],
    // A user names the user, with or without its path (user names are unique in an account).
    ['arn:aws:iam::123456789012:user/ops/deployer', 'arn:aws:iam::123456789012:user/ops/deployer', true],
    ['arn:aws:iam::123456789012:user/deployer', 'arn:aws:iam::123456789012:user/ops/deployer', true],
    ['arn:aws:iam::123456789012:user/deployer', 'arn:aws:iam::210987654321:user/deployer', false],
    // A role never names a user of the same name, nor a user a session.
    ['arn:aws:iam::123456789012:role/deployer', 'arn:aws:iam::123456789012:user/deployer', false],
    [
      'arn:aws:iam::123456789012:user/deployer',
      'arn:aws:sts::123456789012:assumed-role/deployer/deployer',
      false,
    ],
    // Root names the root user only, not the account's other principals.
    ['arn:aws:iam::123456789012:root', 'arn:aws:iam::123456789012:root', true],
    ['arn:aws:iam::123456789012:root', 'arn:aws:iam::123456789012:user/deployer', false],
    ['arn:aws:iam::123456789012:root', SSO_ALICE, false],
    // The other partitions.
    [
      'arn:aws-us-gov:iam::123456789012:role/ops',
      'arn:aws-us-gov:sts::123456789012:assumed-role/ops/s1',
      true,
    ],
    ['arn:aws-cn:iam::123456789012:user/ops', 'arn:aws-cn:iam::123456789012:user/ops', true],
    // Names are compared as ARNs are: with their case.
    ['arn:aws:iam::123456789012:role/Ops', 'arn:aws:sts::123456789012:assumed-role/ops/s1', false],
  ])('%s names %s: %s', (p, c, expected) => {
    expect(matches(principal(p), caller(c))).toBe(expected);
  });

  test('a federated user is a caller that no principal names', () => {
    const fed = caller('arn:aws:sts::123456789012:federated-user/bob');
    expect(fed.keys).toEqual([]);
    expect(matches(principal('arn:aws:iam::123456789012:root'), fed)).toBe(false);
  });

  test('a PrincipalMap answers with what every principal naming the caller holds', () => {
    const m = new PrincipalMap<string>();
    m.add(principal(SSO_ROLE), 'by role');
    m.add(principal(SSO_ALICE), 'by session');
    m.add(principal('arn:aws:iam::123456789012:user/alice'), 'by user');
    expect(m.matching(caller(SSO_ALICE)).sort()).toEqual(['by role', 'by session']);
    expect(m.matching(caller(SSO_BOB))).toEqual(['by role']);
    expect(m.matching(caller('arn:aws:iam::123456789012:user/x/alice'))).toEqual(['by user']);
  });

  test.each(['constructor', '__proto__', 'toString', 'hasOwnProperty'])(
    'a user named %s is a name like any other',
    (name) => {
      const m = new PrincipalMap<string>();
      m.add(principal('arn:aws:iam::123456789012:user/alice'), 'alice');
      expect(m.matching(caller(`arn:aws:iam::123456789012:user/${name}`))).toEqual([]);
      m.add(principal(`arn:aws:iam::123456789012:user/${name}`), name);
      expect(m.matching(caller(`arn:aws:iam::123456789012:user/${name}`))).toEqual([name]);
    },
  );
});

describe('parsing', () => {
  test('the four forms, with their parts', () => {
    expect(principal(SSO_ROLE)).toMatchObject({
      kind: 'role',
      account: '123456789012',
      path: '/aws-reserved/sso.amazonaws.com/eu-west-1/',
      name: 'AWSReservedSSO_MLEngineer_0a1b2c3d4e5f6789',
    });
    expect(principal(SSO_ALICE)).toMatchObject({ kind: 'session', session: 'alice@example.com' });
    expect(principal('arn:aws-us-gov:iam::123456789012:user/ops/deployer')).toMatchObject({
      kind: 'user',
      partition: 'aws-us-gov',
      path: '/ops/',
      name: 'deployer',
    });
    expect(principal('arn:aws-cn:iam::123456789012:root')).toMatchObject({
      kind: 'root',
      partition: 'aws-cn',
    });
  });

  test.each([
    ['alice', /not an ARN; name the role or user by its ARN/],
    ['123456789012', /arn:aws:iam::123456789012:root/],
    ['arn:aws:iam::12345:role/x', /account '12345' is not 12 digits/],
    ['arn:aws-iso:iam::123456789012:role/x', /partition 'aws-iso' is not one of aws, aws-cn, aws-us-gov/],
    ['arn:aws:s3:::bucket', /not an IAM principal/],
    ['arn:aws:iam:us-east-1:123456789012:role/x', /no region/],
    ['arn:aws:iam::123456789012:role/*', /wildcards are not supported/],
    ['arn:aws:iam::123456789012:role/team/*', /wildcards are not supported/],
    ['arn:aws:iam::123456789012:role/', /role name '' is not 1-64/],
    [`arn:aws:iam::123456789012:role/${'r'.repeat(65)}`, /is not 1-64/],
    [`arn:aws:iam::123456789012:role/${'p'.repeat(520)}/x`, /path .* is not 1-512/],
    ['arn:aws:iam::123456789012:group/devs', /an IAM group is not a principal/],
    ['arn:aws:iam::123456789012:assumed-role/x/y', /a session is arn:aws:sts::123456789012:assumed-role/],
    ['arn:aws:sts::123456789012:role/x', /a role is arn:aws:iam::123456789012:role/],
    ['arn:aws:sts::123456789012:assumed-role/x', /assumed-role\/<role>\/<session>/],
    ['arn:aws:sts::123456789012:assumed-role/x/a/b', /without a path/],
    ['arn:aws:sts::123456789012:assumed-role/x/a', /session name 'a' is not 2-64/],
    ['arn:aws:sts::123456789012:federated-user/bob', /federated user cannot be named/],
    [' arn:aws:iam::123456789012:role/x', /not an ARN/],
  ])('%s is refused: %s', (s, problem) => {
    const r = parsePrincipal(s);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problem).toMatch(problem);
  });

  test('a caller is never a role, and agrees with the accountId API Gateway gives', () => {
    const role = parseCaller('arn:aws:iam::123456789012:role/ops');
    expect(role).toEqual({
      ok: false,
      problem: expect.stringMatching(/is a role; a caller is one of its sessions/),
    });
    expect(parseCaller(SSO_ALICE, '123456789012').ok).toBe(true);
    expect(parseCaller(SSO_ALICE, '210987654321')).toEqual({
      ok: false,
      problem: expect.stringMatching(/accountId 210987654321 is not the account of/),
    });
  });
});
