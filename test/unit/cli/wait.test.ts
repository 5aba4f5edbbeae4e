import { decidedState, runningState } from '../../../cli/watch';

/**
 * When `apply --wait` stops waiting: a model is decided once its status is of the version applied and none of
 * its replicas is Queued (admission decided later says so with that reason); --running, once every admitted
 * replica has a Ready pod.
 */

const model = (status: Record<string, unknown>, version = 3) => ({ metadata: { version }, status });

describe('decidedState', () => {
  it('waits while replicas are Queued for admission, and is done once they are decided', () => {
    const queued = model({
      admitted: 0,
      pending: 2,
      reasons: [{ reason: 'Queued', replicas: 2, message: '' }],
    });
    expect(decidedState(queued, 3)).toEqual({ done: false, text: '2 replicas Queued for admission' });
    const decided = model({
      admitted: 1,
      borrowed: 1,
      pending: 1,
      reasons: [{ reason: 'OverQuota', replicas: 1 }],
    });
    expect(decidedState(decided, 3)).toEqual({
      done: true,
      text: 'decided: 1 admitted (1 borrowed), 1 pending (OverQuota)',
    });
  });

  it('waits while the status is of a version before the one applied', () => {
    const stale = model({ observedVersion: 2, admitted: 1, pending: 0, reasons: [] });
    expect(decidedState(stale, 3)).toEqual({
      done: false,
      text: 'waiting for admission of version 3 (status is of version 2)',
    });
    expect(decidedState(model({ observedVersion: 3, admitted: 1, pending: 0 }), 3).done).toBe(true);
  });
});

describe('runningState', () => {
  const m = (admitted: number, target: number) => ({
    spec: { scaling: { min: target } },
    status: { admitted, pending: 0 },
  });
  it('is done when every admitted replica has a Ready pod, and says why the others are not', () => {
    const pods = [{ ready: true }, { ready: false, reason: 'Unschedulable' }];
    expect(runningState(m(2, 2), pods)).toEqual({
      done: false,
      text: '1/2 pods Ready (others Unschedulable)',
    });
    expect(runningState(m(2, 2), [{ ready: true }, { ready: true }]).done).toBe(true);
  });

  it('is not done while nothing is admitted of a model that asks for replicas, and done for one that asks none', () => {
    expect(runningState(m(0, 1), []).done).toBe(false);
    expect(runningState(m(0, 0), []).done).toBe(true);
  });
});
