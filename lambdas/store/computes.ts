import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  ABSENT_STATUS,
  type Compute,
  type ComputeSpec,
  type CostSourceRecord,
  type ObservedAllocatable,
  type Sizing,
} from '../domain/compute';
import type { StoredCompute } from '../domain/compute-changes';
import { conflict } from '../domain/errors';
import { isTwinKey, TWIN_MARK } from '../domain/names';
import type { ComputeSupply } from '../domain/supply';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import type { TxItem } from './commit';
import { isConditionFailure } from './conditions';
import { keys } from './keys';
import { queryPartition } from './query';
import { type ReadAge, sharedQuery } from './shared-read';
import { sendWrite } from './write';

/**
 * The compute repository: the only code that knows how a compute is laid out in the table. It reads, builds the
 * items a guarded write commits (store/commit.ts), and makes the single conditional writes that need no guard; what may be
 * written is decided by domain/compute-changes.ts, through the compute service.
 */

type Item = Compute & { pk: string; sk: string; deletionRequested?: boolean };

function toCompute(item: Record<string, unknown>): StoredCompute {
  const { pk: _pk, sk: _sk, ...rest } = item as unknown as Item;
  return { ...rest, status: { ...ABSENT_STATUS, ...(rest.status ?? {}) } };
}

const table = () => config().table;

export async function getCompute(name: string): Promise<StoredCompute | undefined> {
  const out = await documentClient().send(
    new GetCommand({ TableName: table(), Key: keys.compute(name), ConsistentRead: true }),
  );
  return out.Item ? toCompute(out.Item) : undefined;
}

export async function listComputes(age?: ReadAge): Promise<StoredCompute[]> {
  return (await sharedQuery(keys.computes().pk, age)).map(toCompute);
}

/**
 * The computes a name may mean (domain/names.ts): the one keyed by the name and its twins (`name~…`), read as
 * one GetItem and one Query side by side rather than the whole partition; a key reads that one item.
 */
export async function computesNamed(name: string): Promise<StoredCompute[]> {
  if (isTwinKey(name)) return [await getCompute(name)].filter((c) => c !== undefined);
  const [plain, twins] = await Promise.all([
    getCompute(name),
    documentClient().send(
      new QueryCommand({
        TableName: table(),
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :twin)',
        ExpressionAttributeValues: { ':pk': keys.computes().pk, ':twin': `${name}${TWIN_MARK}` },
        ConsistentRead: true,
      }),
    ),
  ]);
  // Twins of one name are a handful: one page holds them.
  return [...(plain ? [plain] : []), ...(twins.Items ?? []).map(toCompute)];
}

export interface NewCompute {
  name: string;
  owner?: string;
  builtin: boolean;
  spec: ComputeSpec;
  costSource?: CostSourceRecord;
  by: string;
  /** The incarnation id (domain/nodegroup.ts newComputeId): new for every item created, renames included. */
  uid: string;
  /** A built-in's declaration (domain/compute-changes.ts declarationOf). */
  declaredAs?: string;
}

function newItem(c: NewCompute, now: string): Item {
  return {
    ...keys.compute(c.name),
    name: c.name,
    ...(c.owner ? { owner: c.owner } : {}),
    builtin: c.builtin,
    spec: c.spec,
    ...(c.costSource ? { costSource: c.costSource } : {}),
    ...(c.declaredAs ? { declaredAs: c.declaredAs } : {}),
    version: 1,
    createdAt: now,
    createdBy: c.by,
    updatedAt: now,
    updatedBy: c.by,
    status: { ...ABSENT_STATUS },
    generation: 0,
    uid: c.uid,
  };
}

/** Condition (and its values) that the compute owns no node group: ABSENT, or FOREIGN (someone else's). */
const NO_GROUP_CONDITION = '#status.nodegroupStatus IN (:absent, :foreign)';
const NO_GROUP_VALUES = { ':absent': 'ABSENT', ':foreign': 'FOREIGN' };

/**
 * The write that creates a compute item, committed under the computes' guard (the compute service decides its key there,
 * names per owner): it fails when an item of that key exists.
 */
export function createItem(c: NewCompute, now: string): { item: TxItem; compute: StoredCompute } {
  const item = newItem(c, now);
  return {
    item: { Put: { TableName: table(), Item: item, ConditionExpression: 'attribute_not_exists(pk)' } },
    compute: toCompute(item as unknown as Record<string, unknown>),
  };
}

/** Creates a compute item at once (built-ins, which no tenant's name can clash with); 409 when it exists. */
export async function createCompute(c: NewCompute, now: string): Promise<StoredCompute> {
  const { item, compute } = createItem(c, now);
  try {
    await sendWrite(new PutCommand(item.Put!));
  } catch (e) {
    if (isConditionFailure(e)) {
      throw conflict(
        `compute ${c.name} already exists; use PUT /v1/computes/${c.name} to replace it`,
        'AlreadyExists',
      );
    }
    throw e;
  }
  return compute;
}

export interface ReplaceCompute {
  name: string;
  owner?: string;
  spec: ComputeSpec;
  costSource?: CostSourceRecord;
  by: string;
  expectedVersion: number;
  /** Set when node.* or subnetIds change: then the write also requires that no node group exists. */
  requireNoNodegroup: boolean;
  /** A built-in's declaration, when configuration writes it; any other write removes it. */
  declaredAs?: string;
}

/**
 * Replaces the spec (and owner) only: status, generation and workflow belong to reconcile and the workflows,
 * so a user's write can never erase what AWS was observed to be doing.
 */
function replaceUpdate(r: ReplaceCompute, now: string) {
  const cond = ['#version = :expected'];
  const values: Record<string, unknown> = {
    ':spec': r.spec,
    ':expected': r.expectedVersion,
    ':one': 1,
    ':now': now,
    ':by': r.by,
  };
  if (r.costSource) values[':cost'] = r.costSource;
  if (r.declaredAs) values[':declared'] = r.declaredAs;
  const remove = [...(r.owner ? [] : ['#owner']), ...(r.declaredAs ? [] : ['declaredAs'])];
  if (r.requireNoNodegroup) {
    cond.push(NO_GROUP_CONDITION);
    Object.assign(values, NO_GROUP_VALUES);
  }
  const owner = r.owner ? '#owner = :owner' : undefined;
  if (r.owner) values[':owner'] = r.owner;
  return {
    TableName: table(),
    Key: keys.compute(r.name),
    UpdateExpression: `SET spec = :spec, #version = #version + :one, updatedAt = :now, updatedBy = :by${
      owner ? `, ${owner}` : ''
    }${r.costSource ? ', costSource = :cost' : ''}${r.declaredAs ? ', declaredAs = :declared' : ''}${
      remove.length ? ` REMOVE ${remove.join(', ')}` : ''
    }`,
    ConditionExpression: cond.join(' AND '),
    ExpressionAttributeNames: {
      '#version': 'version',
      '#owner': 'owner',
      ...(r.requireNoNodegroup ? { '#status': 'status' } : {}),
    },
    ExpressionAttributeValues: values,
  };
}

/** A replace as one guarded write: one that hands the compute to another owner (names per owner). */
export function replaceItem(r: ReplaceCompute, now: string): TxItem {
  return { Update: replaceUpdate(r, now) };
}

/** The write that removes a compute at once: only while it is at the version read and owns no node group. */
export function removeNowItem(c: Pick<Compute, 'name' | 'version'>): TxItem {
  return {
    Delete: {
      TableName: table(),
      Key: keys.compute(c.name),
      ConditionExpression: `#version = :v AND ${NO_GROUP_CONDITION}`,
      ExpressionAttributeNames: { '#version': 'version', '#status': 'status' },
      ExpressionAttributeValues: { ':v': c.version, ...NO_GROUP_VALUES },
    },
  };
}

/** The write that marks a compute for deletion, for reconcile to delete its node group and then the item. */
export function markForDeletionItem(c: Pick<Compute, 'name' | 'version'>, by: string, now: string): TxItem {
  return {
    Update: {
      TableName: table(),
      Key: keys.compute(c.name),
      UpdateExpression: 'SET deletionRequested = :t, updatedAt = :now, updatedBy = :by',
      ConditionExpression: '#version = :v',
      ExpressionAttributeNames: { '#version': 'version' },
      ExpressionAttributeValues: { ':v': c.version, ':t': true, ':now': now, ':by': by },
    },
  };
}

/**
 * The writes of a rename: the old item removed (as removeNowItem) and a new one created, which keeps the
 * creation record but is a new incarnation. Item 1 fails when the new name is taken.
 */
export function renameItems(
  c: StoredCompute,
  to: { name: string; by: string; uid: string },
  now: string,
): { items: TxItem[]; renamed: StoredCompute } {
  const next = newItem(
    {
      name: to.name,
      owner: c.owner,
      builtin: false,
      spec: c.spec,
      ...(c.costSource ? { costSource: c.costSource } : {}),
      by: to.by,
      uid: to.uid,
    },
    now,
  );
  next.createdAt = c.createdAt;
  next.createdBy = c.createdBy;
  return {
    items: [
      removeNowItem(c),
      { Put: { TableName: table(), Item: next, ConditionExpression: 'attribute_not_exists(pk)' } },
    ],
    renamed: toCompute(next as unknown as Record<string, unknown>),
  };
}

/**
 * Writes what reconcile observed in AWS. Only `status.*` moves: the spec, its version and the workflow claim
 * are left alone, so an observation never undoes a user's change or a workflow's claim.
 */
export async function recordObservation(name: string, status: Compute['status']): Promise<void> {
  try {
    await sendWrite(
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
    await sendWrite(
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
    await sendWrite(
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

export type Workflow = NonNullable<Compute['workflow']>;

/**
 * Claims a compute for a workflow: generation + 1 and the workflow RUNNING, only from the generation the caller
 * read and while no workflow runs. False when the claim lost (someone else claimed, or the compute is gone).
 */
export async function claimWorkflow(
  name: string,
  expectedGeneration: number,
  workflow: Workflow,
): Promise<boolean> {
  try {
    await sendWrite(
      new UpdateCommand({
        TableName: table(),
        Key: keys.compute(name),
        UpdateExpression: 'SET #generation = :next, #workflow = :workflow',
        ConditionExpression:
          'attribute_exists(pk) AND #generation = :expected AND (attribute_not_exists(#workflow) OR #workflow.#state <> :running)',
        ExpressionAttributeNames: { '#generation': 'generation', '#workflow': 'workflow', '#state': 'state' },
        ExpressionAttributeValues: {
          ':next': expectedGeneration + 1,
          ':expected': expectedGeneration,
          ':running': 'RUNNING',
          ':workflow': workflow,
        },
      }),
    );
    return true;
  } catch (e) {
    if (isConditionFailure(e)) return false;
    throw e;
  }
}

/** Marks a claimed workflow FAILED with a reason, if this claim (generation, execution) still owns the compute. */
export async function releaseWorkflowClaim(
  computeName: string,
  generation: number,
  executionName: string,
  message: string,
  now: string,
): Promise<void> {
  try {
    await sendWrite(
      new UpdateCommand({
        TableName: table(),
        Key: keys.compute(computeName),
        UpdateExpression:
          'SET #workflow.#state = :failed, #workflow.finishedAt = :now, #status.statusMessage = :msg',
        ConditionExpression:
          '#generation = :generation AND #workflow.executionName = :name AND #workflow.#state = :running',
        ExpressionAttributeNames: {
          '#workflow': 'workflow',
          '#state': 'state',
          '#status': 'status',
          '#generation': 'generation',
        },
        ExpressionAttributeValues: {
          ':failed': 'FAILED',
          ':running': 'RUNNING',
          ':now': now,
          ':msg': message,
          ':generation': generation,
          ':name': executionName,
        },
      }),
    );
  } catch (e) {
    if (!isConditionFailure(e)) throw e;
  }
}

/** What nodes of each instance type last reported as allocatable (domain/allocatable.ts), one item per type. */
export async function listNodeAllocatables(): Promise<ObservedAllocatable[]> {
  return (await queryPartition(keys.nodeType('').pk)).map((item) => {
    const { pk: _pk, sk: _sk, ...rest } = item;
    return rest as unknown as ObservedAllocatable;
  });
}

/** Records what nodes of an instance type report, for computes of that type created later. */
export async function recordNodeAllocatable(a: ObservedAllocatable): Promise<void> {
  await sendWrite(new PutCommand({ TableName: table(), Item: { ...keys.nodeType(a.instanceType), ...a } }));
}

/**
 * What a pass saw of a compute's supply (domain/supply.ts): written only when it changed, removed when there is
 * nothing to say. No version bump: an observation. A compute deleted meanwhile is left alone.
 */
export async function recordSupply(name: string, supply: ComputeSupply | undefined): Promise<void> {
  const empty = !supply || Object.keys(supply).length === 0;
  try {
    await sendWrite(
      new UpdateCommand({
        TableName: table(),
        Key: keys.compute(name),
        UpdateExpression: empty ? 'REMOVE supply' : 'SET supply = :s',
        ConditionExpression: 'attribute_exists(pk)',
        ...(empty ? {} : { ExpressionAttributeValues: { ':s': supply } }),
      }),
    );
  } catch (e) {
    if (!isConditionFailure(e)) throw e;
  }
}

/**
 * Copies what nodes of its instance type report onto a compute, which placement then plans with (domain/compute.ts
 * nodeAllocatable); no version bump: it is an observation, like sizing. A compute deleted meanwhile is left alone.
 */
export async function recordComputeAllocatable(name: string, a: ObservedAllocatable): Promise<void> {
  try {
    await sendWrite(
      new UpdateCommand({
        TableName: table(),
        Key: keys.compute(name),
        UpdateExpression: 'SET allocatable = :a',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':a': a },
      }),
    );
  } catch (e) {
    if (!isConditionFailure(e)) throw e;
  }
}
