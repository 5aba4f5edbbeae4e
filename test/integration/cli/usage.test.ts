import { inProcess, llmcap, stubServer } from './run';

/**
 * The CLI's usage errors, as a child process: exit 1 with one line that says what to set or pass, never a
 * stack trace, and no request sent (the endpoint answers nothing). README's "Exit codes" is the contract.
 */

/** A shell with no AWS configuration at all: no region, no credentials, no profile files, no IMDS. */
const bare = {
  AWS_REGION: undefined,
  AWS_DEFAULT_REGION: undefined,
  AWS_ACCESS_KEY_ID: undefined,
  AWS_SECRET_ACCESS_KEY: undefined,
  AWS_SESSION_TOKEN: undefined,
  AWS_PROFILE: undefined,
  AWS_CONFIG_FILE: '/nonexistent/config',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials',
  AWS_EC2_METADATA_DISABLED: 'true',
};

const noStackTrace = (stderr: string) => expect(stderr).not.toMatch(/^\s+at /m);

describe('--stack without AWS configuration', () => {
  it('without a region or credentials is a usage error naming both', async () => {
    for (const r of [
      await llmcap(['--stack', 'llmcap-prod', 'get', 'models'], { env: bare }),
      await llmcap(['get', 'models'], { env: { ...bare, LLMCAP_STACK: 'llmcap-prod' } }),
    ]) {
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        'error: --stack llmcap-prod needs the AWS region the stack is in: pass --region or set AWS_REGION ' +
          '(or a region in the profile AWS_PROFILE names); and AWS credentials to read it: set AWS_PROFILE ' +
          '(run aws sso login first if it uses SSO), or export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\n',
      );
    }
  });

  it('with a region but no credentials says which to set', async () => {
    for (const r of [
      await llmcap(['--stack', 'llmcap-prod', '--region', 'eu-west-1', 'get', 'models'], { env: bare }),
      await llmcap(['--stack', 'llmcap-prod', 'get', 'models'], {
        env: { ...bare, AWS_REGION: 'eu-west-1' },
      }),
    ]) {
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /^error: --stack llmcap-prod needs AWS credentials to read it \(.+\): set AWS_PROFILE .*export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\n$/,
      );
    }
  });

  it('with credentials but no region names only the region', async () => {
    const r = await llmcap(['--stack', 'llmcap-prod', 'get', 'models'], {
      env: { ...bare, AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret' },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'error: --stack llmcap-prod needs the AWS region the stack is in: pass --region or set AWS_REGION ' +
        '(or a region in the profile AWS_PROFILE names)\n',
    );
  });

  it('when CloudFormation cannot be reached is a network failure (3), when it refuses a usage error (1)', async () => {
    const env = {
      ...bare,
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_ENDPOINT_URL_CLOUDFORMATION: 'http://127.0.0.1:1',
    };
    const down = await llmcap(['--stack', 'llmcap-prod', 'get', 'models'], { env });
    expect(down.code).toBe(3);
    expect(down.stderr).toMatch(/^error: cannot read stack llmcap-prod: .*ECONNREFUSED/);
    const cfn = await stubServer(() => ({
      status: 403,
      type: 'text/xml',
      raw: '<ErrorResponse><Error><Type>Sender</Type><Code>InvalidClientTokenId</Code><Message>The security token included in the request is invalid.</Message></Error><RequestId>1</RequestId></ErrorResponse>',
    }));
    try {
      const denied = await llmcap(['--stack', 'llmcap-prod', 'get', 'models'], {
        env: { ...env, AWS_ENDPOINT_URL_CLOUDFORMATION: cfn.url },
      });
      expect(denied.code).toBe(1);
      expect(denied.stderr).toBe(
        'error: cannot read stack llmcap-prod: The security token included in the request is invalid.\n',
      );
    } finally {
      await cfn.close();
    }
  });

  it('names the region and what to check when the stack does not exist there', async () => {
    const cfn = await stubServer(() => ({
      status: 400,
      type: 'text/xml',
      raw: '<ErrorResponse><Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id llmcap-prod does not exist</Message></Error><RequestId>1</RequestId></ErrorResponse>',
    }));
    try {
      const r = await llmcap(['--stack', 'llmcap-prod', 'get', 'models'], {
        env: {
          ...bare,
          AWS_REGION: 'eu-west-1',
          AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
          AWS_SECRET_ACCESS_KEY: 'secret',
          AWS_ENDPOINT_URL_CLOUDFORMATION: cfn.url,
        },
      });
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        "error: stack llmcap-prod does not exist in eu-west-1 for these credentials' account: a stage deploys llmcap-<stage>; check --stack, --region and AWS_PROFILE\n",
      );
    } finally {
      await cfn.close();
    }
  });
});

describe('other usage errors', () => {
  // Each is refused before any request: the endpoint is a closed port, so a request would exit 3.
  const cases: [string[], string][] = [
    [[], 'Usage: llmcap COMMAND'],
    [['--region', 'eu-west-1'], 'Usage: llmcap COMMAND'],
    [['bogus'], 'error: unknown command bogus; llmcap --help lists the commands'],
    [['get'], 'error: missing KIND (computes, models, scopes, quotas, sources, pods)'],
    [['get', 'bogus'], 'error: unknown kind bogus; one of computes, models, scopes, quotas, sources, pods'],
    [['get', 'computes', '--model', 'chat'], 'error: --model narrows pods only: llmcap get pods --model ...'],
    [['get', 'pods', '--ready', 'yes'], 'error: --ready must be true or false, not yes'],
    [['describe', 'pods'], 'error: pods cannot be described; try llmcap get pods'],
    [['delete', 'pod', 'x'], 'error: pods cannot be deleted'],
    [['get', 'computes', '--bogus'], "error: Unknown option '--bogus'."],
    [['get', 'computes', '-o', 'xml'], 'error: -o must be one of table, wide, json, yaml, name, not xml'],
    [['get', 'computes', '--region'], "error: Option '--region <value>' argument missing"],
    [
      ['--timeout', 'abc', 'get', 'computes'],
      'error: --timeout must be a positive number of seconds, not abc',
    ],
    [['--endpoint', 'notaurl', 'get', 'computes'], 'error: endpoint notaurl is not a URL'],
    [['--endpoint', 'ftp://x', 'get', 'computes'], 'error: endpoint ftp://x must be http:// or https://'],
    [['apply'], 'error: apply needs -f FILE (or -f - for stdin)'],
    [['apply', '-f', '/nonexistent/x.yaml'], 'error: cannot read /nonexistent/x.yaml'],
    [['model'], 'Usage:\n  llmcap model scale'],
    [['model', 'scale', 'chat'], 'error: model scale needs --min and --max'],
    [['model', 'scale', 'chat', '--min', 'a', '--max', '2'], 'error: --min must be a whole number, not a'],
    [
      ['model', 'class', 'chat', 'superb'],
      'error: CLASS must be one of critical, standard, opportunistic, none, not superb',
    ],
    [
      ['quota', 'set', 'team:ml', '--guarantee', 'gpus=x'],
      'error: --guarantee gpus must be a number ≥ 0, not x',
    ],
    [['scope', 'members', 'team:ml', '--add', 'foo'], 'error: --add takes PRINCIPAL=ROLE, not foo'],
    [['reconcile', '--limit', '3'], 'error: --limit goes with --list'],
    [['describe'], 'error: missing KIND'],
    [['delete'], 'error: missing KIND and NAME'],
  ];
  it.each(cases)('llmcap %j exits 1', async (args, said) => {
    const r = await llmcap(args, { endpoint: 'http://127.0.0.1:1', env: { LLMCAP_SIGN: 'never' } });
    expect({ code: r.code, said: `${r.stdout}${r.stderr}`.includes(said) }).toEqual({ code: 1, said: true });
    noStackTrace(r.stderr);
    expect(r.stderr).not.toContain('ECONNREFUSED');
  });

  it('an invalid LLMCAP_SIGN is a usage error too', async () => {
    const r = await llmcap(['get', 'computes'], {
      endpoint: 'http://127.0.0.1:1',
      env: { LLMCAP_SIGN: 'maybe' },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: LLMCAP_SIGN must be always, never or auto, not maybe\n');
  });

  it('an unreachable API is 3, not a usage error, and says what to check', async () => {
    const r = await llmcap(['get', 'computes'], { endpoint: 'http://127.0.0.1:1' });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('is the local control plane running (npm start)?');
    noStackTrace(r.stderr);
  });
});

describe('completion', () => {
  it('completes pods for get only, and the values of --ready', async () => {
    const r = await inProcess(['completion', 'bash']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      'get) if [[ -z $sub ]]; then COMPREPLY=($(compgen -W "computes models scopes quotas sources pods"',
    );
    expect(r.stdout).toContain(
      'describe) if [[ -z $sub ]]; then COMPREPLY=($(compgen -W "computes models scopes quotas"',
    );
    expect(r.stdout).toContain(
      'delete) if [[ -z $sub ]]; then COMPREPLY=($(compgen -W "computes models scopes quotas"',
    );
    expect(r.stdout).toContain('--ready) COMPREPLY=($(compgen -W "true false"');
    expect(r.stdout).toMatch(
      /get\) COMPREPLY=\(\$\(compgen -W "[^"]*--model --compute --node --namespace -n --ready/,
    );
  });
});
