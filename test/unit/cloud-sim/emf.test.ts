import { extractEmf } from '../../../local/cloud-sim/emf';

/** EMF as CloudWatch Logs extracts it (the CloudWatch embedded metric format specification). */

const now = Date.UTC(2026, 0, 1, 12);
const doc = (o: Record<string, unknown>, meta: Record<string, unknown> = {}) =>
  JSON.stringify({
    _aws: {
      Timestamp: now,
      CloudWatchMetrics: [
        {
          Namespace: 'app',
          Dimensions: [['service', 'Scope'], ['service']],
          Metrics: [{ Name: 'M', Unit: 'Count' }],
        },
      ],
      ...meta,
    },
    service: 'svc',
    Scope: 'team:ml',
    M: 1,
    ...o,
  });

describe('EMF extraction', () => {
  it('makes one metric per dimension set, each with all of that set and nothing else', () => {
    const x = extractEmf(doc({}), now);
    expect(x.metrics.map((m) => m.dimensions)).toEqual([
      [
        { Name: 'service', Value: 'svc' },
        { Name: 'Scope', Value: 'team:ml' },
      ],
      [{ Name: 'service', Value: 'svc' }],
    ]);
    expect(x.metrics[0]).toMatchObject({
      namespace: 'app',
      name: 'M',
      values: [1],
      unit: 'Count',
      timestamp: now,
    });
  });

  it('reads arrays of values as several samples', () => {
    expect(extractEmf(doc({ M: [1, 2, 3] }), now).metrics[0]!.values).toEqual([1, 2, 3]);
  });

  it('drops a directive whose dimension is not a string member of the root', () => {
    const x = extractEmf(doc({ Scope: 3 }), now);
    expect(x.metrics).toEqual([]);
    expect(x.errors[0]).toMatch(/dimension Scope/);
  });

  it('refuses more than 30 dimensions in a set', () => {
    const keys = Array.from({ length: 31 }, (_, i) => `d${i}`);
    const root = Object.fromEntries(keys.map((k) => [k, 'v']));
    const line = JSON.stringify({
      _aws: {
        Timestamp: now,
        CloudWatchMetrics: [{ Namespace: 'app', Dimensions: [keys], Metrics: [{ Name: 'M' }] }],
      },
      ...root,
      M: 1,
    });
    expect(extractEmf(line, now).errors[0]).toMatch(/at most 30/);
  });

  it('drops datapoints over two weeks old or over two hours ahead of CloudWatch', () => {
    expect(extractEmf(doc({}, { Timestamp: now - 15 * 86400_000 }), now).metrics).toEqual([]);
    expect(extractEmf(doc({}, { Timestamp: now + 3 * 3600_000 }), now).metrics).toEqual([]);
    expect(extractEmf(doc({}, { Timestamp: now + 3600_000 }), now).metrics).toHaveLength(2);
  });

  it('skips a metric whose value is missing or whose unit is unknown, keeping the others', () => {
    const line = JSON.stringify({
      _aws: {
        Timestamp: now,
        CloudWatchMetrics: [
          {
            Namespace: 'app',
            Dimensions: [[]],
            Metrics: [{ Name: 'A' }, { Name: 'B', Unit: 'Furlongs' }, { Name: 'C' }],
          },
        ],
      },
      A: 1,
      B: 2,
    });
    const x = extractEmf(line, now);
    expect(x.metrics.map((m) => m.name)).toEqual(['A']);
    expect(x.errors).toHaveLength(2);
  });

  it('leaves ordinary log lines alone', () => {
    expect(extractEmf('{"level":"INFO","message":"reconcile pass"}', now)).toEqual({
      emf: false,
      metrics: [],
      errors: [],
    });
    expect(extractEmf('START RequestId: x', now).emf).toBe(false);
  });
});
