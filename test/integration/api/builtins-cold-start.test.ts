import { createHandler } from '../../../lambdas/api/app';
import { defaultDependencies } from '../../../lambdas/service';
import { createApiServices } from '../../../lambdas/service/for-api';
import { parseBuiltins } from '../../../lambdas/shared/builtin-config';
import { apiEvent, testApi } from '../../helpers/api';

/**
 * The API's first request loads the built-ins (issue 17 §2). A container whose table already holds them as
 * resolved from this same config/computes.yaml (by an earlier container, or by the reconciler every pass) asks
 * EC2 and the Price List nothing on its cold start; a file that changed is resolved and followed at once.
 */

const file = (maxNodes: number) =>
  parseBuiltins([
    { name: 'bare-l4', spec: { node: { instanceType: 'g6.2xlarge' }, nodeGroup: { maxNodes } } },
    { name: 'cpu', spec: { node: { instanceType: 'm7i.xlarge' }, nodeGroup: { maxNodes: 1 } } },
  ]);

let lookups: string[] = [];
const real = defaultDependencies().hardware;
const deps = (computes: ReturnType<typeof file>) => ({
  builtins: { computes: () => computes, models: () => [] },
  // What AWS is asked, counted where the service asks it (the adapter's cache would hide repeats).
  hardware: () => {
    const hw = real();
    return {
      ...hw,
      lookup: (t: string) => {
        lookups.push(t);
        return hw.lookup(t);
      },
    };
  },
});

/** A fresh container on the same table: its own services and handler, as a Lambda cold start has. */
const coldContainer = (computes: ReturnType<typeof file>) => createHandler(createApiServices(deps(computes)));
const body = (r: { body?: string }) => JSON.parse(r.body ?? '{}');

it('resolves on a fresh table, asks AWS nothing when the built-ins stand as declared, and follows a changed file', async () => {
  const api = await testApi({ deps: deps(file(2)) });
  expect((await api.call('GET', '/v1/computes')).status).toBe(200);
  expect(lookups.sort()).toEqual(['g6.2xlarge', 'm7i.xlarge']);

  lookups = [];
  const second = await coldContainer(file(2))(apiEvent('GET', '/v1/computes/bare-l4'));
  expect(second.statusCode).toBe(200);
  expect(lookups).toEqual([]);
  // Still what AWS said when it was resolved: the facts the file left out.
  expect(body(second).spec.node).toMatchObject({ cpu: 8, gpu: { type: 'L4', count: 1 } });

  lookups = [];
  const changed = await coldContainer(file(3))(apiEvent('GET', '/v1/computes/bare-l4'));
  expect(changed.statusCode).toBe(200);
  expect(lookups.sort()).toEqual(['g6.2xlarge', 'm7i.xlarge']);
  expect(body(changed).spec.nodeGroup.maxNodes).toBe(3);
  expect(body(changed).metadata.updatedBy).toBe('config');

  // A file that disagrees with EC2 is still refused on the first request, though the others stand as declared.
  lookups = [];
  const lying = parseBuiltins([
    ...file(3).map((b) => ({ name: b.name, spec: b.spec })),
    { name: 'lying-p5', spec: { node: { instanceType: 'p5.48xlarge', cpu: 4 }, nodeGroup: { maxNodes: 1 } } },
  ]);
  const refused = await coldContainer(lying)(apiEvent('GET', '/v1/computes'));
  expect(refused.statusCode).toBe(503);
  expect(body(refused).detail).toContain('lying-p5: spec.node.cpu: p5.48xlarge has 192 vCPUs, not 4');
});
