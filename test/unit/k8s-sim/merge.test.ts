import { apply, update } from '../../../local/k8s-sim/managed';
import { jsonPatch, PatchError, strategicMergePatch } from '../../../local/k8s-sim/patch';
import { matchesRequirements, parseLabelSelector } from '../../../local/k8s-sim/selectors';
import type { KObject } from '../../../local/k8s-sim/types';

/** The merge rules of the simulated API server, on plain objects. */

const ctx = (manager: string) => ({
  manager,
  apiVersion: 'apps/v1',
  now: '2026-01-01T00:00:00Z',
  ignoreTop: ['status'],
});

const deployment = (containers: Record<string, unknown>[]): KObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'm', namespace: 'default' },
  spec: { template: { spec: { containers } } },
});

const containersOf = (o: KObject) =>
  ((o.spec as any).template.spec.containers as { name: string; image?: string; env?: unknown[] }[]).map(
    (c) => c.name,
  );

describe('server-side apply', () => {
  it('drops a container the applier stopped applying, unless someone else owns a field in it', () => {
    let live = apply(
      undefined,
      deployment([
        { name: 'server', image: 'a:1' },
        { name: 'sidecar', image: 'b:1' },
      ]),
      {
        ...ctx('llmcap'),
        force: false,
      },
    );
    live = apply(live, deployment([{ name: 'server', image: 'a:1' }]), { ...ctx('llmcap'), force: false });
    expect(containersOf(live)).toEqual(['server']);
    // Someone adds an env var to the server container; when llmcap stops applying it, the container stays
    // with just what the other manager owns in it.
    const edited = structuredClone(live);
    (edited.spec as any).template.spec.containers[0].env = [{ name: 'DEBUG', value: '1' }];
    live = update(live, edited, ctx('kubectl-edit'));
    live = apply(live, deployment([{ name: 'other', image: 'c:1' }]), { ...ctx('llmcap'), force: false });
    expect(containersOf(live)).toEqual(['server', 'other']);
    const server = (live.spec as any).template.spec.containers[0];
    expect(server).toEqual({ name: 'server', env: [{ name: 'DEBUG', value: '1' }] });
  });

  it('shares a field applied with the same value by two appliers, and conflicts only on a different value', () => {
    let live = apply(undefined, deployment([{ name: 'server', image: 'a:1' }]), {
      ...ctx('one'),
      force: false,
    });
    live = apply(live, deployment([{ name: 'server', image: 'a:1' }]), { ...ctx('two'), force: false });
    expect(live.metadata?.managedFields?.map((m) => m.manager).sort()).toEqual(['one', 'two']);
    expect(() =>
      apply(live, deployment([{ name: 'server', image: 'a:2' }]), { ...ctx('two'), force: false }),
    ).toThrow(
      'Apply failed with 1 conflict: conflict with "one": .spec.template.spec.containers[name="server"].image',
    );
  });
});

describe('patches', () => {
  it('merges containers by name in a strategic merge patch, and deletes one with $patch: delete', () => {
    const live = deployment([
      { name: 'a', image: 'a:1' },
      { name: 'b', image: 'b:1' },
    ]);
    const out = strategicMergePatch(live, {
      spec: {
        template: {
          spec: {
            containers: [
              { name: 'a', image: 'a:2' },
              { name: 'b', $patch: 'delete' },
            ],
          },
        },
      },
    }) as KObject;
    expect((out.spec as any).template.spec.containers).toEqual([{ name: 'a', image: 'a:2' }]);
  });

  it('applies JSON Patch operations and refuses a failed test', () => {
    const out = jsonPatch({ spec: { replicas: 1, list: ['x'] } }, [
      { op: 'replace', path: '/spec/replicas', value: 3 },
      { op: 'add', path: '/spec/list/-', value: 'y' },
    ]);
    expect(out).toEqual({ spec: { replicas: 3, list: ['x', 'y'] } });
    expect(() => jsonPatch({ a: 1 }, [{ op: 'test', path: '/a', value: 2 }])).toThrow(PatchError);
  });
});

it('parses set-based label selectors as the API server does', () => {
  const reqs = parseLabelSelector('app in (a, b),tier!=web,!legacy,env');
  expect(matchesRequirements(reqs, { app: 'a', tier: 'db', env: 'x' })).toBe(true);
  expect(matchesRequirements(reqs, { app: 'a', tier: 'web', env: 'x' })).toBe(false);
  expect(matchesRequirements(reqs, { app: 'a', env: 'x', legacy: '1' })).toBe(false);
  expect(() => parseLabelSelector('app in (a')).toThrow(/unable to parse requirement/);
});
