import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { ModelAdmission } from '../domain/quota';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { keys } from './keys';
import type { TxItem } from './ledger';
import { queryLedgerPartition } from './ledger-cache';

/**
 * What admission decided, one item per model. Written only in ledger transactions (the catalog change that
 * caused it, or reconcile's pass), together with the ledger bump, so decisions are serializable.
 */

const table = () => config().table;

function strip(item: Record<string, unknown>): ModelAdmission {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as unknown as ModelAdmission;
}

export async function listAdmissions(): Promise<ModelAdmission[]> {
  return (await queryLedgerPartition('ADMISSION')).map(strip);
}

export async function getAdmission(model: string): Promise<ModelAdmission | undefined> {
  const out = await documentClient().send(new GetCommand({ TableName: table(), Key: keys.admission(model) }));
  return out.Item ? strip(out.Item) : undefined;
}

/** Transaction items that store the next admission of each changed model and drop those of removed models. */
export function admissionItems(next: readonly ModelAdmission[], removed: readonly string[]): TxItem[] {
  return [
    ...next.map((a) => ({ Put: { TableName: table(), Item: { ...keys.admission(a.model), ...a } } })),
    ...removed.map((m) => ({ Delete: { TableName: table(), Key: keys.admission(m) } })),
  ];
}

/** The model an admission item is of (its sort key), for ordering the slices of a large decision. */
export function admissionItemModel(item: TxItem): string {
  const i = item as { Put?: { Item: Record<string, unknown> }; Delete?: { Key: Record<string, unknown> } };
  return String(i.Put?.Item.sk ?? i.Delete?.Key.sk ?? '');
}
