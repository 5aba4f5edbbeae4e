import * as z from 'zod';
import type { Caller } from '../../domain/access';
import { scopeRef } from '../../domain/compute';
import { eventsView } from '../../domain/events';
import { CLASSES, type Model, ModelManifestInput, modelManifest, ScalingSchema } from '../../domain/model';
import { admissionAsSeen, modelStatus, takesBackAsSeen } from '../../domain/quota';
import type { Services } from '../../service';
import type { KnownStatus } from '../../service/admission';
import { type ApiResponse, json, nameFromPathIssues, ownerParam, parseBody, scopeKeyOf } from '../http';
import { byNameAndOwner, firstPage, ListQuery, listPage, pageOf, parseListQuery } from '../paging';
import type { Router } from '../router';
import { type CallerOf, expectedVersion } from './computes';

/** One schema per payload, exported for the OpenAPI generator and the CLI. */
export const ModelBody = ModelManifestInput;
export const ScalingBody = ScalingSchema;
export const ResourcesBody = z.strictObject({
  /** Absent: every profile. */
  profile: z.string().min(1).max(31).optional(),
  memoryGb: z.number().positive().max(32768),
  cpuCores: z.number().positive().max(1024),
});
export const ClassBody = z.strictObject({
  class: z.union([z.enum(CLASSES), z.literal(''), z.null()]).describe('empty or null: implied by scaling'),
});
export const OwnerBody = z.strictObject({
  owner: z.union([scopeRef, z.literal(''), z.null()]).describe('empty or null: a shared model'),
});

export function modelRoutes(router: Router, svc: Services, callerOf: CallerOf): void {
  const models = svc.models;
  const changeCatalog = models.change;

  // A manifest's status carries the admission fields from the model's admission record.
  const manifests = async (ms: readonly Model[], caller: Caller, known?: KnownStatus) => {
    const summaries = await models.statusOf(ms, caller, known);
    return ms.map((m, i) => modelManifest(m, summaries[i]));
  };
  const withEtag = async (
    status: number,
    m: Model,
    caller: Caller,
    extra: Record<string, string> = {},
    known?: KnownStatus,
  ): Promise<ApiResponse> =>
    json(status, (await manifests([m], caller, known))[0], { etag: `"${m.version}"`, ...extra });

  /**
   * The answer to a catalog change. A dry run's model carries the admission the change would get (admitted,
   * borrowed, pending and why) and status.preview lists what it would take back from others; nothing was written.
   * Both tell the caller of other scopes only what it may read (domain/quota/telling.ts).
   */
  const changed = async (
    status: number,
    r: Awaited<ReturnType<typeof changeCatalog>>,
    caller: Caller,
    extra: Record<string, string> = {},
  ): Promise<ApiResponse> => {
    if (!r.preview) {
      // A committed change carries the model's admission as it read it, and its pods: no read after the commit.
      return withEtag(status, r.after!, caller, extra, r.admission);
    }
    const m = r.after!;
    const a = r.preview.admission;
    const body = modelManifest(m, a && modelStatus(m, admissionAsSeen(a, caller)));
    const takesBack = takesBackAsSeen(r.preview.takesBack, caller);
    return json(
      status,
      { ...body, status: { ...body.status, preview: { takesBack } } },
      {
        etag: `"${m.version}"`,
        ...extra,
      },
    );
  };

  router.add(
    'GET',
    '/v1/models',
    async (req) => {
      const caller = await callerOf(req);
      const q = parseListQuery(ListQuery, req);
      const c = await models.list(caller);
      // Only the page's models are rendered: their admission is read for them alone.
      const page = await pageOf(req, c.items, byNameAndOwner, (ms) => manifests(ms, caller), q);
      return json(200, {
        ...page,
        // Rows left out of the catalog are an operator's concern: shown to platform admins (on the first page),
        // logged for everyone.
        ...(c.skipped.length && firstPage(req)
          ? { skipped: c.skipped.map(({ name, problem }) => ({ name, problem })) }
          : {}),
      });
    },
    {
      summary: 'The catalog: declared and added models you can see (status.declared), a page at a time',
      query: ListQuery,
      responses: { 200: 'items: the models; metadata.continue when more follow' },
    },
  );

  router.add(
    'POST',
    '/v1/models',
    async (req) => {
      const caller = await callerOf(req);
      const m = parseBody(ModelBody, req.body, { reason: 'InvalidModel' });
      const r = await changeCatalog(
        { verb: 'add', name: m.metadata.name, owner: scopeKeyOf(caller, m.metadata.owner), spec: m.spec },
        { by: req.principal, access: caller, owner: (c) => ownerParam(req, c), dryRun: req.dryRun },
      );
      return changed(201, r, r.caller ?? caller, { location: `/v1/models/${r.after!.name}` });
    },
    {
      summary: 'Add a model (409 if declared or it exists)',
      body: ModelBody,
      responses: { 201: 'the model' },
    },
  );

  router.add(
    'GET',
    '/v1/models/{name}',
    async (req) => {
      const caller = await callerOf(req);
      return withEtag(200, await models.get(req.params.name!, caller, ownerParam(req, caller)), caller);
    },
    { summary: 'Read a model with its status', responses: { 200: 'the model' } },
  );

  router.add(
    'GET',
    '/v1/models/{name}/events',
    async (req) => {
      const caller = await callerOf(req);
      // Read as the model is: one the caller may not see is 404 here too, and so are its events.
      const m = await models.get(req.params.name!, caller, ownerParam(req, caller));
      return json(200, { items: eventsView(await svc.events.of('model', m.name, m.createdAt)) });
    },
    {
      summary:
        "A model's recent events, newest first: admission decisions, take-backs, drift repaired (kept 7 days)",
      responses: { 200: 'items: events' },
    },
  );

  router.add(
    'PUT',
    '/v1/models/{name}',
    async (req) => {
      const caller = await callerOf(req);
      const name = req.params.name!;
      const m = parseBody(ModelBody, req.body, {
        also: nameFromPathIssues(req.body, name),
        reason: 'InvalidModel',
      });
      const r = await changeCatalog(
        {
          verb: 'replace',
          name,
          owner: scopeKeyOf(caller, m.metadata.owner),
          spec: m.spec,
          expectedVersion: expectedVersion(req, m.metadata.version),
        },
        { by: req.principal, access: caller, owner: (c) => ownerParam(req, c), dryRun: req.dryRun },
      );
      const created = !r.before && !r.replacesSkipped;
      return changed(
        created ? 201 : 200,
        r,
        r.caller ?? caller,
        created ? { location: `/v1/models/${name}` } : {},
      );
    },
    {
      summary: 'Replace an added model (adds it when missing)',
      body: ModelBody,
      responses: { 200: 'the model', 201: 'the model, added' },
    },
  );

  router.add(
    'DELETE',
    '/v1/models/{name}',
    async (req) => {
      const caller = await callerOf(req);
      await changeCatalog(
        { verb: 'remove', name: req.params.name!, expectedVersion: expectedVersion(req) },
        { by: req.principal, access: caller, owner: (c) => ownerParam(req, c), dryRun: req.dryRun },
      );
      return { status: 204 };
    },
    { summary: 'Remove an added model', responses: { 204: 'removed' } },
  );

  router.add(
    'PUT',
    '/v1/models/{name}/scaling',
    async (req) => {
      const caller = await callerOf(req, { snapshot: !req.dryRun });
      const scaling = parseBody(ScalingBody, req.body, { reason: 'InvalidModel', at: 'spec.scaling' });
      const r = await changeCatalog(
        { verb: 'scale', name: req.params.name!, scaling, expectedVersion: expectedVersion(req) },
        { by: req.principal, access: caller, owner: (c) => ownerParam(req, c), dryRun: req.dryRun },
      );
      return changed(200, r, r.caller ?? caller);
    },
    { summary: 'Scale: min, max, target', body: ScalingBody, responses: { 200: 'the model' } },
  );

  router.add(
    'POST',
    '/v1/models/{name}/wake',
    async (req) => {
      const caller = await callerOf(req);
      const r = await svc.autoscaling.wake(req.params.name!, caller, {
        owner: ownerParam(req, caller),
        dryRun: req.dryRun,
      });
      return json(202, r);
    },
    {
      summary:
        'Wake an autoscaled model at zero: it asks for max(min, 1) replicas; answers the expected seconds to Ready',
      responses: { 202: 'model, desiredReplicas, running, expectedSecondsToReady and its parts' },
    },
  );

  router.add(
    'PUT',
    '/v1/models/{name}/resources',
    async (req) => {
      const caller = await callerOf(req, { snapshot: !req.dryRun });
      const body = parseBody(ResourcesBody, req.body);
      const r = await changeCatalog(
        { verb: 'resources', name: req.params.name!, ...body, expectedVersion: expectedVersion(req) },
        { by: req.principal, access: caller, owner: (c) => ownerParam(req, c), dryRun: req.dryRun },
      );
      return changed(200, r, r.caller ?? caller);
    },
    {
      summary: 'Memory and cores of one profile, or of every profile',
      body: ResourcesBody,
      responses: { 200: 'the model' },
    },
  );

  router.add(
    'PUT',
    '/v1/models/{name}/class',
    async (req) => {
      const caller = await callerOf(req, { snapshot: !req.dryRun });
      const body = parseBody(ClassBody, req.body);
      const r = await changeCatalog(
        {
          verb: 'class',
          name: req.params.name!,
          class: body.class || undefined,
          expectedVersion: expectedVersion(req),
        },
        { by: req.principal, access: caller, owner: (c) => ownerParam(req, c), dryRun: req.dryRun },
      );
      return changed(200, r, r.caller ?? caller);
    },
    {
      summary: 'Set the class, or clear it (implied by scaling)',
      body: ClassBody,
      responses: { 200: 'the model' },
    },
  );

  router.add(
    'PUT',
    '/v1/models/{name}/owner',
    async (req) => {
      const caller = await callerOf(req);
      const body = parseBody(OwnerBody, req.body);
      const r = await changeCatalog(
        {
          verb: 'owner',
          name: req.params.name!,
          owner: scopeKeyOf(caller, body.owner),
          expectedVersion: expectedVersion(req),
        },
        { by: req.principal, access: caller, owner: (c) => ownerParam(req, c), dryRun: req.dryRun },
      );
      return changed(200, r, r.caller ?? caller);
    },
    {
      summary: 'Hand a model to a scope, or make it shared',
      body: OwnerBody,
      responses: { 200: 'the model' },
    },
  );

  router.add(
    'GET',
    '/v1/sources',
    async (req) => {
      const caller = await callerOf(req);
      return json(
        200,
        await listPage(
          req,
          () => models.sources(caller),
          (s) => [s.source],
        ),
      );
    },
    {
      summary: 'Each weights source and the models that use it, a page at a time',
      query: ListQuery,
      responses: { 200: 'items: the sources; metadata.continue when more follow' },
    },
  );
}
