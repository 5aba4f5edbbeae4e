import { nodegroupName } from '../../lambdas/domain/compute';
import { config } from '../../lambdas/shared/config';
import { listComputes } from '../../lambdas/store/computes';
import type { ControlPlane } from '../../local/control-plane';
import { type JsonClient, listAll } from './invoke';

/**
 * The invariants the chaos and restart suites check once faults stop: what llmcap believes of every node group
 * matches the simulator, every admitted replica is placed on ready nodes, and no workflow is left running.
 */

export interface Violation {
  what: string;
  detail: string;
}

export async function checkConverged(cp: ControlPlane, admin: JsonClient): Promise<Violation[]> {
  const out: Violation[] = [];
  const stage = config().stage;
  const sim = new Map(cp.sim.admin.state().nodegroups.map((g) => [g.name, g]));
  const computes = await listComputes();
  const ours = new Set<string>();
  for (const c of computes) {
    const ng = nodegroupName(stage, c.name);
    ours.add(ng);
    const g = sim.get(ng);
    const s = c.status;
    if (c.workflow?.state === 'RUNNING')
      out.push({ what: 'workflow-running', detail: `${c.name}: ${c.workflow.executionName} still RUNNING` });
    const needed = c.sizing?.neededNodes ?? 0;
    if (!g) {
      if (s.nodegroupStatus !== 'ABSENT')
        out.push({
          what: 'status-mismatch',
          detail: `${c.name}: llmcap says ${s.nodegroupStatus}, AWS has no node group`,
        });
      // Replicas placed here have no node to run on (a create still backing off, or never asked for).
      if (needed > 0)
        out.push({ what: 'not-placed', detail: `${c.name}: needs ${needed} nodes, AWS has no node group` });
      continue;
    }
    if (g.status !== s.nodegroupStatus || g.scalingConfig.desiredSize !== s.desiredNodes)
      out.push({
        what: 'status-mismatch',
        detail: `${c.name}: llmcap says ${s.nodegroupStatus}/${s.desiredNodes}, AWS ${g.status}/${g.scalingConfig.desiredSize}`,
      });
    const ready = g.autoScalingGroup.instances.filter((i) => i.lifecycleState === 'InService').length;
    if (needed > 0 && (g.status !== 'ACTIVE' || ready < needed))
      out.push({
        what: 'not-placed',
        detail: `${c.name}: needs ${needed} nodes, AWS has ${g.status} with ${ready} ready`,
      });
  }
  for (const name of sim.keys())
    if (!ours.has(name)) out.push({ what: 'orphan', detail: `node group ${name} belongs to no compute` });
  for (const e of cp.sfn.executions.values())
    if (e.status === 'RUNNING') out.push({ what: 'execution-running', detail: e.name });
  const models = (await listAll(admin, '/v1/models')) as any[];
  for (const m of models) {
    const st = m.status ?? {};
    const placed = (st.placements ?? []).reduce((n: number, p: { replicas: number }) => n + p.replicas, 0);
    if ((st.admitted ?? 0) !== placed)
      out.push({
        what: 'admitted-unplaced',
        detail: `${m.metadata.name}: admitted ${st.admitted}, placed ${placed}`,
      });
  }
  return out;
}

/** One pass as the schedule would run it, then wait for the workflows it started. */
export async function pass(cp: ControlPlane) {
  const s = await cp.reconcile();
  await cp.sfn.waitForIdle(30_000);
  return s;
}

/** Passes until the invariants hold (and stay holding for one more pass), at most `max`. */
export async function converge(
  cp: ControlPlane,
  admin: JsonClient,
  max: number,
): Promise<{ passes: number; violations: Violation[] }> {
  let violations: Violation[] = [];
  let clean = 0;
  for (let i = 1; i <= max; i++) {
    await pass(cp);
    await new Promise((r) => setTimeout(r, 150));
    violations = await checkConverged(cp, admin);
    clean = violations.length ? 0 : clean + 1;
    if (clean >= 2) return { passes: i, violations };
  }
  return { passes: max, violations };
}
