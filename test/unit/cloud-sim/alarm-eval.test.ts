import { evaluateAlarm, evaluationRange, type TreatMissingData } from '../../../local/cloud-sim/alarm-eval';

/**
 * CloudWatch's rules for M out of N and missing data. The tables are the CloudWatch user guide's ("How alarm state
 * is evaluated when data is missing"): 0 a good datapoint, X a breaching one, - none; oldest on the left.
 */

const TREATS: TreatMissingData[] = ['missing', 'ignore', 'breaching', 'notBreaching'];
const RETAIN = undefined;
const INSUFFICIENT = 'INSUFFICIENT_DATA';

function state(row: string, n: number, m: number, treat: TreatMissingData) {
  const points = row.split(' ').map((c) => (c === '-' ? undefined : c === 'X' ? 1 : 0));
  return evaluateAlarm({ points, n, m, treat, breaches: (v) => v >= 1 }).state;
}

describe('CloudWatch alarm evaluation', () => {
  it('looks at N + 2 periods (5 for 3, as the guide shows)', () => {
    expect(evaluationRange(3)).toBe(5);
  });

  const table = (n: number, m: number, rows: [string, ...(string | undefined)[]][]) => {
    for (const [row, ...want] of rows) {
      it(`${m} of ${n}: ${row} → ${want.map((w) => w ?? 'retain').join(' / ')}`, () => {
        expect(TREATS.map((t) => state(row, n, m, t))).toEqual(want);
      });
    }
  };

  describe("3 of 3 (the guide's first table)", () => {
    //                      missing       ignore  breaching notBreaching
    table(3, 3, [
      ['0 - X - X', 'OK', 'OK', 'OK', 'OK'],
      ['0 - - - -', 'OK', 'OK', 'OK', 'OK'],
      ['- - - - -', INSUFFICIENT, RETAIN, 'ALARM', 'OK'],
      ['0 X X - X', 'ALARM', 'ALARM', 'ALARM', 'ALARM'],
      ['- - - - X', INSUFFICIENT, RETAIN, 'ALARM', 'OK'],
      ['X - - - -', 'ALARM', RETAIN, 'ALARM', 'OK'],
    ]);
  });

  describe("2 of 3 (the guide's second table)", () => {
    table(3, 2, [
      ['0 - X - X', 'ALARM', 'ALARM', 'ALARM', 'ALARM'],
      ['0 0 X 0 X', 'ALARM', 'ALARM', 'ALARM', 'ALARM'],
      ['0 - X - -', 'OK', 'OK', 'ALARM', 'OK'],
      ['- - - - 0', 'OK', 'OK', 'ALARM', 'OK'],
      ['- - - - X', INSUFFICIENT, RETAIN, 'ALARM', 'OK'],
    ]);
  });

  it('needs M breaching datapoints among the N most recent, not consecutive ones', () => {
    expect(state('0 0 X 0 X 0 X', 5, 3, 'missing')).toBe('ALARM');
    expect(state('X X X 0 X 0 0', 5, 3, 'missing')).toBe('OK');
  });

  it('counts only real datapoints when enough of them are in the range, whatever the treatment', () => {
    for (const t of TREATS) expect(state('X X X - -', 3, 3, t)).toBe('ALARM');
  });

  it('with 1 of 1 and missing data breaching, fires when the 3 periods of its range had no data (ReconcileStale)', () => {
    expect(evaluationRange(1)).toBe(3);
    expect(state('0 - -', 1, 1, 'breaching')).toBe('OK');
    expect(state('- - -', 1, 1, 'breaching')).toBe('ALARM');
    // The first pass of a new stage is enough; 1 of 3 would fill two breaching datapoints beside it and page.
    expect(state('- - - - 0', 3, 1, 'breaching')).toBe('ALARM');
  });
});
