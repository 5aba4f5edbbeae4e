import {
  type Command,
  EXIT,
  format,
  list,
  OUTPUT_OPTION,
  positionals,
  seg,
  str,
  UsageError,
} from '../command';
import { membersOf } from '../kinds';
import { table, toJson, toYaml } from '../render';

/** `scope create|members`: the tenancy tree and who holds which role in it. */

export const scopeCreate: Command = {
  name: 'scope create',
  summary: 'Create a scope (org:, team: or project:) under a parent',
  usage: ['scope create SCOPE [--parent SCOPE]'],
  help: `Scopes form a tree: org:<id> at the top, team:<id> under an org, project:<id> under a team or an org.

Options:
  --parent SCOPE   the scope above (none for an org)
  -o json|yaml     print the scope

Examples:
  llmcap scope create org:acme
  llmcap scope create team:ml --parent org:acme`,
  options: { parent: { type: 'string' }, ...OUTPUT_OPTION },
  async run(ctx) {
    const [name] = positionals(ctx.args, 1, 1, 'SCOPE (e.g. team:ml)');
    const f = format(ctx.args.values);
    const parent = str(ctx.args.values, 'parent');
    const client = await ctx.client();
    const r = await client.request('POST', '/v1/scopes', { name, ...(parent ? { parent } : {}) });
    if (f === 'json') ctx.out(toJson(r.body));
    else if (f === 'yaml') ctx.out(toYaml(r.body));
    else ctx.out(`scope/${name} created${parent ? ` under ${parent}` : ''}`);
    return EXIT.ok;
  },
};

export const scopeMembers: Command = {
  name: 'scope members',
  summary: 'List the members of a scope, or add, change and remove them',
  usage: ['scope members SCOPE [--add PRINCIPAL=ROLE]... [--remove PRINCIPAL]...'],
  help: `Without --add or --remove, lists the members. PRINCIPAL is an IAM role ARN (every session of the role,
whatever its path), an assumed-role session ARN, an IAM user ARN or an account root (its root user only);
see docs/security.md. Roles: admin (quotas of the scopes beneath, members), editor (models and computes owned by the scope),
viewer. Roles are inherited down the tree.

Options:
  --add PRINCIPAL=ROLE   make PRINCIPAL a member with ROLE, or change its role (repeatable)
  --remove PRINCIPAL     remove a member (repeatable)
  -o json|yaml           print the members

Examples:
  llmcap scope members team:ml
  llmcap scope members team:ml --add arn:aws:iam::123456789012:role/ml-leads=admin
  llmcap scope members team:ml --add arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_MLEngineer_0123456789abcdef/alice@example.com=editor
  llmcap scope members team:ml --remove arn:aws:iam::123456789012:user/alice`,
  options: {
    add: { type: 'string', multiple: true },
    remove: { type: 'string', multiple: true },
    ...OUTPUT_OPTION,
  },
  async run(ctx) {
    const [name] = positionals(ctx.args, 1, 1, 'SCOPE (e.g. team:ml)');
    const f = format(ctx.args.values);
    const adds = list(ctx.args.values, 'add').map((a) => {
      // ARNs have no '=', so the last one separates the role.
      const i = a.lastIndexOf('=');
      if (i <= 0 || i === a.length - 1) throw new UsageError(`--add takes PRINCIPAL=ROLE, not ${a}`);
      return { principal: a.slice(0, i), role: a.slice(i + 1) };
    });
    const removes = list(ctx.args.values, 'remove');
    const client = await ctx.client();
    const base = `/v1/scopes/${seg(name!)}`;
    if (adds.length || removes.length) {
      for (const { principal, role } of adds) {
        await client.request('PUT', `${base}/members/${seg(principal)}`, { role });
        ctx.out(`scope/${name}: ${principal} is ${role}`);
      }
      for (const principal of removes) {
        await client.request('DELETE', `${base}/members/${seg(principal)}`);
        ctx.out(`scope/${name}: ${principal} removed`);
      }
      return EXIT.ok;
    }
    const members = membersOf((await client.get(base)).body);
    if (f === 'json') ctx.out(toJson(members));
    else if (f === 'yaml') ctx.out(toYaml(members));
    else if (!members.length) ctx.err(`No members in ${name} (roles may be inherited from scopes above).`);
    else
      ctx.out(
        table(
          ['PRINCIPAL', 'ROLE'],
          members.map((m) => [m.principal, m.role]),
        ),
      );
    return EXIT.ok;
  },
};

export const SCOPE_COMMANDS = [scopeCreate, scopeMembers];
