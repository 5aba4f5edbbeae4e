import { randomUUID } from 'node:crypto';
import type { ReconcileSummary } from '../../lambdas/service/reconcile';
import { DrivenClock } from '../../local/cloud-sim';
import { type ControlPlane, type ControlPlaneOptions, startControlPlane } from '../../local/control-plane';

/**
 * A local control plane for a test file: on free ports, with the DynamoDB Local of the integration run, a fresh
 * table, the simulator a thousand times faster than EKS, and no schedule (the test drives reconcile itself).
 * CloudWatch runs on a driven clock: each cp.reconcile() is one scheduled pass, a minute after the previous one.
 */
export function testControlPlane(prefix: string, over: ControlPlaneOptions = {}) {
  return startControlPlane({
    port: 0,
    simPort: 0,
    simTimeScale: 0.001,
    reconcileSeconds: 0,
    cooldownSeconds: 0,
    dynamodbEndpoint: process.env.LLMCAP_DYNAMODB_ENDPOINT,
    table: `${prefix}-${randomUUID().slice(0, 8)}`,
    clock: new DrivenClock(Math.floor(Date.now() / 60_000) * 60_000),
    ...over,
  });
}

/** Reconciles until `done` holds: each pass starts or observes workflows, which run in the background. */
export async function reconcileUntil(
  cp: ControlPlane,
  done: () => Promise<boolean>,
  passes = 40,
): Promise<void> {
  for (let i = 0; i < passes; i++) {
    await cp.reconcile();
    await cp.sfn.waitForIdle(10_000);
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('did not converge');
}

/** reconcileUntil, keeping every pass's summary; `each` runs its checks after each pass. */
export async function passesUntil(
  cp: ControlPlane,
  done: () => Promise<boolean>,
  each?: () => Promise<void>,
): Promise<ReconcileSummary[]> {
  const passes: ReconcileSummary[] = [];
  const orig = cp.reconcile.bind(cp);
  const reconcile = async () => {
    const s = await orig();
    passes.push(s);
    await each?.();
    return s;
  };
  await reconcileUntil({ ...cp, reconcile }, done);
  return passes;
}

/** Two tenants side by side: org:acme > team:ml and org:beta > team:ops (soak/lib/fixture.ts createTenancy). */
export const TWO_TENANTS = [
  ['org:acme'],
  ['team:ml', 'org:acme'],
  ['org:beta'],
  ['team:ops', 'org:beta'],
] as const;

/** Creates TWO_TENANTS and makes `viewer` a viewer of team:ml: the world the costs and console tests read. */
export async function seedTwoTenants(call: ReturnType<typeof httpApi>, viewer: string): Promise<void> {
  for (const [name, parent] of TWO_TENANTS) {
    const r = await call('POST', '/v1/scopes', { name, ...(parent ? { parent } : {}) });
    if (r.status !== 201) throw new Error(`POST scope ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const r = await call('PUT', `/v1/scopes/team:ml/members/${encodeURIComponent(viewer)}`, { role: 'viewer' });
  if (r.status !== 200) throw new Error(`PUT member ${viewer}: ${r.status} ${JSON.stringify(r.body)}`);
}

/** The Kubernetes namespace a scope's models run in, as its status says (fixed when the scope was created). */
export async function namespaceOf(cp: Pick<ControlPlane, 'apiUrl'>, scope: string): Promise<string> {
  const r = await httpApi(cp)('GET', `/v1/scopes/${encodeURIComponent(scope)}`);
  if (r.status !== 200) throw new Error(`GET scope ${scope}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.status.namespace as string;
}

/**
 * The vCPUs of the node groups of computes whose instance type matches `family` (`/^g/`: the G and VT quota), as
 * the computes' status says: what a test sets a vCPU quota against, so that no more node can be launched.
 */
export async function vcpusInUse(cp: Pick<ControlPlane, 'apiUrl'>, family: RegExp): Promise<number> {
  const items = (await httpApi(cp)('GET', '/v1/computes')).body.items as {
    spec: { node: { instanceType: string; cpu: number } };
    status: { desiredNodes: number };
  }[];
  return items
    .filter((c) => family.test(c.spec.node.instanceType))
    .reduce((n, c) => n + c.spec.node.cpu * c.status.desiredNodes, 0);
}

/** A JSON call to the control plane's API over HTTP, as the default local caller (local-admin) or `as`. */
export function httpApi(cp: Pick<ControlPlane, 'apiUrl'>) {
  return async (method: string, path: string, body?: unknown, as?: string) => {
    const r = await fetch(`${cp.apiUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(as ? { 'x-llmcap-principal': as } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, body: text ? (JSON.parse(text) as any) : undefined };
  };
}
