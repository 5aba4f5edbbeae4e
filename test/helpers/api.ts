import { randomUUID } from 'node:crypto';
import { createHandler, handle, resetApp } from '../../lambdas/api/app';
import type { Event } from '../../lambdas/api/http';
import type { Dependencies } from '../../lambdas/service';
import { createApiServices } from '../../lambdas/service/for-api';
import { resetConfig } from '../../lambdas/shared/config';
import { iamAuthorizerOf } from '../../local/identity';
import { startTestAdmitter, type TestAdmitter } from './admitter';
import { freshTable } from './table';

/**
 * Calls the API handler in-process with API Gateway v2 events, as AWS would, against DynamoDB Local.
 * `as(principal)` switches the caller, presented as API Gateway's IAM authorizer presents the principal that
 * signed (a role ARN as one of its sessions; local/identity.ts); `platform-admin` is a platform admin here.
 */
export interface ApiResult<T = any> {
  status: number;
  headers: Record<string, string>;
  body: T;
}

export interface TestApi {
  table: string;
  /** The admitter this table's stream drives (test/helpers/admitter.ts). */
  admitter: TestAdmitter;
  call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    opts?: { principal?: string; headers?: Record<string, string>; raw?: string; settle?: boolean },
  ): Promise<ApiResult<T>>;
  as(principal: string): Omit<TestApi, 'as' | 'table' | 'admitter'>;
}

export const ADMIN = 'arn:aws:iam::111111111111:role/platform-admin';
/** Who requests signed by `arn` come from, and so what `createdBy` records: for a role, a session of it. */
export const callerArn = (arn: string) => iamAuthorizerOf(arn).userArn;
export const ADMIN_SESSION = callerArn(ADMIN);

/** A request as API Gateway v2 hands it to the Lambda, signed by `principal` (ADMIN when absent). */
export function apiEvent(
  method: string,
  path: string,
  body?: unknown,
  o: { principal?: string; headers?: Record<string, string>; raw?: string } = {},
): Event {
  const [rawPath, qs = ''] = path.split('?');
  const raw = o.raw ?? (body === undefined ? undefined : JSON.stringify(body));
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString: qs,
    headers: { 'content-type': 'application/json', ...(o.headers ?? {}) },
    queryStringParameters: qs ? Object.fromEntries(new URLSearchParams(qs)) : undefined,
    body: raw,
    isBase64Encoded: false,
    requestContext: {
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'jest' },
      requestId: randomUUID(),
      authorizer: { iam: iamAuthorizerOf(o.principal ?? ADMIN) },
    },
  } as unknown as Event;
}

/** `deps` replaces some of the services' dependencies (service/index.ts), as a deployment would wire its own. */
export async function testApi(
  opts: { admins?: string[]; stage?: string; deps?: Partial<Dependencies> } = {},
): Promise<TestApi> {
  const table = await freshTable('api');
  process.env.LLMCAP_ADMINS = (opts.admins ?? [ADMIN]).join(',');
  process.env.LLMCAP_STAGE = opts.stage ?? 'test';
  resetConfig();
  resetApp();
  const handler = opts.deps ? createHandler(createApiServices(opts.deps)) : handle;
  const admitter = await startTestAdmitter(table);
  const call: TestApi['call'] = async (method, path, body, o = {}) => {
    const res = await handler(apiEvent(method, path, body, o));
    // A write is stored as intent and decided by the admitter moments later: the next read sees the decision,
    // as a client that waits (`llmcap apply --wait`) would. The write's own answer is as the API gave it.
    // A refused write stored nothing, so there is nothing to wait for.
    if (o.settle !== false && method !== 'GET' && (res.statusCode ?? 200) < 300 && !path.includes('dryRun'))
      await admitter.settled();
    const text = typeof res.body === 'string' ? res.body : '';
    return {
      status: res.statusCode ?? 200,
      headers: (res.headers ?? {}) as Record<string, string>,
      body: text ? JSON.parse(text) : undefined,
    };
  };
  return {
    table,
    admitter,
    call,
    as: (principal) => ({ call: (m, p, b, o = {}) => call(m, p, b, { ...o, principal }) }),
  };
}
