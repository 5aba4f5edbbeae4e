/**
 * How CloudWatch decides a metric alarm's state from the datapoints of its evaluation range, as the CloudWatch
 * user guide describes it ("How alarm state is evaluated when data is missing", with its two example tables,
 * which test/unit/cloud-sim/alarm-eval.test.ts replays row by row). Pure: no clock, no storage.
 */

export type AlarmState = 'OK' | 'ALARM' | 'INSUFFICIENT_DATA';
export type TreatMissingData = 'missing' | 'notBreaching' | 'breaching' | 'ignore';

export interface EvaluationInput {
  /** One aggregated value per period of the evaluation range, oldest first; undefined = no data that period. */
  points: (number | undefined)[];
  /** EvaluationPeriods (N). */
  n: number;
  /** DatapointsToAlarm (M). */
  m: number;
  treat: TreatMissingData;
  breaches(value: number): boolean;
}

export interface Evaluation {
  /** undefined: keep the current state (ignore, with nothing to decide on). */
  state: AlarmState | undefined;
  /** Indices into points of the real datapoints that were evaluated, newest first. */
  evaluated: number[];
  breachingReal: number;
  /** Missing datapoints filled in with the treatment (breaching or notBreaching), at most N - real. */
  filled: number;
  /** Every point of the range was missing. */
  allMissing: boolean;
}

/**
 * The evaluation range holds more periods than N (the guide's example: 5 for N = 3). The guide says only that it
 * depends on the period; N + 2 reproduces its examples and is what the simulator assumes.
 */
export function evaluationRange(n: number): number {
  return n + 2;
}

export function evaluateAlarm({ points, n, m, treat, breaches }: EvaluationInput): Evaluation {
  const real: number[] = [];
  for (let i = points.length - 1; i >= 0; i--) if (points[i] !== undefined) real.push(i);
  const k = real.length;
  if (k === 0) {
    const state = { missing: 'INSUFFICIENT_DATA', ignore: undefined, breaching: 'ALARM', notBreaching: 'OK' }[
      treat
    ] as AlarmState | undefined;
    const filled = treat === 'breaching' || treat === 'notBreaching' ? n : 0;
    return { state, evaluated: [], breachingReal: 0, filled, allMissing: true };
  }
  // Enough real datapoints: the N most recent ones decide, and the treatment of missing data is not needed.
  if (k >= n) {
    const evaluated = real.slice(0, n);
    const b = evaluated.filter((i) => breaches(points[i] as number)).length;
    return { state: b >= m ? 'ALARM' : 'OK', evaluated, breachingReal: b, filled: 0, allMissing: false };
  }
  // Fewer than N: every real datapoint counts, and missing ones are filled in as few times as possible.
  const b = real.filter((i) => breaches(points[i] as number)).length;
  const base = { evaluated: real, breachingReal: b, allMissing: false };
  if (treat === 'breaching') {
    const filled = n - k;
    return { ...base, filled, state: b + filled >= m ? 'ALARM' : 'OK' };
  }
  if (treat === 'notBreaching') return { ...base, filled: n - k, state: b >= m ? 'ALARM' : 'OK' };
  // missing and ignore fill nothing: M breaching datapoints alarm, one good one is OK, else it is undecided.
  if (b >= m) return { ...base, filled: 0, state: 'ALARM' };
  if (b < k) return { ...base, filled: 0, state: 'OK' };
  if (treat === 'ignore') return { ...base, filled: 0, state: undefined };
  // The guide's sixth row: breaching data only from before the last N periods still alarms; recent breaching data
  // short of M is insufficient.
  const older = real.every((i) => i < points.length - n);
  return { ...base, filled: 0, state: older ? 'ALARM' : 'INSUFFICIENT_DATA' };
}
