import type { Caller } from '../domain/access';
import {
  builtinsStandAsDeclared,
  type ComputeInput,
  decideApply,
  decideClone,
  decideDelete,
  decideRename,
  decideSeed,
  declarationOf,
  requireComputeWrite,
  type StoredCompute,
  visibleCompute,
} from '../domain/compute-changes';
import { conflict, DomainError } from '../domain/errors';
import { type DeclaredSpec, decideComputeSpec, familyLimits, resolveBuiltins } from '../domain/hardware';
import { newComputeId } from '../domain/nodegroup';
import type { Dependencies } from '.';
import type { CatalogService } from './catalog';
import { committing, type WriteOptions } from './writes';

/** The compute a replace would leave: the new spec and owner, the next version; what a dry run answers. */
function replaced(current: StoredCompute, c: ComputeInput, by: string, at: string): StoredCompute {
  const { owner: _old, ...rest } = current;
  return {
    ...rest,
    ...(c.owner ? { owner: c.owner } : {}),
    spec: c.spec,
    version: current.version + 1,
    updatedAt: at,
    updatedBy: by,
  };
}

/**
 * The compute use cases: create, apply, clone, rename and delete, and the reads. Each reads the compute, asks
 * domain/compute-changes.ts, and writes: create and apply as one conditional write (a compute change touches
 * one item, and its conditions hold the rules at commit), rename and delete through the ledger, so that no model
 * can start using the compute in between.
 */
export function computeService(deps: Dependencies, svc: { catalog: CatalogService }) {
  const store = deps.store.computes;
  const now = () => deps.clock().toISOString();

  /** A dry run checks the name is free (the create's condition) and answers the compute it would store. */
  const create = async (c: ComputeInput, by: string, opts?: WriteOptions) => {
    const item = { ...c, builtin: false, by, uid: newComputeId() };
    if (!opts?.dryRun) return store.createCompute(item, now());
    if (await store.getCompute(c.name)) {
      throw conflict(
        `compute ${c.name} already exists; use PUT /v1/computes/${c.name} to replace it`,
        'AlreadyExists',
      );
    }
    return store.previewCompute(item, now());
  };

  /**
   * The manifest resolved against what AWS says (domain/hardware.ts decideComputeSpec): the facts are loaded
   * here, the decision is the domain's. The cluster's subnets are asked for only when the stage lists none.
   */
  const resolve = async (c: DeclaredComputeInput, caller: Caller, by: string): Promise<ComputeInput> => {
    const hw = deps.hardware();
    const stageSubnets = deps.config().subnetIds;
    const wantsSubnets = (c.spec.nodeGroup.subnetIds?.length ?? 0) > 0;
    const [found, subnets, scopes] = await Promise.all([
      hw.lookup(c.spec.node.instanceType),
      stageSubnets.length || !wantsSubnets ? stageSubnets : hw.clusterSubnets(),
      c.owner ? deps.store.tenancy.listScopes() : [],
    ]);
    const r = decideComputeSpec(
      c.spec,
      { ...found, region: hw.region, subnets, families: familyLimits(c.owner, scopes) },
      { by, isPlatformAdmin: caller.isPlatformAdmin },
    );
    return { name: c.name, ...(c.owner ? { owner: c.owner } : {}), spec: r.spec, costSource: r.costSource };
  };

  /** The compute as the caller may see it; one it may not see is 404 like a missing one, so names do not leak. */
  const visible = async (caller: Caller, name: string) =>
    visibleCompute(caller, name, await store.getCompute(name));

  return {
    visible,

    async list(caller: Caller): Promise<StoredCompute[]> {
      const items = (await store.listComputes()).filter((c) => caller.canSee(c.owner));
      return items.sort((a, b) => a.name.localeCompare(b.name));
    },

    /** POST /v1/computes: 409 AlreadyExists when the name is taken. */
    async create(
      declared: DeclaredComputeInput,
      caller: Caller,
      by: string,
      opts?: WriteOptions,
    ): Promise<StoredCompute> {
      requireComputeWrite(caller, { builtin: false, owner: declared.owner, name: declared.name }, 'create');
      return create(await resolve(declared, caller, by), by, opts);
    },

    /** PUT /v1/computes/{name}: creates a missing compute or replaces one; `created` says which. */
    async apply(
      declared: DeclaredComputeInput,
      expected: number | undefined,
      caller: Caller,
      by: string,
      opts?: WriteOptions,
    ): Promise<{ compute: StoredCompute; created: boolean }> {
      const c = await resolve(declared, caller, by);
      const current = await store.getCompute(c.name);
      const d = decideApply(caller, current, c, expected);
      if (d.kind === 'create') return { compute: await create(c, by, opts), created: true };
      if (d.kind === 'unchanged') return { compute: current!, created: false };
      if (opts?.dryRun) return { compute: replaced(current!, c, by, now()), created: false };
      const compute = await store.replaceCompute(
        { ...c, by, expectedVersion: d.expectedVersion, requireNoNodegroup: d.requireNoNodegroup },
        now(),
      );
      return { compute, created: false };
    },

    /**
     * DELETE: a compute with no node group goes at once; one with a node group is marked for deletion and
     * reconcile deletes the group first, then the item.
     */
    async remove(
      name: string,
      expected: number | undefined,
      caller: Caller,
      by: string,
      opts?: WriteOptions,
    ): Promise<{ deleted: boolean; compute: StoredCompute }> {
      requireComputeWrite(caller, await visible(caller, name), 'delete');
      return deps.store.ledger.withLedger<{ deleted: boolean; compute: StoredCompute }>(
        committing<{ deleted: boolean; compute: StoredCompute }>(opts, async () => {
          const c = await store.getCompute(name);
          const how = decideDelete(c, name, expected, c ? await svc.catalog.modelsUsing(name) : []);
          if (how === 'remove-now')
            return { items: [store.removeNowItem(c!)], result: { deleted: true, compute: c! } };
          return {
            items: [store.markForDeletionItem(c!, by, now())],
            result: { deleted: false, compute: { ...c!, deletionRequested: true } },
          };
        }),
        {
          by,
          onItemConflict: () =>
            conflict(
              `compute ${name} changed while it was being deleted; read it again and retry`,
              'ConcurrentUpdate',
            ),
        },
      );
    },

    /** Clones the spec of a compute the caller can see under a new name (never its node group or status). */
    async clone(
      name: string,
      to: { name: string; owner?: string },
      caller: Caller,
      by: string,
      opts?: WriteOptions,
    ) {
      const source = await visible(caller, name);
      // Resolved like any write: the clone's owner may be bound to other families, and its price to on-demand.
      return create(await resolve(decideClone(caller, source, to), caller, by), by, opts);
    },

    /** Renames in one transaction (delete the old item, create the new one); the same name is no change. */
    async rename(
      name: string,
      to: string,
      caller: Caller,
      by: string,
      opts?: WriteOptions,
    ): Promise<{ compute: StoredCompute; renamed: boolean }> {
      const source = await visible(caller, name);
      requireComputeWrite(caller, source, 'rename');
      if (to === source.name) return { compute: source, renamed: false };
      const compute = await deps.store.ledger.withLedger(
        committing(opts, async () => {
          const found = await store.getCompute(name);
          const users = found && !found.builtin ? await svc.catalog.modelsUsing(name) : [];
          const c = decideRename(found, name, to, users);
          // A new item, so a new incarnation id: its node group name and execution names are new as well.
          const { items, renamed } = store.renameItems(c, { name: to, by, uid: newComputeId() }, now());
          return { items, result: renamed };
        }),
        {
          by,
          onItemConflict: (i) =>
            i === 1
              ? conflict(`compute ${to} already exists; choose another name`, 'AlreadyExists')
              : conflict(
                  `compute ${name} changed while it was being renamed; read it again and retry`,
                  'ConcurrentUpdate',
                ),
        },
      );
      return { compute, renamed: true };
    },

    /**
     * Loads the built-ins from configuration (domain decideSeed); returns how many were written. A write that
     * loses to another process seeding, or to an admin's change, is left to them.
     */
    async seedBuiltins(opts: { unlessAsDeclared?: boolean } = {}): Promise<number> {
      const declared = deps.builtins.computes();
      const region = deps.config().region;
      const stored = await store.listComputes();
      // The API's cold start: built-ins already resolved from this very file need no EC2 or Price List call.
      if (opts.unlessAsDeclared && builtinsStandAsDeclared(declared, stored, region)) return 0;
      // Resolved as every compute write is, through the same DescribeInstanceTypes and Price List calls.
      const hw = deps.hardware();
      const found = await Promise.all(declared.map((b) => hw.lookup(b.spec.node.instanceType)));
      const resolved = resolveBuiltins(declared, found, hw.region);
      const asDeclared = new Map(declared.map((b) => [b.name, declarationOf(b, hw.region)]));
      const existing = new Map(stored.map((c) => [c.name, c]));
      let written = 0;
      for (const b of resolved) {
        const cur = existing.get(b.name);
        const declaredAs = asDeclared.get(b.name)!;
        const d = decideSeed(cur, b.spec, declaredAs);
        if (d.kind === 'keep') continue;
        try {
          if (d.kind === 'create') {
            await store.createCompute(
              { ...b, builtin: true, by: 'config', uid: newComputeId(), declaredAs },
              now(),
            );
          } else {
            // A live node group keeps its hardware: such a config change waits until the group is gone.
            await store.replaceCompute(
              {
                ...b,
                by: 'config',
                expectedVersion: cur!.version,
                requireNoNodegroup: d.requireNoNodegroup,
                declaredAs,
              },
              now(),
            );
          }
          written++;
        } catch (e) {
          if (!(e instanceof DomainError)) throw e;
        }
      }
      return written;
    },
  };
}

export type ComputeService = ReturnType<typeof computeService>;

/** A compute write as the manifest gives it: the hardware may be left out, to be resolved from AWS's facts. */
export interface DeclaredComputeInput {
  name: string;
  owner?: string;
  spec: DeclaredSpec;
}
