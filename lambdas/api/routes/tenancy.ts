import * as z from 'zod';
import { ROLES } from '../../domain/access';
import { scopeName, scopeRef } from '../../domain/compute';
import { InstanceFamiliesSchema } from '../../domain/hardware';
import { asSent } from '../../domain/names';
import { FORMS_SENTENCE, parsePrincipal } from '../../domain/principal';
import { membersIssues, QuotaSpecSchema, type ScopeTree } from '../../domain/quota';
import { refineWith } from '../../domain/rules';
import { scopeNamespace } from '../../domain/workloads';
import type { Services, StoredQuota, StoredScope } from '../../service';
import { config } from '../../shared/config';
import type { ApiRequest } from '../http';
import { HttpError, json, parseBody, parseQuery, scopeKey, scopeKeyOf } from '../http';
import { ListQuery, listPage } from '../paging';
import type { Router } from '../router';
import { type CallerOf, expectedVersion } from './computes';

/** GET /v1/capacity's query: `consolidation=true` answers the consolidation plan instead of the view. */
export const CapacityQuery = z.strictObject({
  consolidation: z
    .enum(['true', 'false'])
    .optional()
    .describe('true: the consolidation plan (moves, saving per hour, nodes freed) as the caller may read it'),
});

/** Scopes, members, quotas and the capacity view (docs/design.md §4, docs/reference/quota-semantics.md). */

export const ScopeBody = z.strictObject({
  name: scopeName,
  parent: scopeRef.optional(),
});
export const MemberBody = z.strictObject({ role: z.enum(ROLES) });
/** null lifts the limit; a list (possibly empty: no computes of their own) sets it. */
export const InstanceFamiliesBody = z.strictObject({ instanceFamilies: InstanceFamiliesSchema.nullable() });

const MemberEntry = z.strictObject({ principal: z.string().min(1).max(1024), role: z.enum(ROLES) });
/** All the members, as a map or as a scope manifest lists them; a list names a repeated entry by its index. */
export const MembersBody = z.strictObject({
  members: z
    .union([z.array(MemberEntry), z.record(z.string().min(1).max(1024), z.enum(ROLES))])
    // Checked on whatever parsed: a bad role in one entry leaves the principals of the others checked.
    .superRefine(...refineWith(membersIssues))
    .transform((m) => (Array.isArray(m) ? Object.fromEntries(m.map((e) => [e.principal, e.role])) : m))
    .describe('principal → role, or [{principal, role}]: all of them'),
});
export const QuotaBody = QuotaSpecSchema;

/** A member is a principal in one of the forms of docs/security.md; anything else would name nobody. */
function memberPrincipal(req: ApiRequest): string {
  const principal = req.params.principal!;
  const p = parsePrincipal(principal);
  if (!p.ok) {
    throw new HttpError(400, `a member is ${FORMS_SENTENCE}; URL-encode it in the path`, {
      errors: [{ path: 'principal', message: p.problem }],
    });
  }
  return principal;
}

function scopeManifest(s: StoredScope, tree: ScopeTree, quota?: StoredQuota) {
  return {
    apiVersion: 'llmcap/v1',
    kind: 'Scope',
    metadata: {
      name: s.name,
      version: s.version,
      createdAt: s.createdAt,
      createdBy: s.createdBy,
      updatedAt: s.updatedAt,
      updatedBy: s.updatedBy,
    },
    spec: {
      ...(s.parent ? { parent: s.parent } : {}),
      // Principals as granted: an IAM path may hold anything, `~` too (names.ts asSent).
      members: asSent(s.members ?? {}),
      ...(s.instanceFamilies ? { instanceFamilies: s.instanceFamilies } : {}),
    },
    status: {
      children: tree.has(s.name) ? tree.children(s.name) : [],
      hasQuota: quota !== undefined,
      // Where its models run: their Services are <model>.<namespace>.svc.
      namespace: scopeNamespace(config().stage, s),
    },
  };
}

function quotaManifest(q: StoredQuota) {
  return {
    apiVersion: 'llmcap/v1',
    kind: 'Quota',
    metadata: { name: q.scope, version: q.version, updatedAt: q.updatedAt, updatedBy: q.updatedBy },
    spec: { guarantee: q.guarantee, ...(q.limit ? { limit: q.limit } : {}) },
  };
}

export function tenancyRoutes(router: Router, svc: Services, callerOf: CallerOf): void {
  const { scopes, quotas } = svc;
  const quotaOf = async (name: string) => (await quotas.all()).find((q) => q.scope === name);

  router.add(
    'GET',
    '/v1/scopes',
    async (req) => {
      const caller = await callerOf(req);
      const page = await listPage(
        req,
        async () => {
          const [visible, all] = await Promise.all([scopes.list(caller), quotas.all()]);
          const q = new Map(all.map((x) => [x.scope, x]));
          return visible.map((s) => ({ s, q: q.get(s.name) }));
        },
        ({ s }) => [s.name],
        (p) => p.map(({ s, q }) => scopeManifest(s, caller.tenancy, q)),
      );
      return json(200, page);
    },
    {
      summary: 'List the scopes you can see, a page at a time',
      query: ListQuery,
      responses: { 200: 'items: the scopes; metadata.continue when more follow' },
    },
  );

  router.add(
    'POST',
    '/v1/scopes',
    async (req) => {
      const body = parseBody(ScopeBody, req.body);
      const caller = await callerOf(req);
      const parent = scopeKeyOf(caller, body.parent);
      const s = await scopes.create(
        { name: body.name, ...(parent ? { parent } : {}) },
        caller,
        req.principal,
        {
          dryRun: req.dryRun,
        },
      );
      return json(201, scopeManifest(s, await scopes.loadTree()), { location: `/v1/scopes/${s.name}` });
    },
    {
      summary: 'Create a scope (an org needs a platform admin; others an admin of the parent)',
      body: ScopeBody,
      responses: { 201: 'the scope' },
    },
  );

  router.add(
    'GET',
    '/v1/scopes/{name}',
    async (req) => {
      const caller = await callerOf(req);
      const s = await scopes.get(scopeKey(caller, req.params.name!), caller);
      return json(200, scopeManifest(s, caller.tenancy, await quotaOf(s.name)));
    },
    { summary: 'Read a scope with its members and children', responses: { 200: 'the scope' } },
  );

  router.add(
    'DELETE',
    '/v1/scopes/{name}',
    async (req) => {
      const caller = await callerOf(req);
      await scopes.remove(scopeKey(caller, req.params.name!), caller, req.principal, { dryRun: req.dryRun });
      return { status: 204 };
    },
    { summary: 'Delete a scope that has no children and owns no models', responses: { 204: 'deleted' } },
  );

  router.add(
    'PUT',
    '/v1/scopes/{name}/instance-families',
    async (req) => {
      const body = parseBody(InstanceFamiliesBody, req.body);
      const caller = await callerOf(req);
      const s = await scopes.setInstanceFamilies(
        scopeKey(caller, req.params.name!),
        body.instanceFamilies,
        caller,
        req.principal,
        { dryRun: req.dryRun },
      );
      return json(200, scopeManifest(s, caller.tenancy, await quotaOf(s.name)));
    },
    {
      summary: "Limit the instance families the scope's computes may use (platform admins; null lifts it)",
      body: InstanceFamiliesBody,
      responses: { 200: 'the scope' },
    },
  );

  router.add(
    'PUT',
    '/v1/scopes/{name}/members/{principal}',
    async (req) => {
      const body = parseBody(MemberBody, req.body);
      const principal = memberPrincipal(req);
      const caller = await callerOf(req);
      const s = await scopes.setMember(
        scopeKey(caller, req.params.name!),
        principal,
        body.role,
        caller,
        req.principal,
        {
          dryRun: req.dryRun,
        },
      );
      return json(200, scopeManifest(s, caller.tenancy, await quotaOf(s.name)));
    },
    {
      summary:
        'Give a principal (an IAM role, assumed-role session, user or root ARN, URL-encoded) a role in a scope, ' +
        'inherited by the scopes beneath; at most 200 members per scope',
      body: MemberBody,
      responses: { 200: 'the scope' },
    },
  );

  router.add(
    'PUT',
    '/v1/scopes/{name}/members',
    async (req) => {
      const body = parseBody(MembersBody, req.body);
      const caller = await callerOf(req);
      const s = await scopes.replaceMembers(
        scopeKey(caller, req.params.name!),
        body.members,
        expectedVersion(req),
        caller,
        req.principal,
        { dryRun: req.dryRun },
      );
      return json(200, scopeManifest(s, caller.tenancy, await quotaOf(s.name)), { etag: `"${s.version}"` });
    },
    {
      summary:
        'Set all the members of a scope at once (those not listed are removed), in one write; If-Match pins the version',
      body: MembersBody,
      responses: { 200: 'the scope' },
    },
  );

  router.add(
    'DELETE',
    '/v1/scopes/{name}/members/{principal}',
    async (req) => {
      // Any string is removable, so that a member stored before members were checked can still be taken out.
      const caller = await callerOf(req);
      await scopes.setMember(
        scopeKey(caller, req.params.name!),
        req.params.principal!,
        undefined,
        caller,
        req.principal,
        { dryRun: req.dryRun },
      );
      return { status: 204 };
    },
    { summary: 'Remove a principal from a scope', responses: { 204: 'removed' } },
  );

  router.add(
    'GET',
    '/v1/quotas',
    async (req) => {
      const caller = await callerOf(req);
      const page = await listPage(
        req,
        () => quotas.list(caller),
        (q) => [q.scope],
        (p) => p.map(quotaManifest),
      );
      return json(200, page);
    },
    {
      summary: 'List the quotas you can see, a page at a time',
      query: ListQuery,
      responses: { 200: 'items: the quotas; metadata.continue when more follow' },
    },
  );

  router.add(
    'GET',
    '/v1/quotas/{scope}',
    async (req) => {
      const caller = await callerOf(req);
      const q = await quotas.get(scopeKey(caller, req.params.scope!), caller);
      return json(200, quotaManifest(q), { etag: `"${q.version}"` });
    },
    { summary: "Read a scope's quota", responses: { 200: 'the quota' } },
  );

  router.add(
    'PUT',
    '/v1/quotas/{scope}',
    async (req) => {
      const body = parseBody(QuotaBody, req.body);
      const caller = await callerOf(req);
      const scope = scopeKey(caller, req.params.scope!);
      const q = await quotas.apply(
        { scope, guarantee: body.guarantee, ...(body.limit ? { limit: body.limit } : {}) },
        expectedVersion(req),
        caller,
        req.principal,
        { dryRun: req.dryRun },
      );
      return json(200, quotaManifest(q), { etag: `"${q.version}"` });
    },
    {
      summary:
        "Set a scope's guarantee and limit (set by an admin of the parent; an org's by a platform admin)",
      body: QuotaBody,
      responses: { 200: 'the quota' },
    },
  );

  router.add(
    'DELETE',
    '/v1/quotas/{scope}',
    async (req) => {
      const caller = await callerOf(req);
      await quotas.remove(scopeKey(caller, req.params.scope!), caller, req.principal, { dryRun: req.dryRun });
      return { status: 204 };
    },
    { summary: "Remove a scope's quota", responses: { 204: 'removed' } },
  );

  const capacity = async (req: ApiRequest, scope?: string) => {
    const caller = await callerOf(req);
    return json(
      200,
      await svc.capacity.view(caller, scope === undefined ? undefined : scopeKey(caller, scope)),
    );
  };

  router.add(
    'GET',
    '/v1/capacity',
    async (req) => {
      const q = parseQuery(CapacityQuery, req.query);
      if (q.consolidation !== 'true') return capacity(req);
      return json(200, await svc.capacity.consolidation(await callerOf(req)));
    },
    {
      summary:
        'Per scope: guarantee, limit, usage, borrowed, atLimit, pending by reason; and the cluster headroom. With consolidation=true: what consolidation would move, its saving per hour and the nodes it frees, before it acts',
      query: CapacityQuery,
      responses: { 200: 'the capacity view, or the consolidation plan' },
    },
  );
  router.add('GET', '/v1/capacity/{scope}', (req) => capacity(req, req.params.scope), {
    summary: 'The capacity view of one scope and its subtree',
    responses: { 200: 'the capacity view' },
  });
}
