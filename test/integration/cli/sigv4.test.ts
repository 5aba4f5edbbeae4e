import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { regionOf, shouldSign } from '../../../cli/client';
import { llmcap, type Recorded, stubServer } from './run';

/**
 * Signing: a stub that recomputes each request's SigV4 signature (service execute-api) from known
 * credentials, as API Gateway's IAM authorization does, and answers 403 on any mismatch. The CLI runs as a
 * process with those credentials in its environment and LLMCAP_SIGN=always (the stub speaks plain http).
 */

const KEY = { accessKeyId: 'AKIDLLMCAPTEST', secretAccessKey: 'llmcap-test-secret' };
const TOKEN = 'llmcap-session-token';
const AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/;

const denied = (message: string) => ({ status: 403, body: { message } });

/** Recomputes the signature over what arrived; the answer API Gateway gives when it does not match. */
async function verify(req: Recorded): Promise<{ ok: true; region: string } | { ok: false; why: string }> {
  const auth = String(req.headers.authorization ?? '');
  const m = AUTH.exec(auth);
  if (!m) return { ok: false, why: 'Missing Authentication Token' };
  const [, akid, , region, service, signedHeaders] = m;
  if (akid !== KEY.accessKeyId)
    return { ok: false, why: 'The security token included in the request is invalid.' };
  if (service !== 'execute-api') return { ok: false, why: `wrong service ${service}` };
  const headers: Record<string, string> = {};
  for (const h of signedHeaders!.split(';')) headers[h] = String(req.headers[h] ?? '');
  const url = new URL(req.path, `http://${req.headers.host}`);
  const query: Record<string, string> = {};
  url.searchParams.forEach((v, k) => {
    query[k] = v;
  });
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  const date = new Date(
    amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'),
  );
  const token = req.headers['x-amz-security-token'];
  const signer = new SignatureV4({
    credentials: { ...KEY, ...(token ? { sessionToken: String(token) } : {}) },
    region: region!,
    service: 'execute-api',
    sha256: Sha256,
  });
  const expected = await signer.sign(
    {
      method: req.method,
      protocol: 'http:',
      hostname: url.hostname,
      port: Number(url.port),
      path: url.pathname,
      query,
      headers,
      body: req.raw || undefined,
    },
    { signingDate: date },
  );
  if (expected.headers.authorization !== auth) {
    return {
      ok: false,
      why: 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
    };
  }
  return { ok: true, region: region! };
}

let api: Awaited<ReturnType<typeof stubServer>>;
const regions: string[] = [];

beforeAll(async () => {
  api = await stubServer(async (req) => {
    // The CloudFormation query API, for --stack: DescribeStacks answers with an ApiUrl output.
    if (req.path === '/' && req.method === 'POST') {
      if (req.raw.includes('StackName=missing')) {
        return {
          status: 400,
          type: 'text/xml',
          raw: '<ErrorResponse><Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id missing does not exist</Message></Error><RequestId>1</RequestId></ErrorResponse>',
        };
      }
      return {
        status: 200,
        type: 'text/xml',
        raw: `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks><member><StackName>llmcap-dev</StackName><StackStatus>CREATE_COMPLETE</StackStatus><CreationTime>2025-01-01T00:00:00Z</CreationTime><Outputs><member><OutputKey>ApiUrl</OutputKey><OutputValue>${api.url}/</OutputValue></member></Outputs></member></Stacks></DescribeStacksResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></DescribeStacksResponse>`,
      };
    }
    const v = await verify(req);
    if (!v.ok) return denied(v.why);
    regions.push(v.region);
    if (req.method === 'GET') return { status: 200, body: { items: [] } };
    if (req.method === 'PUT' && req.path.startsWith('/v1/computes/')) return { status: 201, body: req.body };
    return { status: 200, body: {} };
  });
});
afterAll(() => api.close());

const signedEnv = (over: Record<string, string | undefined> = {}) => ({
  LLMCAP_SIGN: 'always',
  AWS_ACCESS_KEY_ID: KEY.accessKeyId,
  AWS_SECRET_ACCESS_KEY: KEY.secretAccessKey,
  AWS_SESSION_TOKEN: undefined,
  AWS_REGION: 'eu-west-1',
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_CONFIG_FILE: '/nonexistent/config',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials',
  ...over,
});

describe('SigV4 signing', () => {
  it('signs reads and writes the stub accepts, with encoded paths and a body, and never sends --as', async () => {
    api.requests.length = 0;
    const g = await llmcap(['get', 'computes', '--as', 'arn:aws:iam::000000000000:user/mallory'], {
      endpoint: api.url,
      env: signedEnv(),
    });
    expect(g.stderr).toContain('warning: --as is ignored by a deployed API');
    expect(g.code).toBe(0);
    expect(api.requests[0]!.headers['x-llmcap-principal']).toBeUndefined();
    expect(regions.at(-1)).toBe('eu-west-1');

    const manifest = JSON.stringify({
      apiVersion: 'llmcap/v1',
      kind: 'Compute',
      metadata: { name: 'cpu-tiny' },
      spec: { node: { instanceType: 'm7i.large', cpu: 2, memoryGb: 8 }, cost: { perHour: 0.1 } },
    });
    const a = await llmcap(['apply', '-f', '-'], { endpoint: api.url, env: signedEnv(), input: manifest });
    expect(a.stderr).toBe('');
    expect(a.code).toBe(0);
    expect(a.stdout.trim()).toBe('compute/cpu-tiny created');

    const mem = await llmcap(
      [
        'scope',
        'members',
        'team:ml',
        '--add',
        'arn:aws:iam::123456789012:role/ml-leads=admin',
        '--region',
        'us-west-2',
      ],
      { endpoint: api.url, env: signedEnv() },
    );
    expect(mem.stderr).toBe('');
    expect(mem.code).toBe(0);
    expect(api.requests.at(-1)!.path).toBe(
      '/v1/scopes/team%3Aml/members/arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fml-leads',
    );
    expect(regions.at(-1)).toBe('us-west-2');
  });

  it('signs session credentials with their token', async () => {
    const r = await llmcap(['get', 'models'], {
      endpoint: api.url,
      env: signedEnv({ AWS_SESSION_TOKEN: TOKEN }),
    });
    expect(r.code).toBe(0);
    expect(api.requests.at(-1)!.headers['x-amz-security-token']).toBe(TOKEN);
  });

  it('exits 2 with API Gateway’s message when the signature does not match', async () => {
    const r = await llmcap(['get', 'computes'], {
      endpoint: api.url,
      env: signedEnv({ AWS_SECRET_ACCESS_KEY: 'not-the-secret' }),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('error: Forbidden (403): The request signature we calculated does not match');
    expect(r.stderr).toContain('hint: check the AWS credentials in use');
  });

  it('exits 1 when there are no credentials to sign with', async () => {
    const r = await llmcap(['get', 'computes'], {
      endpoint: api.url,
      env: signedEnv({ AWS_ACCESS_KEY_ID: undefined, AWS_SECRET_ACCESS_KEY: undefined }),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no AWS credentials to sign with');
  });

  it('takes the endpoint from the stack output ApiUrl', async () => {
    const env = signedEnv({ AWS_ENDPOINT_URL_CLOUDFORMATION: api.url });
    api.requests.length = 0;
    const r = await llmcap(['get', 'computes', '--stack', 'llmcap-dev'], { env });
    expect(r.stderr).toBe('No computes found.\n');
    expect(r.code).toBe(0);
    expect(api.requests.map((q) => `${q.method} ${q.path}`)).toEqual([
      'POST /',
      'GET /v1/computes?limit=500',
    ]);
    const missing = await llmcap(['get', 'computes'], { env: { ...env, LLMCAP_STACK: 'missing' } });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('stack missing does not exist');
  });

  it('signs https endpoints other than loopback, and takes the region from an execute-api host', () => {
    expect(shouldSign('https://abc123.execute-api.eu-central-1.amazonaws.com', 'auto')).toBe(true);
    expect(shouldSign('http://127.0.0.1:3000', 'auto')).toBe(false);
    expect(shouldSign('https://localhost:3000', 'auto')).toBe(false);
    expect(shouldSign('http://127.0.0.1:3000', 'always')).toBe(true);
    expect(regionOf(new URL('https://abc123.execute-api.eu-central-1.amazonaws.com/'))).toBe('eu-central-1');
  });
});
