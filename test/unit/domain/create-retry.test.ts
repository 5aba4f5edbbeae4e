import { decideAction } from '../../../lambdas/domain/actions';
import type { CreateRetry, NodegroupStatus } from '../../../lambdas/domain/compute';
import {
  backoffMs,
  mayCreate,
  nextCreateRetry,
  retryMessage,
  retryPolicy,
} from '../../../lambdas/domain/create-retry';
import { builtin } from '../../helpers/computes';

const MIN = 60_000;
const t0 = Date.parse('2026-01-01T00:00:00Z');
const at = (m: number) => new Date(t0 + m * MIN);
const policy = retryPolicy(300);
const MSG = 'AsgInstanceLaunchFailures: InsufficientInstanceCapacity';

/** One pass per observed status, a minute apart, with placement needing `needed` nodes. */
function run(statuses: NodegroupStatus[], needed = 1, start?: CreateRetry) {
  let r = start;
  return statuses.map((s, i) => {
    r = nextCreateRetry(r, { status: { nodegroupStatus: s, statusMessage: MSG } }, needed, at(i), policy);
    return r;
  });
}

describe('backoffMs', () => {
  it('doubles from the first wait and stops at twelve of them', () => {
    expect([1, 2, 3, 4, 5, 6, 50].map((n) => backoffMs(n, policy) / MIN)).toEqual([
      5, 10, 20, 40, 60, 60, 60,
    ]);
    expect(backoffMs(3, retryPolicy(0))).toBe(0);
  });
});

describe('nextCreateRetry', () => {
  it('counts each failed group once, across the passes that see it failed, deleted and created again', () => {
    const rs = run(['CREATE_FAILED', 'CREATE_FAILED', 'DELETING', 'ABSENT', 'CREATING', 'CREATE_FAILED']);
    expect(rs.map((r) => r?.failures)).toEqual([1, 1, 1, 1, 1, 2]);
    expect(rs[0]).toEqual({
      failures: 1,
      since: at(0).toISOString(),
      lastFailure: `CREATE_FAILED: ${MSG}`,
      nextAttemptAt: at(5).toISOString(),
      counted: true,
    });
    // The second failure waits twice as long, from when it was seen; the first is still when it began.
    expect(rs[5]).toMatchObject({ since: at(0).toISOString(), nextAttemptAt: at(5 + 10).toISOString() });
  });

  it('ends when a create succeeds, when nothing needs the compute, or when the compute is deleted', () => {
    expect(run(['CREATE_FAILED', 'ABSENT', 'CREATING', 'ACTIVE']).at(-1)).toBeUndefined();
    expect(run(['CREATE_FAILED', 'DELETING', 'ABSENT'], 0).at(-1)).toBeUndefined();
    const held = run(['CREATE_FAILED'])[0];
    expect(
      nextCreateRetry(held, { status: { nodegroupStatus: 'DELETING' }, deleting: true }, 1, at(1), policy),
    ).toBeUndefined();
  });

  it('starts nothing for a compute that never failed', () => {
    expect(run(['ABSENT', 'CREATING', 'ACTIVE', 'DELETING', 'ABSENT'])).toEqual(Array(5).fill(undefined));
  });
});

describe('the create back-off in decideAction', () => {
  const compute = {
    name: 'gpu-a10g-1x',
    spec: builtin('gpu-a10g-1x').spec,
    status: { nodegroupStatus: 'ABSENT' as const, desiredNodes: 0, readyNodes: 0 },
  };
  const retry = run(['CREATE_FAILED', 'DELETING', 'ABSENT'])[2]!;

  it('waits with the ABSENT group until the next attempt is due, saying what failed and when', () => {
    const wait = decideAction({ compute, needed: 1, retry, now: at(4) });
    expect(wait).toEqual({ kind: 'none', why: retryMessage(retry) });
    expect(retryMessage(retry)).toBe(
      `CREATE_FAILED: ${MSG} (1 failed create since ${at(0).toISOString()}; next create attempt at ${at(5).toISOString()})`,
    );
    expect(mayCreate(retry, at(5))).toBe(true);
    expect(decideAction({ compute, needed: 1, retry, now: at(5) })).toMatchObject({ kind: 'provision' });
  });

  it('still deletes the failed group at once: only the create waits', () => {
    const failed = { ...compute, status: { ...compute.status, nodegroupStatus: 'CREATE_FAILED' as const } };
    expect(decideAction({ compute: failed, needed: 1, retry, now: at(1) }).kind).toBe('delete');
  });
});
