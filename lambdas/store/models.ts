import {
  applyChange,
  type BuiltCatalog,
  buildCatalog,
  type CatalogAccess,
  type CatalogChange,
  type ChangeResult,
  checkRefusal,
  declaredToModel,
  defaultModelCheck,
  type ModelCheck,
  modelsUsingCompute,
  type SkippedModel,
} from '../domain/catalog';
import type { Compute } from '../domain/compute';
import { conflict } from '../domain/errors';
import type { Model } from '../domain/model';
import { declaredModels } from '../shared/builtin-config';
import { config } from '../shared/config';
import { logger } from '../shared/logger';
import { listComputes } from './computes';
import { keys } from './keys';
import { type TxItem, withLedger } from './ledger';
import { queryLedgerPartition } from './ledger-cache';

/**
 * The catalog repository. Reads build the catalog in force from the declared models and the stored rows;
 * every change is decided against a fresh read of the whole catalog and the computes under the ledger, and
 * written (one model item, conditional on its version) in the same transaction as the ledger bump, so the
 * stored catalog is always one that validated as a whole.
 */

const table = () => config().table;

// Declared models are as old as the configuration this container loaded.
let declaredAt: string | undefined;

function declared(): Model[] {
  declaredAt ??= new Date().toISOString();
  const at = declaredAt;
  return declaredModels().map((d) => declaredToModel(d, at));
}

async function storedRows(): Promise<readonly Record<string, unknown>[]> {
  return queryLedgerPartition('MODEL');
}

// Each bad row is logged once per container, not on every request that loads the catalog.
const warned = new Set<string>();

function warnOnce(key: string, message: string, detail: Record<string, unknown>): void {
  if (warned.has(key)) return;
  warned.add(key);
  logger.warn(message, detail);
}

export interface LoadedCatalog extends BuiltCatalog {
  /** The computes the catalog was validated against (those not being deleted), with their versions. */
  computes: Compute[];
}

/** The catalog in force. A stored row that does not validate is skipped with a warning, one row at a time. */
export async function loadCatalog(): Promise<LoadedCatalog> {
  const [rows, all] = await Promise.all([storedRows(), listComputes()]);
  const computes = all.filter((c) => !(c as { deletionRequested?: boolean }).deletionRequested);
  const built = buildCatalog(declared(), rows, computes);
  for (const s of built.skipped) {
    warnOnce(`${s.name}|${s.version}|${s.problem}`, 'stored model skipped: it is left out of the catalog', {
      model: s.name,
      problem: s.problem,
    });
  }
  for (const i of built.issues) {
    warnOnce(
      `declared|${i.model}|${i.message}`,
      'declared model breaks a catalog rule; fix config/catalog.yaml',
      {
        model: i.model,
        problem: i.message,
      },
    );
  }
  return { ...built, computes };
}

/** One model of the catalog in force, or the skipped row of that name, or nothing. */
export async function getModel(name: string): Promise<{ model?: Model; skipped?: SkippedModel }> {
  const c = await loadCatalog();
  const model = c.models.find((m) => m.name === name);
  if (model) return { model };
  return { skipped: c.skipped.find((s) => s.name === name) };
}

let modelCheck: ModelCheck = defaultModelCheck;

/** Replaces the check that refuses a model that cannot run (add, replace, resources); deployments plug theirs. */
export function setModelCheck(fn: ModelCheck): void {
  modelCheck = fn;
}

export function resetModelCheck(): void {
  modelCheck = defaultModelCheck;
}

function toItem(m: Model): Record<string, unknown> {
  const { declared: _d, ...rest } = m;
  return { ...keys.model(m.name), ...rest };
}

/** The writes of one change: the model item conditional on its version, and the computes it pins unchanged. */
function txItems(r: ChangeResult, computes: readonly Compute[]): TxItem[] {
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
  // A compute replaced outside the ledger (PUT /v1/computes) must not shrink under a model pinned to it.
  const pinned = new Set((r.after?.spec.profiles ?? []).flatMap((p) => (p.compute ? [p.compute] : [])));
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
  return items;
}

/**
 * Admission registers here, so that a model's change and the admission it causes commit in one ledger
 * transaction (a start that can never fit is refused before anything is stored). The hook may throw.
 */
export type AdmissionHook = (c: {
  state: LoadedCatalog;
  result: ChangeResult;
  change: CatalogChange;
}) => Promise<TxItem[]>;

let admissionHook: AdmissionHook | undefined;

export function setAdmissionHook(fn: AdmissionHook | undefined): void {
  admissionHook = fn;
}

const CHECKED_VERBS = new Set<CatalogChange['verb']>(['add', 'replace', 'resources']);

/**
 * Applies one catalog change: refused (nothing written) when it breaks a rule, the caller may not make it,
 * the pre-add check says the model cannot run, or If-Match does not match. Returns the model before and after.
 */
export async function changeCatalog(
  change: CatalogChange,
  opts: { by: string; access?: CatalogAccess },
): Promise<ChangeResult> {
  // The check may be slow (a deployment's may look at the weights): run it once per distinct model, not per retry.
  const checked = new Map<string, string[]>();
  return withLedger(
    async () => {
      const state = await loadCatalog();
      const r = applyChange(state, change, {
        by: opts.by,
        now: new Date().toISOString(),
        access: opts.access,
      });
      if (r.after && CHECKED_VERBS.has(change.verb)) {
        const candidate = { name: r.after.name, owner: r.after.owner, spec: r.after.spec };
        const key = JSON.stringify(candidate);
        let problems = checked.get(key);
        if (!problems) {
          problems = await modelCheck(candidate, {
            verb: change.verb as 'add' | 'replace' | 'resources',
            computes: state.computes,
          });
          checked.set(key, problems);
        }
        if (problems.length) throw checkRefusal(r.after.name, problems);
      }
      const extra = admissionHook ? await admissionHook({ state, result: r, change }) : [];
      return { items: [...txItems(r, state.computes), ...extra], result: r };
    },
    {
      by: opts.by,
      groupable: true,
      onItemConflict: (i) =>
        i === 0
          ? conflict(
              `model ${change.name} changed while this request was deciding; read it again and retry`,
              'ConcurrentUpdate',
            )
          : conflict(
              `a compute that model ${change.name} pins changed meanwhile; retry the request`,
              'ConcurrentUpdate',
            ),
    },
  );
}

/** For the compute repository: the models a compute cannot be deleted or renamed under. */
export async function modelsUsing(computeName: string): Promise<string[]> {
  const c = await loadCatalog();
  return modelsUsingCompute(c.models, c.computes, computeName);
}
