import * as alarms from '../aws/alarms';
import * as nodegroups from '../aws/nodegroups';
import * as stepFunctions from '../aws/workflows';
import { decideAction, type WorkflowKind } from '../domain/actions';
import { decideWorld, decisionWrites, heldReplicas, unitsOf, type World } from '../domain/admission-world';
import { FAILED_NODEGROUP_STATUSES } from '../domain/compute';
import { nextSizing, planPlacement } from '../domain/placement';
import { type Decision, ScopeTree } from '../domain/quota';
import type { ComputeReport, ReconcileSummary } from '../domain/reconcile-pass';
import { logger } from '../shared/logger';
import type { TxItem } from '../store/ledger';
import { LEDGER_MAX_ITEMS } from '../store/limits';
import { createServices, type Dependencies, type Services } from '.';
import { workflowService } from './workflows';

/**
 * One reconcile pass (docs/design.md, Reconcile): observe what AWS runs, decide admission and placement, start
 * the workflows that make the node groups match, and report. Idempotent and safe beside another pass and API
 * writes: admission commits through the ledger, workflow starts through a conditional claim per compute.
 */

export type { ComputeReport, ReconcileSummary };

/** What a pass depends on beyond the services: EKS and Auto Scaling, Step Functions, CloudWatch. */
export interface ReconcileDependencies extends Dependencies {
  nodegroups: Pick<typeof nodegroups, 'observeAll'>;
  stepFunctions: typeof stepFunctions;
  alarms: Pick<typeof alarms, 'syncAlarms'>;
}

/** How the reconciler takes the ledger turn: for the whole decision, which may be a chain of transactions. */
const ADMISSION_TURN = { by: 'reconcile', waitMs: 120_000, leaseMs: 120_000 } as const;

export function createReconciler(over: Partial<ReconcileDependencies> = {}) {
  const services = createServices(over);
  const deps: ReconcileDependencies = {
    ...services.deps,
    nodegroups,
    stepFunctions,
    alarms,
    ...over,
  };
  return reconciler(deps, services);
}

export type Reconciler = ReturnType<typeof reconciler>;

function reconciler(deps: ReconcileDependencies, services: Services) {
  const store = deps.store;
  const starter = workflowService({
    clock: deps.clock,
    computes: store.computes,
    stepFunctions: deps.stepFunctions,
  });

  /**
   * Decides admission for every model and commits it through the ledger. A decision larger than one
   * transaction is committed as a chain of slices, releases first, so no limit is exceeded between two slices;
   * if an API write lands in between, the rest is decided again from the stored state.
   */
  function admit(now: string): Promise<{ world: World; decision: Decision; commits: number }> {
    // One turn for the whole decision: API writes wait for the chain instead of breaking it slice by slice.
    return store.ledger.inLedgerTurn(() => admitInTurn(now), ADMISSION_TURN);
  }

  async function admitInTurn(now: string): Promise<{ world: World; decision: Decision; commits: number }> {
    let commits = 0;
    for (let round = 0; ; round++) {
      const version = await store.ledger.ledgerVersion();
      const world = await services.admission.loadWorld(await services.catalog.load());
      const decision = decideWorld(world, now);
      const w = decisionWrites(decision);
      const items = store.admissions.admissionItems(w.next, w.removed);
      if (items.length === 0) return { world, decision, commits };
      const before = new Map(world.admissions.map((a) => [a.model, a]));
      const after = new Map(decision.admissions.map((a) => [a.model, a]));
      const delta = (m: string) =>
        after.has(m) ? heldReplicas(after.get(m)) - heldReplicas(before.get(m)) : -Number.MAX_SAFE_INTEGER;
      const modelOf = store.admissions.admissionItemModel;
      items.sort((x, y) => delta(modelOf(x)) - delta(modelOf(y)));
      const slices: TxItem[][] = [];
      for (let i = 0; i < items.length; i += SLICE_ITEMS) slices.push(items.slice(i, i + SLICE_ITEMS));
      const r = await store.ledger.commitChain(version, slices, 'reconcile');
      commits += r.committed;
      if (r.complete) return { world, decision, commits };
      if (round >= 20)
        throw new Error('admission kept losing the ledger to concurrent writes; the next pass retries');
    }
  }

  return { run: runReconcile, workflows: starter, syncAlarms: deps.alarms.syncAlarms, services };

  async function runReconcile(opts: { now?: Date } = {}): Promise<ReconcileSummary> {
    const started = opts.now ?? deps.clock();
    const now = started.toISOString();
    const t0 = Date.now();
    const errors: string[] = [];
    let awsCalls = 0;
    const cooldownMs = deps.config().cooldownSeconds * 1000;

    await services.computes.seedBuiltins();

    // 1-2. Observe every node group llmcap believes in, and settle workflows that ended without recording.
    let computes = await store.computes.listComputes();
    for (const c of computes.filter((x) => x.workflow?.state === 'RUNNING')) {
      try {
        await starter.settle(c);
        awsCalls++;
      } catch (e) {
        errors.push(`settling ${c.name}: ${(e as Error).message}`);
      }
    }
    computes = await store.computes.listComputes();
    const observed = new Map<string, { maxSize?: number }>();
    try {
      for (const o of await deps.nodegroups.observeAll(computes, now)) {
        awsCalls += o.calls;
        observed.set(o.compute, { maxSize: o.maxSize });
        await store.computes.recordObservation(o.compute, o.status);
        if (o.vanished) logger.warn('node group vanished outside llmcap', { compute: o.compute });
      }
    } catch (e) {
      errors.push(`observing: ${(e as Error).message}`);
    }

    // 3. Admission for every pending request, then placement of everything admitted.
    const { world, decision, commits } = await admit(now);
    const all = await store.computes.listComputes(); // includes computes being deleted, which the catalog leaves out
    const plan = planPlacement(
      all.filter((c) => !c.deletionRequested),
      unitsOf(decision.admissions, world.models, new ScopeTree(world.scopes)),
    );
    const sized = new Map(plan.computes.map((p) => [p.compute, p]));

    // 4. Act: one workflow per compute whose node group differs from what is needed.
    const reports: ComputeReport[] = [];
    const launched: ReconcileSummary['workflows'] = [];
    for (const c of all) {
      const { sizing, changed } = nextSizing(c.sizing, sized.get(c.name), started, cooldownMs);
      if (changed) await store.computes.recordSizing(c.name, sizing);
      const action = decideAction({
        compute: c,
        needed: sizing.neededNodes,
        observedMax: observed.get(c.name)?.maxSize,
      });
      let note = action.kind === 'none' || action.kind === 'delete' ? action.why : undefined;
      try {
        if (action.kind === 'remove-item') {
          await store.computes.removeDeletedCompute(c.name);
        } else if (action.kind !== 'none') {
          const kind: WorkflowKind = action.kind;
          const desired = action.kind === 'delete' ? 0 : action.desired;
          const r = await starter.start({ compute: c, kind, desiredNodes: desired });
          awsCalls++;
          launched.push({
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
        neededNodes: sizing.neededNodes,
        lowerBoundNodes: sizing.lowerBoundNodes,
        costPerHour: sizing.costPerHour,
        // FOREIGN too: the compute gets no nodes until someone renames it or deletes the other group.
        failed: FAILED_NODEGROUP_STATUSES.includes(c.status.nodegroupStatus),
        ...(c.status.statusMessage ? { statusMessage: c.status.statusMessage } : {}),
        action: action.kind,
        ...(note ? { actionNote: note } : {}),
      });
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
      workflows: launched,
      awsCalls,
      errors,
    };
  }
}

/** One slice of a large decision: what a ledger transaction holds besides the bump. */
const SLICE_ITEMS = LEDGER_MAX_ITEMS;
