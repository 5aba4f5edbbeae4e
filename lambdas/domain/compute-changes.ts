import type { Caller } from './access';
import {
  type Compute,
  type ComputeSpec,
  type CostSourceRecord,
  canonical,
  frozenFieldChanges,
  nodegroupExists,
  sameValue,
} from './compute';
import { conflict, DomainError, notFound, versionMismatch } from './errors';
import { listed } from './text';

/**
 * Every change to a compute, decided in one place (as actions.ts decides what reconcile does to a node group):
 * who may make it, and what refuses it. Pure: the compute service reads the compute and the models that use
 * it, asks here, and writes what is decided; the store's conditions hold the same rules at commit time.
 */

/** What the rules need of the caller: the permission model (domain/access.ts). */
export type ComputeAccess = Pick<Caller, 'canSee' | 'requirePlatformAdmin' | 'requireEditor'>;

/** A compute as stored, with the deletion mark reconcile acts on. */
export type StoredCompute = Compute & { deletionRequested?: boolean };

/**
 * A node group exists (EKS holds one of this compute's), or a workflow is running that may be making one. While
 * this holds, the compute's hardware, subnets and name are frozen, and deleting it deletes the group first.
 */
export function hasNodegroupOrWork(c: Pick<Compute, 'status' | 'workflow'>): boolean {
  return nodegroupExists(c.status) || c.workflow?.state === 'RUNNING';
}

/**
 * Worth a DescribeNodegroup each pass: llmcap believes a group of this compute's exists or is being made, or a
 * group of someone else's holds its name (FOREIGN: observed until it is gone or tagged as this compute's).
 */
export function needsObservation(c: Pick<Compute, 'status' | 'workflow'>): boolean {
  return hasNodegroupOrWork(c) || c.status.nodegroupStatus === 'FOREIGN';
}

/** Built-in computes are the platform's; others their owner's editors' (or a platform admin's, when shared). */
export function requireComputeWrite(
  access: ComputeAccess,
  c: { builtin: boolean; owner?: string; name: string },
  verb: string,
): void {
  if (c.builtin) access.requirePlatformAdmin(`${verb} built-in compute ${c.name}`);
  else access.requireEditor(c.owner, `${verb} compute ${c.name}`);
}

/** The compute as the caller may see it: one the caller may not see answers exactly like a missing one. */
export function visibleCompute<C extends { owner?: string }>(
  access: ComputeAccess,
  name: string,
  c: C | undefined,
): C {
  if (!c || !access.canSee(c.owner)) throw notFound(`compute ${name} does not exist`);
  return c;
}

export interface ComputeInput {
  name: string;
  owner?: string;
  spec: ComputeSpec;
  /** Where spec.cost comes from, as the write resolved it (domain/hardware.ts decideComputeSpec). */
  costSource?: CostSourceRecord;
}

/** What PUT /v1/computes/{name} does: create a missing compute, or replace one's spec and owner. */
export type ApplyDecision =
  | { kind: 'create' }
  /** The manifest is what is stored: nothing is written, so the version and updatedBy stay (apply is declarative). */
  | { kind: 'unchanged' }
  | {
      kind: 'replace';
      expectedVersion: number;
      /** node.* or subnetIds change: the write also requires that no node group exists or is being made. */
      requireNoNodegroup: boolean;
    };

/**
 * Decides an apply. Refused: a compute the caller cannot see (404, like a missing one), a version that cannot
 * match, a caller who may not change it (or hand it over), a compute being deleted, a stale If-Match, and a
 * hardware change while its node group exists or is being made (node groups keep their hardware).
 */
export function decideApply(
  access: ComputeAccess,
  current: StoredCompute | undefined,
  input: ComputeInput,
  expected: number | undefined,
): ApplyDecision {
  const { name } = input;
  if (!current || (current.owner && !access.canSee(current.owner))) {
    if (current) throw notFound(`compute ${name} does not exist`);
    if (expected !== undefined)
      throw notFound(`compute ${name} does not exist, so version ${expected} cannot match`);
    requireComputeWrite(access, { builtin: false, owner: input.owner, name }, 'create');
    return { kind: 'create' };
  }
  requireComputeWrite(access, current, 'change');
  if (input.owner !== current.owner)
    requireComputeWrite(access, { ...current, owner: input.owner }, 'hand over');
  if (current.deletionRequested) {
    throw conflict(
      `compute ${name} is being deleted; wait until it is gone, then create it again`,
      'Deleting',
    );
  }
  if (expected !== undefined && expected !== current.version) {
    throw versionMismatch(`compute ${name} is at version ${current.version}, not ${expected}`);
  }
  // After the checks above, so that a stale version is still refused; a built-in stays config's to follow.
  if ((input.owner ?? '') === (current.owner ?? '') && sameValue(current.spec, input.spec)) {
    return { kind: 'unchanged' };
  }
  const frozen = frozenFieldChanges(current.spec, input.spec);
  if (frozen.length && hasNodegroupOrWork(current)) {
    throw new DomainError(
      'conflict',
      `compute ${name} has a node group (${current.status.nodegroupStatus}), so ${frozen.join(', ')} cannot change; ` +
        'only nodeGroup.maxNodes and cost can. Clone it under a new name with the new hardware instead',
      {
        reason: 'NodegroupExists',
        errors: frozen.map((path) => ({ path, message: 'frozen while the node group exists' })),
      },
    );
  }
  return {
    kind: 'replace',
    expectedVersion: expected ?? current.version,
    requireNoNodegroup: frozen.length > 0,
  };
}

function refuseIfUsed(name: string, users: readonly string[], verb: string): void {
  if (users.length) {
    throw conflict(
      `compute ${name} is used by model(s) ${listed(users)}; move them to another compute before you ${verb} it`,
      'InUse',
    );
  }
}

/**
 * What DELETE does to a compute: without a node group (or work making one) it is removed at once; with one it is
 * marked, and reconcile deletes the group first, then the item. Refused while models use it.
 */
export function decideDelete(
  c: StoredCompute | undefined,
  name: string,
  expected: number | undefined,
  users: readonly string[],
): 'remove-now' | 'mark-for-deletion' {
  if (!c) throw notFound(`compute ${name} does not exist`);
  if (expected !== undefined && c.version !== expected) {
    throw versionMismatch(`compute ${name} is at version ${c.version}, not ${expected}`);
  }
  refuseIfUsed(name, users, 'delete');
  return hasNodegroupOrWork(c) ? 'mark-for-deletion' : 'remove-now';
}

/**
 * A rename is a new item (a new incarnation id, a new node group name): refused for a built-in, while a node group
 * exists or is being made (node group names cannot change), and while models use the compute.
 */
export function decideRename(
  c: StoredCompute | undefined,
  name: string,
  to: string,
  users: readonly string[],
): StoredCompute {
  if (!c) throw notFound(`compute ${name} does not exist`);
  if (c.builtin) throw conflict(`compute ${name} is built in; clone it under a new name instead`, 'BuiltIn');
  if (hasNodegroupOrWork(c)) {
    throw conflict(
      `compute ${name} has a node group (${c.status.nodegroupStatus}); node group names cannot change, so clone it under ${to} instead`,
      'NodegroupExists',
    );
  }
  refuseIfUsed(name, users, 'rename');
  return c;
}

/** A clone copies the spec only (never the node group, its status or history); it is owned as asked, or as the source. */
export function decideClone(
  access: ComputeAccess,
  source: StoredCompute,
  clone: { name: string; owner?: string },
): ComputeInput {
  const owner = clone.owner ?? (source.builtin ? undefined : source.owner);
  requireComputeWrite(access, { builtin: false, owner, name: clone.name }, 'create');
  return {
    name: clone.name,
    ...(owner ? { owner } : {}),
    spec: source.spec,
    ...(source.costSource ? { costSource: source.costSource } : {}),
  };
}

/**
 * What loading a built-in from configuration does: create it when missing, follow the configuration while no
 * admin has changed it (an admin's change is kept: it shows in updatedBy), and keep a live node group's hardware
 * until the group is gone.
 */
export function decideSeed(
  current: StoredCompute | undefined,
  spec: ComputeSpec,
  declaredAs?: string,
): { kind: 'create' } | { kind: 'follow'; requireNoNodegroup: boolean } | { kind: 'keep' } {
  if (!current) return { kind: 'create' };
  if (current.updatedBy !== 'config') return { kind: 'keep' };
  // The same spec from another declaration is still written, so the item records what it was resolved from.
  if (sameValue(current.spec, spec) && (declaredAs === undefined || current.declaredAs === declaredAs))
    return { kind: 'keep' };
  return { kind: 'follow', requireNoNodegroup: frozenFieldChanges(current.spec, spec).length > 0 };
}

/** What a built-in is resolved from: its entry in config/computes.yaml, in the stage's region. */
export function declarationOf(b: { spec: unknown }, region: string): string {
  return canonical({ region, spec: b.spec });
}

/**
 * Whether every built-in the file declares is stored as resolved from that same declaration (or was taken over
 * by an admin, which loading keeps anyway): then loading them again would ask AWS only to write nothing, since an
 * instance type's facts do not change and the reconciler resolves the built-ins, prices included, every pass.
 */
export function builtinsStandAsDeclared(
  declared: readonly { name: string; spec: unknown }[],
  stored: readonly StoredCompute[],
  region: string,
): boolean {
  const byName = new Map(stored.map((c) => [c.name, c]));
  return declared.every((b) => {
    const c = byName.get(b.name);
    return c !== undefined && (c.updatedBy !== 'config' || c.declaredAs === declarationOf(b, region));
  });
}
