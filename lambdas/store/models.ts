import type { ChangeResult } from '../domain/catalog';
import type { Compute } from '../domain/compute';
import type { Model } from '../domain/model';
import { namedComputes } from '../domain/placement';
import { config } from '../shared/config';
import type { TxItem } from './commit';
import { keys } from './keys';
import { type ReadAge, sharedQuery } from './shared-read';
import { lineageChecks } from './tenancy';

/**
 * The model rows: the models added at runtime, as stored (the catalog service builds the catalog in force from
 * them and the declared models). Each write is one model item conditional on the version its change was
 * validated against, with checks on the items the validation leaned on (store/commit.ts).
 */

const table = () => config().table;

/** Every stored model row, as the table holds it (frozen: rows are shared between requests). */
export async function listModelRows(age?: ReadAge): Promise<readonly Record<string, unknown>[]> {
  return sharedQuery(keys.models().pk, age);
}

function toItem(m: Model): Record<string, unknown> {
  const { declared: _d, ...rest } = m;
  return { ...keys.model(m.name), ...rest };
}

/**
 * The writes of one catalog change: the model item conditional on its version (item 0), a check that each
 * compute the model pins is still at the version the change was validated against, and that a new owner exists.
 */
export function changeItems(
  r: ChangeResult,
  computes: readonly Pick<Compute, 'name' | 'version'>[],
  now: string,
  lineage: readonly { scope: string; version: number }[] = [],
): TxItem[] {
  const name = (r.after ?? r.before ?? r.replacesSkipped)!.name;
  const key = keys.model(name);
  let cond: {
    ConditionExpression: string;
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, unknown>;
  };
  const was = r.before ?? r.replacesSkipped;
  if (!was) cond = { ConditionExpression: 'attribute_not_exists(pk)' };
  else if (was.version !== undefined) {
    cond = {
      ConditionExpression: '#version = :v',
      ExpressionAttributeNames: { '#version': 'version' },
      ExpressionAttributeValues: { ':v': was.version },
    };
  } else cond = { ConditionExpression: 'attribute_exists(pk)' };
  const items: TxItem[] = [
    r.after
      ? { Put: { TableName: table(), Item: toItem(r.after), ...cond } }
      : { Delete: { TableName: table(), Key: key, ...cond } },
  ];
  // A compute replaced meanwhile (PUT /v1/computes) must not shrink under a model pinned to it.
  const pinned = new Set((r.after?.spec.profiles ?? []).flatMap((p) => namedComputes(p) ?? []));
  for (const c of computes.filter((x) => pinned.has(x.name))) {
    items.push({
      ConditionCheck: {
        TableName: table(),
        Key: keys.compute(c.name),
        ConditionExpression: '#version = :v',
        ExpressionAttributeNames: { '#version': 'version' },
        ExpressionAttributeValues: { ':v': c.version },
      },
    });
  }
  // A new owner must still exist, and not be being deleted, when this lands (store/tenancy.ts ownerCheck); the
  // scopes an editor's role came from must be as the decision read them.
  const owner = r.after?.owner;
  const newOwner = owner && owner !== (r.before ?? r.replacesSkipped)?.owner ? owner : undefined;
  items.push(...lineageChecks(lineage, newOwner, now));
  return items;
}
