/**
 * Who a caller is, and which configured principals name it (docs/security.md). Pure. The API parses the caller
 * once per request into an `Identity`; platform admins and scope members are `Principal`s; `principalKey` and
 * `Identity.keys` are the one place where the two meet, so admins and members match by the same rules.
 *
 * Why not compare strings: behind the IAM authorizer, a caller using a role is presented as its session,
 * `arn:aws:sts::<account>:assumed-role/<Role>/<session>`, without the role's path, while people configure the
 * role, `arn:aws:iam::<account>:role/<path/><Role>`. The two never compare equal.
 */

export const PARTITIONS = ['aws', 'aws-cn', 'aws-us-gov'] as const;
export type Partition = (typeof PARTITIONS)[number];

interface Base {
  /** The ARN as written (principals) or as API Gateway presented it (callers). */
  arn: string;
  partition: Partition;
  account: string;
}

/** A configured admin or member, one of four forms. */
export type Principal =
  /** Every session of the role, whatever its path (session ARNs carry no path). */
  | (Base & { kind: 'role'; name: string; path: string })
  /** One session of a role: one person under IAM Identity Center, whose session name is their user name. */
  | (Base & { kind: 'session'; role: string; session: string })
  /** The IAM user (names are unique in an account whatever the path, so the path does not matter). */
  | (Base & { kind: 'user'; name: string; path: string })
  /** The account's root user only, not every principal of the account (docs/security.md says why). */
  | (Base & { kind: 'root' });

/** Who signed a request, as API Gateway's IAM authorizer presents it. */
export interface Identity extends Base {
  kind: 'session' | 'user' | 'root' | 'federated';
  /** The key (principalKey) of every principal that names this caller; none for a federated user. */
  keys: readonly string[];
}

/** The accepted forms, for error messages; `<partition>` is aws, aws-cn or aws-us-gov. */
export const PRINCIPAL_FORMS = [
  'arn:aws:iam::<account>:role/<name> (every session of the role; any path)',
  'arn:aws:sts::<account>:assumed-role/<role>/<session> (one session)',
  'arn:aws:iam::<account>:user/<name> (any path)',
  'arn:aws:iam::<account>:root (the root user only)',
] as const;

export const FORMS_SENTENCE = `an IAM principal ARN: ${PRINCIPAL_FORMS.join(', ')}; the partition is ${PARTITIONS.join(', ')}`;

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

// IAM's own rules (CreateRole, CreateUser, AssumeRole, GetFederationToken).
const NAME = /^[\w+=,.@-]{1,64}$/;
const SESSION = /^[\w+=,.@-]{2,64}$/;
const FEDERATED = /^[\w+=,.@-]{2,32}$/;
const PATH = /^\/(?:[\x21-\x7e]*\/)?$/;
const MAX_PATH = 512;

type AnyArn =
  | Principal
  | (Base & { kind: 'federated'; name: string })
  | (Base & { kind: 'not-principal'; problem: string });

const fail = (problem: string): { ok: false; problem: string } => ({ ok: false, problem });

function nameProblem(what: string, name: string, pattern: RegExp, range: string): string | undefined {
  if (pattern.test(name)) return undefined;
  if (name.includes('*')) return `wildcards are not supported in a ${what}; name each one`;
  return `the ${what} '${name}' is not ${range} letters, digits or +=,.@_-`;
}

/** `role/<path/>name` or `user/<path/>name` → path and name, or what is wrong. */
function pathAndName(what: string, rest: string): Parsed<{ path: string; name: string }> {
  const cut = rest.lastIndexOf('/');
  const name = rest.slice(cut + 1);
  const path = `/${rest.slice(0, cut + 1)}`;
  const bad = nameProblem(`${what} name`, name, NAME, '1-64');
  if (bad) return fail(bad);
  if (path.length > MAX_PATH || !PATH.test(path)) {
    return fail(`the path '${path}' is not 1-${MAX_PATH} printable characters between slashes`);
  }
  return { ok: true, value: { path, name } };
}

function parseArn(s: string): Parsed<AnyArn> {
  if (!s.startsWith('arn:')) {
    if (/^\d{12}$/.test(s)) return fail(`name the account as arn:aws:iam::${s}:root (its root user only)`);
    return fail(`'${s}' is not an ARN; name the role or user by its ARN`);
  }
  const parts = s.split(':');
  if (parts.length !== 6) return fail(`'${s}' is not arn:<partition>:<service>::<account>:<resource>`);
  const [, partition, service, region, account, resource] = parts as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  if (!(PARTITIONS as readonly string[]).includes(partition)) {
    return fail(`the partition '${partition}' is not one of ${PARTITIONS.join(', ')}`);
  }
  if (service !== 'iam' && service !== 'sts') return fail(`a ${service} ARN is not an IAM principal`);
  if (region !== '')
    return fail(`IAM and STS ARNs have no region: arn:${partition}:${service}::${account}:...`);
  if (!/^\d{12}$/.test(account)) return fail(`the account '${account}' is not 12 digits`);
  const base = { arn: s, partition: partition as Partition, account };
  const slash = resource.indexOf('/');
  const type = slash < 0 ? resource : resource.slice(0, slash);
  const rest = slash < 0 ? '' : resource.slice(slash + 1);
  if (service === 'iam') {
    if (resource === 'root') return { ok: true, value: { ...base, kind: 'root' } };
    if (type === 'role' || type === 'user') {
      const pn = pathAndName(type, rest);
      return pn.ok ? { ok: true, value: { ...base, kind: type, ...pn.value } } : pn;
    }
    if (type === 'assumed-role')
      return fail(`a session is arn:${partition}:sts::${account}:assumed-role/...`);
    return {
      ok: true,
      value: { ...base, kind: 'not-principal', problem: `an IAM ${type} is not a principal` },
    };
  }
  if (type === 'assumed-role') {
    const [role = '', session, extra] = rest.split('/');
    if (session === undefined || extra !== undefined) {
      return fail(
        `a session is arn:${partition}:sts::${account}:assumed-role/<role>/<session>, without a path`,
      );
    }
    const bad =
      nameProblem('role name', role, NAME, '1-64') ?? nameProblem('session name', session, SESSION, '2-64');
    return bad ? fail(bad) : { ok: true, value: { ...base, kind: 'session', role, session } };
  }
  if (type === 'federated-user') {
    const bad = nameProblem('federated user name', rest, FEDERATED, '2-32');
    return bad ? fail(bad) : { ok: true, value: { ...base, kind: 'federated', name: rest } };
  }
  if (type === 'role' || type === 'user')
    return fail(`a ${type} is arn:${partition}:iam::${account}:${type}/...`);
  return fail(`an STS ${type || resource} is not a principal`);
}

/** A configured admin or member: one of the four forms, or what is wrong with it. */
export function parsePrincipal(s: string): Parsed<Principal> {
  const r = parseArn(s);
  if (!r.ok) return r;
  const v = r.value;
  if (v.kind === 'not-principal') return fail(v.problem);
  if (v.kind === 'federated') return fail('a federated user cannot be named; name the role its users assume');
  return { ok: true, value: v };
}

/** The identity every principal that names this caller shares (see Identity.keys). */
export function principalKey(p: Principal): string {
  const at = `${p.partition}:${p.account}`;
  switch (p.kind) {
    case 'role':
      return `${at}:role/${p.name}`;
    case 'session':
      return `${at}:session/${p.role}/${p.session}`;
    case 'user':
      return `${at}:user/${p.name}`;
    case 'root':
      return `${at}:root`;
  }
}

/**
 * The caller from API Gateway's `requestContext.authorizer.iam`: `userArn`, checked against `accountId` when
 * that is given. A caller is a session, a user, a root user or a federated user, never a role.
 */
export function parseCaller(userArn: string, accountId?: string | null): Parsed<Identity> {
  const r = parseArn(userArn);
  if (!r.ok) return r;
  const v = r.value;
  if (accountId && accountId !== v.account) {
    return fail(`the caller's accountId ${accountId} is not the account of ${userArn}`);
  }
  const base = { arn: v.arn, partition: v.partition, account: v.account };
  switch (v.kind) {
    case 'session':
      return {
        ok: true,
        value: {
          ...base,
          kind: 'session',
          keys: [principalKey({ ...base, kind: 'role', name: v.role, path: '/' }), principalKey(v)],
        },
      };
    case 'user':
    case 'root':
      return { ok: true, value: { ...base, kind: v.kind, keys: [principalKey(v)] } };
    case 'federated':
      return { ok: true, value: { ...base, kind: 'federated', keys: [] } };
    case 'role':
      return fail(
        `${userArn} is a role; a caller is one of its sessions, arn:${v.partition}:sts::${v.account}:assumed-role/${v.name}/<session>`,
      );
    case 'not-principal':
      return fail(v.problem);
  }
}

/** True if `p` names the caller: the one rule for platform admins and scope members alike. */
export function matches(p: Principal, who: Identity): boolean {
  return who.keys.includes(principalKey(p));
}

/** Values held by principals (a scope's members, say), answered for a caller in O(1). */
export class PrincipalMap<V> {
  private readonly byKey = new Map<string, V[]>();

  add(p: Principal, value: V): void {
    const key = principalKey(p);
    const list = this.byKey.get(key);
    if (list) list.push(value);
    else this.byKey.set(key, [value]);
  }

  /** Every value held by a principal that names the caller. */
  matching(who: Identity): V[] {
    return who.keys.flatMap((k) => this.byKey.get(k) ?? []);
  }
}
