import { admitterOrder, admitterWrites, decideWorld, type World } from '../domain/admission-world';
import type { ConsolidationStep } from '../domain/consolidation';
import { admissionEvents, type ResourceEvent } from '../domain/events';
import { moveCounts, moveEvents, stepMoves } from '../domain/moves';
import type { Decision } from '../domain/quota';
import type { SurgeBackStep } from '../domain/surge-back';
import type { ReadAge } from '../store/shared-read';
import type { Dependencies } from '.';
import type { AdmissionService } from './admission';
import type { CatalogService } from './catalog';
import type { EventService } from './events';

/**
 * The admitter (docs/design.md §5.1, Kueue's one scheduler): the only writer of admissions. The API validates a
 * write and stores it as intent; the admitter, run one at a time (reserved concurrency 1) on the table's stream
 * and on the reconcile schedule, loads the world once as a value, decides every model with the pure deciders,
 * and commits what changed in bounded transactions behind its fence. A run that finds everything as stored
 * writes nothing, so its own writes never trigger it again.
 *
 * After deciding, it takes one step of the surge-first moves (domain/moves.ts stepMoves) on the admissions it
 * decided: moves whose new replicas the reconciler saw Ready end; a unit on a later profile moves back to the
 * one its model prefers once that can launch again (issue 32 §3, surge-back.ts); and, when the stage's policy is
 * enabled and the saving reaches its threshold, consolidation starts one move per model (issue 34 §3).
 * Both commit in the same fenced commit, so a move never lands on an admission decided from another world.
 */

export interface AdmitterRun {
  world: World;
  decision: Decision;
  /** Transactions committed (0 when nothing changed). */
  commits: number;
  /** Models whose admission was written, and admissions removed with their model. */
  written: string[];
  removed: string[];
  /** Decisions made: more than one when another admitter moved the fence in between. */
  rounds: number;
  /**
   * What consolidation and surge-back did in the committed round (domain/moves.ts; absent where the admitter
   * sees no Ready replicas).
   */
  consolidation?: ConsolidationStep;
  surgeBack?: SurgeBackStep;
}

/** A run that keeps losing its fence is wrong: there is only one admitter. The next trigger tries again. */
const MAX_ROUNDS = 20;

/**
 * How long a run triggered by the stream may decide on this process's readings of the partitions its records do
 * not name; the reconcile schedule's run, every minute, reads everything anyway.
 */
const READING_MAX_AGE_MS = 60_000;

/** What started a run: the partitions the stream's records say were written, or nothing (the schedule, a test). */
export interface AdmitterTrigger {
  written?: readonly string[];
}

export function admitterService(
  deps: Dependencies,
  svc: { catalog: CatalogService; admission: AdmissionService; events: EventService },
) {
  const store = deps.store.admissions;
  // The fence as this process's last run left it. Another run (another container, a reconcile pass's) that moved
  // it since may have consumed records this process never saw, so its readings are not to be trusted then.
  let leftAt: number | undefined;

  return {
    /**
     * One run. Triggered by the stream, it re-reads only the partitions the records name (and the admissions and
     * pods, which wake no run), deciding on this process's readings of the rest, as Kueue's scheduler works from
     * its informers' cache: every write to an input partition sends a record, so a reading the run keeps is one
     * nothing has written since, and a write it has not seen yet has a run of its own coming. Anything else
     * (the schedule, a lost fence, another run in between) reads everything.
     */
    async run(trigger: AdmitterTrigger = {}): Promise<AdmitterRun> {
      const now = deps.clock().toISOString();
      let commits = 0;
      for (let round = 1; ; round++) {
        // The fence first: a commit after this read moves it, so a world read before that commit cannot win.
        const version = await store.admitterVersion();
        const age: ReadAge | undefined =
          round === 1 && trigger.written && leftAt === version
            ? { maxAgeMs: READING_MAX_AGE_MS, fresh: new Set([...trigger.written, 'ADMISSION']) }
            : undefined;
        leftAt = undefined; // until this run knows where it leaves the fence
        const world = await svc.admission.loadWorld(await svc.catalog.load(age), age);
        const { decision, ...moved } = stepMoves(
          world,
          decideWorld(world, now),
          deps.config().consolidation,
          now,
        );
        const w = admitterWrites(world, decision);
        const items = store.admissionItems(w.next, w.removed);
        if (items.length === 0) {
          leftAt = version;
          return { world, decision, commits, written: [], removed: [], rounds: round, ...moved };
        }
        const order = admitterOrder(world.admissions, decision.admissions, w.removed);
        const modelOf = store.admissionItemModel;
        items.sort((x, y) => order(modelOf(x)) - order(modelOf(y)));
        const r = await store.commitAdmissions(version, items, now);
        commits += r.committed;
        if (r.complete) {
          leftAt = version + r.committed;
          const created = new Map(world.models.map((m) => [m.name, m.createdAt]));
          const events: ResourceEvent[] = [
            ...admissionEvents(world.admissions, w.next, (m) => created.get(m), now, 'admitter'),
            ...moveEvents(moved, (m) => created.get(m), now),
          ];
          await svc.events.record(events);
          return {
            world,
            decision,
            commits,
            written: w.next.map((a) => a.model),
            removed: w.removed,
            rounds: round,
            ...moved,
          };
        }
        if (round >= MAX_ROUNDS)
          throw new Error(
            `the admitter's fence moved under it ${round} times: is a second admitter running? The next trigger decides again`,
          );
      }
    },
  };
}

export type AdmitterService = ReturnType<typeof admitterService>;

/** What an admitter run answers its caller (the reconcile pass, through Lambda): figures, not the world. */
export interface AdmitterSummary {
  admitted: number;
  released: number;
  victims: number;
  pendingReplicas: number;
  commits: number;
  /** Models whose admission was written, and admissions removed with their model. */
  written: string[];
  removed: string[];
  scopes: Decision['scopes'];
  atLimit: string[];
  /** Consolidation's moves this run, when it moved anything: started, finished (the old one removed), given up. */
  moves?: { started: number; finished: number; abandoned: number };
}

export function summarize(run: AdmitterRun): AdmitterSummary {
  const d = run.decision;
  const moves = moved(run);
  return {
    admitted: d.admitted.length,
    released: d.released.length,
    victims: d.victims.length,
    pendingReplicas: d.admissions.reduce((n, a) => n + a.pending.reduce((k, p) => k + p.replicas, 0), 0),
    commits: run.commits,
    written: run.written,
    removed: run.removed,
    scopes: d.scopes,
    atLimit: d.atLimit,
    ...(moves ? { moves } : {}),
  };
}

function moved(run: AdmitterRun) {
  const n = moveCounts(run);
  return n.started + n.finished + n.abandoned > 0 ? n : undefined;
}
