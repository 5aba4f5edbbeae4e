import * as z from 'zod';
import type { Caller } from '../../domain/access';
import { type Compute, computeName, scopeRef, toManifest } from '../../domain/compute';
import type { FieldIssue } from '../../domain/errors';
import { eventsView } from '../../domain/events';
import { DeclaredComputeManifestSchema as ComputeManifestInput } from '../../domain/hardware';
import { nameOf } from '../../domain/names';
import type { ScopeTree } from '../../domain/quota';
import type { Services } from '../../service';
import { config } from '../../shared/config';
import {
  type ApiRequest,
  type ApiResponse,
  HttpError,
  json,
  nameFromPathIssues,
  ownerParam,
  parseBody,
  scopeKeyOf,
} from '../http';
import { byNameAndOwner, ListQuery, listPage } from '../paging';
import type { Router } from '../router';

export const CloneBody = z.strictObject({ name: computeName, owner: scopeRef.optional() });
export const RenameBody = z.strictObject({ name: computeName });

/** Who is calling, in the tenancy tree as it stands (service/access.ts). */
/**
 * The caller in the tenancy tree. `snapshot`: as this process last read the tree, when young (store/shared-read.ts);
 * for a write whose decision asks the caller again in the tree it reads (models' scale, resources and class).
 */
export type CallerOf = (req: ApiRequest, opts?: { snapshot?: boolean }) => Promise<Caller<ScopeTree>>;

/**
 * How the cluster and AWS know a compute (its node group, taint, labels and execution names) carry its key,
 * whose twin mark would tell a tenant that another compute of its name exists (domain/names.ts): they are the
 * platform's to read, as the node groups are the platform's to run. Every other caller gets the same shape for
 * every compute, twin or not.
 */
function forCaller(m: ReturnType<typeof toManifest>, caller: Caller) {
  if (caller.isPlatformAdmin) return m;
  const { nodegroupName, taint: _t, labels: _l, workflow, statusMessage, healthIssues, ...status } = m.status;
  const w = workflow && (({ executionName: _e, ...rest }) => rest)(workflow);
  // Messages of the workflows and EKS quote the group's name: they read "node group of compute <name>".
  const unwired = (text: string) => text.split(nodegroupName).join(`of compute ${nameOf(m.metadata.name)}`);
  return {
    ...m,
    status: {
      ...status,
      ...(statusMessage !== undefined ? { statusMessage: unwired(statusMessage) } : {}),
      ...(healthIssues
        ? { healthIssues: healthIssues.map((h) => ({ ...h, message: unwired(h.message) })) }
        : {}),
      ...(w ? { workflow: w } : {}),
    },
  };
}

function manifest(c: Compute & { deletionRequested?: boolean }, caller: Caller) {
  const m = forCaller(toManifest(config().stage, c), caller);
  return c.deletionRequested ? { ...m, status: { ...m.status, deletionRequested: true } } : m;
}

function withEtag(status: number, c: Compute, caller: Caller): ApiResponse {
  return json(status, manifest(c, caller), { etag: `"${c.version}"` });
}

/** `If-Match: "3"` (or the manifest's metadata.version) pins a write to the version the client read. */
export function expectedVersion(req: ApiRequest, bodyVersion?: number): number | undefined {
  const h = req.headers['if-match'];
  if (h && h !== '*') {
    const n = Number(h.replace(/^W\//, '').replace(/"/g, ''));
    if (!Number.isInteger(n) || n < 1) {
      throw new HttpError(400, `If-Match must be a version such as "3", got ${h}`);
    }
    return n;
  }
  return bodyVersion;
}

export function computeRoutes(router: Router, svc: Services, callerOf: CallerOf): void {
  const computes = svc.computes;
  /** The manifest, or 400 with every fault at once: the schema's and, for a node it can read, EC2's. */
  const parseManifest = async (body: unknown, also: FieldIssue[] = []) => {
    const ok = ComputeManifestInput.safeParse(body).success;
    return parseBody(ComputeManifestInput, body, {
      also: [...also, ...(ok ? [] : await computes.nodeIssues(body))],
    });
  };
  router.add(
    'GET',
    '/v1/computes',
    async (req) => {
      const caller = await callerOf(req);
      const page = await listPage(
        req,
        () => computes.list(caller),
        byNameAndOwner,
        (cs) => cs.map((c) => manifest(c, caller)),
      );
      return json(200, page);
    },
    {
      summary: 'List the computes you can see, a page at a time',
      query: ListQuery,
      responses: { 200: 'items: the computes; metadata.continue when more follow' },
    },
  );

  router.add(
    'POST',
    '/v1/computes',
    async (req) => {
      const caller = await callerOf(req);
      const m = await parseManifest(req.body);
      const c = await computes.create(
        { name: m.metadata.name, owner: scopeKeyOf(caller, m.metadata.owner), spec: m.spec },
        caller,
        req.principal,
        { dryRun: req.dryRun },
      );
      return {
        ...withEtag(201, c, caller),
        headers: { etag: `"${c.version}"`, location: `/v1/computes/${c.name}` },
      };
    },
    {
      summary: 'Create a compute (409 if it exists)',
      body: ComputeManifestInput,
      responses: { 201: 'the compute' },
    },
  );

  router.add(
    'GET',
    '/v1/computes/{name}',
    async (req) => {
      const caller = await callerOf(req);
      return withEtag(200, await computes.visible(caller, req.params.name!, ownerParam(req, caller)), caller);
    },
    { summary: 'Read a compute with its status', responses: { 200: 'the compute' } },
  );

  router.add(
    'GET',
    '/v1/computes/{name}/events',
    async (req) => {
      const caller = await callerOf(req);
      const c = await computes.visible(caller, req.params.name!, ownerParam(req, caller));
      const events = eventsView(await svc.events.of('compute', c.name, c.createdAt));
      if (caller.isPlatformAdmin) return json(200, { items: events });
      // As the compute's own messages: the node group's name is the platform's to read.
      const group = toManifest(config().stage, c).status.nodegroupName;
      const unwired = (t: string) => t.split(group).join(`of compute ${nameOf(c.name)}`);
      return json(200, { items: events.map((e) => ({ ...e, message: unwired(e.message) })) });
    },
    {
      summary:
        "A compute's recent events, newest first: workflows started or refused, failures (kept 7 days)",
      responses: { 200: 'items: events' },
    },
  );

  router.add(
    'PUT',
    '/v1/computes/{name}',
    async (req) => {
      const caller = await callerOf(req);
      const name = req.params.name!;
      const m = await parseManifest(req.body, nameFromPathIssues(req.body, name));
      const input = { name, owner: scopeKeyOf(caller, m.metadata.owner), spec: m.spec };
      const r = await computes.apply(input, expectedVersion(req, m.metadata.version), caller, req.principal, {
        dryRun: req.dryRun,
        owner: ownerParam(req, caller),
      });
      return withEtag(r.created ? 201 : 200, r.compute, caller);
    },
    {
      summary: 'Create or replace a compute (apply)',
      body: ComputeManifestInput,
      responses: { 200: 'the replaced compute', 201: 'the created compute' },
    },
  );

  router.add(
    'DELETE',
    '/v1/computes/{name}',
    async (req) => {
      const caller = await callerOf(req);
      const r = await computes.remove(req.params.name!, expectedVersion(req), caller, req.principal, {
        dryRun: req.dryRun,
        owner: ownerParam(req, caller),
      });
      // With a node group, deletion is work for the workflows: 202 and the compute shows deletionRequested.
      return r.deleted ? { status: 204 } : json(202, manifest(r.compute, caller));
    },
    {
      summary: 'Delete a compute; with a node group, the node group is deleted first',
      responses: { 202: 'deletion requested: the node group is being deleted', 204: 'deleted' },
    },
  );

  router.add(
    'POST',
    '/v1/computes/{name}/clone',
    async (req) => {
      const caller = await callerOf(req);
      const body = parseBody(CloneBody, req.body);
      const to = { name: body.name, owner: scopeKeyOf(caller, body.owner) };
      const c = await computes.clone(req.params.name!, to, caller, req.principal, {
        dryRun: req.dryRun,
        owner: ownerParam(req, caller),
      });
      return {
        ...withEtag(201, c, caller),
        headers: { etag: `"${c.version}"`, location: `/v1/computes/${c.name}` },
      };
    },
    {
      summary: 'Clone the spec of a compute under a new name',
      body: CloneBody,
      responses: { 201: 'the clone' },
    },
  );

  router.add(
    'POST',
    '/v1/computes/{name}/rename',
    async (req) => {
      const caller = await callerOf(req);
      const body = parseBody(RenameBody, req.body);
      const { compute: c, renamed } = await computes.rename(
        req.params.name!,
        body.name,
        caller,
        req.principal,
        { dryRun: req.dryRun, owner: ownerParam(req, caller) },
      );
      if (!renamed) return withEtag(200, c, caller);
      return {
        ...withEtag(201, c, caller),
        headers: { etag: `"${c.version}"`, location: `/v1/computes/${c.name}` },
      };
    },
    {
      summary: 'Rename a compute (refused while it has a node group or models use it)',
      body: RenameBody,
      responses: { 201: 'the renamed compute' },
    },
  );
}
