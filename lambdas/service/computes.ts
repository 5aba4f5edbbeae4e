import type { Caller } from '../domain/access';
import {
  NODEGROUPS_PER_CLUSTER,
  NODES_PER_NODEGROUP,
  nodegroupQuotaRefusal,
  nodesQuotaRefusal,
} from '../domain/aws-quotas';
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
import type { FieldIssue } from '../domain/errors';
import { conflict, DomainError, versionMismatch } from '../domain/errors';
import {
  DeclaredNodeSchema,
  type DeclaredSpec,
  decideComputeSpec,
  familyLimits,
  nodeFactIssues,
  resolveBuiltins,
} from '../domain/hardware';
import { keyForNew, nameOf, resolveName } from '../domain/names';
import { newComputeId } from '../domain/nodegroup';
import { ScopeTree } from '../domain/quota';
import { GUARDS } from '../store/commit';
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
 * one item, and its conditions hold the rules at commit), rename and delete under the computes' guard (store/commit.ts), so that no model
 * can start using the compute in between.
 */
export function computeService(deps: Dependencies, svc: { catalog: CatalogService }) {
  const store = deps.store.computes;
  const now = () => deps.clock().toISOString();
  /** A compute given an owner commits with the owner's check: the scope exists and is not being deleted. */
  const ownerChecks = (owner: string | undefined, at: string) =>
    owner ? [deps.store.tenancy.ownerCheck(owner, at)] : [];

  /**
   * The key a compute of `name` owned by `owner` is stored under (domain/names.ts keyForNew): 409 when the name
   * is taken on the owner's line, or when the owner is gone (deleted since the caller was read). Called under the
   * computes' guard, so two creates on one line cannot both pass. Answers the computes it read as well, which a
   * create counts against the quota: one read of the partition, not two, under the guard.
   */
  const keyFor = async (name: string, owner: string | undefined, except?: string) => {
    const [all, scopes] = await Promise.all([store.listComputes(), deps.store.tenancy.listScopes()]);
    const tree = new ScopeTree(scopes);
    if (owner && !tree.has(owner))
      throw conflict(
        `scope ${owner} does not exist; create it (POST /v1/scopes) before it owns computes`,
        'UnknownScope',
      );
    const key = keyForNew('compute', name, owner, all, tree, {
      except,
      hint: `use PUT /v1/computes/${name} to replace it, or choose another name`,
    });
    return { key, computes: all };
  };

  /**
   * Creates under the computes' guard (names per owner); a dry run decides the same and answers what it would store. Each
   * compute is one managed node group: beyond the cluster's EKS quota it is refused (409 AwsQuota), counted
   * under the guard so that two creates cannot both take the last one. The quota is read before deciding.
   */
  const create = async (c: ComputeInput, by: string, opts?: WriteOptions) => {
    const groups = (await deps.awsQuotas([NODEGROUPS_PER_CLUSTER])).get(NODEGROUPS_PER_CLUSTER.code);
    return deps.store.commit.commitDecision(
      committing(opts, async () => {
        const { key, computes } = await keyFor(c.name, c.owner);
        const refusal = nodegroupQuotaRefusal(computes.length, groups);
        if (refusal) throw conflict(`compute ${c.name} cannot be created: ${refusal}`, 'AwsQuota');
        const at = now();
        const made = store.createItem({ ...c, name: key, builtin: false, by, uid: newComputeId() }, at);
        return { items: [made.item, ...ownerChecks(c.owner, at)], result: made.compute };
      }),
      {
        guards: [GUARDS.computes],
        onItemConflict: () =>
          conflict(`compute ${c.name} was created meanwhile; read it, then retry`, 'AlreadyExists'),
      },
    );
  };

  /**
   * The manifest resolved against what AWS says (domain/hardware.ts decideComputeSpec): the facts are loaded
   * here, the decision is the domain's. The cluster's subnets are asked for only when the stage lists none.
   */
  const resolve = async (c: DeclaredComputeInput, caller: Caller, by: string): Promise<ComputeInput> => {
    const hw = deps.hardware();
    const stageSubnets = deps.config().subnetIds;
    const wantsSubnets = (c.spec.nodeGroup.subnetIds?.length ?? 0) > 0;
    const [found, subnets, scopes, quotas] = await Promise.all([
      hw.lookup(c.spec.node.instanceType),
      stageSubnets.length || !wantsSubnets ? stageSubnets : hw.clusterSubnets(),
      c.owner ? deps.store.tenancy.listScopes() : [],
      deps.awsQuotas([NODES_PER_NODEGROUP]),
    ]);
    const tooMany = nodesQuotaRefusal(c.spec.nodeGroup.maxNodes, quotas.get(NODES_PER_NODEGROUP.code));
    if (tooMany) throw conflict(`compute ${c.name} cannot be written: ${tooMany}`, 'AwsQuota');
    const r = decideComputeSpec(
      c.spec,
      { ...found, region: hw.region, subnets, families: familyLimits(c.owner, scopes) },
      { by, isPlatformAdmin: caller.isPlatformAdmin },
    );
    return { name: c.name, ...(c.owner ? { owner: c.owner } : {}), spec: r.spec, costSource: r.costSource };
  };

  /** The compute of that name the caller sees (`owner`, or else `orOwner`, says which of two), or undefined. */
  const located = async (caller: Caller, name: string, owner?: string, orOwner?: string) =>
    resolveName(
      'compute',
      name,
      owner,
      await store.computesNamed(name),
      (c) => caller.canSee(c.owner),
      orOwner,
    );

  /** The compute as the caller may see it; one it may not see is 404 like a missing one, so names do not leak. */
  const visible = async (caller: Caller, name: string, owner?: string) =>
    visibleCompute(caller, name, await located(caller, name, owner));

  return {
    visible,

    /**
     * What EC2 says of a manifest's node when the manifest is refused on other fields: the route answers these
     * with the schema's issues, so a compute with several faults hears of them all at once.
     */
    async nodeIssues(body: unknown): Promise<FieldIssue[]> {
      const node = DeclaredNodeSchema.safeParse((body as { spec?: { node?: unknown } } | null)?.spec?.node);
      if (!node.success) return [];
      const hw = deps.hardware();
      return nodeFactIssues(node.data, { ...(await hw.lookup(node.data.instanceType)), region: hw.region });
    },

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
      opts?: WriteOptions & { owner?: string },
    ): Promise<{ compute: StoredCompute; created: boolean }> {
      const c = await resolve(declared, caller, by);
      // The manifest's owner says which of two the caller means, as ?owner= would.
      const current = await located(caller, c.name, opts?.owner, c.owner ?? 'shared');
      const d = decideApply(caller, current, c, expected);
      if (d.kind === 'create') return { compute: await create(c, by, opts), created: true };
      if (d.kind === 'unchanged') return { compute: current!, created: false };
      const write = { ...c, name: current!.name, by, expectedVersion: d.expectedVersion };
      const next = { ...write, requireNoNodegroup: d.requireNoNodegroup };
      const newOwner = (current!.owner ?? '') !== (c.owner ?? '');
      // Under the computes' guard, owner change or not: a model write decides on a reading of the computes and
      // checks this guard at its commit (CommitOptions.checks), so a node that changed meanwhile (its hardware
      // may, without a node group) makes it decide again instead of storing a model only the old node fitted.
      const compute = await deps.store.commit.commitDecision(
        committing(opts, async () => {
          // A new owner brings a new line of the tree: the name must be free on it, decided under the guard.
          if (newOwner) await keyFor(c.name, c.owner, current!.name);
          const at = now();
          return {
            items: [store.replaceItem(next, at), ...(newOwner ? ownerChecks(c.owner, at) : [])],
            result: replaced(current!, write, by, at),
          };
        }),
        {
          guards: [GUARDS.computes],
          onItemConflict: () =>
            versionMismatch(
              `compute ${c.name} changed since version ${d.expectedVersion} (or its node group now exists); read it again and retry`,
            ),
        },
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
      opts?: WriteOptions & { owner?: string },
    ): Promise<{ deleted: boolean; compute: StoredCompute }> {
      const seen = await visible(caller, name, opts?.owner);
      requireComputeWrite(caller, seen, 'delete');
      const key = seen.name;
      return deps.store.commit.commitDecision<{ deleted: boolean; compute: StoredCompute }>(
        committing<{ deleted: boolean; compute: StoredCompute }>(opts, async () => {
          const c = await store.getCompute(key);
          const how = decideDelete(c, name, expected, c ? await svc.catalog.modelsUsing(key) : []);
          if (how === 'remove-now')
            return { items: [store.removeNowItem(c!)], result: { deleted: true, compute: c! } };
          return {
            items: [store.markForDeletionItem(c!, by, now())],
            result: { deleted: false, compute: { ...c!, deletionRequested: true } },
          };
        }),
        {
          guards: [GUARDS.computes],
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
      opts?: WriteOptions & { owner?: string },
    ) {
      const source = await visible(caller, name, opts?.owner);
      // Resolved like any write: the clone's owner may be bound to other families, and its price to on-demand.
      return create(await resolve(decideClone(caller, source, to), caller, by), by, opts);
    },

    /** Renames in one transaction (delete the old item, create the new one); the same name is no change. */
    async rename(
      name: string,
      to: string,
      caller: Caller,
      by: string,
      opts?: WriteOptions & { owner?: string },
    ): Promise<{ compute: StoredCompute; renamed: boolean }> {
      const source = await visible(caller, name, opts?.owner);
      requireComputeWrite(caller, source, 'rename');
      if (to === nameOf(source.name)) return { compute: source, renamed: false };
      const compute = await deps.store.commit.commitDecision(
        committing(opts, async () => {
          const found = await store.getCompute(source.name);
          const users = found && !found.builtin ? await svc.catalog.modelsUsing(source.name) : [];
          const c = decideRename(found, name, to, users);
          const { key } = await keyFor(to, c.owner, c.name);
          // A new item, so a new incarnation id: its node group name and execution names are new as well.
          const { items, renamed } = store.renameItems(c, { name: key, by, uid: newComputeId() }, now());
          return { items, result: renamed };
        }),
        {
          guards: [GUARDS.computes],
          onItemConflict: (i) =>
            i === 1
              ? conflict(`compute ${to} was created meanwhile; choose another name`, 'AlreadyExists')
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
            // A live node group keeps its hardware: such a config change waits until the group is gone. Under
            // the computes' guard, as a user's replace (apply): a model write decided on the old node decides again.
            const write = {
              ...b,
              by: 'config',
              expectedVersion: cur!.version,
              requireNoNodegroup: d.requireNoNodegroup,
              declaredAs,
            };
            await deps.store.commit.commitDecision(
              async () => ({ items: [store.replaceItem(write, now())], result: undefined }),
              {
                guards: [GUARDS.computes],
                onItemConflict: () =>
                  versionMismatch(
                    `built-in compute ${b.name} changed while it was seeded; the next pass seeds it again`,
                  ),
              },
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
