import {
  chooseNodesToRemove,
  type DrainDeployment,
  type DrainPod,
  instanceIdOf,
  parseSurge,
  planDrain,
  podsToSteer,
  SURGE_ANNOTATION,
  surgeValue,
} from '../../../lambdas/domain/drain';

const node = (name: string, pods: number, unschedulable = false) => ({
  name,
  instanceId: `i-0${name.length}${pods}`,
  unschedulable,
  pods,
});

describe('the nodes a scale-down removes', () => {
  it('takes a drain already under way first, then empty nodes, then the fewest replicas', () => {
    const nodes = [node('a', 3), node('b', 0), node('c', 1), node('d', 2, true), node('e', 0)];
    expect(chooseNodesToRemove(nodes, 3).map((n) => n.name)).toEqual(['d', 'b', 'e']);
    expect(chooseNodesToRemove(nodes, 4).map((n) => n.name)).toEqual(['d', 'b', 'e', 'c']);
    expect(chooseNodesToRemove(nodes, 0)).toEqual([]);
  });

  it('never picks a node whose instance it cannot name', () => {
    expect(chooseNodesToRemove([{ name: 'x', unschedulable: false, pods: 0 }], 1)).toEqual([]);
  });

  it("reads the instance from the node's providerID", () => {
    expect(instanceIdOf('aws:///us-east-1a/i-0abc123def4567890')).toBe('i-0abc123def4567890');
    expect(instanceIdOf('kind://docker/x')).toBeUndefined();
  });
});

const dep = (model: string, admitted: number, surge?: { surge: number; ready: number }): DrainDeployment => ({
  namespace: 'ns',
  name: `${model}-d`,
  model,
  profile: 'p',
  compute: 'c',
  admitted,
  ...(surge ? { surge } : {}),
});
const pod = (
  name: string,
  model: string,
  node: string | undefined,
  ready: boolean,
  extra: Partial<DrainPod> = {},
) => ({
  name,
  namespace: 'ns',
  model,
  profile: 'p',
  compute: 'c',
  ...(node ? { node } : {}),
  ready,
  ...extra,
});

describe('surge before evict', () => {
  it('surges a Deployment by its Ready pods on going nodes and evicts none of them', () => {
    const plan = planDrain({
      going: ['n1'],
      pods: [pod('solo-1', 'solo', 'n1', true)],
      deployments: [dep('solo', 1)],
    });
    expect(plan.surge).toEqual([{ deployment: dep('solo', 1), surge: { surge: 1, ready: 1 } }]);
    expect(plan.evict).toEqual([]);
    expect(plan.release).toEqual([]);
    expect(plan.terminate).toEqual([]);
  });

  it('waits while the replacement starts, and says why when it cannot be placed', () => {
    const going = ['n1'];
    const old = pod('solo-1', 'solo', 'n1', true);
    const starting = planDrain({
      going,
      pods: [old, pod('solo-2', 'solo', 'n2', false, { reason: 'Starting', message: 'ContainerCreating' })],
      deployments: [dep('solo', 1, { surge: 1, ready: 1 })],
    });
    expect(starting.waiting[0]?.why).toMatch(/solo-2 to be Ready \(Starting: ContainerCreating\)/);
    expect(starting.evict).toEqual([]);
    const stuck = planDrain({
      going,
      pods: [
        old,
        pod('solo-2', 'solo', undefined, false, {
          reason: 'Unschedulable',
          message: '0/2 nodes are available: 1 Insufficient cpu',
        }),
      ],
      deployments: [dep('solo', 1, { surge: 1, ready: 1 })],
    });
    expect(stuck.waiting[0]?.why).toBe(
      'no room for the replacement of solo-d on the nodes that stay: 0/2 nodes are available: 1 Insufficient cpu',
    );
    expect(stuck.release).toEqual([]);
    expect(stuck.evict).toEqual([]);
  });

  it('releases once the replacements are Ready: the old pods go, and the node after them', () => {
    const old = pod('solo-1', 'solo', 'n1', true);
    const plan = planDrain({
      going: ['n1'],
      pods: [old, pod('solo-2', 'solo', 'n2', true)],
      deployments: [dep('solo', 1, { surge: 1, ready: 1 })],
    });
    expect(plan.release).toEqual([{ deployment: dep('solo', 1, { surge: 1, ready: 1 }), pods: [old] }]);
    expect(plan.terminate).toEqual([]);
    expect(
      planDrain({ going: ['n1'], pods: [pod('solo-2', 'solo', 'n2', true)], deployments: [] }).terminate,
    ).toEqual(['n1']);
  });

  it('holds the Ready count it had, not a crash-looping replica it never had', () => {
    const crash = pod('m-3', 'm', 'n2', false, { reason: 'CrashLoopBackOff' });
    const first = planDrain({
      going: ['n1'],
      pods: [pod('m-1', 'm', 'n1', true), pod('m-2', 'm', 'n2', true), crash],
      deployments: [dep('m', 3)],
    });
    expect(first.surge[0]?.surge).toEqual({ surge: 1, ready: 2 });
    const next = planDrain({
      going: ['n1'],
      pods: [pod('m-1', 'm', 'n1', true), pod('m-2', 'm', 'n2', true), crash, pod('m-4', 'm', 'n2', true)],
      deployments: [dep('m', 3, { surge: 1, ready: 2 })],
    });
    expect(next.release.map((r) => r.pods.map((p) => p.name))).toEqual([['m-1']]);
  });

  it('evicts pods on going nodes that serve nothing, and Ready pods no Deployment of llmcap accounts for', () => {
    const plan = planDrain({
      going: ['n1'],
      pods: [pod('a-1', 'a', 'n1', false, { reason: 'CrashLoopBackOff' }), pod('gone-1', 'gone', 'n1', true)],
      deployments: [dep('a', 1)],
    });
    expect(plan.evict.map((p) => p.name)).toEqual(['a-1', 'gone-1']);
    expect(plan.surge).toEqual([]);
  });

  it('surges further when another node of the Deployment joins the drain', () => {
    const plan = planDrain({
      going: ['n1', 'n3'],
      pods: [pod('m-1', 'm', 'n1', true), pod('m-2', 'm', 'n3', true), pod('m-3', 'm', 'n2', true)],
      deployments: [dep('m', 3, { surge: 1, ready: 3 })],
    });
    expect(plan.surge[0]?.surge).toEqual({ surge: 2, ready: 3 });
  });

  it('reads back only a surge it wrote', () => {
    const s = { surge: 2, ready: 1 };
    expect(parseSurge({ [SURGE_ANNOTATION]: surgeValue(s) })).toEqual(s);
    for (const bad of ['', '2', '{"surge":0,"ready":1}', '{"surge":1.5,"ready":1}', 'not json'])
      expect(parseSurge({ [SURGE_ANNOTATION]: bad })).toBeUndefined();
    expect(parseSurge(undefined)).toBeUndefined();
  });

  it('steers a dropping Deployment to its pods on going nodes', () => {
    const pods = [pod('a', 'm', 'n1', true), pod('b', 'm', 'n2', true), pod('c', 'm', undefined, false)];
    expect(podsToSteer(pods, new Set(['n2'])).map((p) => p.name)).toEqual(['b']);
  });
});
