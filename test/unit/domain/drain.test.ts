import { chooseNodesToRemove, instanceIdOf } from '../../../lambdas/domain/drain';

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
