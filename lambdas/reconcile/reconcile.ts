import { type Action, decideAction } from '../domain/actions';
import type { Compute } from '../domain/compute';
import type { ReplicaUnit } from '../domain/headroom';
import type { Model } from '../domain/model';
import { applyCooldown, planPlacement } from '../domain/placement';
import type { Decision, ModelAdmission, ScopeSummary } from '../domain/quota';
import { builtinComputes } from '../shared/builtin-config';
import { config } from '../shared/config';
import { logger } from '../shared/logger';
import { decideWorld, decisionItems, loadWorld, type World } from '../store/admission';
import {
  listComputes,
  recordObservation,
  recordSizing,
  removeDeletedCompute,
  seedBuiltins,
} from '../store/computes';
import { commitChain, ledgerVersion, type TxItem } from '../store/ledger';
import { inLedgerTurn } from '../store/turn';
import { type DrainReport, drainForScaleDown } from './drain';
import { observeAll } from './observe';
import { settleWorkflow, startWorkflow, type WorkflowKind } from './workflows';
import { reconcileWorkloads, type WorkloadsReport } from './workloads';

/**
 * One reconcile pass (DESIGN.md §3.5): observe what AWS runs, decide admission and placement, start the
 * workflows that make the node groups match, and report. Idempotent and safe beside another pass and API
 * writes: admission commits through the ledger, workflow starts through a conditional claim per compute.
 */

export interface ComputeReport {
  compute: string;
  status: Compute['status']['nodegroupStatus'];
  desiredNodes: number;
  readyNodes: number;
  neededNodes: number;
  lowerBoundNodes: number;
  costPerHour: number;
  failed: boolean;
  statusMessage?: string;
  action: Action['kind'];
  actionNote?: string;
}

export interface ReconcileSummary {
  startedAt: string;
  durationMs: number;
  computes: ComputeReport[];
  scopes: (ScopeSummary & { pendingReplicas: number })[];
  atLimit: string[];
  admission: {
    admitted: number;
    released: number;
    victims: number;
    pendingReplicas: number;
    commits: number;
  };
  workflows: { compute: string; kind: WorkflowKind; outcome: string; executionName?: string }[];
  awsCalls: number;
  /** The model servers (issue 20): absent when LLMCAP_WORKLOADS is off or the cluster could not be reached. */
  workloads?: WorkloadsReport;
  /** Scale-downs in progress: the nodes llmcap chose, cordoned, drained and removed (issue 20 §3). */
  drains?: DrainReport[];
  errors: string[];
}

/** Admitted units as placement units, each pinned to where admission placed it, so sizing follows admission. */
export function unitsOf(
  admissions: readonly ModelAdmission[],
  models: readonly Pick<Model, 'name' | 'spec'>[],
) {
  const byModel = new Map(models.map((m) => [m.name, m.spec.profiles]));
  const units: ReplicaUnit[] = [];
  for (const a of admissions) {
    for (const u of a.units) {
      const own = byModel.get(a.model)?.find((p) => p.name === u.profile);
      const base = own ?? {
        name: u.profile,
        gpus: u.resources.gpus,
        cpuCores: u.resources.cores,
        ...(u.resources.memoryGb > 0 ? { minMemoryGb: u.resources.memoryGb } : {}),
      };
      for (const pl of u.placements) {
        units.push({
          id: `${u.id}@${pl.compute}`,
          model: a.model,
          profiles: [{ ...base, compute: pl.compute }],
          replicas: pl.replicas,
        });
      }
    }
  }
  return units;
}

const MAX_ITEMS = 98;

/** What the NodegroupFailed alarm counts: states that need a person. */
const FAILED_STATUSES: readonly Compute['status']['nodegroupStatus'][] = [
  'CREATE_FAILED',
  'DELETE_FAILED',
  'DEGRADED',
  'FOREIGN',
];

/**
 * Decides admission for every model and commits it through the ledger. A decision larger than one
 * transaction is committed as a chain of slices, releases first, so no limit is exceeded between two slices;
 * if an API write lands in between, the rest is decided again from the stored state.
 */
function admit(now: string): Promise<{ world: World; decision: Decision; commits: number }> {
  // One turn for the whole decision: API writes wait for the chain instead of breaking it slice by slice.
  return inLedgerTurn(() => admitInTurn(now), { by: 'reconcile', waitMs: 120_000, leaseMs: 120_000 });
}

async function admitInTurn(now: string): Promise<{ world: World; decision: Decision; commits: number }> {
  let commits = 0;
  for (let round = 0; ; round++) {
    const version = await ledgerVersion();
    const world = await loadWorld();
    const decision = decideWorld(world, now);
    const items = decisionItems(decision);
    if (items.length === 0) return { world, decision, commits };
    const before = new Map(world.admissions.map((a) => [a.model, a]));
    const after = new Map(decision.admissions.map((a) => [a.model, a]));
    const held = (a?: ModelAdmission) => (a?.units ?? []).reduce((n, u) => n + u.replicas, 0);
    const delta = (m: string) =>
      after.has(m) ? held(after.get(m)) - held(before.get(m)) : -Number.MAX_SAFE_INTEGER;
    items.sort((x, y) => delta(modelOf(x)) - delta(modelOf(y)));
    const slices: TxItem[][] = [];
    for (let i = 0; i < items.length; i += MAX_ITEMS) slices.push(items.slice(i, i + MAX_ITEMS));
    const r = await commitChain(version, slices, 'reconcile');
    commits += r.committed;
    if (r.complete) return { world, decision, commits };
    if (round >= 20)
      throw new Error('admission kept losing the ledger to concurrent writes; the next pass retries');
  }
}

/** A scale-down of a live group, while llmcap runs the pods: it drains the nodes itself (drain.ts). */
function drainsFirst(action: Action, c: Compute): boolean {
  return (
    config().deployWorkloads &&
    action.kind === 'scale' &&
    c.status.nodegroupStatus === 'ACTIVE' &&
    action.desired < c.status.desiredNodes
  );
}

function modelOf(item: TxItem): string {
  const i = item as { Put?: { Item: Record<string, unknown> }; Delete?: { Key: Record<string, unknown> } };
  return String(i.Put?.Item.sk ?? i.Delete?.Key.sk ?? '');
}

export async function runReconcile(opts: { now?: Date } = {}): Promise<ReconcileSummary> {
  const started = opts.now ?? new Date();
  const now = started.toISOString();
  const t0 = Date.now();
  const errors: string[] = [];
  let awsCalls = 0;
  const cooldownMs = config().cooldownSeconds * 1000;

  await seedBuiltins(builtinComputes());

  // 1-2. Observe every node group llmcap believes in, and settle workflows that ended without recording.
  let computes = await listComputes();
  for (const c of computes.filter((x) => x.workflow?.state === 'RUNNING')) {
    try {
      await settleWorkflow(c);
      awsCalls++;
    } catch (e) {
      errors.push(`settling ${c.name}: ${(e as Error).message}`);
    }
  }
  computes = await listComputes();
  const observed = new Map<string, { maxSize?: number }>();
  try {
    for (const o of await observeAll(computes, now)) {
      awsCalls += o.calls;
      observed.set(o.compute, { maxSize: o.maxSize });
      await recordObservation(o.compute, o.status);
      if (o.vanished) logger.warn('node group vanished outside llmcap', { compute: o.compute });
    }
  } catch (e) {
    errors.push(`observing: ${(e as Error).message}`);
  }

  // 3. Admission for every pending request, then placement of everything admitted.
  const { world, decision, commits } = await admit(now);
  computes = world.computes;
  const all = await listComputes(); // includes computes being deleted, which the catalog leaves out
  const plan = planPlacement(
    all.filter((c) => !c.deletionRequested),
    unitsOf(decision.admissions, world.models),
  );
  const sized = new Map(plan.computes.map((p) => [p.compute, p]));

  // 4. Act: one workflow per compute whose node group differs from what is needed.
  const reports: ComputeReport[] = [];
  const drainsWanted: { compute: Compute; keep: number }[] = [];
  const workflows: ReconcileSummary['workflows'] = [];
  for (const c of all) {
    const p = sized.get(c.name);
    const computed = p?.neededNodes ?? 0;
    const prev = c.sizing;
    const cd = applyCooldown(
      { neededNodes: prev?.neededNodes ?? 0, since: prev?.lowerSince, peak: prev?.peak },
      computed,
      started,
      cooldownMs,
    );
    const sizing = {
      neededNodes: cd.neededNodes,
      lowerBoundNodes: p?.lowerBoundNodes ?? 0,
      costPerHour: p?.costPerHour ?? 0,
      computedAt: now,
      ...(cd.since ? { lowerSince: cd.since } : {}),
      ...(cd.peak !== undefined ? { peak: cd.peak } : {}),
    };
    // Only a change is written: at 200 computes a steady pass would otherwise rewrite 200 items a minute.
    const same =
      prev !== undefined &&
      prev.neededNodes === sizing.neededNodes &&
      prev.lowerBoundNodes === sizing.lowerBoundNodes &&
      prev.costPerHour === sizing.costPerHour &&
      prev.lowerSince === sizing.lowerSince &&
      prev.peak === sizing.peak;
    if (!same) await recordSizing(c.name, sizing);
    const action = decideAction({
      compute: c,
      needed: cd.neededNodes,
      observedMax: observed.get(c.name)?.maxSize,
    });
    let note = action.kind === 'none' || action.kind === 'delete' ? action.why : undefined;
    try {
      if (action.kind === 'remove-item') {
        await removeDeletedCompute(c.name);
      } else if (drainsFirst(action, c)) {
        // Issue 20 §3: llmcap removes the instances itself, after draining them (step 5 below).
        drainsWanted.push({ compute: c, keep: action.kind === 'scale' ? action.desired : 0 });
        note = `scaling down to ${action.kind === 'scale' ? action.desired : 0} by draining the nodes llmcap chooses`;
      } else if (action.kind !== 'none') {
        const kind: WorkflowKind = action.kind;
        const desired = action.kind === 'delete' ? 0 : action.desired;
        const r = await startWorkflow({ compute: c, kind, desiredNodes: desired });
        awsCalls++;
        workflows.push({
          compute: c.name,
          kind,
          outcome: r.outcome,
          ...('executionName' in r ? { executionName: r.executionName } : {}),
        });
        if (r.outcome === 'refused') note = r.message;
      }
    } catch (e) {
      errors.push(`${action.kind} ${c.name}: ${(e as Error).message}`);
    }
    reports.push({
      compute: c.name,
      status: c.status.nodegroupStatus,
      desiredNodes: c.status.desiredNodes,
      readyNodes: c.status.readyNodes,
      neededNodes: cd.neededNodes,
      lowerBoundNodes: sizing.lowerBoundNodes,
      costPerHour: sizing.costPerHour,
      // FOREIGN too: the compute gets no nodes until someone renames it or deletes the other group.
      failed: FAILED_STATUSES.includes(c.status.nodegroupStatus),
      ...(c.status.statusMessage ? { statusMessage: c.status.statusMessage } : {}),
      action: action.kind,
      ...(note ? { actionNote: note } : {}),
    });
  }

  // 5. Workloads (issue 20): the model servers of what is admitted; their pods become status.running.
  let workloads: WorkloadsReport | undefined;
  const drains: DrainReport[] = [];
  if (config().deployWorkloads) {
    try {
      const w = await reconcileWorkloads({
        models: world.models,
        admissions: decision.admissions,
        computes: all,
        now,
      });
      workloads = w.report;
      // A pass that changed Deployments drains nothing: their pods are still going, and a node that empties
      // by itself is cheaper to remove than one whose pods must move.
      if (w.report.applied.length === 0)
        for (const d of drainsWanted) {
          try {
            drains.push(await drainForScaleDown({ ...d, pods: w.pods, client: w.client }));
          } catch (e) {
            errors.push(`draining ${d.compute.name}: ${(e as Error).message}`);
          }
        }
    } catch (e) {
      errors.push(`workloads: ${(e as Error).message}`);
    }
  }

  const pendingReplicas = decision.admissions.reduce(
    (n, a) => n + a.pending.reduce((k, p) => k + p.replicas, 0),
    0,
  );
  return {
    startedAt: now,
    durationMs: Date.now() - t0,
    computes: reports,
    scopes: decision.scopes.map((s) => ({
      ...s,
      pendingReplicas: Object.values(s.pending).reduce((n, x) => n + (x ?? 0), 0),
    })),
    atLimit: decision.atLimit,
    admission: {
      admitted: decision.admitted.length,
      released: decision.released.length,
      victims: decision.victims.length,
      pendingReplicas,
      commits,
    },
    workflows,
    awsCalls,
    ...(workloads ? { workloads } : {}),
    ...(drains.length ? { drains } : {}),
    errors,
  };
}
