import { documentClient } from '../../../lambdas/shared/clients';
import type { ControlPlane } from '../../../local/control-plane';
import type { AuditEvent } from '../../../local/k8s-sim';
import { httpApi, namespaceOf, reconcileUntil, testControlPlane } from '../../helpers/control-plane';

/**
 * What a reconcile pass costs the cluster's API server, counted where the API server counts it (the simulator's
 * audit hook): a pass over an unchanged world writes nothing and reads each kind once per namespace, and one
 * model scaled is one write. The calls share pooled connections rather than a TLS handshake each.
 */

let cp: ControlPlane;
let events: AuditEvent[] = [];
beforeAll(async () => {
  cp = await testControlPlane('wlcalls');
  cp.sim.kubernetes!.onRequest((e) => events.push(e));
  const call = httpApi(cp);
  expect((await call('POST', '/v1/computes/gpu-l4-1x/clone', { name: 'l4-calls' })).status).toBe(201);
  expect((await call('POST', '/v1/scopes', { name: 'org:acme' })).status).toBe(201);
  for (const team of ['team:a', 'team:b'])
    expect((await call('POST', '/v1/scopes', { name: team, parent: 'org:acme' })).status).toBe(201);
  for (const [name, owner] of [
    ['a1', 'team:a'],
    ['a2', 'team:a'],
    ['b1', 'team:b'],
  ])
    expect((await call('POST', '/v1/models', model(name!, owner!))).status).toBe(201);
  await reconcileUntil(cp, async () => {
    for (const m of ['a1', 'a2', 'b1'])
      if ((await call('GET', `/v1/models/${m}`)).body.status?.running !== 1) return false;
    return true;
  });
});
afterAll(() => cp.stop());

function model(name: string, owner: string) {
  return {
    apiVersion: 'llmcap/v1',
    kind: 'Model',
    metadata: { name, owner },
    spec: {
      source: `hf://org/${name}`,
      engine: 'vllm',
      profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'l4-calls' }],
      scaling: { min: 1, max: 2 },
    },
  };
}

const WRITES = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
const tally = (list: AuditEvent[]) => {
  const out: Record<string, number> = {};
  for (const e of list) out[`${e.verb} ${e.resource}`] = (out[`${e.verb} ${e.resource}`] ?? 0) + 1;
  return out;
};

async function pass() {
  events = [];
  const handshakes = cp.sim.kubernetes!.handshakes();
  const s = await cp.reconcile();
  expect(s.errors).toEqual([]);
  return { events: [...events], handshakes: cp.sim.kubernetes!.handshakes() - handshakes };
}

it('makes no write in a steady pass and reads each kind once per namespace it manages, and its nodes once', async () => {
  const { events: seen, handshakes } = await pass();
  expect(seen.filter((e) => WRITES.has(e.verb))).toEqual([]);
  // The namespaces llmcap manages (one per owner scope, and the shared one), each read once per kind.
  const namespaces = [...new Set(seen.filter((e) => e.namespace).map((e) => e.namespace))].sort();
  const owners = await Promise.all(['team:a', 'team:b'].map((s) => namespaceOf(cp, s)));
  expect(namespaces).toEqual(expect.arrayContaining(owners));
  const n = namespaces.length;
  expect(tally(seen)).toEqual({
    'list namespaces': 1,
    // llmcap's nodes, once a pass: what each instance type's nodes report as allocatable (domain/allocatable.ts).
    'list nodes': 1,
    'list deployments': n,
    'list services': n,
    'list poddisruptionbudgets': n,
    'list pods': n,
  });
  expect(seen.every((e) => e.code === 200)).toBe(true);
  // Pooled connections: at most one per namespace read side by side (a handshake per call was 1 + 4n).
  expect(handshakes).toBeLessThanOrEqual(n);
});

it('writes no compute in a steady pass: an observation equal to the stored status is not written again', async () => {
  // The table's writes during one pass, by partition: the document client's middleware (the pass runs in this
  // process's local Lambda) sees every UpdateItem, PutItem and transaction the reconciler sends.
  const written: string[] = [];
  const stack = documentClient().middlewareStack;
  stack.add(
    (next, context) => async (args) => {
      const input = args.input as {
        Key?: { pk: string };
        Item?: { pk: string };
        TransactItems?: Record<string, { Key?: { pk: string }; Item?: { pk: string } }>[];
      };
      const command = String(context.commandName);
      if (/^(UpdateItem|PutItem|DeleteItem)Command$/.test(command))
        written.push(`${command} ${input.Key?.pk ?? input.Item?.pk}`);
      for (const t of input.TransactItems ?? [])
        for (const [op, body] of Object.entries(t)) written.push(`${op} ${body.Key?.pk ?? body.Item?.pk}`);
      return next(args);
    },
    { step: 'initialize', name: 'countWrites' },
  );
  try {
    const before = (await httpApi(cp)('GET', '/v1/computes/l4-calls')).body;
    expect(before.status).toMatchObject({ nodegroupStatus: 'ACTIVE', readyNodes: 3 });
    await pass();
    expect(written.filter((w) => w.endsWith(' COMPUTE'))).toEqual([]);
    // The same world is still what the compute says.
    const after = (await httpApi(cp)('GET', '/v1/computes/l4-calls')).body;
    expect(after.status).toEqual(before.status);
  } finally {
    stack.remove('countWrites');
  }
});

it('writes only what a scaling changes: the Deployment, and the budget when one replica becomes two', async () => {
  const writes = (seen: { verb: string; namespace?: string; resource: string; name?: string }[]) =>
    seen.filter((e) => WRITES.has(e.verb)).map((e) => `${e.verb} ${e.resource} ${e.namespace}/${e.name}`);
  // A one-replica model's budget keeps its only replica (minAvailable 1); at two it allows one away.
  expect((await httpApi(cp)('PUT', '/v1/models/a1/scaling', { min: 2, max: 2 })).status).toBe(200);
  const ns = await namespaceOf(cp, 'team:a');
  expect(writes((await pass()).events)).toEqual([
    `patch deployments ${ns}/a1-l4-l4-calls`,
    `patch poddisruptionbudgets ${ns}/a1`,
  ]);
  expect(writes((await pass()).events)).toEqual([]);
});
