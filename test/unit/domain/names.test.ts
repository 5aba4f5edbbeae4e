import { DomainError } from '../../../lambdas/domain/errors';
import {
  isTwinKey,
  keyForNew,
  keyFromLabel,
  labelValue,
  nameOf,
  newTwinKey,
  resolveName,
  resolveReference,
  resolveScopeRef,
  scopeKeyForNew,
  speakNames,
  speakValue,
} from '../../../lambdas/domain/names';
import { nodegroupName } from '../../../lambdas/domain/nodegroup';
import { ScopeTree } from '../../../lambdas/domain/quota';
import { namespaceFor } from '../../../lambdas/domain/workloads';

const tree = new ScopeTree([
  { name: 'org:acme' },
  { name: 'team:ml', parent: 'org:acme' },
  { name: 'project:a', parent: 'team:ml' },
  { name: 'org:beta' },
  { name: 'project:b', parent: 'org:beta' },
] as never);

const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e instanceof DomainError ? { reason: e.details.reason, message: e.message } : e;
  }
  return undefined;
};

describe('names per owner', () => {
  it('stores a new name under itself when free, and a twin key when an unrelated owner holds it', () => {
    expect(keyForNew('compute', 'gpu', 'project:a', [], tree)).toBe('gpu');
    const twin = keyForNew('compute', 'gpu', 'project:b', [{ name: 'gpu', owner: 'project:a' }], tree);
    expect(twin).toMatch(/^gpu~[a-z2-7]{8}$/);
    expect(nameOf(twin)).toBe('gpu');
    expect(isTwinKey(twin)).toBe(true);
  });

  it("refuses a name held on the owner's line: the owner, above it, below it, or shared", () => {
    for (const holder of ['project:a', 'team:ml', 'org:acme', undefined]) {
      const r = refusal(() =>
        keyForNew('model', 'llama', 'team:ml', [{ name: 'llama~abcdefgh', owner: holder }], tree),
      );
      expect({ holder, r }).toMatchObject({ holder, r: { reason: 'AlreadyExists' } });
    }
    // A shared one clashes with every owner's, and every owner's with a shared one.
    expect(
      refusal(() => keyForNew('model', 'llama', undefined, [{ name: 'llama', owner: 'project:b' }], tree)),
    ).toMatchObject({
      reason: 'AlreadyExists',
      message: expect.stringContaining('owned by project:b'),
    });
    // The resource being moved does not clash with itself.
    expect(
      keyForNew('model', 'llama', 'team:ml', [{ name: 'llama', owner: 'project:a' }], tree, {
        except: 'llama',
      }),
    ).toBe('llama');
  });

  it('draws twin keys from randomness, never one already taken', () => {
    const fixed = [new Uint8Array(8).fill(0), new Uint8Array(8).fill(1)];
    let i = 0;
    const random = () => fixed[Math.min(i++, 1)]!;
    const existing = [
      { name: 'gpu', owner: 'project:a' },
      { name: 'gpu~aaaaaaaa', owner: 'project:b' },
    ];
    const key = keyForNew('compute', 'gpu', 'org:zeta', existing, { above: () => false }, { random });
    expect(key).toBe('gpu~bbbbbbbb');
    expect(newTwinKey('x')).not.toBe(newTwinKey('x'));
  });

  it('resolves a name among what the caller sees, asking which owner when it sees two', () => {
    const items = [
      { name: 'gpu', owner: 'project:a' },
      { name: 'gpu~k3jd6s2a', owner: 'project:b' },
      { name: 'cpu' },
    ];
    const seesA = (r: { owner?: string }) => r.owner !== 'project:b';
    expect(resolveName('compute', 'gpu', undefined, items, seesA)?.owner).toBe('project:a');
    expect(resolveName('compute', 'gpu', undefined, items, (r) => r.owner === 'project:b')?.name).toBe(
      'gpu~k3jd6s2a',
    );
    expect(resolveName('compute', 'gpu', undefined, items, () => false)).toBeUndefined();
    expect(refusal(() => resolveName('compute', 'gpu', undefined, items, () => true))).toMatchObject({
      reason: 'AmbiguousName',
      message: expect.stringContaining('project:a and project:b'),
    });
    expect(resolveName('compute', 'gpu', 'project:b', items, () => true)?.name).toBe('gpu~k3jd6s2a');
    expect(resolveName('compute', 'cpu', 'shared', items, () => true)?.name).toBe('cpu');
    // An operator may give the key an alarm or a node group carries; only to one who may see it.
    expect(resolveName('compute', 'gpu~k3jd6s2a', undefined, items, () => true)?.owner).toBe('project:b');
    expect(resolveName('compute', 'gpu~k3jd6s2a', undefined, items, seesA)).toBeUndefined();
  });

  it("resolves a pin or fallback to the one within the owner's reach", () => {
    const items = [
      { name: 'gpu', owner: 'project:a' },
      { name: 'gpu~k3jd6s2a', owner: 'project:b' },
    ];
    expect(resolveReference('gpu', items, (o) => o === 'project:b')).toBe('gpu~k3jd6s2a');
    expect(resolveReference('gpu', items, (o) => o === 'project:a')).toBe('gpu');
    // None in reach: the name stays, for the catalog rules to refuse in their own words.
    expect(resolveReference('gpu', items, () => false)).toBe('gpu');
  });

  it('speaks names in answers, and keeps keys apart on the wire', () => {
    const text = JSON.stringify({
      name: 'gpu~k3jd6s2a',
      detail: 'compute gpu~k3jd6s2a is used by llama~abcdefgh.',
    });
    expect(speakNames(text)).toBe(JSON.stringify({ name: 'gpu', detail: 'compute gpu is used by llama.' }));
    // Text that merely holds a tilde is left alone.
    expect(speakNames('~/.llmcap/config and a~b')).toBe('~/.llmcap/config and a~b');
    expect(labelValue('gpu~k3jd6s2a')).toBe('gpu.k3jd6s2a');
    expect(keyFromLabel('gpu.k3jd6s2a')).toBe('gpu~k3jd6s2a');
    expect(keyFromLabel('gpu')).toBe('gpu');
    // A twin's node group can never be the group of a compute named gpu-k3jd6s2a.
    expect(nodegroupName('dev', 'gpu~k3jd6s2a')).toBe('llmcap-dev-gpu_k3jd6s2a');
    expect(nodegroupName('dev', 'gpu-k3jd6s2a')).toBe('llmcap-dev-gpu-k3jd6s2a');
  });

  it("gives a scope a twin key beside an unrelated one, and refuses one on its parent's line", () => {
    const t = new ScopeTree([
      { name: 'org:acme' },
      { name: 'team:ml', parent: 'org:acme' },
      { name: 'team:ops', parent: 'org:acme' },
      { name: 'project:x', parent: 'team:ml' },
    ] as never);
    expect(scopeKeyForNew('project:x', 'team:ops', t)).toMatch(/^project:x~[a-z2-7]{8}$/);
    // Under the same parent, above it, or anywhere beneath it: the creator sees it.
    expect(refusal(() => scopeKeyForNew('project:x', 'team:ml', t))).toMatchObject({
      reason: 'AlreadyExists',
      message: expect.stringContaining('(under team:ml)'),
    });
    expect(refusal(() => scopeKeyForNew('project:x', 'org:acme', t))).toMatchObject({
      reason: 'AlreadyExists',
    });
    expect(refusal(() => scopeKeyForNew('team:ml', 'org:acme', t))).toMatchObject({
      reason: 'AlreadyExists',
    });
    // An org is the platform's, whose admins see the whole tree.
    expect(refusal(() => scopeKeyForNew('project:x', undefined, t))).toMatchObject({
      reason: 'AlreadyExists',
    });
    expect(scopeKeyForNew('project:y', 'team:ops', t)).toBe('project:y');
  });

  it('resolves a scope reference among the scopes seen, a parent path saying which of two', () => {
    const t = new ScopeTree([
      { name: 'org:acme' },
      { name: 'team:ml', parent: 'org:acme' },
      { name: 'team:ops', parent: 'org:acme' },
      { name: 'project:x', parent: 'team:ml' },
      { name: 'project:x~abcdefgh', parent: 'team:ops' },
    ] as never);
    const all = () => true;
    expect(refusal(() => resolveScopeRef('project:x', t, all))).toMatchObject({
      reason: 'AmbiguousName',
      message: expect.stringContaining('under team:ml and team:ops; write team:ml/project:x'),
    });
    expect(resolveScopeRef('team:ops/project:x', t, all)).toBe('project:x~abcdefgh');
    expect(resolveScopeRef('org:acme/team:ml/project:x', t, all)).toBe('project:x');
    expect(resolveScopeRef('project:x', t, (k) => k !== 'project:x')).toBe('project:x~abcdefgh');
    expect(resolveScopeRef('team:nope/project:x', t, all)).toBeUndefined();
    expect(resolveScopeRef('project:x~abcdefgh', t, all)).toBe('project:x~abcdefgh');
    // A twin owner's namespace cannot be another scope's.
    expect(namespaceFor('dev', 'project:x~abcdefgh')).toBe('llmcap-dev-t-project-x-abcdefgh');
    expect(namespaceFor('dev', 'project:x-abcdefgh')).toBe('llmcap-dev-project-x-abcdefgh');
  });
});

describe('speakValue', () => {
  it('speaks the keys of what llmcap composed, drops undefined fields, and keeps a __proto__ key as a field', () => {
    const answer = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    answer['team:a~abcdefgh'] = { model: 'llama~qrstuvwx', gone: undefined };
    const spoken = speakValue(answer) as Record<string, unknown>;
    expect(JSON.parse(JSON.stringify(spoken))).toEqual(
      JSON.parse('{"__proto__": {"polluted": true}, "team:a": {"model": "llama"}}'),
    );
    // The field is the answer's own, not the object's prototype.
    expect(Object.getPrototypeOf(spoken)).toBe(Object.prototype);
    expect((spoken as { polluted?: boolean }).polluted).toBeUndefined();
  });
});
