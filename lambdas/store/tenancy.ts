import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Role } from '../domain/access';
import { conflict, DomainError, notFound } from '../domain/errors';
import {
  assertQuotaWrite,
  type ModelAdmission,
  planMemberWrite,
  type Quota,
  type Scope,
  ScopeTree,
  validateScopeCreate,
  validateScopeDelete,
} from '../domain/quota';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { keys } from './keys';
import { type TxItem, withLedger } from './ledger';
import { queryLedgerPartition, readPartition } from './ledger-cache';

/**
 * Scopes, quotas and admissions: the repository of the tenancy tree and of what admission decided. Tree and
 * quota changes go through the ledger, because admission decisions read both.
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

export async function listScopes(): Promise<StoredScope[]> {
  return (await readPartition('SCOPE')).map((i) => strip<StoredScope>(i));
}

export async function listQuotas(): Promise<StoredQuota[]> {
  return (await queryLedgerPartition('QUOTA')).map((i) => strip<StoredQuota>(i));
}

export async function listAdmissions(): Promise<ModelAdmission[]> {
  return (await queryLedgerPartition('ADMISSION')).map((i) =>
    strip<ModelAdmission & { version?: number }>(i),
  );
}

export async function loadTree(): Promise<ScopeTree> {
  return new ScopeTree(await listScopes());
}

/** Who owns models, for the refusal to delete a scope that still owns some; supplied by the catalog. */
let ownedModels: (scope: string) => Promise<string[]> = async () => [];

export function setOwnedModels(fn: (scope: string) => Promise<string[]>): void {
  ownedModels = fn;
}

export async function createScope(s: { name: string; parent?: string }, by: string): Promise<StoredScope> {
  return withLedger(
    async () => {
      const tree = await loadTree();
      validateScopeCreate(tree, s);
      const now = new Date().toISOString();
      const item: StoredScope = {
        name: s.name,
        ...(s.parent ? { parent: s.parent } : {}),
        members: {},
        version: 1,
        createdAt: now,
        createdBy: by,
        updatedAt: now,
        updatedBy: by,
      };
      const items: TxItem[] = [
        {
          Put: {
            TableName: table(),
            Item: { ...keys.scope(s.name), ...item },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
      ];
      if (s.parent) {
        // The parent must still exist when this commits (it cannot be deleted in between: the ledger orders both).
        items.push({
          ConditionCheck: {
            TableName: table(),
            Key: keys.scope(s.parent),
            ConditionExpression: 'attribute_exists(pk)',
          },
        });
      }
      return { items, result: item };
    },
    { by, onItemConflict: () => conflict(`scope ${s.name} already exists`, 'AlreadyExists') },
  );
}

export async function deleteScope(name: string, by: string): Promise<void> {
  await withLedger(
    async () => {
      const tree = await loadTree();
      if (!tree.has(name)) throw notFound(`scope ${name} does not exist`);
      validateScopeDelete(tree, name, await ownedModels(name));
      const items: TxItem[] = [
        {
          Delete: { TableName: table(), Key: keys.scope(name), ConditionExpression: 'attribute_exists(pk)' },
        },
        // A deleted scope's quota would impose nothing; remove it with the scope so nothing lingers.
        { Delete: { TableName: table(), Key: keys.quota(name) } },
      ];
      return { items, result: undefined };
    },
    { by },
  );
}

/**
 * Sets or removes one member's role; no ledger (admission ignores roles). Optimistic on the scope's version, so
 * that the member limit and the replacement of another spelling of the same principal hold under concurrent
 * writes: a write that lost the race reads the scope again and is planned anew.
 */
export async function setMember(
  scope: string,
  principal: string,
  role: Role | undefined,
  by: string,
): Promise<StoredScope> {
  for (let attempt = 1; ; attempt++) {
    const got = await documentClient().send(
      new GetCommand({ TableName: table(), Key: keys.scope(scope), ConsistentRead: true }),
    );
    if (!got.Item) throw notFound(`scope ${scope} does not exist`);
    const current = strip<StoredScope>(got.Item);
    const plan = planMemberWrite(scope, current.members ?? {}, principal, role);
    // Removing someone who is not a member changes nothing, not even the version.
    if (!plan.set && plan.remove.length === 0) return current;
    const names: Record<string, string> = { '#m': 'members', '#v': 'version' };
    const sets = ['#v = #v + :one', 'updatedAt = :now', 'updatedBy = :by'];
    const values: Record<string, unknown> = {
      ':one': 1,
      ':now': new Date().toISOString(),
      ':by': by,
      ':v': current.version,
    };
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
    try {
      const out = await documentClient().send(
        new UpdateCommand({
          TableName: table(),
          Key: keys.scope(scope),
          UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
          ConditionExpression: '#v = :v',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }),
      );
      return strip<StoredScope>(out.Attributes ?? {});
    } catch (e) {
      if ((e as Error).name !== 'ConditionalCheckFailedException') throw e;
      if (attempt >= 8) {
        throw conflict(`the members of ${scope} keep changing; retry in a moment`, 'ConcurrentUpdate');
      }
    }
  }
}

export async function putQuota(q: Quota, by: string, expectedVersion?: number): Promise<StoredQuota> {
  return withLedger(
    async () => {
      const [tree, quotas] = await Promise.all([loadTree(), listQuotas()]);
      const current = quotas.find((x) => x.scope === q.scope);
      if (expectedVersion !== undefined && (current?.version ?? 0) !== expectedVersion) {
        throw new DomainError(
          'precondition',
          `quota of ${q.scope} is at version ${current?.version ?? 0}, not ${expectedVersion}`,
          {
            reason: 'VersionMismatch',
          },
        );
      }
      assertQuotaWrite(tree, quotas, { ...q, delete: false });
      const item: StoredQuota = {
        scope: q.scope,
        guarantee: q.guarantee,
        ...(q.limit ? { limit: q.limit } : {}),
        version: (current?.version ?? 0) + 1,
        updatedAt: new Date().toISOString(),
        updatedBy: by,
      };
      const items: TxItem[] = [
        {
          Put: {
            TableName: table(),
            Item: { ...keys.quota(q.scope), ...item },
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
      return { items, result: item };
    },
    {
      by,
      groupable: true,
      onItemConflict: () =>
        conflict(`quota of ${q.scope} changed meanwhile; read it again and retry`, 'ConcurrentUpdate'),
    },
  );
}

export async function deleteQuota(scope: string, by: string): Promise<void> {
  await withLedger(
    async () => {
      const [tree, quotas] = await Promise.all([loadTree(), listQuotas()]);
      if (!quotas.some((q) => q.scope === scope)) throw notFound(`scope ${scope} has no quota`);
      assertQuotaWrite(tree, quotas, { scope, delete: true });
      return { items: [{ Delete: { TableName: table(), Key: keys.quota(scope) } }], result: undefined };
    },
    { by, groupable: true },
  );
}

/** Transaction items that store the next admission of each changed model and drop those of removed models. */
export function admissionItems(next: readonly ModelAdmission[], removed: readonly string[]): TxItem[] {
  return [
    ...next.map((a) => ({ Put: { TableName: table(), Item: { ...keys.admission(a.model), ...a } } })),
    ...removed.map((m) => ({ Delete: { TableName: table(), Key: keys.admission(m) } })),
  ];
}
