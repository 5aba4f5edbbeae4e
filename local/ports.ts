import { createServer } from 'node:net';
import { LOCAL_ENDPOINT, normalizeEndpoint } from '../cli/client';

/**
 * Every port the local control plane opens, with the variable that sets it. One table, so that `npm start`
 * reads, checks, explains and documents each the same way (`--help`, docs/local.md and README list them,
 * and test/unit/docs checks they do): a part that opens a new port adds its entry here.
 */

export interface PortSetting {
  /** The environment variable `npm start` reads. */
  env: string;
  /** The port when the variable is unset; 0 is any free port. */
  default: number;
  /** What listens on it, as the banner names it. */
  what: string;
}

export const LOCAL_PORTS = {
  api: { env: 'LLMCAP_PORT', default: 3000, what: 'API' },
  sim: { env: 'LLMCAP_SIM_PORT', default: 4510, what: 'cloud simulator' },
  sfn: { env: 'LLMCAP_SFN_PORT', default: 0, what: 'local Step Functions' },
  lambda: { env: 'LLMCAP_LAMBDA_PORT', default: 0, what: 'local Lambda' },
  dynamodb: { env: 'LLMCAP_DYNAMODB_PORT', default: 0, what: 'DynamoDB Local' },
  kube: { env: 'LLMCAP_KUBE_PORT', default: 0, what: 'Kubernetes API' },
  console: { env: 'LLMCAP_CONSOLE_PORT', default: 3001, what: 'web console' },
} as const satisfies Record<string, PortSetting>;

export type PortName = keyof typeof LOCAL_PORTS;
export type Ports = Record<PortName, number>;

const NAMES = Object.keys(LOCAL_PORTS) as PortName[];

/** A start that cannot go on for a reason the user fixes in the environment; the message says how. */
export class StartError extends Error {
  override name = 'StartError';
}

/** The message for a taken port: which variable moves it. */
export function portInUse(name: PortName, port: number): string {
  const s = LOCAL_PORTS[name];
  return `port ${port} (${s.what}) is in use, perhaps by another npm start: set ${s.env} to another port, or 0 for any free one`;
}

/**
 * Each port from what the caller gave, else its variable, else its default. Every invalid variable is
 * reported at once, so one edit fixes them all.
 */
export function resolvePorts(
  given: Partial<Record<PortName, number | undefined>>,
  env: NodeJS.ProcessEnv = process.env,
): Ports {
  const out = {} as Ports;
  const bad: string[] = [];
  for (const name of NAMES) {
    const s = LOCAL_PORTS[name];
    const raw = env[s.env];
    const v = given[name] ?? (raw === undefined || raw.trim() === '' ? s.default : Number(raw));
    if (!Number.isInteger(v) || v < 0 || v > 65535)
      bad.push(
        `${s.env} must be a port number from 0 to 65535 (0: any free port), not ${JSON.stringify(raw ?? v)}`,
      );
    out[name] = v;
  }
  if (bad.length) throw new StartError(bad.join('; '));
  return out;
}

function taken(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'EADDRINUSE' || e.code === 'EACCES'));
    srv.listen({ port, host, exclusive: true }, () => srv.close(() => resolve(false)));
  });
}

/**
 * Fails before anything starts when a fixed port is taken, naming every taken one and its variable: a half
 * started control plane (a JVM already up) would only be stopped again. Ports 0 are free by definition.
 */
export async function checkPortsFree(ports: Ports, host = '127.0.0.1'): Promise<void> {
  const busy: string[] = [];
  for (const name of NAMES) {
    const p = ports[name];
    if (p !== 0 && (await taken(p, host))) busy.push(portInUse(name, p));
  }
  if (busy.length) throw new StartError(busy.join('; '));
}

/** A listen that lost a race with another process after the check, reported as checkPortsFree reports it. */
export function explainPortError(e: unknown, ports: Ports): unknown {
  const err = e as NodeJS.ErrnoException & { port?: number };
  if (err?.code !== 'EADDRINUSE' || !err.port) return e;
  const name = NAMES.find((n) => ports[n] === err.port);
  return name ? new StartError(portInUse(name, err.port)) : e;
}

/** The `--help` lines for the ports, from the table. */
export function portsHelp(pad: number): string {
  return NAMES.map((n) => {
    const s = LOCAL_PORTS[n];
    const dflt = s.default ? `default ${s.default}; 0 = any free port` : 'default: any free port';
    return `  ${s.env.padEnd(pad)}${s.what} port (${dflt})`;
  }).join('\n');
}

/**
 * What the CLI needs to reach this control plane: nothing on the default ports; otherwise the exact export
 * (the simulator's port too, which `llmcap alarm test` reads). A LLMCAP_ENDPOINT or LLMCAP_STACK already set
 * in this shell would send every command elsewhere, so the line says so.
 */
export function cliEndpointLine(
  apiUrl: string,
  simEndpoint: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const same = (u: string) => {
    try {
      return normalizeEndpoint(u) === apiUrl;
    } catch {
      return false;
    }
  };
  const elsewhere = env.LLMCAP_ENDPOINT
    ? same(env.LLMCAP_ENDPOINT)
      ? undefined
      : `LLMCAP_ENDPOINT is ${env.LLMCAP_ENDPOINT}`
    : env.LLMCAP_STACK
      ? `LLMCAP_STACK is ${env.LLMCAP_STACK}`
      : undefined;
  const vars: string[] = [];
  if (apiUrl !== LOCAL_ENDPOINT || elsewhere) vars.push(`LLMCAP_ENDPOINT=${apiUrl}`);
  const simPort = new URL(simEndpoint).port;
  if (simPort !== String(LOCAL_PORTS.sim.default)) vars.push(`LLMCAP_SIM_PORT=${simPort}`);
  if (!vars.length) return `npx llmcap talks to ${apiUrl} by default: nothing to set`;
  return `export ${vars.join(' ')}   (or npx llmcap --endpoint ${apiUrl} ...)${
    elsewhere ? `; ${elsewhere} in this shell, which the CLI would use instead` : ''
  }`;
}
