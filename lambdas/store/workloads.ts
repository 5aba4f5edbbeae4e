import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { sameValue } from '../domain/compute';
import type { Model } from '../domain/model';
import type { WorkloadStatus } from '../domain/workloads';
import { documentClient } from '../shared/clients';
import { config } from '../shared/config';
import { keys } from './keys';
import { queryPartition } from './query';

/**
 * What the reconciler last saw of each model's pods, one item per model (keys.workload): the model's
 * `status.running`, its pods and why the others do not serve. Written by reconcile only when it changed, read
 * by the models API beside the admission record.
 */

export interface StoredWorkload extends WorkloadStatus {
  model: string;
  observedAt: string;
}

function fromItem(item: Record<string, unknown>): StoredWorkload {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as unknown as StoredWorkload;
}

export async function listWorkloads(): Promise<StoredWorkload[]> {
  return (await queryPartition(keys.workloads().pk)).map(fromItem);
}

export async function getWorkload(model: string): Promise<StoredWorkload | undefined> {
  const out = await documentClient().send(
    new GetCommand({ TableName: config().table, Key: keys.workload(model) }),
  );
  return out.Item ? fromItem(out.Item) : undefined;
}

/**
 * Writes what changed since the last pass: a model whose pods are gone loses its item. Returns the writes made,
 * so that a steady pass can be seen to write nothing.
 */
export async function recordWorkloads(seen: Map<string, WorkloadStatus>, now: string): Promise<number> {
  const before = new Map((await listWorkloads()).map((w) => [w.model, w]));
  let writes = 0;
  for (const [model, w] of seen) {
    const prev = before.get(model);
    if (prev && sameValue({ ...prev, observedAt: undefined, model: undefined }, w)) continue;
    writes++;
    await documentClient().send(
      new PutCommand({
        TableName: config().table,
        Item: { ...keys.workload(model), model, observedAt: now, ...w },
      }),
    );
  }
  for (const model of before.keys()) {
    if (seen.has(model)) continue;
    writes++;
    await documentClient().send(new DeleteCommand({ TableName: config().table, Key: keys.workload(model) }));
  }
  return writes;
}

type Lookup<T> = (models: readonly Model[]) => Promise<(T | undefined)[]>;

/**
 * Adds each model's pods to what `lookup` says of it when llmcap runs them (LLMCAP_WORKLOADS=deploy): `running`
 * (0 until a pod is Ready), the pods and their reasons. One read for a single model, one partition query for a
 * list.
 */
export function withWorkloads<T extends object>(lookup: Lookup<T>): Lookup<T & Partial<WorkloadStatus>> {
  return async (models) => {
    // With the pods left to the platform's own tooling, llmcap knows nothing of them and says nothing.
    if (!config().deployWorkloads) return lookup(models);
    const [summaries, workloads] = await Promise.all([
      lookup(models),
      models.length === 1 ? getWorkload(models[0]!.name).then((w) => (w ? [w] : [])) : listWorkloads(),
    ]);
    const byModel = new Map(workloads.map((w) => [w.model, w]));
    return models.map((m, i) => {
      const s = summaries[i];
      const w = byModel.get(m.name);
      if (!s && !w) return undefined;
      const { model: _m, ...shown } = w ?? {
        model: '',
        running: 0,
        pods: [],
        podReasons: [],
        observedAt: undefined,
      };
      return { ...(s as T), ...shown } as T & Partial<WorkloadStatus>;
    });
  };
}
