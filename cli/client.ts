import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

/**
 * The HTTP client of the CLI: JSON in and out, problem+json errors as ApiError, SigV4 for a deployed API.
 * The AWS SDK pieces are imported only when a request is signed, so that local use starts fast.
 */

export const LOCAL_ENDPOINT = 'http://127.0.0.1:3000';
/** Items asked for per page of a list (`--chunk-size`): the API's own default page size. */
export const DEFAULT_CHUNK_SIZE = 500;
/** The API's largest page (lambdas/api/paging.ts MAX_LIMIT). */
export const MAX_CHUNK_SIZE = 1000;
const VERSION = '0.1.0';

export interface FieldIssue {
  path: string;
  message: string;
}

export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  reason?: string;
  errors?: FieldIssue[];
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: T;
}

/** A response with status ≥ 400; `problem` is set when the body was problem+json (or any JSON object). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly method: string,
    readonly path: string,
    readonly problem: Problem | undefined,
    readonly raw: string,
  ) {
    super(problem?.detail ?? (raw || `HTTP ${status}`));
    this.name = 'ApiError';
  }
}

/** The API could not be reached, or answered something that is not HTTP we understand. */
export class NetworkError extends Error {
  override name = 'NetworkError';
}

/** Local configuration the CLI cannot work with: no credentials, no region, a stack without an ApiUrl. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export interface ClientOptions {
  endpoint: string;
  sign: boolean;
  region?: string;
  /** Sent as x-llmcap-principal; only the local control plane honours it. */
  principal?: string;
  timeoutMs?: number;
}

type Signer = (req: SignableRequest) => Promise<Record<string, string>>;

interface SignableRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string;
}

export class Client {
  readonly endpoint: string;
  private signer?: Promise<Signer>;

  constructor(readonly opts: ClientOptions) {
    this.endpoint = normalizeEndpoint(opts.endpoint);
  }

  async request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    extraHeaders: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    const url = new URL(this.endpoint + path);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    let headers: Record<string, string> = {
      host: url.host,
      accept: 'application/json, application/problem+json',
      'user-agent': `llmcap-cli/${VERSION}`,
      ...(payload !== undefined
        ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }
        : {}),
      ...extraHeaders,
    };
    if (this.opts.sign) {
      this.signer ??= makeSigner(this.opts.region ?? regionOf(url));
      headers = await (await this.signer)({ method, url, headers, body: payload });
    } else if (this.opts.principal !== undefined) {
      headers['x-llmcap-principal'] = this.opts.principal;
    }
    const res = await send(method, url, headers, payload, this.opts.timeoutMs ?? 60_000);
    const text = res.text;
    let parsed: unknown;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    if (res.status >= 400) {
      const problem =
        parsed && typeof parsed === 'object' && !Array.isArray(parsed)
          ? toProblem(parsed as Record<string, unknown>)
          : undefined;
      throw new ApiError(res.status, method, path, problem, text);
    }
    if (text && parsed === undefined) {
      throw new NetworkError(`${method} ${path} answered ${res.status} with a body that is not JSON`);
    }
    return { status: res.status, headers: res.headers, body: parsed as T };
  }

  get<T = any>(path: string) {
    return this.request<T>('GET', path);
  }

  /**
   * Every page of a list (GET `path` with `?limit=` and `?continue=`, until a page carries no
   * metadata.continue), as one body: the pages' items in order, and the first page's other fields (notes on
   * the whole list, such as skipped rows). A one-page list keeps its ETag, so `get -w` can ask for a 304.
   */
  async list<T = any>(
    path: string,
    chunkSize = DEFAULT_CHUNK_SIZE,
    /** The first page, when the caller read it already (`get -w` asks for it with an ETag). */
    read?: ApiResponse,
  ): Promise<ApiResponse<T>> {
    const first = read ?? (await this.request('GET', this.pagePath(path, chunkSize)));
    let token: unknown = first.body?.metadata?.continue;
    if (typeof token !== 'string') return first;
    const { metadata: _m, ...body } = first.body;
    const items: unknown[] = [...(body.items ?? [])];
    while (typeof token === 'string') {
      const next = await this.request('GET', this.pagePath(path, chunkSize, token));
      items.push(...(next.body?.items ?? []));
      token = next.body?.metadata?.continue;
    }
    const { etag: _e, ...headers } = first.headers;
    return { status: first.status, headers, body: { ...body, items } as T };
  }

  /** The path of one page of a list: `path` with `limit` and, after the first page, `continue`. */
  pagePath(path: string, chunkSize = DEFAULT_CHUNK_SIZE, token?: string): string {
    const sep = path.includes('?') ? '&' : '?';
    return `${path}${sep}limit=${chunkSize}${token === undefined ? '' : `&continue=${encodeURIComponent(token)}`}`;
  }

  /** GET that answers undefined for 404, for "does it exist yet" checks. */
  async find<T = any>(path: string): Promise<T | undefined> {
    try {
      return (await this.request<T>('GET', path)).body;
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return undefined;
      throw e;
    }
  }
}

/** API Gateway answers `{message}` for IAM failures; the API answers problem+json. Both become a Problem. */
function toProblem(o: Record<string, unknown>): Problem {
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const errors = Array.isArray(o.errors)
    ? o.errors
        .filter((e): e is Record<string, unknown> => !!e && typeof e === 'object')
        .map((e) => ({ path: String(e.path ?? ''), message: String(e.message ?? '') }))
    : undefined;
  return {
    type: str(o.type),
    title: str(o.title),
    status: typeof o.status === 'number' ? o.status : undefined,
    detail: str(o.detail) ?? str(o.message) ?? str(o.Message),
    reason: str(o.reason),
    errors,
  };
}

export function normalizeEndpoint(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`endpoint ${raw} is not a URL; use e.g. http://127.0.0.1:3000`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new ConfigError(`endpoint ${raw} must be http:// or https://`);
  }
  // Stack outputs and people write the base with or without /v1 and a trailing slash; paths carry /v1.
  return `${u.origin}${u.pathname.replace(/\/+$/, '').replace(/\/v1$/, '')}`;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** LLMCAP_SIGN=always|never overrides; otherwise https to anything but loopback is signed. */
export function shouldSign(endpoint: string, mode = process.env.LLMCAP_SIGN ?? 'auto'): boolean {
  if (mode === 'always') return true;
  if (mode === 'never') return false;
  if (mode !== 'auto' && mode !== '') {
    throw new ConfigError(`LLMCAP_SIGN must be always, never or auto, not ${mode}`);
  }
  const u = new URL(endpoint);
  return u.protocol === 'https:' && !LOOPBACK.has(u.hostname);
}

/** `abc.execute-api.eu-west-1.amazonaws.com` names its region; custom domains need AWS_REGION or --region. */
export function regionOf(url: URL): string {
  const m = /\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$/.exec(url.hostname);
  const region = m?.[1] ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  if (!region) {
    throw new ConfigError(
      `cannot tell the AWS region of ${url.host}; pass --region or set AWS_REGION to sign requests`,
    );
  }
  return region;
}

async function makeSigner(region: string): Promise<Signer> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const [{ SignatureV4 }, { Sha256 }, { defaultProvider }] = await Promise.all([
    import('@smithy/signature-v4'),
    import('@aws-crypto/sha256-js'),
    import('@aws-sdk/credential-provider-node'),
  ]);
  const provider = defaultProvider();
  const credentials = async () => {
    try {
      return await provider();
    } catch (e) {
      throw new ConfigError(
        `no AWS credentials to sign with (${(e as Error).message}); set AWS_PROFILE, run aws sso login, or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY`,
      );
    }
  };
  const signer = new SignatureV4({ service: 'execute-api', region, credentials, sha256: Sha256 });
  return async ({ method, url, headers, body }) => {
    const query: Record<string, string | string[]> = {};
    url.searchParams.forEach((v, k) => {
      const prev = query[k];
      query[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    });
    // user-agent and content-length are left out of the signature: proxies may rewrite them.
    const { 'user-agent': ua, 'content-length': len, ...toSign } = headers;
    const signed = await signer.sign({
      method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      path: url.pathname,
      query,
      headers: toSign,
      body,
    });
    return {
      ...(signed.headers as Record<string, string>),
      ...(ua ? { 'user-agent': ua } : {}),
      ...(len ? { 'content-length': len } : {}),
    };
  };
}

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

function send(
  method: string,
  url: URL,
  headers: Record<string, string>,
  body: string | undefined,
  timeoutMs: number,
): Promise<RawResponse> {
  const fn = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = fn(url, { method, headers, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      res.on('error', (e) => reject(new NetworkError(`reading the answer from ${url.host}: ${e.message}`)));
    });
    req.on('timeout', () => {
      req.destroy(new Error(`no answer within ${Math.round(timeoutMs / 1000)} s`));
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      const local = LOOPBACK.has(url.hostname);
      const hint = local
        ? '; is the local control plane running (npm start)? Or point --endpoint / LLMCAP_ENDPOINT elsewhere'
        : '';
      reject(new NetworkError(`cannot reach ${url.origin}: ${e.code ?? e.message}${hint}`));
    });
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** The stack output `ApiUrl` (DescribeStacks), for `--stack NAME` / LLMCAP_STACK. */
export async function endpointFromStack(stack: string, region?: string): Promise<string> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  const cfn = new CloudFormationClient(region ? { region } : {});
  try {
    const out = await cfn.send(new DescribeStacksCommand({ StackName: stack }));
    const outputs = out.Stacks?.[0]?.Outputs ?? [];
    const url =
      outputs.find((o) => o.OutputKey === 'ApiUrl')?.OutputValue ??
      outputs.find((o) => /ApiUrl/i.test(o.OutputKey ?? ''))?.OutputValue;
    if (!url) throw new ConfigError(`stack ${stack} has no ApiUrl output; is it an llmcap stack?`);
    return url;
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    const err = e as Error & { $metadata?: { httpStatusCode?: number } };
    // The SDK's own words for a missing region or credentials say nothing of what to set for llmcap; both
    // are told at once, since the SDK stops at the region before it looks for credentials.
    const noRegion = /region is missing/i.test(err.message);
    const noCredentials =
      err.name === 'CredentialsProviderError' ||
      err.name === 'TokenProviderError' ||
      (noRegion && !(await credentialsFound()));
    if (noRegion || noCredentials) {
      const missing = [
        noRegion &&
          'the AWS region the stack is in: pass --region or set AWS_REGION (or a region in the profile AWS_PROFILE names)',
        noCredentials &&
          `AWS credentials to read it${noRegion ? '' : ` (${err.message})`}: set AWS_PROFILE (run aws sso login first if it uses SSO), or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY`,
      ].filter(Boolean);
      throw new ConfigError(`--stack ${stack} needs ${missing.join('; and ')}`);
    }
    if (err.name === 'ValidationError' || /does not exist/.test(err.message)) {
      const where = (await cfn.config.region().catch(() => undefined)) ?? 'this region';
      throw new ConfigError(
        `stack ${stack} does not exist in ${where} for these credentials' account: a stage deploys llmcap-<stage>; check --stack, --region and AWS_PROFILE`,
      );
    }
    // AWS answered (access denied, expired token): the caller's configuration. No answer: the network.
    if (err.$metadata?.httpStatusCode) throw new ConfigError(`cannot read stack ${stack}: ${err.message}`);
    throw new NetworkError(`cannot read stack ${stack}: ${err.message}`);
  } finally {
    cfn.destroy();
  }
}

async function credentialsFound(): Promise<boolean> {
  const { defaultProvider } = await import('@aws-sdk/credential-provider-node');
  try {
    await defaultProvider()();
    return true;
  } catch {
    return false;
  }
}

/** --endpoint > LLMCAP_ENDPOINT > --stack / LLMCAP_STACK (its ApiUrl output) > the local control plane. */
export async function resolveEndpoint(opts: {
  endpoint?: string;
  stack?: string;
  region?: string;
}): Promise<string> {
  if (opts.endpoint) return opts.endpoint;
  if (process.env.LLMCAP_ENDPOINT) return process.env.LLMCAP_ENDPOINT;
  const stack = opts.stack ?? process.env.LLMCAP_STACK;
  if (stack) return endpointFromStack(stack, opts.region);
  return LOCAL_ENDPOINT;
}
