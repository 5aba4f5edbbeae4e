import { cliEndpointLine, LOCAL_PORTS, resolvePorts } from '../../../local/ports';

/** The ports `npm start` opens: read from their variables, checked, and the CLI line of its banner. */

describe('resolvePorts', () => {
  it('takes each port from its variable, else its default; what the caller gives wins', () => {
    expect(resolvePorts({}, {})).toEqual({
      api: 3000,
      console: 3001,
      sim: 4510,
      sfn: 0,
      lambda: 0,
      dynamodb: 0,
      kube: 0,
    });
    expect(
      resolvePorts(
        { sim: 0 },
        {
          LLMCAP_PORT: '3100',
          LLMCAP_SIM_PORT: '4600',
          LLMCAP_SFN_PORT: '8083',
          LLMCAP_LAMBDA_PORT: '9001',
          LLMCAP_DYNAMODB_PORT: '8000',
          LLMCAP_KUBE_PORT: '6443',
          LLMCAP_CONSOLE_PORT: '3200',
        },
      ),
    ).toEqual({ api: 3100, console: 3200, sim: 0, sfn: 8083, lambda: 9001, dynamodb: 8000, kube: 6443 });
  });

  it('names every variable that is not a port, at once', () => {
    expect(() =>
      resolvePorts({}, { LLMCAP_PORT: 'abc', LLMCAP_LAMBDA_PORT: '70000', LLMCAP_SIM_PORT: '1.5' }),
    ).toThrow(
      'LLMCAP_PORT must be a port number from 0 to 65535 (0: any free port), not "abc"; ' +
        'LLMCAP_SIM_PORT must be a port number from 0 to 65535 (0: any free port), not "1.5"; ' +
        'LLMCAP_LAMBDA_PORT must be a port number from 0 to 65535 (0: any free port), not "70000"',
    );
  });

  it('has one variable per port, all LLMCAP_*_PORT or LLMCAP_PORT', () => {
    const envs = Object.values(LOCAL_PORTS).map((p) => p.env);
    expect(new Set(envs).size).toBe(envs.length);
    for (const e of envs) expect(e).toMatch(/^LLMCAP_([A-Z]+_)?PORT$/);
  });
});

describe('the CLI line of the banner', () => {
  it('says nothing needs setting on the default ports', () => {
    expect(cliEndpointLine('http://127.0.0.1:3000', 'http://127.0.0.1:4510', {})).toBe(
      'npx llmcap talks to http://127.0.0.1:3000 by default: nothing to set',
    );
    expect(
      cliEndpointLine('http://127.0.0.1:3000', 'http://127.0.0.1:4510', {
        LLMCAP_ENDPOINT: 'http://127.0.0.1:3000/v1/',
      }),
    ).toBe('npx llmcap talks to http://127.0.0.1:3000 by default: nothing to set');
  });

  it('gives the exact export for other ports, the simulator one included (alarm test reads it)', () => {
    expect(cliEndpointLine('http://127.0.0.1:41234', 'http://127.0.0.1:4510', {})).toBe(
      'export LLMCAP_ENDPOINT=http://127.0.0.1:41234   (or npx llmcap --endpoint http://127.0.0.1:41234 ...)',
    );
    expect(cliEndpointLine('http://127.0.0.1:41234', 'http://127.0.0.1:45678', {})).toBe(
      'export LLMCAP_ENDPOINT=http://127.0.0.1:41234 LLMCAP_SIM_PORT=45678   (or npx llmcap --endpoint http://127.0.0.1:41234 ...)',
    );
  });

  it('warns when the shell points the CLI elsewhere', () => {
    expect(
      cliEndpointLine('http://127.0.0.1:3000', 'http://127.0.0.1:4510', {
        LLMCAP_ENDPOINT: 'https://abc.execute-api.eu-west-1.amazonaws.com',
      }),
    ).toBe(
      'export LLMCAP_ENDPOINT=http://127.0.0.1:3000   (or npx llmcap --endpoint http://127.0.0.1:3000 ...); ' +
        'LLMCAP_ENDPOINT is https://abc.execute-api.eu-west-1.amazonaws.com in this shell, which the CLI would use instead',
    );
    expect(
      cliEndpointLine('http://127.0.0.1:3000', 'http://127.0.0.1:4510', { LLMCAP_STACK: 'llmcap-prod' }),
    ).toMatch(
      /^export LLMCAP_ENDPOINT=http:\/\/127\.0\.0\.1:3000 .*; LLMCAP_STACK is llmcap-prod in this shell/,
    );
  });
});
