import { createHash } from 'node:crypto';
import { parsePrincipal } from '../lambdas/domain/principal';

/**
 * Who the local caller is. The `x-llmcap-principal` header names the principal that would sign the request,
 * in the forms a member or admin takes (docs/security.md), and the local API presents it as API Gateway's IAM
 * authorizer would: a role becomes one of its sessions, because that is what STS hands to whoever assumes it.
 * The handler then parses and matches it as it does in AWS; a header it cannot parse is passed on for it to
 * refuse, so that there is one check, not a local one.
 */

/** The fake account of every local ARN. */
export const LOCAL_ACCOUNT = '000000000000';
/** The local caller when no header names one, and the default platform admin of `npm start`. */
export const LOCAL_ADMIN = `arn:aws:iam::${LOCAL_ACCOUNT}:user/local-admin`;
/** The session name of a role named in the header. */
export const LOCAL_SESSION = 'llmcap-local';

export interface IamAuthorizer {
  accessKey: string;
  accountId: string;
  callerId: string;
  cognitoIdentity: null;
  principalOrgId: string | null;
  userArn: string;
  userId: string;
}

/** A stable fake unique id with IAM's prefix (AIDA users, AROA roles), as aws:userid would carry. */
function uniqueId(prefix: string, of: string): string {
  const digest = createHash('sha256').update(of).digest('hex').toUpperCase();
  return `${prefix}${digest
    .replace(/[^A-Z2-7]/g, '')
    .padEnd(17, 'Q')
    .slice(0, 17)}`;
}

/** `requestContext.authorizer.iam` as API Gateway presents a request signed by `principal`. */
export function iamAuthorizerOf(principal: string): IamAuthorizer {
  const p = parsePrincipal(principal);
  const unknown = { accountId: LOCAL_ACCOUNT, callerId: principal, userArn: principal, userId: principal };
  const base = { cognitoIdentity: null, principalOrgId: null };
  if (!p.ok) return { ...base, ...unknown, accessKey: uniqueId('AKIA', principal) };
  const v = p.value;
  switch (v.kind) {
    case 'user': {
      const id = uniqueId('AIDA', v.arn);
      return {
        ...base,
        accessKey: uniqueId('AKIA', v.arn),
        accountId: v.account,
        callerId: id,
        userArn: v.arn,
        userId: id,
      };
    }
    case 'root':
      // The root user's aws:userid is the account id.
      return {
        ...base,
        accessKey: uniqueId('AKIA', v.arn),
        accountId: v.account,
        callerId: v.account,
        userArn: v.arn,
        userId: v.account,
      };
    case 'role':
    case 'session': {
      const role = v.kind === 'role' ? v.name : v.role;
      const session = v.kind === 'role' ? LOCAL_SESSION : v.session;
      const id = `${uniqueId('AROA', `${v.partition}:${v.account}:${role}`)}:${session}`;
      return {
        ...base,
        accessKey: uniqueId('ASIA', id),
        accountId: v.account,
        callerId: id,
        userArn: `arn:${v.partition}:sts::${v.account}:assumed-role/${role}/${session}`,
        userId: id,
      };
    }
  }
}
