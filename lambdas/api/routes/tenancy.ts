import * as z from 'zod';
import { Caller, ROLES } from '../../domain/access';
import { scopeName } from '../../domain/compute';
import { notFound } from '../../domain/errors';
import { FORMS_SENTENCE, parsePrincipal } from '../../domain/principal';
import { capacityView, QuotaSpecSchema, ScopeTree } from '../../domain/quota';
import { config } from '../../shared/config';
import { loadWorld, restoreHeadroom } from '../../store/admission';
import {
  createScope,
  deleteQuota,
  deleteScope,
  listQuotas,
  listScopes,
  loadTree,
  putQuota,
  type StoredQuota,
  type StoredScope,
  setMember,
} from '../../store/tenancy';
import type { ApiRequest } from '../http';
import { HttpError, json, parseBody } from '../http';
import type { Router } from '../router';
import { expectedVersion } from './computes';

/** Scopes, members, quotas and the capacity view (DESIGN.md §4, quota-semantics.md). */

export const ScopeBody = z.strictObject({
  name: scopeName,
  parent: scopeName.optional(),
});
export const MemberBody = z.strictObject({ role: z.enum(ROLES) });
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

/** The caller in this tree: the tree is loaded per request, so a membership change holds at once. */
function callerIn(req: ApiRequest, tree: ScopeTree): Caller {
  return new Caller(req.caller, tree, config().admins);
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
    spec: { ...(s.parent ? { parent: s.parent } : {}), members: s.members ?? {} },
    status: { children: tree.has(s.name) ? tree.children(s.name) : [], hasQuota: quota !== undefined },
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

/** Readable: the caller holds a role in the scope, above it, or beneath it (or is a platform admin). */
function visible(req: ApiRequest, tree: ScopeTree, scope: string): boolean {
  return callerIn(req, tree).can('read', scope);
}

function requireVisible(req: ApiRequest, tree: ScopeTree, scope: string): void {
  // An invisible scope answers like a missing one, so that scope names do not leak.
  if (!tree.has(scope) || !visible(req, tree, scope)) throw notFound(`scope ${scope} does not exist`);
}

export function tenancyRoutes(router: Router): void {
  router.add(
    'GET',
    '/v1/scopes',
    async (req) => {
      const [scopes, quotas] = await Promise.all([listScopes(), listQuotas()]);
      const tree = await loadTree();
      const q = new Map(quotas.map((x) => [x.scope, x]));
      const items = scopes
        .filter((s) => visible(req, tree, s.name))
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((s) => scopeManifest(s, tree, q.get(s.name)));
      return json(200, { items });
    },
    { summary: 'List the scopes you can see', responses: { 200: 'the scopes' } },
  );

  router.add(
    'POST',
    '/v1/scopes',
    async (req) => {
      const body = parseBody(ScopeBody, req.body);
      const tree = await loadTree();
      if (body.parent) {
        if (!tree.has(body.parent)) throw notFound(`parent scope ${body.parent} does not exist`);
        callerIn(req, tree).authorize('create-scope', body.parent);
      } else callerIn(req, tree).authorize('platform', undefined);
      const s = await createScope(body, req.principal);
      return json(201, scopeManifest(s, await loadTree()), { location: `/v1/scopes/${s.name}` });
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
      const tree = await loadTree();
      const name = req.params.name!;
      requireVisible(req, tree, name);
      const [scopes, quotas] = await Promise.all([listScopes(), listQuotas()]);
      const s = scopes.find((x) => x.name === name);
      if (!s) throw notFound(`scope ${name} does not exist`);
      return json(
        200,
        scopeManifest(
          s,
          tree,
          quotas.find((q) => q.scope === name),
        ),
      );
    },
    { summary: 'Read a scope with its members and children', responses: { 200: 'the scope' } },
  );

  router.add(
    'DELETE',
    '/v1/scopes/{name}',
    async (req) => {
      const tree = await loadTree();
      const name = req.params.name!;
      requireVisible(req, tree, name);
      callerIn(req, tree).authorize(tree.parent(name) ? 'delete-scope' : 'platform', name);
      await deleteScope(name, req.principal);
      return { status: 204 };
    },
    { summary: 'Delete a scope that has no children and owns no models', responses: { 204: 'deleted' } },
  );

  router.add(
    'PUT',
    '/v1/scopes/{name}/members/{principal}',
    async (req) => {
      const body = parseBody(MemberBody, req.body);
      const tree = await loadTree();
      const name = req.params.name!;
      const principal = memberPrincipal(req);
      requireVisible(req, tree, name);
      callerIn(req, tree).authorize('manage-members', name);
      const s = await setMember(name, principal, body.role, req.principal);
      return json(200, scopeManifest(s, await loadTree()));
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
    'DELETE',
    '/v1/scopes/{name}/members/{principal}',
    async (req) => {
      const tree = await loadTree();
      const name = req.params.name!;
      requireVisible(req, tree, name);
      callerIn(req, tree).authorize('manage-members', name);
      // Any string is removable, so that a member stored before members were checked can still be taken out.
      await setMember(name, req.params.principal!, undefined, req.principal);
      return { status: 204 };
    },
    { summary: 'Remove a principal from a scope', responses: { 204: 'removed' } },
  );

  router.add(
    'GET',
    '/v1/quotas',
    async (req) => {
      const [tree, quotas] = await Promise.all([loadTree(), listQuotas()]);
      const items = quotas
        .filter((q) => tree.has(q.scope) && visible(req, tree, q.scope))
        .sort((a, b) => a.scope.localeCompare(b.scope))
        .map(quotaManifest);
      return json(200, { items });
    },
    { summary: 'List the quotas you can see', responses: { 200: 'the quotas' } },
  );

  router.add(
    'GET',
    '/v1/quotas/{scope}',
    async (req) => {
      const [tree, quotas] = await Promise.all([loadTree(), listQuotas()]);
      const scope = req.params.scope!;
      requireVisible(req, tree, scope);
      const q = quotas.find((x) => x.scope === scope);
      if (!q)
        throw notFound(
          `scope ${scope} has no quota; it guarantees the sum of its children's and limits nothing`,
        );
      return json(200, quotaManifest(q), { etag: `"${q.version}"` });
    },
    { summary: "Read a scope's quota", responses: { 200: 'the quota' } },
  );

  router.add(
    'PUT',
    '/v1/quotas/{scope}',
    async (req) => {
      const body = parseBody(QuotaBody, req.body);
      const tree = await loadTree();
      const scope = req.params.scope!;
      requireVisible(req, tree, scope);
      callerIn(req, tree).authorize(tree.parent(scope) ? 'set-quota' : 'platform', scope);
      const q = await putQuota(
        { scope, guarantee: body.guarantee, ...(body.limit ? { limit: body.limit } : {}) },
        req.principal,
        expectedVersion(req),
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
      const tree = await loadTree();
      const scope = req.params.scope!;
      requireVisible(req, tree, scope);
      callerIn(req, tree).authorize(tree.parent(scope) ? 'set-quota' : 'platform', scope);
      await deleteQuota(scope, req.principal);
      return { status: 204 };
    },
    { summary: "Remove a scope's quota", responses: { 204: 'removed' } },
  );

  const capacity = async (req: ApiRequest, scope?: string) => {
    const world = await loadWorld();
    const tree = new ScopeTree(world.scopes);
    if (scope) requireVisible(req, tree, scope);
    const view = capacityView(
      { scopes: tree, quotas: world.quotas, models: world.models, admissions: world.admissions },
      scope ? { scope } : {},
    );
    const { headroom } = restoreHeadroom(world.computes, world.admissions, world.models);
    const cluster = headroom.usage().map((u) => ({ ...u, freeNodes: u.maxNodes - u.usedNodes }));
    return json(200, {
      scopes: view.scopes.filter((s) => visible(req, tree, s.scope)),
      cluster: { computes: cluster },
    });
  };

  router.add('GET', '/v1/capacity', (req) => capacity(req), {
    summary:
      'Per scope: guarantee, limit, usage, borrowed, atLimit, pending by reason; and the cluster headroom',
    responses: { 200: 'the capacity view' },
  });
  router.add('GET', '/v1/capacity/{scope}', (req) => capacity(req, req.params.scope), {
    summary: 'The capacity view of one scope and its subtree',
    responses: { 200: 'the capacity view' },
  });
}
