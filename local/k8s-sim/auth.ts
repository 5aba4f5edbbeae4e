import { timingSafeEqual } from 'node:crypto';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import type { Cluster } from './cluster';
import { CLUSTERROLEBINDINGS, CLUSTERROLES, ROLEBINDINGS, ROLES } from './resources';
import type { JsonObject } from './types';

/**
 * Who is calling, and may they: EKS's authentication of `k8s-aws-v1.` tokens (a presigned STS
 * GetCallerIdentity URL whose signed headers include `x-k8s-aws-id: <cluster>`), EKS access entries with
 * their access policies, and RBAC (Roles, ClusterRoles and their bindings, served as API objects).
 *
 * There is no STS here: the simulator knows the local credentials (`identities`: access key, secret key and
 * the ARN STS would answer for them), verifies the signature itself with that secret and the cluster's
 * name, as STS would, and then maps the ARN to a Kubernetes user through the access entries.
 */

export interface Identity {
  accessKeyId: string;
  secretAccessKey: string;
  /** What GetCallerIdentity would return: a user ARN or an assumed-role session ARN. */
  arn: string;
}

export interface AccessPolicyAssociation {
  /** e.g. arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy */
  policyArn: string;
  accessScope?: { type: 'cluster' | 'namespace'; namespaces?: string[] };
}

export interface AccessEntry {
  /** An IAM role or user ARN (`arn:aws:iam::<account>:role/<name>`). */
  principalArn: string;
  /** Default: the session ARN for a role (`...:assumed-role/<role>/{{SessionName}}`), the ARN for a user. */
  username?: string;
  kubernetesGroups?: string[];
  accessPolicies?: AccessPolicyAssociation[];
}

export interface User {
  name: string;
  groups: string[];
  /** Access policies that apply to this caller (EKS evaluates them before RBAC). */
  policies: AccessPolicyAssociation[];
}

export interface AuthConfig {
  /** Bearer tokens accepted as they are, for kubectl on this machine: token → user. */
  staticTokens: Map<string, { name: string; groups: string[] }>;
  identities: Identity[];
  accessEntries: AccessEntry[];
}

export class AuthError extends Error {}

const TOKEN_PREFIX = 'k8s-aws-v1.';
const MAX_EXPIRES_S = 15 * 60;
const STS_HOST = /^sts(\.[a-z0-9-]+)?\.amazonaws\.com(\.cn)?$/;
const ALLOWED_PARAMS = new Set([
  'Action',
  'Version',
  'X-Amz-Algorithm',
  'X-Amz-Credential',
  'X-Amz-Date',
  'X-Amz-Expires',
  'X-Amz-SignedHeaders',
  'X-Amz-Signature',
  'X-Amz-Security-Token',
]);

function parseAmzDate(s: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) return Number.NaN;
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
}

/**
 * Tokens already verified, until they expire: a client sends the same token on every call for minutes, and
 * recomputing its signature each time was a good part of what the simulator spent per request.
 */
const verified = new Map<string, { who: Identity; until: number }>();

/** The checks aws-iam-authenticator makes before asking STS, then the signature STS would check. */
export async function verifyEksToken(
  token: string,
  clusterName: string,
  now: number,
  identities: Identity[],
): Promise<Identity> {
  const key = `${clusterName}\u0000${token}`;
  const known = verified.get(key);
  if (known && now <= known.until && identities.includes(known.who)) return known.who;
  const who = await verifyAnew(token, clusterName, now, identities);
  if (verified.size >= 1000) verified.clear();
  const q = new URL(Buffer.from(token.slice(TOKEN_PREFIX.length), 'base64url').toString('utf8')).searchParams;
  verified.set(key, {
    who,
    until: parseAmzDate(q.get('X-Amz-Date') ?? '') + Number(q.get('X-Amz-Expires')) * 1000,
  });
  return who;
}

async function verifyAnew(
  token: string,
  clusterName: string,
  now: number,
  identities: Identity[],
): Promise<Identity> {
  if (!token.startsWith(TOKEN_PREFIX)) throw new AuthError('token is missing expected "k8s-aws-v1." prefix');
  let url: URL;
  try {
    const raw = Buffer.from(token.slice(TOKEN_PREFIX.length), 'base64url').toString('utf8');
    url = new URL(raw);
  } catch {
    throw new AuthError('input token was not properly formatted');
  }
  if (url.protocol !== 'https:')
    throw new AuthError(`unexpected scheme "${url.protocol.replace(':', '')}" in pre-signed URL`);
  if (!STS_HOST.test(url.hostname))
    throw new AuthError(`unexpected hostname "${url.hostname}" in pre-signed URL`);
  if (url.pathname !== '/') throw new AuthError('unexpected path in pre-signed URL');
  const q = url.searchParams;
  for (const k of q.keys())
    if (!ALLOWED_PARAMS.has(k)) throw new AuthError(`non-whitelisted query parameter "${k}"`);
  if (q.get('Action') !== 'GetCallerIdentity')
    throw new AuthError('unexpected action parameter in pre-signed URL');
  const signed = (q.get('X-Amz-SignedHeaders') ?? '').split(';');
  if (!signed.includes('x-k8s-aws-id'))
    throw new AuthError('client did not sign the x-k8s-aws-id header in the pre-signed URL');
  const date = parseAmzDate(q.get('X-Amz-Date') ?? '');
  if (Number.isNaN(date)) throw new AuthError('X-Amz-Date parameter is missing or malformed');
  const expires = Number(q.get('X-Amz-Expires'));
  if (!Number.isInteger(expires) || expires < 1 || expires > MAX_EXPIRES_S)
    throw new AuthError(`X-Amz-Expires parameter must be between 1 and ${MAX_EXPIRES_S} seconds`);
  if (now > date + expires * 1000)
    throw new AuthError('X-Amz-Date parameter is expired (15 minute expiration)');
  if (date > now + 5 * 60_000) throw new AuthError('X-Amz-Date parameter is in the future');
  const credential = (q.get('X-Amz-Credential') ?? '').split('/');
  const [accessKeyId, , region, service] = credential;
  if (credential.length !== 5 || service !== 'sts' || !region)
    throw new AuthError('malformed X-Amz-Credential');
  const who = identities.find((i) => i.accessKeyId === accessKeyId);
  // STS: InvalidClientTokenId.
  if (!who)
    throw new AuthError(
      `sts getCallerIdentity failed: the security token included in the request is invalid`,
    );
  // Recompute the presigned URL with the cluster this server is: a token made for another cluster, or
  // signed with another secret, does not match (STS: SignatureDoesNotMatch).
  const query: Record<string, string> = {
    Action: 'GetCallerIdentity',
    Version: q.get('Version') ?? '2011-06-15',
  };
  const token2 = q.get('X-Amz-Security-Token');
  const signer = new SignatureV4({
    credentials: {
      accessKeyId: who.accessKeyId,
      secretAccessKey: who.secretAccessKey,
      ...(token2 ? { sessionToken: token2 } : {}),
    },
    region,
    service: 'sts',
    sha256: Sha256,
  });
  const presigned = await signer.presign(
    {
      method: 'GET',
      protocol: 'https:',
      hostname: url.hostname,
      path: '/',
      query,
      headers: { host: url.hostname, 'x-k8s-aws-id': clusterName },
    },
    { signingDate: new Date(date), expiresIn: expires, signableHeaders: new Set(signed) },
  );
  const want = Buffer.from(String(presigned.query?.['X-Amz-Signature'] ?? ''));
  const got = Buffer.from(q.get('X-Amz-Signature') ?? '');
  if (want.length !== got.length || !timingSafeEqual(want, got))
    throw new AuthError(
      'sts getCallerIdentity failed: the request signature we calculated does not match the signature you provided',
    );
  return who;
}

/** `arn:aws:sts::1:assumed-role/r/s` → the role ARN an access entry names (`arn:aws:iam::1:role/r`). */
function principalOf(arn: string): { principal: string; session?: string } {
  const m = /^arn:([^:]+):sts::(\d+):assumed-role\/([^/]+)\/(.+)$/.exec(arn);
  if (m) return { principal: `arn:${m[1]}:iam::${m[2]}:role/${m[3]}`, session: m[4] };
  return { principal: arn };
}

function roleName(arn: string): string | undefined {
  const m = /^arn:[^:]+:iam::(\d+):role\/(?:.*\/)?([^/]+)$/.exec(arn);
  return m ? `${m[1]}/${m[2]}` : undefined;
}

export function userForArn(arn: string, entries: AccessEntry[]): User {
  const { principal, session } = principalOf(arn);
  const entry = entries.find(
    (e) =>
      e.principalArn === principal ||
      (roleName(e.principalArn) !== undefined && roleName(e.principalArn) === roleName(principal)),
  );
  // EKS: a principal without an access entry is not authenticated at all.
  if (!entry) throw new AuthError(`no access entry for ${principal}`);
  const name = (entry.username ?? (session ? arn.replace(/\/[^/]+$/, '/{{SessionName}}') : arn)).replace(
    '{{SessionName}}',
    session ?? '',
  );
  return {
    name,
    groups: [...(entry.kubernetesGroups ?? []), 'system:authenticated'],
    policies: entry.accessPolicies ?? [],
  };
}

export interface Request {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

const READ = ['get', 'list', 'watch'];
const WRITE = [...READ, 'create', 'update', 'patch', 'delete', 'deletecollection'];

/** The EKS access policies, reduced to what they allow on the resources served here. */
function policyAllows(policyArn: string, r: Request): boolean {
  const name = policyArn.split('/').pop();
  switch (name) {
    case 'AmazonEKSClusterAdminPolicy':
      return true;
    case 'AmazonEKSAdminPolicy':
      return r.resource !== 'nodes' || READ.includes(r.verb);
    case 'AmazonEKSEditPolicy':
      return (
        !r.group.startsWith('rbac.') &&
        r.resource !== 'nodes' &&
        r.resource !== 'namespaces' &&
        WRITE.includes(r.verb)
      );
    case 'AmazonEKSViewPolicy':
      return READ.includes(r.verb) && !r.group.startsWith('rbac.');
    default:
      return false;
  }
}

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
}

function ruleAllows(rule: Rule, r: Request): boolean {
  const verbs = rule.verbs ?? [];
  if (!verbs.includes('*') && !verbs.includes(r.verb)) return false;
  const groups = rule.apiGroups ?? [];
  if (!groups.includes('*') && !groups.includes(r.group)) return false;
  const full = r.subresource ? `${r.resource}/${r.subresource}` : r.resource;
  const resources = rule.resources ?? [];
  const resOk =
    resources.includes('*') ||
    resources.includes(full) ||
    (r.subresource !== undefined && resources.includes(`*/${r.subresource}`));
  if (!resOk) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || (r.name !== undefined && names.includes(r.name));
}

function subjectMatches(subjects: JsonObject[] | undefined, user: User): boolean {
  return (subjects ?? []).some(
    (s) =>
      (s.kind === 'User' && s.name === user.name) ||
      (s.kind === 'Group' && user.groups.includes(s.name as string)),
  );
}

/** EKS access scopes name namespaces exactly or with `*` wildcards (`dev-*` is every namespace starting dev-). */
export function namespaceMatches(pattern: string, namespace: string): boolean {
  if (!pattern.includes('*')) return pattern === namespace;
  const re = pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${re.join('.*')}$`).test(namespace);
}

export function authorize(c: Cluster, user: User, r: Request): boolean {
  if (user.groups.includes('system:masters')) return true;
  for (const p of user.policies) {
    const scope = p.accessScope ?? { type: 'cluster' };
    const inScope =
      scope.type === 'cluster' ||
      (r.namespace !== undefined && (scope.namespaces ?? []).some((n) => namespaceMatches(n, r.namespace!)));
    if (inScope && policyAllows(p.policyArn, r)) return true;
  }
  const rulesOf = (ref: JsonObject | undefined, ns: string | undefined): Rule[] => {
    if (!ref) return [];
    const role =
      ref.kind === 'ClusterRole'
        ? c.store.get(CLUSTERROLES, undefined, ref.name as string)
        : c.store.get(ROLES, ns, ref.name as string);
    return (role?.rules as Rule[]) ?? [];
  };
  for (const b of c.store.list(CLUSTERROLEBINDINGS))
    if (
      subjectMatches(b.subjects as JsonObject[], user) &&
      rulesOf(b.roleRef as JsonObject, undefined).some((rule) => ruleAllows(rule, r))
    )
      return true;
  if (r.namespace !== undefined)
    for (const b of c.store.list(ROLEBINDINGS, r.namespace))
      if (
        subjectMatches(b.subjects as JsonObject[], user) &&
        rulesOf(b.roleRef as JsonObject, r.namespace).some((rule) => ruleAllows(rule, r))
      )
        return true;
  return false;
}
