/**
 * The embedded metric format as CloudWatch Logs extracts it from a log event: each directive's metrics, once per
 * dimension set. A metric's identity is namespace + name + that one full set of dimensions (names and values),
 * which is why a metric published under {service, stage} is invisible to an alarm on {service, stage, Scope}.
 */

export interface Dimension {
  Name: string;
  Value: string;
}

export interface ExtractedMetric {
  namespace: string;
  name: string;
  /** In the order the dimension set lists them; identity ignores the order. */
  dimensions: Dimension[];
  timestamp: number;
  values: number[];
  unit: string;
  storageResolution: 1 | 60;
}

export interface Extraction {
  /** False when the event is not an EMF document at all (an ordinary log line). */
  emf: boolean;
  metrics: ExtractedMetric[];
  /** Why a directive or metric was dropped, as CloudWatch counts it in AWS/Logs EMFValidationErrors. */
  errors: string[];
}

export const METRIC_UNITS = [
  'Seconds',
  'Microseconds',
  'Milliseconds',
  'Bytes',
  'Kilobytes',
  'Megabytes',
  'Gigabytes',
  'Terabytes',
  'Bits',
  'Kilobits',
  'Megabits',
  'Gigabits',
  'Terabits',
  'Percent',
  'Count',
  'Bytes/Second',
  'Kilobytes/Second',
  'Megabytes/Second',
  'Gigabytes/Second',
  'Terabytes/Second',
  'Bits/Second',
  'Kilobits/Second',
  'Megabits/Second',
  'Gigabits/Second',
  'Terabits/Second',
  'Count/Second',
  'None',
] as const;

const MAX_DIMENSIONS = 30;
const MAX_METRICS = 100;
const MAX_VALUES = 100;
/** CloudWatch accepts datapoints up to two weeks old and two hours ahead of its clock. */
export const MAX_AGE_MS = 14 * 24 * 3600_000;
export const MAX_AHEAD_MS = 2 * 3600_000;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function extractEmf(message: string, now: number): Extraction {
  const text = message.trim();
  if (!text.startsWith('{')) return { emf: false, metrics: [], errors: [] };
  let root: unknown;
  try {
    root = JSON.parse(text);
  } catch {
    return { emf: false, metrics: [], errors: [] };
  }
  if (!isObject(root) || !isObject(root._aws) || !('CloudWatchMetrics' in root._aws))
    return { emf: false, metrics: [], errors: [] };
  const meta = root._aws;
  const errors: string[] = [];
  const ts = meta.Timestamp;
  if (typeof ts !== 'number' || !Number.isFinite(ts))
    return { emf: true, metrics: [], errors: ['_aws.Timestamp must be a number of milliseconds'] };
  if (ts < now - MAX_AGE_MS || ts > now + MAX_AHEAD_MS)
    return {
      emf: true,
      metrics: [],
      errors: [`_aws.Timestamp ${new Date(ts).toISOString()} is over 14 days old or over 2 hours ahead`],
    };
  if (!Array.isArray(meta.CloudWatchMetrics))
    return { emf: true, metrics: [], errors: ['_aws.CloudWatchMetrics must be an array'] };
  const metrics = meta.CloudWatchMetrics.flatMap((d, di) => directive(root, d, di, ts, errors));
  return { emf: true, metrics, errors };
}

/** One MetricDirective: its metrics once per dimension set, or nothing (and why) when it is not valid. */
function directive(
  root: Record<string, unknown>,
  d: unknown,
  di: number,
  ts: number,
  errors: string[],
): ExtractedMetric[] {
  const out: ExtractedMetric[] = [];
  const fail = (why: string): ExtractedMetric[] => {
    errors.push(why);
    return [];
  };
  const where = `CloudWatchMetrics[${di}]`;
  if (!isObject(d)) return fail(`${where} must be an object`);
  const ns = d.Namespace;
  if (typeof ns !== 'string' || ns.length < 1 || ns.length > 255)
    return fail(`${where}.Namespace must be a string of 1-255 characters`);
  if (!Array.isArray(d.Dimensions)) return fail(`${where}.Dimensions must be an array`);
  if (!Array.isArray(d.Metrics) || d.Metrics.length > MAX_METRICS)
    return fail(`${where}.Metrics must be an array of at most ${MAX_METRICS}`);
  const sets: Dimension[][] = [];
  for (const [si, set] of d.Dimensions.entries()) {
    if (!Array.isArray(set) || set.length > MAX_DIMENSIONS || set.some((k) => typeof k !== 'string'))
      return fail(`${where}.Dimensions[${si}] must list at most ${MAX_DIMENSIONS} keys`);
    const dims: Dimension[] = [];
    for (const key of set as string[]) {
      const value = root[key];
      if (typeof value !== 'string' || value.length < 1 || value.length > 1024)
        return fail(`dimension ${key} must be a member of the root with a string value`);
      dims.push({ Name: key, Value: value });
    }
    sets.push(dims);
  }
  // An empty Dimensions array publishes each metric once, without dimensions.
  if (sets.length === 0) sets.push([]);
  for (const def of d.Metrics) {
    if (!isObject(def) || typeof def.Name !== 'string' || def.Name.length < 1) {
      errors.push(`${where}.Metrics: every metric needs a Name`);
      continue;
    }
    const unit = def.Unit === undefined ? 'None' : def.Unit;
    if (typeof unit !== 'string' || !(METRIC_UNITS as readonly string[]).includes(unit)) {
      errors.push(`metric ${def.Name}: unit ${String(unit)} is not a CloudWatch unit`);
      continue;
    }
    const raw = root[def.Name];
    const values = Array.isArray(raw) ? raw : [raw];
    if (
      values.length === 0 ||
      values.length > MAX_VALUES ||
      values.some((v) => typeof v !== 'number' || !Number.isFinite(v))
    ) {
      errors.push(`metric ${def.Name} must be a number or an array of at most ${MAX_VALUES} numbers`);
      continue;
    }
    const storageResolution = def.StorageResolution === 1 ? 1 : 60;
    for (const dimensions of sets) {
      out.push({
        namespace: ns,
        name: def.Name,
        dimensions,
        timestamp: ts,
        values: values as number[],
        unit,
        storageResolution,
      });
    }
  }

  return out;
}

/** The identity CloudWatch keys a metric by: dimension order does not matter, names and values do. */
export function metricKey(namespace: string, name: string, dimensions: readonly Dimension[]): string {
  const dims = [...dimensions].sort((a, b) => (a.Name < b.Name ? -1 : a.Name > b.Name ? 1 : 0));
  return JSON.stringify([namespace, name, dims.map((d) => [d.Name, d.Value])]);
}
