import * as autoScaling from '@aws-sdk/client-auto-scaling';
import * as dynamodb from '@aws-sdk/client-dynamodb';
import * as eks from '@aws-sdk/client-eks';
import { NormalizedSchema } from '@smithy/core/schema';

/**
 * Runs the Task states of an ASL definition the way Step Functions does, with the real SDK clients pointed at
 * configurable endpoints: `arn:aws:states:::aws-sdk:<service>:<action>` (PascalCase parameters and results,
 * converted through the SDK's own service schema so that map keys such as labels and tags are left alone) and
 * the optimized `arn:aws:states:::dynamodb:<getItem|putItem|updateItem|deleteItem>`. Errors are thrown with
 * the names Step Functions gives them (`Eks.ResourceInUseException`, `DynamoDB.ConditionalCheckFailedException`,
 * `DynamoDB.RequestLimitExceeded`) so that Retry and Catch match exactly as in AWS.
 */

export type Json = string | number | boolean | null | Json[] | { [k: string]: Json };

export interface DispatcherOptions {
  region?: string;
  /** Endpoint per service id of the ARN (eks, autoscaling, dynamodb); undefined means the AWS default. */
  endpoints: { eks?: string; autoscaling?: string; dynamodb?: string };
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

type SdkModule = Record<string, unknown>;
type AnyClient = { send(c: unknown): Promise<Record<string, unknown>>; destroy(): void };
type CommandCtor = new (input: Record<string, unknown>) => { schema?: unknown };

interface Service {
  module: SdkModule;
  clientName: string;
  /** How Step Functions names the service in error names of the AWS SDK integration. */
  errorPrefix: string;
}

const SERVICES: Record<string, Service> = {
  eks: { module: eks as unknown as SdkModule, clientName: 'EKSClient', errorPrefix: 'Eks' },
  autoscaling: {
    module: autoScaling as unknown as SdkModule,
    clientName: 'AutoScalingClient',
    errorPrefix: 'AutoScaling',
  },
  dynamodb: {
    module: dynamodb as unknown as SdkModule,
    clientName: 'DynamoDBClient',
    errorPrefix: 'DynamoDb',
  },
};

/**
 * The optimized DynamoDB integration. Its errors are `DynamoDB.` and DynamoDB's own error code, as DynamoDB
 * sends it (`DynamoDB.RequestLimitExceeded`, `DynamoDB.InternalServerError`: no `Exception` added, unlike
 * the AWS SDK integration's `DynamoDb.` names), and `DynamoDB.AmazonDynamoDBException` when no code came back.
 */
const OPTIMIZED_DYNAMODB = new Set(['getItem', 'putItem', 'updateItem', 'deleteItem']);
export const OPTIMIZED_DYNAMODB_PREFIX = 'DynamoDB';

/** An error as a Task state raises it: `name` is what Retry/Catch match, `message` becomes the Cause. */
export class TaskError extends Error {
  constructor(name: string, cause: string) {
    super(cause);
    this.name = name;
  }
}

export interface ParsedResource {
  service: string;
  action: string;
  errorPrefix: string;
}

export function parseResource(resource: string): ParsedResource {
  const sdk = /^arn:aws:states:::aws-sdk:([a-z0-9]+):([A-Za-z0-9]+)$/.exec(resource);
  if (sdk) {
    const service = SERVICES[sdk[1]!];
    if (!service) throw new TaskError('States.Runtime', `aws-sdk service ${sdk[1]} is not supported locally`);
    return { service: sdk[1]!, action: sdk[2]!, errorPrefix: service.errorPrefix };
  }
  const ddb = /^arn:aws:states:::dynamodb:([A-Za-z]+)$/.exec(resource);
  if (ddb && OPTIMIZED_DYNAMODB.has(ddb[1]!))
    return { service: 'dynamodb', action: ddb[1]!, errorPrefix: OPTIMIZED_DYNAMODB_PREFIX };
  throw new TaskError('States.Runtime', `Task resource ${resource} is not supported by the local runner`);
}

const pascal = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Step Functions always ends an SDK error name with Exception (S3 NoSuchKey → S3.NoSuchKeyException). */
export function stepFunctionsErrorName(prefix: string, sdkName: string): string {
  return `${prefix}.${sdkName.endsWith('Exception') ? sdkName : `${sdkName}Exception`}`;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** PascalCase task parameters → SDK input, following the schema (structure members renamed, map keys kept). */
export function toSdk(ns: NormalizedSchema, value: unknown, path = '$'): unknown {
  if (value === null || value === undefined) return value;
  if (ns.isStructSchema() || ns.isUnionSchema()) {
    if (!isObject(value)) throw new TaskError('States.Runtime', `${path} must be an object`);
    const out: Record<string, unknown> = {};
    const known = new Set<string>();
    for (const [member, memberNs] of ns.structIterator()) {
      const key = pascal(member);
      known.add(key);
      if (key in value) out[member] = toSdk(memberNs, value[key], `${path}.${key}`);
    }
    const unknown = Object.keys(value).filter((k) => !known.has(k));
    // Step Functions rejects unknown fields too: a misspelt parameter must not be silently dropped.
    if (unknown.length) {
      throw new TaskError(
        'States.Runtime',
        `${path}: field(s) ${unknown.join(', ')} not in ${ns.getName() ?? 'the request'}`,
      );
    }
    return out;
  }
  if (ns.isListSchema()) {
    if (!Array.isArray(value)) throw new TaskError('States.Runtime', `${path} must be an array`);
    return value.map((v, i) => toSdk(ns.getValueSchema(), v, `${path}[${i}]`));
  }
  if (ns.isMapSchema()) {
    if (!isObject(value)) throw new TaskError('States.Runtime', `${path} must be an object`);
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, toSdk(ns.getValueSchema(), v, `${path}.${k}`)]),
    );
  }
  if (ns.isTimestampSchema() && (typeof value === 'string' || typeof value === 'number')) {
    return new Date(typeof value === 'number' ? value * 1000 : value);
  }
  if (ns.isBlobSchema() && typeof value === 'string') return Buffer.from(value, 'base64');
  return value;
}

/** SDK output → the PascalCase JSON a Task state result has (timestamps as ISO strings, blobs as base64). */
export function fromSdk(ns: NormalizedSchema, value: unknown): Json {
  if (value === null || value === undefined) return null;
  if (ns.isStructSchema() || ns.isUnionSchema()) {
    const v = value as Record<string, unknown>;
    const out: Record<string, Json> = {};
    for (const [member, memberNs] of ns.structIterator()) {
      if (v[member] !== undefined) out[pascal(member)] = fromSdk(memberNs, v[member]);
    }
    return out;
  }
  if (ns.isListSchema()) return (value as unknown[]).map((x) => fromSdk(ns.getValueSchema(), x));
  if (ns.isMapSchema()) {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, x]) => [k, fromSdk(ns.getValueSchema(), x)]),
    );
  }
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (typeof value === 'bigint') return Number(value);
  return value as Json;
}

type SdkError = Error & { $metadata?: { httpStatusCode?: number; requestId?: string }; $fault?: string };

/**
 * Renames an SDK failure as Step Functions does. AWS SDK integration: `<Service>.<Name>Exception`, and
 * SdkClientException for failures without a service answer. Optimized DynamoDB: `DynamoDB.<error code>` with
 * the Java SDK's cause text, and AmazonDynamoDBException without an answer.
 */
export function toTaskError(prefix: string, e: unknown): TaskError {
  const err = e as SdkError;
  if (err instanceof TaskError) return err;
  const answered = err?.$metadata?.httpStatusCode !== undefined || err?.$fault !== undefined;
  const status = err?.$metadata?.httpStatusCode ?? 'unknown';
  const requestId = err?.$metadata?.requestId ?? 'none';
  if (prefix === OPTIMIZED_DYNAMODB_PREFIX) {
    if (!answered)
      return new TaskError(
        `${prefix}.AmazonDynamoDBException`,
        `Unable to execute HTTP request: ${err?.message ?? String(e)}`,
      );
    return new TaskError(
      `${prefix}.${err.name}`,
      `${err.message} (Service: AmazonDynamoDBv2; Status Code: ${status}; Error Code: ${err.name}; Request ID: ${requestId}; Proxy: null)`,
    );
  }
  if (answered) {
    return new TaskError(
      stepFunctionsErrorName(prefix, err.name),
      `${err.message} (Service: ${prefix}, Status Code: ${status}, Request ID: ${requestId})`,
    );
  }
  return new TaskError(
    `${prefix}.SdkClientException`,
    `Unable to execute HTTP request: ${err?.message ?? String(e)}`,
  );
}

export interface TaskDispatcher {
  dispatch(resource: string, parameters: unknown): Promise<Json>;
  /** Refuses new calls, waits for the ones in flight (an aborted execution's Task still runs), then closes the clients. */
  destroy(): Promise<void>;
}

export function createDispatcher(opts: DispatcherOptions): TaskDispatcher {
  const clients = new Map<string, AnyClient>();
  const client = (service: string): AnyClient => {
    let c = clients.get(service);
    if (!c) {
      const svc = SERVICES[service]!;
      const Ctor = svc.module[svc.clientName] as new (cfg: Record<string, unknown>) => AnyClient;
      c = new Ctor({
        region: opts.region ?? process.env.AWS_REGION ?? 'us-east-1',
        endpoint: opts.endpoints[service as keyof DispatcherOptions['endpoints']],
        credentials: opts.credentials ?? {
          accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'local',
          secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
        },
        // One attempt per Task try: retries belong to the state's Retry, as in Step Functions.
        maxAttempts: 1,
      });
      clients.set(service, c);
    }
    return c;
  };

  // A stopped execution's Task keeps its HTTP call going: stop waits for it rather than leave it to outlive the
  // simulator it talks to (and the test that started it).
  const inflight = new Set<Promise<unknown>>();
  let destroyed = false;

  return {
    async dispatch(resource, parameters) {
      if (destroyed) throw new TaskError('States.Runtime', 'the local Step Functions has stopped');
      const { service, action, errorPrefix } = parseResource(resource);
      const Command = SERVICES[service]!.module[`${pascal(action)}Command`] as CommandCtor | undefined;
      if (!Command) throw new TaskError('States.Runtime', `${service} has no action ${action}`);
      const opSchema = new Command({}).schema as unknown[] | undefined;
      if (!Array.isArray(opSchema))
        throw new TaskError('States.Runtime', `no schema for ${service}:${action}`);
      const inputNs = NormalizedSchema.of(opSchema[4] as never);
      const outputNs = NormalizedSchema.of(opSchema[5] as never);
      const input = toSdk(inputNs, parameters ?? {}) as Record<string, unknown>;
      let output: Record<string, unknown>;
      const call = client(service).send(new Command(input));
      inflight.add(call);
      try {
        output = await call;
      } catch (e) {
        throw toTaskError(errorPrefix, e);
      } finally {
        inflight.delete(call);
      }
      return fromSdk(outputNs, output);
    },
    async destroy() {
      destroyed = true;
      await Promise.allSettled([...inflight]);
      for (const c of clients.values()) c.destroy();
      clients.clear();
    },
  };
}
