import { restoreHeadroom } from '../../../lambdas/domain/admission-world';
import type { ModelClass } from '../../../lambdas/domain/model';
import { PlacementHeadroom } from '../../../lambdas/domain/placement';
import { type AdmissionModel, checkStart, decide, ScopeTree } from '../../../lambdas/domain/quota';
import {
  cannotLaunch,
  idleReason,
  nextInterruptions,
  nextShortage,
  nodeOfInstance,
  replacesReclaimed,
  SPOT_WARNING_ANNOTATION,
  spotWarning,
} from '../../../lambdas/domain/supply';
import { builtin } from '../../helpers/computes';

// Issue 32 §4: a critical model keeps at least its minimum on On-Demand or reserved capacity, never on Spot only.

const NOW = '2026-12-06T03:00:00.000Z';

/** gpu-l4-1x as a Spot pool (cheaper, so ranked first) or an On-Demand one. */
function pool(name: string, capacityType: 'SPOT' | 'ON_DEMAND' | 'CAPACITY_BLOCK', perHour: number) {
  const b = builtin('gpu-l4-1x');
  return {
    name,
    spec: {
      ...b.spec,
      node: { ...b.spec.node, capacityType },
      nodeGroup: { ...b.spec.nodeGroup, maxNodes: 4 },
      cost: { ...b.spec.cost, perHour },
    },
  };
}
const SPOT = pool('l4-spot', 'SPOT', 0.3);
const OD = pool('l4-od', 'ON_DEMAND', 0.8);

function model(name: string, cls: ModelClass, min: number, target = min, compute?: string): AdmissionModel {
  return {
    name,
    createdAt: NOW,
    spec: {
      profiles: [
        { name: 'l4', gpus: 1, gpuType: 'L4', cpuCores: 2, minMemoryGb: 8, ...(compute ? { compute } : {}) },
      ],
      scaling: { min, max: Math.max(target, 1), target },
      class: cls,
    },
  };
}

function pass(computes: readonly (typeof SPOT)[], models: AdmissionModel[]) {
  return decide({
    scopes: [],
    quotas: [],
    models,
    admissions: [],
    headroom: PlacementHeadroom.create(computes),
    now: NOW,
  });
}

const placedOn = (d: ReturnType<typeof pass>, m: string) =>
  d.admissions
    .find((a) => a.model === m)!
    .units.flatMap((u) => u.placements.map((p) => `${u.kind}:${p.compute}×${p.replicas}`));

describe('Spot and critical models (issue 32 §4)', () => {
  it('places a critical model’s minimum on On-Demand although Spot is cheaper; its extra replicas and other classes may use Spot', () => {
    const d = pass([SPOT, OD], [model('crit', 'critical', 2, 3), model('std', 'standard', 2)]);
    expect(placedOn(d, 'crit')).toEqual(['min:l4-od×2', 'extra:l4-spot×1']);
    expect(placedOn(d, 'std')).toEqual(['min:l4-spot×2']);
  });

  it('counts a capacity block as reserved capacity a critical minimum may use', () => {
    const d = pass([SPOT, pool('l4-block', 'CAPACITY_BLOCK', 0.9)], [model('crit', 'critical', 1)]);
    expect(placedOn(d, 'crit')).toEqual(['min:l4-block×1']);
  });

  it('leaves a critical minimum pending with a reason that says so when only Spot computes could hold it', () => {
    const d = pass([SPOT], [model('crit', 'critical', 1), model('std', 'standard', 1)]);
    const crit = d.admissions.find((a) => a.model === 'crit')!;
    expect(crit.units).toEqual([]);
    expect(crit.pending[0]).toMatchObject({ reason: 'Headroom', replicas: 1 });
    expect(crit.pending[0]!.message).toContain(
      'the computes that can hold a 1-gpu L4 replica (l4-spot) are all Spot, and a critical model keeps at least its minimum on On-Demand or reserved capacity',
    );
    expect(placedOn(d, 'std')).toEqual(['min:l4-spot×1']);
  });

  it('refuses the start of a critical model pinned to a Spot compute, naming the rule and what to do', () => {
    const m = model('crit', 'critical', 1, 1, 'l4-spot');
    const check = checkStart(
      {
        scopes: [],
        quotas: [],
        models: [],
        admissions: [],
        headroom: PlacementHeadroom.create([SPOT, OD]),
        emptyHeadroom: PlacementHeadroom.create([SPOT, OD]),
        now: NOW,
      },
      m,
    );
    expect(check).toMatchObject({ ok: false, reason: 'Headroom' });
    expect(!check.ok && check.message).toMatch(
      /profile l4 pins compute l4-spot, which is Spot, and a critical model keeps at least its minimum on On-Demand or reserved capacity.*add an ON_DEMAND or CAPACITY_BLOCK compute/,
    );
    // The same model as standard starts.
    expect(
      checkStart(
        {
          scopes: [],
          quotas: [],
          models: [],
          admissions: [],
          headroom: PlacementHeadroom.create([SPOT]),
          emptyHeadroom: PlacementHeadroom.create([SPOT]),
          now: NOW,
        },
        model('std', 'standard', 1, 1, 'l4-spot'),
      ).ok,
    ).toBe(true);
  });

  it('places again a critical minimum found on Spot (the class was raised), but keeps its extra replicas there', () => {
    const crit = model('crit', 'critical', 1, 2);
    const unit = (id: string, kind: 'min' | 'extra') => ({
      id,
      kind,
      replicas: 1,
      profile: 'l4',
      resources: { gpus: 1, cores: 2, memoryGb: 8 },
      placements: [{ compute: 'l4-spot', profile: 'l4', replicas: 1 }],
      admittedAt: NOW,
      borrowed: false,
    });
    const admission = { model: 'crit', units: [unit('crit#min', 'min'), unit('crit#2', 'extra')] } as never;
    const asModel = (m: AdmissionModel) => ({
      ...m,
      spec: { ...m.spec, source: 'hf://o/m', engine: 'vllm' as const },
    });
    const kept = restoreHeadroom([SPOT, OD], [admission], [asModel(crit)], new ScopeTree([]), NOW);
    expect(kept.admissions[0]!.units.map((u) => u.id)).toEqual(['crit#2']);
    const asStandard = { ...crit, spec: { ...crit.spec, class: 'standard' as const } };
    expect(
      restoreHeadroom([SPOT, OD], [admission], [asModel(asStandard)], new ScopeTree([]), NOW).admissions[0]!
        .units,
    ).toHaveLength(2);
  });
});

describe('Spot interruption warnings (issue 32 §4)', () => {
  const event = {
    version: '0',
    id: '12345678-1234-1234-1234-123456789012',
    'detail-type': 'EC2 Spot Instance Interruption Warning',
    source: 'aws.ec2',
    account: '123456789012',
    time: '2026-12-06T03:00:00Z',
    region: 'us-east-1',
    resources: ['arn:aws:ec2:us-east-1:123456789012:instance/i-1234567890abcdef0'],
    detail: { 'instance-id': 'i-1234567890abcdef0', 'instance-action': 'terminate' },
  };

  it('reads the instance and time of EC2’s warning, and nothing from other events', () => {
    expect(spotWarning(event)).toEqual({ instance: 'i-1234567890abcdef0', at: '2026-12-06T03:00:00Z' });
    expect(spotWarning({ ...event, 'detail-type': 'EC2 Instance Rebalance Recommendation' })).toBeUndefined();
    expect(spotWarning({ source: 'llmcap.schedule', scheduledTime: NOW })).toBeUndefined();
    expect(spotWarning({ ...event, detail: { 'instance-id': 'not-an-instance' } })).toBeUndefined();
  });

  it('counts each warned instance once, however often EventBridge delivers it', () => {
    const one = nextInterruptions(undefined, { instance: 'i-1', node: 'n1', at: NOW });
    expect(one).toEqual({ count: 1, last: { instance: 'i-1', node: 'n1', at: NOW } });
    expect(nextInterruptions(one, { instance: 'i-1', at: NOW })).toBe(one);
    expect(nextInterruptions(one, { instance: 'i-2', at: NOW }).count).toBe(2);
  });

  it('finds the node of an instance by its providerID, and counts a warned node idle at once', () => {
    const warned = {
      metadata: { name: 'n1', annotations: { [SPOT_WARNING_ANNOTATION]: NOW } },
      spec: { providerID: 'aws:///us-east-1a/i-0abc' },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    };
    expect(nodeOfInstance([warned], 'i-0abc')).toBe(warned);
    expect(nodeOfInstance([warned], 'i-0ab')).toBeUndefined();
    expect(idleReason(warned, NOW, 300_000)).toBe(`Spot interruption warning at ${NOW}`);
  });

  it('gives a Spot group that lost an instance no grace when its launches fail for capacity', () => {
    const failed = {
      launch: {
        status: 'Failed' as const,
        at: NOW,
        message: 'There is no Spot capacity available that matches your request.',
      },
    };
    const later = new Date(Date.parse(NOW) + 1000).toISOString();
    expect(cannotLaunch(nextShortage(undefined, failed, NOW, 300_000), later)).toBe(false);
    expect(cannotLaunch(nextShortage(undefined, failed, NOW, 300_000, true), later)).toBe(true);
    const supply = { interruptions: { count: 1, last: { instance: 'i-1', at: NOW } } };
    const at = (s: number) => new Date(Date.parse(NOW) + s * 1000).toISOString();
    expect(replacesReclaimed(supply, undefined, later, 300_000)).toBe(true);
    expect(replacesReclaimed(supply, undefined, at(400), 300_000)).toBe(false);
    // EC2 reports the replacement's failed launch 400 s after the warning, but it was asked for 20 s after it:
    // judged at the ask, the group still gets no grace (judged at the pass that read it, it had the full grace).
    const replacement = {
      status: 'Failed' as const,
      at: at(400),
      startedAt: at(20),
      message: 'no Spot capacity',
    };
    expect(replacesReclaimed(supply, replacement, at(405), 300_000)).toBe(true);
    // A launch asked for long before or after the warning is not its replacement.
    expect(replacesReclaimed(supply, { ...replacement, startedAt: at(-3600) }, at(405), 300_000)).toBe(false);
    expect(replacesReclaimed(supply, { ...replacement, startedAt: at(3600) }, at(3605), 300_000)).toBe(false);
    // Without a warning there is nothing to replace.
    expect(replacesReclaimed(undefined, replacement, at(405), 300_000)).toBe(false);
  });
});
