import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  ABSENT_STATUS,
  type Compute,
  type ComputeSpec,
  frozenFieldChanges,
  nodegroupExists,
  type Sizing,
  sameValue,
} from '../domain/compute';
import { conflict, DomainError, notFound } from '../domain/errors';
import { newComputeId } from '../domain/nodegroup';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { keys } from './keys';
import { type TxItem, withLedger } from './ledger';
import { readPartition } from './ledger-cache';

/** The compute repository: the only code that knows how a compute is laid out in the table. */

type Item = Compute & { pk: string; sk: string; deletionRequested?: boolean };

function toCompute(item: Record<string, unknown>): Compute & { deletionRequested?: boolean } {
  const { pk: _pk, sk: _sk, ...rest } = item as unknown as Item;
  return { ...rest, status: { ...ABSENT_STATUS, ...(rest.status ?? {}) } };
}

const table = () => config().table;

export async function getCompute(
  name: string,
): Promise<(Compute & { deletionRequested?: boolean }) | undefined> {
  const out = await documentClient().send(
    new GetCommand({ TableName: table(), Key: keys.compute(name), ConsistentRead: true }),
  );
  return out.Item ? toCompute(out.Item) : undefined;
}

export async function listComputes(): Promise<(Compute & { deletionRequested?: boolean })[]> {
  return (await readPartition('COMPUTE')).map(toCompute);
}

export interface NewCompute {
  name: string;
  owner?: string;
  builtin: boolean;
  spec: ComputeSpec;
  by: string;
}

function newItem(c: NewCompute, now: string): Item {
  return {
    ...keys.compute(c.name),
    name: c.name,
    ...(c.owner ? { owner: c.owner } : {}),
    builtin: c.builtin,
    spec: c.spec,
    version: 1,
    createdAt: now,
    createdBy: c.by,
    updatedAt: now,
    updatedBy: c.by,
    status: { ...ABSENT_STATUS },
    generation: 0,
    uid: newComputeId(),
  };
}

/** Condition (and its values) that the compute owns no node group: ABSENT, or FOREIGN (someone else's). */
const NO_GROUP_CONDITION = '#status.nodegroupStatus IN (:absent, :foreign)';
const NO_GROUP_VALUES = { ':absent': 'ABSENT', ':foreign': 'FOREIGN' };

function isConditionFailure(e: unknown): boolean {
  return (
    e instanceof ConditionalCheckFailedException || (e as Error).name === 'ConditionalCheckFailedException'
  );
}

export async function createCompute(c: NewCompute): Promise<Compute> {
  const item = newItem(c, new Date().toISOString());
  try {
    await documentClient().send(
      new PutCommand({ TableName: table(), Item: item, ConditionExpression: 'attribute_not_exists(pk)' }),
    );
  } catch (e) {
    if (isConditionFailure(e)) {
      throw conflict(
        `compute ${c.name} already exists; use PUT /v1/computes/${c.name} to replace it`,
        'AlreadyExists',
      );
    }
    throw e;
  }
  return toCompute(item as unknown as Record<string, unknown>);
}

export interface ReplaceCompute {
  name: string;
  owner?: string;
  spec: ComputeSpec;
  by: string;
  expectedVersion: number;
  /** Set when node.* or subnetIds change: then the write also requires that no node group exists. */
  requireNoNodegroup: boolean;
}

/**
 * Replaces the spec (and owner) only: status, generation and workflow belong to reconcile and the workflows,
 * so a user's write can never erase what AWS was observed to be doing.
 */
export async function replaceCompute(r: ReplaceCompute): Promise<Compute> {
  const now = new Date().toISOString();
  const cond = ['#version = :expected'];
  const values: Record<string, unknown> = {
    ':spec': r.spec,
    ':expected': r.expectedVersion,
    ':one': 1,
    ':now': now,
    ':by': r.by,
  };
  if (r.requireNoNodegroup) {
    cond.push(NO_GROUP_CONDITION);
    Object.assign(values, NO_GROUP_VALUES);
  }
  const owner = r.owner ? '#owner = :owner' : undefined;
  if (r.owner) values[':owner'] = r.owner;
  try {
    const out = await documentClient().send(
      new UpdateCommand({
        TableName: table(),
        Key: keys.compute(r.name),
        UpdateExpression: `SET spec = :spec, #version = #version + :one, updatedAt = :now, updatedBy = :by${
          owner ? `, ${owner}` : ''
        }${r.owner ? '' : ' REMOVE #owner'}`,
        ConditionExpression: cond.join(' AND '),
        ExpressionAttributeNames: {
          '#version': 'version',
          '#owner': 'owner',
          ...(r.requireNoNodegroup ? { '#status': 'status' } : {}),
        },
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return toCompute(out.Attributes ?? {});
  } catch (e) {
    if (isConditionFailure(e)) {
      throw new DomainError(
        'precondition',
        `compute ${r.name} changed since version ${r.expectedVersion} (or its node group now exists); read it again and retry`,
        { reason: 'VersionMismatch' },
      );
    }
    throw e;
  }
}

/** Who depends on a compute; supplied by the catalog so that this module needs no knowledge of models. */
export type ComputeUsers = (name: string) => Promise<string[]>;

let computeUsers: ComputeUsers = async () => [];

export function setComputeUsers(fn: ComputeUsers): void {
  computeUsers = fn;
}

function refuseIfUsed(name: string, users: string[], verb: string): void {
  if (users.length) {
    const shown = users.slice(0, 5).join(', ') + (users.length > 5 ? ` and ${users.length - 5} more` : '');
    throw conflict(
      `compute ${name} is used by model(s) ${shown}; move them to another compute before you ${verb} it`,
      'InUse',
    );
  }
}

/**
 * Deletes a compute with no node group at once; one with a node group is marked for deletion and reconcile
 * deletes the node group first, then the item. Serialized with catalog changes through the ledger, so a
 * model cannot start using the compute in between.
 */
export async function deleteCompute(
  name: string,
  by: string,
  expectedVersion?: number,
): Promise<{ deleted: boolean; compute: Compute }> {
  return withLedger<{ deleted: boolean; compute: Compute }>(
    async () => {
      const c = await getCompute(name);
      if (!c) throw notFound(`compute ${name} does not exist`);
      if (expectedVersion !== undefined && c.version !== expectedVersion) {
        throw new DomainError(
          'precondition',
          `compute ${name} is at version ${c.version}, not ${expectedVersion}`,
          {
            reason: 'VersionMismatch',
          },
        );
      }
      refuseIfUsed(name, await computeUsers(name), 'delete');
      const base = { TableName: table(), Key: keys.compute(name) };
      if (!nodegroupExists(c.status) && c.workflow?.state !== 'RUNNING') {
        const item: TxItem = {
          Delete: {
            ...base,
            ConditionExpression: `#version = :v AND ${NO_GROUP_CONDITION}`,
            ExpressionAttributeNames: { '#version': 'version', '#status': 'status' },
            ExpressionAttributeValues: { ':v': c.version, ...NO_GROUP_VALUES },
          },
        };
        return { items: [item], result: { deleted: true, compute: c } };
      }
      const item: TxItem = {
        Update: {
          ...base,
          UpdateExpression: 'SET deletionRequested = :t, updatedAt = :now, updatedBy = :by',
          ConditionExpression: '#version = :v',
          ExpressionAttributeNames: { '#version': 'version' },
          ExpressionAttributeValues: {
            ':v': c.version,
            ':t': true,
            ':now': new Date().toISOString(),
            ':by': by,
          },
        },
      };
      return {
        items: [item],
        result: { deleted: false, compute: { ...c, deletionRequested: true } as Compute },
      };
    },
    {
      by,
      onItemConflict: () =>
        conflict(
          `compute ${name} changed while it was being deleted; read it again and retry`,
          'ConcurrentUpdate',
        ),
    },
  );
}

/** Renames in one transaction (delete the old item, create the new one), refused while anything depends on it. */
export async function renameCompute(name: string, to: string, by: string): Promise<Compute> {
  return withLedger(
    async () => {
      const c = await getCompute(name);
      if (!c) throw notFound(`compute ${name} does not exist`);
      if (c.builtin)
        throw conflict(`compute ${name} is built in; clone it under a new name instead`, 'BuiltIn');
      if (nodegroupExists(c.status) || c.workflow?.state === 'RUNNING') {
        throw conflict(
          `compute ${name} has a node group (${c.status.nodegroupStatus}); node group names cannot change, so clone it under ${to} instead`,
          'NodegroupExists',
        );
      }
      refuseIfUsed(name, await computeUsers(name), 'rename');
      const now = new Date().toISOString();
      // A new item, so a new incarnation id: its node group name and execution names are new as well.
      const next = newItem({ name: to, owner: c.owner, builtin: false, spec: c.spec, by }, now);
      next.createdAt = c.createdAt;
      next.createdBy = c.createdBy;
      const items: TxItem[] = [
        {
          Delete: {
            TableName: table(),
            Key: keys.compute(name),
            ConditionExpression: `#version = :v AND ${NO_GROUP_CONDITION}`,
            ExpressionAttributeNames: { '#version': 'version', '#status': 'status' },
            ExpressionAttributeValues: { ':v': c.version, ...NO_GROUP_VALUES },
          },
        },
        { Put: { TableName: table(), Item: next, ConditionExpression: 'attribute_not_exists(pk)' } },
      ];
      return { items, result: toCompute(next as unknown as Record<string, unknown>) };
    },
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
}

/**
 * Loads the built-ins from configuration: missing ones are created, and ones no admin has changed since
 * follow the configuration; an admin's change is kept (it is visible in updatedBy).
 */
export async function seedBuiltins(builtins: { name: string; spec: ComputeSpec }[]): Promise<number> {
  const existing = new Map((await listComputes()).map((c) => [c.name, c]));
  let written = 0;
  for (const b of builtins) {
    const cur = existing.get(b.name);
    if (!cur) {
      try {
        await createCompute({ name: b.name, builtin: true, spec: b.spec, by: 'config' });
        written++;
      } catch (e) {
        if (!(e instanceof DomainError)) throw e; // another process seeded it first
      }
    } else if (cur.updatedBy === 'config' && !sameValue(cur.spec, b.spec)) {
      try {
        await replaceCompute({
          name: b.name,
          spec: b.spec,
          by: 'config',
          expectedVersion: cur.version,
          // A live node group keeps its hardware: such a config change waits until the group is gone.
          requireNoNodegroup: frozenFieldChanges(cur.spec, b.spec).length > 0,
        });
        written++;
      } catch (e) {
        if (!(e instanceof DomainError)) throw e;
      }
    }
  }
  return written;
}

/**
 * Writes what reconcile observed in AWS. Only `status.*` moves: the spec, its version and the workflow claim
 * are left alone, so an observation never undoes a user's change or a workflow's claim.
 */
export async function recordObservation(name: string, status: Compute['status']): Promise<void> {
  try {
    await documentClient().send(
      new UpdateCommand({
        TableName: table(),
        Key: keys.compute(name),
        UpdateExpression: 'SET #s = :s',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':s': status },
      }),
    );
  } catch (e) {
    if (!isConditionFailure(e)) throw e; // the compute was deleted meanwhile: nothing to record
  }
}

export async function recordSizing(name: string, sizing: Sizing): Promise<void> {
  try {
    await documentClient().send(
      new UpdateCommand({
        TableName: table(),
        Key: keys.compute(name),
        UpdateExpression: 'SET sizing = :s',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':s': sizing },
      }),
    );
  } catch (e) {
    if (!isConditionFailure(e)) throw e;
  }
}

/** Removes a deleted compute once its node group is gone; refused if it came back to life meanwhile. */
export async function removeDeletedCompute(name: string): Promise<boolean> {
  try {
    await documentClient().send(
      new DeleteCommand({
        TableName: table(),
        Key: keys.compute(name),
        ConditionExpression: `deletionRequested = :t AND ${NO_GROUP_CONDITION}`,
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':t': true, ...NO_GROUP_VALUES },
      }),
    );
    return true;
  } catch (e) {
    if (isConditionFailure(e)) return false;
    throw e;
  }
}
