import { type Identity, parseCaller } from '../../lambdas/domain/principal';
import type { Scope } from '../../lambdas/domain/quota';

/** ARNs for tests, in the forms of docs/security.md, so that no test names a principal by a bare string. */
export const ACCOUNT = '111111111111';
export const OTHER_ACCOUNT = '222222222222';

export const roleArn = (name: string, account = ACCOUNT, path = '/') =>
  `arn:aws:iam::${account}:role${path}${name}`;
export const userArn = (name: string, account = ACCOUNT, path = '/') =>
  `arn:aws:iam::${account}:user${path}${name}`;
export const sessionArn = (role: string, session: string, account = ACCOUNT) =>
  `arn:aws:sts::${account}:assumed-role/${role}/${session}`;
export const rootArn = (account = ACCOUNT) => `arn:aws:iam::${account}:root`;

/** The caller a signed request from `arn` is (a session, user or root ARN, as the IAM authorizer presents it). */
export function identity(arn: string): Identity {
  const r = parseCaller(arn);
  if (!r.ok) throw new Error(`${arn}: ${r.problem}`);
  return r.value;
}

/** A session of the role `name`: how someone using the role calls. */
export const asRole = (name: string, account = ACCOUNT) => identity(sessionArn(name, 'test', account));

/** A small tree with a member of each role: an org admin, a team admin and viewer, a project editor. */
export const ACME_SCOPES: Scope[] = [
  { name: 'org:acme', members: { [roleArn('org-admin')]: 'admin' } },
  {
    name: 'team:ml',
    parent: 'org:acme',
    members: { [roleArn('ml-admin')]: 'admin', [roleArn('ml-viewer')]: 'viewer' },
  },
  { name: 'project:chat', parent: 'team:ml', members: { [roleArn('chat-editor')]: 'editor' } },
  { name: 'project:search', parent: 'team:ml' },
  { name: 'project:solo', parent: 'org:acme' },
  { name: 'org:other' },
];
