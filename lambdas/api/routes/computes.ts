import * as z from 'zod';
import type { Caller } from '../../domain/access';
import { type Compute, ComputeManifestInput, computeName, scopeName, toManifest } from '../../domain/compute';
import { decideApply, decideClone, requireComputeWrite, visibleCompute } from '../../domain/compute-changes';
import { config } from '../../shared/config';
import {
  createCompute,
  deleteCompute,
  getCompute,
  listComputes,
  renameCompute,
  replaceCompute,
} from '../../store/computes';
import { type ApiRequest, type ApiResponse, HttpError, json, parseBody, requireNameFromPath } from '../http';
import type { Router } from '../router';

export const CloneBody = z.strictObject({ name: computeName, owner: scopeName.optional() });
export const RenameBody = z.strictObject({ name: computeName });

type CallerOf = (req: ApiRequest) => Promise<Caller>;

function manifest(c: Compute & { deletionRequested?: boolean }) {
  const m = toManifest(config().stage, c);
  return c.deletionRequested ? { ...m, status: { ...m.status, deletionRequested: true } } : m;
}

function withEtag(status: number, c: Compute): ApiResponse {
  return json(status, manifest(c), { etag: `"${c.version}"` });
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

async function visible(caller: Caller, name: string): Promise<Compute & { deletionRequested?: boolean }> {
  return visibleCompute(caller, name, await getCompute(name));
}

export function computeRoutes(router: Router, callerOf: CallerOf): void {
  router.add(
    'GET',
    '/v1/computes',
    async (req) => {
      const caller = await callerOf(req);
      const items = (await listComputes()).filter((c) => caller.canSee(c.owner));
      items.sort((a, b) => a.name.localeCompare(b.name));
      return json(200, { items: items.map(manifest) });
    },
    { summary: 'List the computes you can see', responses: { 200: 'the computes' } },
  );

  router.add(
    'POST',
    '/v1/computes',
    async (req) => {
      const caller = await callerOf(req);
      const m = parseBody(ComputeManifestInput, req.body);
      requireComputeWrite(
        caller,
        { builtin: false, owner: m.metadata.owner, name: m.metadata.name },
        'create',
      );
      const c = await createCompute({
        name: m.metadata.name,
        owner: m.metadata.owner,
        builtin: false,
        spec: m.spec,
        by: req.principal,
      });
      return { ...withEtag(201, c), headers: { etag: `"${c.version}"`, location: `/v1/computes/${c.name}` } };
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
      return withEtag(200, await visible(caller, req.params.name!));
    },
    { summary: 'Read a compute with its status', responses: { 200: 'the compute' } },
  );

  router.add(
    'PUT',
    '/v1/computes/{name}',
    async (req) => {
      const caller = await callerOf(req);
      const m = parseBody(ComputeManifestInput, req.body);
      const name = req.params.name!;
      requireNameFromPath(m.metadata.name, name);
      const current = await getCompute(name);
      const input = { name, owner: m.metadata.owner, spec: m.spec };
      const d = decideApply(caller, current, input, expectedVersion(req, m.metadata.version));
      if (d.kind === 'create') {
        return withEtag(201, await createCompute({ ...input, builtin: false, by: req.principal }));
      }
      const c = await replaceCompute({
        ...input,
        by: req.principal,
        expectedVersion: d.expectedVersion,
        requireNoNodegroup: d.requireNoNodegroup,
      });
      return withEtag(200, c);
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
      const current = await visible(caller, req.params.name!);
      requireComputeWrite(caller, current, 'delete');
      const r = await deleteCompute(current.name, req.principal, expectedVersion(req));
      // With a node group, deletion is work for the workflows: 202 and the compute shows deletionRequested.
      return r.deleted ? { status: 204 } : json(202, manifest(r.compute));
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
      const source = await visible(caller, req.params.name!);
      const clone = decideClone(caller, source, body);
      const c = await createCompute({ ...clone, builtin: false, by: req.principal });
      return { ...withEtag(201, c), headers: { etag: `"${c.version}"`, location: `/v1/computes/${c.name}` } };
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
      const source = await visible(caller, req.params.name!);
      requireComputeWrite(caller, source, 'rename');
      if (body.name === source.name) return withEtag(200, source);
      const c = await renameCompute(source.name, body.name, req.principal);
      return { ...withEtag(201, c), headers: { etag: `"${c.version}"`, location: `/v1/computes/${c.name}` } };
    },
    {
      summary: 'Rename a compute (refused while it has a node group or models use it)',
      body: RenameBody,
      responses: { 201: 'the renamed compute' },
    },
  );
}
