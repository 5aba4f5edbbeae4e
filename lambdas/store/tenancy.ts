import { GetCommand, UpdateCommand, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import type { MemberWrite, Quota, Scope } from '../domain/quota';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import type { TxItem } from './commit';
import { isConditionFailure } from './conditions';
import { keys } from './keys';
import { type ReadAge, sharedQuery } from './shared-read';
import { sendWrite } from './write';

/**
 * Scopes and quotas: the repository of the tenancy tree. Tree and quota changes are written under the tenancy
 * guard (store/commit.ts: the tree's rules span items); members are written on their own, optimistic on the scope's version.
 */

const table = () => config().table;

export interface StoredScope extends Scope {
  version: number;
  createdAt: string;
  createdBy: string;
  updatedAt: string;
  updatedBy: string;
}

export interface StoredQuota extends Quota {
  version: number;
  updatedAt: string;
  updatedBy: string;
}

function strip<T>(item: Record<string, unknown>): T {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as T;
}

export async function listScopes(age?: ReadAge): Promise<StoredScope[]> {
  return (await sharedQuery(keys.scopes().pk, age)).map((i) => strip<StoredScope>(i));
}

/** One scope, strongly consistent: what a member write is planned against. */
export async function getScope(name: string): Promise<StoredScope | undefined> {
  const got = await documentClient().send(
    new GetCommand({ TableName: table(), Key: keys.scope(name), ConsistentRead: true }),
  );
  return got.Item ? strip<StoredScope>(got.Item) : undefined;
}

export async function listQuotas(age?: ReadAge): Promise<StoredQuota[]> {
  return (await sharedQuery(keys.quotas().pk, age)).map((i) => strip<StoredQuota>(i));
}

/** A new scope (item 0 fails when the name is taken), and a check that its parent still exists at commit. */
export function scopeCreateItems(s: StoredScope): TxItem[] {
  const items: TxItem[] = [
    {
      Put: {
        TableName: table(),
        Item: { ...keys.scope(s.name), ...s },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
  ];
  if (s.parent) {
    // The parent must still exist when this commits (it cannot be deleted in between: the tenancy guard orders both).
    items.push({
      ConditionCheck: {
        TableName: table(),
        Key: keys.scope(s.parent),
        ConditionExpression: 'attribute_exists(pk)',
      },
    });
  }
  return items;
}

/**
 * A scope's deletion runs in two steps so that nothing can be created under it in between (docs/security.md,
 * "Deleting a scope"): it marks the scope first, then reads what the scope holds, then deletes it if it holds
 * nothing, conditional on its own mark. A model or compute created under a scope checks in its own commit that
 * the scope exists and is not marked (ownerCheck), so it either lands before the mark, and the deletion sees it,
 * or fails its check. A mark outlives no request: one older than this (the API's budget is 29 s) was left by a
 * request that died, and holds nothing back.
 */
export const SCOPE_DELETING_MS = 30_000;

const DELETING = { '#d': 'deleting', '#since': 'deletingSince' };
const lapsedBefore = (now: string) => new Date(Date.parse(now) - SCOPE_DELETING_MS).toISOString();

/** Marks the scope as being deleted by `token`: false when it does not exist or another live deletion holds it. */
export async function markScopeDeleting(name: string, token: string, now: string): Promise<boolean> {
  try {
    await sendWrite(
      new UpdateCommand({
        TableName: table(),
        Key: keys.scope(name),
        UpdateExpression: 'SET #d = :token, #since = :now',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(#d) OR #since < :lapsed)',
        ExpressionAttributeNames: DELETING,
        ExpressionAttributeValues: { ':token': token, ':now': now, ':lapsed': lapsedBefore(now) },
      }),
    );
    return true;
  } catch (e) {
    if (!isConditionFailure(e)) throw e;
    return false;
  }
}

/** Takes back a deletion's mark (the scope still holds something, or the deletion failed); gone if not its own. */
export async function unmarkScopeDeleting(name: string, token: string): Promise<void> {
  try {
    await sendWrite(
      new UpdateCommand({
        TableName: table(),
        Key: keys.scope(name),
        UpdateExpression: 'REMOVE #d, #since',
        ConditionExpression: '#d = :token',
        ExpressionAttributeNames: { '#d': 'deleting', '#since': 'deletingSince' },
        ExpressionAttributeValues: { ':token': token },
      }),
    );
  } catch (e) {
    if (!isConditionFailure(e)) throw e;
  }
}

/** The check a create under `scope` commits with: the scope exists and no live deletion holds it. */
export function ownerCheck(scope: string, now: string): TxItem {
  return {
    ConditionCheck: {
      TableName: table(),
      Key: keys.scope(scope),
      ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(#d) OR #since < :lapsed)',
      ExpressionAttributeNames: DELETING,
      ExpressionAttributeValues: { ':lapsed': lapsedBefore(now) },
    },
  };
}

/**
 * The checks of the scopes an editor's write leaned on (ScopeTree.lineageVersions): each still at the version the
 * decision read, so a role revoked meanwhile fails the commit and the write decides again on fresh reads. A new
 * owner among them carries its ownerCheck in the same item (a transaction names an item once).
 */
export function lineageChecks(
  lineage: readonly { scope: string; version: number }[],
  newOwner: string | undefined,
  now: string,
): TxItem[] {
  const items = lineage.map(({ scope, version }): TxItem => {
    const owned =
      scope === newOwner
        ? (ownerCheck(scope, now).ConditionCheck as NonNullable<TxItem['ConditionCheck']>)
        : undefined;
    return {
      ConditionCheck: {
        TableName: table(),
        Key: keys.scope(scope),
        ConditionExpression: owned ? `#version = :v AND (${owned.ConditionExpression})` : '#version = :v',
        ExpressionAttributeNames: { '#version': 'version', ...(owned ? DELETING : {}) },
        ExpressionAttributeValues: { ':v': version, ...owned?.ExpressionAttributeValues },
      },
    };
  });
  if (newOwner && !lineage.some((l) => l.scope === newOwner)) items.push(ownerCheck(newOwner, now));
  return items;
}

/**
 * A scope removed, with its quota (a deleted scope's quota would impose nothing, so nothing lingers), if the
 * deletion that marked it still holds it.
 */
export function scopeDeleteItems(name: string, token: string): TxItem[] {
  return [
    {
      Delete: {
        TableName: table(),
        Key: keys.scope(name),
        ConditionExpression: '#d = :token',
        ExpressionAttributeNames: { '#d': 'deleting' },
        ExpressionAttributeValues: { ':token': token },
      },
    },
    { Delete: { TableName: table(), Key: keys.quota(name) } },
  ];
}

type ScopeUpdate = Pick<
  UpdateCommandInput,
  'UpdateExpression' | 'ConditionExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
>;

/** A conditional update of one scope item: the scope as written, or undefined when its condition failed. */
async function updateScope(name: string, update: ScopeUpdate): Promise<StoredScope | undefined> {
  try {
    const out = await sendWrite(
      new UpdateCommand({ TableName: table(), Key: keys.scope(name), ...update, ReturnValues: 'ALL_NEW' }),
    );
    return strip<StoredScope>(out.Attributes ?? {});
  } catch (e) {
    if (!isConditionFailure(e)) throw e;
    return undefined;
  }
}

/** Replaces a scope's members as a whole, if it is still at the version read; undefined when it moved on. */
export function replaceMembers(
  current: StoredScope,
  members: Record<string, string>,
  by: string,
  now: string,
): Promise<StoredScope | undefined> {
  return updateScope(current.name, {
    UpdateExpression: 'SET #m = :members, #v = #v + :one, updatedAt = :now, updatedBy = :by',
    ConditionExpression: '#v = :v',
    ExpressionAttributeNames: { '#m': 'members', '#v': 'version' },
    ExpressionAttributeValues: {
      ':members': members,
      ':one': 1,
      ':now': now,
      ':by': by,
      ':v': current.version,
    },
  });
}

/**
 * Applies a member write to the scope as read (`current`): conditional on its version, so that a write that lost
 * a race is planned again. Returns the scope as written, or undefined when the version moved meanwhile.
 */
export function writeMembers(
  current: StoredScope,
  plan: MemberWrite,
  by: string,
  now: string,
): Promise<StoredScope | undefined> {
  const names: Record<string, string> = { '#m': 'members', '#v': 'version' };
  const sets = ['#v = #v + :one', 'updatedAt = :now', 'updatedBy = :by'];
  const values: Record<string, unknown> = { ':one': 1, ':now': now, ':by': by, ':v': current.version };
  if (plan.set && !current.members) {
    // A scope stored without a members map gets one (a nested SET needs its parent to exist).
    values[':members'] = { [plan.set.principal]: plan.set.role };
    sets.unshift('#m = :members');
  } else if (plan.set) {
    names['#p'] = plan.set.principal;
    values[':role'] = plan.set.role;
    sets.unshift('#m.#p = :role');
  }
  plan.remove.forEach((k, i) => {
    names[`#r${i}`] = k;
  });
  const removes = plan.remove.map((_, i) => `#m.#r${i}`);
  return updateScope(current.name, {
    UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
    ConditionExpression: '#v = :v',
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  });
}

/**
 * Sets (or, with undefined, lifts) the instance families a scope's computes may use. Returns the scope as
 * written, or undefined when it does not exist.
 */
export function writeInstanceFamilies(
  name: string,
  families: readonly string[] | undefined,
  by: string,
  now: string,
): Promise<StoredScope | undefined> {
  return updateScope(name, {
    UpdateExpression: `SET #v = #v + :one, updatedAt = :now, updatedBy = :by${families ? ', #f = :f' : ' REMOVE #f'}`,
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeNames: { '#v': 'version', '#f': 'instanceFamilies' },
    ExpressionAttributeValues: { ':one': 1, ':now': now, ':by': by, ...(families ? { ':f': families } : {}) },
  });
}

/** A quota written over the one read (`current`, conditional on its version) on a scope that still exists. */
export function quotaPutItems(q: StoredQuota, current: StoredQuota | undefined): TxItem[] {
  return [
    {
      Put: {
        TableName: table(),
        Item: { ...keys.quota(q.scope), ...q },
        ConditionExpression: current ? '#v = :v' : 'attribute_not_exists(pk)',
        ...(current
          ? {
              ExpressionAttributeNames: { '#v': 'version' },
              ExpressionAttributeValues: { ':v': current.version },
            }
          : {}),
      },
    },
    {
      ConditionCheck: {
        TableName: table(),
        Key: keys.scope(q.scope),
        ConditionExpression: 'attribute_exists(pk)',
      },
    },
  ];
}

export function quotaDeleteItem(scope: string): TxItem {
  return { Delete: { TableName: table(), Key: keys.quota(scope) } };
}
