import { connect, createServer, type Server } from 'node:net';
import { freePort, startDynamoDbLocal } from '../../../local/dynamodb-local';
import { explainPortError, LOCAL_PORTS, type PortName } from '../../../local/ports';
import { bannerDone, bannerUrl, npmStart } from '../../helpers/npm-start';
import { llmcap } from '../cli/run';

/**
 * `npm start` as a user runs it: every port it opens is set by its variable, a taken one stops the start
 * before anything runs and names the variable, and the banner shows the ports it really got and the line
 * that points the CLI at them.
 */

const NAMES = Object.keys(LOCAL_PORTS) as PortName[];

async function hold(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  return { port: typeof addr === 'object' && addr ? addr.port : 0, server };
}

/** Whether something accepts a connection on the port (the Kubernetes API's certificate is its own CA's). */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

describe('npm start', () => {
  it('fails at once when ports are taken, naming each one and the variable that moves it', async () => {
    const held = await Promise.all(NAMES.map(() => hold()));
    try {
      const env = Object.fromEntries(NAMES.map((n, i) => [LOCAL_PORTS[n].env, String(held[i]!.port)]));
      const run = npmStart([], env);
      expect(await run.exited).toBe(1);
      const out = run.output();
      for (const [i, n] of NAMES.entries())
        expect(out).toContain(
          `port ${held[i]!.port} (${LOCAL_PORTS[n].what}) is in use, perhaps by another npm start: set ${LOCAL_PORTS[n].env} to another port, or 0 for any free one`,
        );
      // Nothing was started: no DynamoDB Local line, no stack trace.
      expect(out).not.toContain('DynamoDB Local   http');
      expect(out).not.toMatch(/^\s+at /m);
    } finally {
      for (const h of held) h.server.close();
    }
  });

  it('refuses a port variable that is not a port, naming it', async () => {
    const run = npmStart([], { LLMCAP_PORT: 'three-thousand' });
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain(
      'llmcap: could not start: LLMCAP_PORT must be a port number from 0 to 65535 (0: any free port), not "three-thousand"',
    );
  });

  it('listens where the variables say, prints those ports, and the CLI line it prints works', async () => {
    const ports = Object.fromEntries(
      await Promise.all(NAMES.map(async (n) => [n, await freePort()])),
    ) as Record<PortName, number>;
    const run = npmStart([], {
      ...Object.fromEntries(NAMES.map((n) => [LOCAL_PORTS[n].env, String(ports[n])])),
      LLMCAP_RECONCILE_SECONDS: '0',
    });
    try {
      const out = await run.waitFor(bannerDone);
      const shown: Record<PortName, string | undefined> = {
        api: bannerUrl(out, 'API'),
        sim: bannerUrl(out, 'cloud simulator'),
        sfn: bannerUrl(out, 'Step Functions'),
        lambda: bannerUrl(out, 'Lambda'),
        dynamodb: bannerUrl(out, 'DynamoDB Local'),
        kube: bannerUrl(out, 'Kubernetes API'),
        console: bannerUrl(out, 'Console'),
      };
      for (const n of NAMES) {
        expect(shown[n]).toMatch(new RegExp(`^https?://127\\.0\\.0\\.1:${ports[n]}(/v1|/)?$`));
        expect(await listening(ports[n])).toBe(true);
      }
      const api = `http://127.0.0.1:${ports.api}`;
      const line = /^ {2}CLI {2,}(.*)$/m.exec(out)?.[1];
      expect(line).toBe(
        `export LLMCAP_ENDPOINT=${api} LLMCAP_SIM_PORT=${ports.sim}   (or npx llmcap --endpoint ${api} ...)`,
      );
      // Exactly what the line exports is enough for the CLI, alarm test (the simulator's CloudWatch) included.
      const env = Object.fromEntries(
        line!
          .replace(/^export /, '')
          .split('   ')[0]!
          .split(' ')
          .map((kv) => kv.split('=') as [string, string]),
      );
      // Through the launcher npx llmcap runs, as the user the banner speaks to would.
      const get = await llmcap(['get', 'computes', '-o', 'name'], { env, launcher: true });
      expect(get.stderr).toBe('');
      expect(get.stdout).toContain('compute/gpu-l4-1x');
      // Nothing of the test run's own simulator (global-setup.ts) may stand in for what the line exports.
      const alarm = await llmcap(['alarm', 'test'], {
        env: { ...env, AWS_ENDPOINT_URL_CLOUDWATCH: undefined },
        launcher: true,
      });
      expect(alarm.stderr).toBe('');
      // Before or after CloudWatch's first evaluation of the new stage: either prior state is true.
      expect(alarm.stdout).toMatch(/llmcap-local-ReconcileErrors: (INSUFFICIENT_DATA|OK) -> ALARM/);
      expect(alarm.code).toBe(0);
    } finally {
      await run.stop();
    }
    // Ctrl-C stopped everything it started, DynamoDB Local included.
    expect(run.output()).toContain('SIGINT: stopping...');
    const pid = Number(/pid (\d+)\)/.exec(run.output())?.[1]);
    expect(() => process.kill(pid, 0)).toThrow();
  });
});

describe('DynamoDB Local on a taken port', () => {
  it('fails as a taken port does, so that npm start names LLMCAP_DYNAMODB_PORT', async () => {
    // Taken after npm start checked it: Java's bind failure, not a port check, is what is reported.
    const held = await hold();
    try {
      const err = await startDynamoDbLocal({ port: held.port }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ code: 'EADDRINUSE', port: held.port });
      const ports = { api: 1, sim: 2, sfn: 3, lambda: 4, dynamodb: held.port, kube: 5, console: 6 };
      expect((explainPortError(err, ports) as Error).message).toBe(
        `port ${held.port} (DynamoDB Local) is in use, perhaps by another npm start: set LLMCAP_DYNAMODB_PORT to another port, or 0 for any free one`,
      );
    } finally {
      held.server.close();
    }
  });
});
