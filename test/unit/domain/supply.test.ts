import { restoreHeadroom } from '../../../lambdas/domain/admission-world';
import { ScopeTree } from '../../../lambdas/domain/quota';
import {
  admissibleComputes,
  idleReason,
  nodesByCompute,
  replacementNodes,
  type SupplyNode,
  withReplacements,
} from '../../../lambdas/domain/supply';
import { builtin } from '../../helpers/computes';

const NOW = '2026-12-06T03:00:00.000Z';
const MIN = 60_000;
const GRACE = 5 * MIN;
const ago = (ms: number) => new Date(Date.parse(NOW) - ms).toISOString();

const node = (
  name: string,
  over: Partial<SupplyNode> & { ready?: boolean; since?: string } = {},
): SupplyNode => ({
  metadata: {
    name,
    labels: { 'llmcap.dev/compute': 'pool' },
    creationTimestamp: ago(60 * MIN),
    ...over.metadata,
  },
  ...(over.spec ? { spec: over.spec } : {}),
  status: {
    conditions: [
      {
        type: 'Ready',
        status: over.ready === false ? 'False' : 'True',
        lastTransitionTime: over.since ?? ago(50 * MIN),
      },
    ],
  },
});

const unit = (id: string) => ({
  id,
  kind: 'extra',
  replicas: 1,
  profile: 'l4',
  resources: { gpus: 1, cores: 4, memoryGb: 16 },
  placements: [{ compute: 'pool', profile: 'l4', replicas: 1 }],
  admittedAt: NOW,
  borrowed: false,
});

describe('nodes that take no pods (issue 32 §1)', () => {
  it('counts a node cordoned by a person, not one cordoned by llmcap’s own scale-down drain', () => {
    expect(idleReason(node('a', { spec: { unschedulable: true } }), NOW, GRACE)).toBe('cordoned');
    const ours = node('b', {
      spec: { unschedulable: true },
      metadata: {
        name: 'b',
        managedFields: [{ manager: 'llmcap-drain', fieldsV1: { 'f:spec': { 'f:unschedulable': {} } } }],
      },
    });
    expect(idleReason(ours, NOW, GRACE)).toBeUndefined();
    // kubectl's cordon owns the field under its own manager.
    const kubectl = node('c', {
      spec: { unschedulable: true },
      metadata: {
        name: 'c',
        managedFields: [{ manager: 'kubectl-cordon', fieldsV1: { 'f:spec': { 'f:unschedulable': {} } } }],
      },
    });
    expect(idleReason(kubectl, NOW, GRACE)).toBe('cordoned');
  });

  it('counts a NotReady node only after the grace (a booting node is NotReady for a minute or two)', () => {
    expect(idleReason(node('boot', { ready: false, since: ago(2 * MIN) }), NOW, GRACE)).toBeUndefined();
    expect(idleReason(node('dead', { ready: false, since: ago(6 * MIN) }), NOW, GRACE)).toBe(
      `NotReady since ${ago(6 * MIN)}`,
    );
    expect(idleReason(node('ok'), NOW, GRACE)).toBeUndefined();
    const leaving = node('gone', { spec: { unschedulable: true } });
    leaving.metadata.deletionTimestamp = ago(MIN);
    expect(idleReason(leaving, NOW, GRACE)).toBeUndefined();
  });

  it('groups nodes by compute label, idle ones named', () => {
    const other = node('x');
    other.metadata.labels = { 'llmcap.dev/compute': 'other' };
    const seen = nodesByCompute(
      [node('b', { spec: { unschedulable: true } }), node('a'), other],
      'llmcap.dev/compute',
      NOW,
      GRACE,
    );
    expect(seen.get('pool')).toEqual({ nodes: 2, idle: [{ node: 'b', why: 'cordoned' }] });
    expect(seen.get('other')).toEqual({ nodes: 1, idle: [] });
  });

  it('replaces idle nodes within maxNodes, but not those already beyond the desired size (leaving)', () => {
    expect(replacementNodes(1, 2, 2)).toBe(1);
    // A scale-down from 3 to 2 whose removed node is cordoned: nothing to replace.
    expect(replacementNodes(1, 3, 2)).toBe(0);
    expect(withReplacements(2, 1, 4)).toBe(3);
    expect(withReplacements(4, 1, 4)).toBe(4);
    // Nothing needed: an idle node of an empty pool is not replaced.
    expect(withReplacements(0, 1, 4)).toBe(0);
  });

  it('gives admission one node slot fewer per idle node, so a unit that no longer fits is placed again', () => {
    const pool = { ...builtin('gpu-l4-1x'), name: 'pool' };
    pool.spec = { ...pool.spec, nodeGroup: { ...pool.spec.nodeGroup, maxNodes: 2 } };
    const idle = { ...pool, supply: { idleNodes: [{ node: 'n1', why: 'cordoned' }] } };
    expect(admissibleComputes([idle])[0]!.spec.nodeGroup.maxNodes).toBe(1);
    expect(admissibleComputes([pool])[0]).toBe(pool);
    const model = {
      name: 'chat',
      spec: {
        profiles: [{ name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 4, minMemoryGb: 16, compute: 'pool' }],
      },
    } as never;
    const admission = {
      model: 'chat',
      units: [unit('chat#min'), unit('chat#2')],
    } as never;
    const tree = new ScopeTree([]);
    expect(restoreHeadroom([pool] as never, [admission], [model], tree).admissions[0]!.units).toHaveLength(2);
    expect(restoreHeadroom([idle] as never, [admission], [model], tree).admissions[0]!.units).toHaveLength(1);
  });
});
