import { checkStart, decide } from '../../../../lambdas/domain/quota';
import { SimpleHeadroom } from '../../../helpers/simple-headroom';
import { World } from './world';

// docs/reference/quota-semantics.md §8: the worked examples, one test each.
describe('worked examples', () => {
  test('Limit: own limit refuses at the API, borrowing is marked', () => {
    const w = new World(['org:o', 'team:t<org:o', 'project:a<team:t', 'project:b<team:t'], {
      'project:a': { g: 9, l: 10 },
      'project:b': { g: 12, l: 21 },
    });
    w.model('a-run', 'project:a', { min: 9 });
    w.pass();
    expect(w.gpus('project:a')).toBe(9);

    // Two more: 11 > 10, refused at the API with the numbers named.
    const two = w.start('a-two', 'project:a', { min: 2 });
    expect(two).toMatchObject({ ok: false, reason: 'LimitExceeded' });
    expect(!two.ok && two.message).toBe(
      'project:a is at its limit of 10 gpus; 1 gpu more needed (it holds 9, this needs 2)',
    );
    expect(w.models.map((m) => m.name)).not.toContain('a-two');

    // One more: admitted, borrowed (10 > 9).
    expect(w.start('a-one', 'project:a', { min: 1 })).toMatchObject({ ok: true });
    expect(w.status('a-one')).toMatchObject({ admitted: 1, borrowed: 1, pending: 0 });

    // A new model needing 11 at min in an empty A: refused, never fits.
    const w2 = new World(['org:o', 'team:t<org:o', 'project:a<team:t'], { 'project:a': { g: 9, l: 10 } });
    const big = w2.start('huge', 'project:a', { min: 11 });
    expect(big).toMatchObject({ ok: false, reason: 'LimitExceeded' });
    expect(!big.ok && big.message).toMatch(
      /project:a is at its limit of 10 gpus.*even with nothing else running/,
    );
  });

  test('Take-back: a request within its guarantee takes back the borrowed standard replica', () => {
    const w = new World(['org:o', 'team:t<org:o', 'project:p1<team:t', 'project:p2<team:t'], {
      'team:t': { g: 12, l: 12 },
      'project:p1': { g: 6, l: 12 },
      'project:p2': { g: 6, l: 12 },
    });
    w.model('p1-opp', 'project:p1', { gpus: 3, cls: 'opportunistic' });
    w.model('p2-crit', 'project:p2', { gpus: 6, cls: 'critical' });
    w.model('p2-std', 'project:p2', { gpus: 3, cls: 'standard' });
    w.pass();
    expect(w.gpus('team:t')).toBe(12);
    expect(w.gpus('project:p2')).toBe(9);

    w.model('p1-crit', 'project:p1', { gpus: 3, cls: 'critical' });
    const d = w.pass();
    expect(d.victims).toEqual([
      expect.objectContaining({
        model: 'p2-std',
        reason: 'TakenBackForScope',
        forModel: 'p1-crit',
        scope: 'project:p2',
      }),
    ]);
    expect(w.held('p1-crit')).toBe(3);
    expect(w.held('p1-opp')).toBe(3);
    expect(w.held('p2-crit')).toBe(6);
    expect(w.reasons('p2-std')).toEqual(['TakenBackForScope']);
    expect(w.message('p2-std')).toMatch(
      /taken back for p1-crit of project:p1.*project:p2 holds 9 gpus against a guarantee of 6/,
    );
    // The request shows PendingTakeBack while the victim stops, then runs.
    expect(w.reasons('p1-crit')).toEqual(['PendingTakeBack']);
    expect(w.status('p1-crit')).toMatchObject({ admitted: 0, pending: 1 });
    w.pass(new Set(['p2-std/p2-std#min']));
    expect(w.reasons('p1-crit')).toEqual(['PendingTakeBack']);
    expect(w.reasons('p2-std')).toEqual(['InsufficientQuota']);
    w.pass();
    expect(w.status('p1-crit')).toMatchObject({ admitted: 1, pending: 0 });
    // The victim waits: its scope would borrow and may not take back (no preemption loop).
    expect(w.reasons('p2-std')).toEqual(['InsufficientQuota']);
    expect(w.message('p2-std')).toMatch(/team:t is at its limit of 12 gpus; 3 gpus more needed/);
    expect(w.gpus('team:t')).toBe(12);
  });

  test.each([
    [56, ['NoLongerFits'], 45],
    [55, [], 100],
  ])('One pass: alpha 45 and beta %i', (beta, betaReasons, eng) => {
    const w = new World(['team:eng', 'project:alpha<team:eng', 'project:beta<team:eng'], {
      'team:eng': { g: 100, l: 100 },
      'project:alpha': { g: 50, l: 100 },
      'project:beta': { g: 50, l: 60 },
    });
    // beta is older, so only the guarantee puts alpha first.
    w.model('beta', 'project:beta', { gpus: 1, min: beta });
    w.model('alpha', 'project:alpha', { gpus: 1, min: 45 });
    w.pass();
    expect(w.admitted('alpha')).toBe(45);
    expect(w.reasons('beta')).toEqual(betaReasons);
    expect(w.gpus('team:eng')).toBe(eng);
    if (beta === 56) {
      expect(w.message('beta')).toMatch(
        /^another request in this pass took the room: team:eng is at its limit of 100 gpus; 1 gpu more needed.*takes nothing back$/,
      );
    }
  });

  test('Race: two starts for the last GPU, serialized, exactly one wins', () => {
    const w = new World(['org:o', 'project:p<org:o'], { 'project:p': { g: 2, l: 3 } });
    w.model('run', 'project:p', { min: 2 });
    w.pass();
    const first = w.start('one', 'project:p');
    const second = w.start('two', 'project:p');
    expect(first.ok).toBe(true);
    expect(second).toMatchObject({ ok: false, reason: 'LimitExceeded' });
    expect(w.gpus('project:p')).toBe(3);
    // Against the same stale state both would pass: the store must make each decision against the last one.
    const stale = w.input();
    const m = w.model('three', 'project:p');
    w.remove('three');
    expect(checkStart({ ...stale }, m)).toMatchObject({ ok: false });
  });

  test('Quota lowered: nothing evicted, over its limit, next replica refused, CapacityAtLimit', () => {
    const w = new World(['org:o', 'project:p<org:o'], { 'project:p': { g: 8, l: 12 } });
    w.model('m', 'project:p', { min: 1, target: 10, max: 12 });
    w.pass();
    expect(w.admitted('m')).toBe(10);
    w.setQuota('project:p', 6, 6);
    w.model('m', 'project:p', { min: 1, target: 11, max: 12 });
    const d = w.pass();
    expect(w.admitted('m')).toBe(10);
    expect(d.victims).toEqual([]);
    expect(w.reasons('m')).toEqual(['LimitExceeded']);
    expect(w.message('m')).toBe(
      'project:p is at its limit of 6 gpus; 5 gpus more needed (it holds 10, this needs 1)',
    );
    expect(d.atLimit).toEqual(['project:p']);
    expect(d.scopes.find((s) => s.scope === 'project:p')).toMatchObject({ overLimit: true, atLimit: true });
  });
});

describe('own limit, fits free, ordering, NoLongerFits', () => {
  test('a three-deep tree with quotas on projects only: the org imposes nothing', () => {
    const w = new World(['org:o', 'team:t<org:o', 'project:a<team:t', 'project:b<team:t'], {
      'project:a': { g: 2, l: 4 },
      'project:b': { g: 2 },
    });
    w.model('a', 'project:a', { min: 1, target: 6, max: 6 });
    w.model('b', 'project:b', { min: 1, target: 20, max: 20 });
    const d = w.pass();
    expect(w.admitted('a')).toBe(4);
    expect(w.reasons('a')).toEqual(['LimitExceeded']);
    expect(w.admitted('b')).toBe(20);
    // team and org guarantee the sum of their children's: 4.
    expect(d.scopes.find((s) => s.scope === 'team:t')).toMatchObject({
      hasQuota: false,
      guarantee: { gpus: 4 },
      usage: { gpus: 24 },
      borrowed: { gpus: 20 },
    });
    // min and the first extra are within b's guarantee of 2.
    expect(w.status('b')).toMatchObject({ admitted: 20, borrowed: 18 });
  });

  test('an ancestor limit four levels up binds with InsufficientQuota naming it', () => {
    const w = new World(
      ['org:o', 'team:t<org:o', 'project:x<team:t', 'project:y<team:t', 'team:u<org:o', 'project:z<team:u'],
      {
        'org:o': { g: 10, l: 10 },
        'team:t': { g: 6 },
        'project:x': { g: 3 },
        'project:y': { g: 3 },
        'team:u': { g: 4 },
      },
    );
    w.model('z', 'project:z', { gpus: 2, min: 1, target: 5, max: 5 }); // borrows in u's slack and above
    w.pass();
    expect(w.gpus('org:o')).toBe(10);
    // y is within its guarantee, but the org's limit binds and z borrows: y takes back from z.
    w.model('y', 'project:y', { gpus: 2, min: 1 });
    const d = w.pass();
    expect(w.held('y')).toBe(2);
    expect(d.victims.map((v) => [v.model, v.unitId, v.reason])).toEqual([['z', 'z#4', 'TakenBackForScope']]);
    // x asks 5, beyond its guarantee and team:t's (2 + 5 > 6): it may not take back, and waits on the org.
    w.model('x', 'project:x', { gpus: 5, min: 1 });
    w.pass();
    expect(w.reasons('x')).toEqual(['InsufficientQuota']);
    expect(w.message('x')).toMatch(
      /^org:o is at its limit of 10 gpus; 5 gpus more needed \(it holds 10, this needs 5\)/,
    );
    // x2 asks 4: beyond x's guarantee but within team:t's with its usage (2 + 4 ≤ 6): eligible.
    w.model('x2', 'project:x', { gpus: 4, min: 1 });
    const d2 = w.pass();
    expect(d2.victims.map((v) => v.unitId)).toEqual(['z#3', 'z#2']);
    expect(w.gpus('org:o')).toBe(10);
  });

  test('requests of one pass: within guarantee, then class, then the oldest', () => {
    const w = new World(['org:o', 'project:a<org:o', 'project:b<org:o'], {
      'org:o': { g: 4, l: 4 },
      'project:a': { g: 2 },
      'project:b': { g: 2 },
    });
    w.model('old-opp', 'project:a', { gpus: 2, min: 0, target: 1, max: 1 }); // beyond? no: 2 ≤ 2, within
    w.model('old-std', 'project:b', { gpus: 3, min: 1 }); // beyond b's guarantee
    w.model('new-crit', 'project:b', { gpus: 2, cls: 'critical' }); // within
    const d = w.pass();
    expect(d.admitted.map((a) => a.model)).toEqual(['new-crit', 'old-opp']);
    // It would have fit the org's limit at the start of the pass: the others took the room.
    expect(w.reasons('old-std')).toEqual(['NoLongerFits']);
  });

  test('a shared model counts against no scope, needs headroom, is never taken back', () => {
    const w = new World(
      ['org:o', 'project:a<org:o', 'project:b<org:o'],
      {
        'org:o': { g: 4, l: 4 },
        'project:a': { g: 2 },
        'project:b': { g: 2 },
      },
      [{ name: 'gpu', gpus: 1, cores: 100, memoryGb: 100, maxNodes: 6 }],
    );
    w.model('shared', undefined, { min: 3 });
    w.model('b', 'project:b', { min: 1, target: 3, max: 3 });
    w.pass();
    expect(w.admitted('shared')).toBe(3);
    expect(w.admitted('b')).toBe(3);
    expect(w.gpus('org:o')).toBe(3);
    // a within its guarantee: the cluster is full; b's borrowed replica goes, the shared model stays.
    w.model('a', 'project:a', { min: 1 });
    const d = w.pass();
    expect(d.victims.map((v) => v.model)).toEqual(['b']);
    expect(w.admitted('shared')).toBe(3);
    expect(w.admitted('a')).toBe(1);
  });
});

describe('headroom', () => {
  const L40S = { name: 'gpu-l40s-4x', gpus: 4, gpuType: 'L40S', cores: 48, memoryGb: 384, maxNodes: 1 };
  test('Headroom names the compute at its maxNodes; NoLongerFits when the same pass took it', () => {
    const w = new World(['org:o', 'project:a<org:o', 'project:b<org:o'], {}, [L40S]);
    w.model('a', 'project:a', { gpus: 4 });
    w.model('b', 'project:b', { gpus: 4 });
    w.pass();
    expect(w.held('a')).toBe(4);
    expect(w.reasons('b')).toEqual(['NoLongerFits']);
    w.pass();
    expect(w.reasons('b')).toEqual(['Headroom']);
    expect(w.message('b')).toBe(
      "no compute can take a 4-gpu replica: gpu-l40s-4x is at its maxNodes 1; b would borrow beyond project:b's guarantee, so it takes nothing back",
    );
  });

  test('a start no compute could ever hold is refused at the API with Headroom', () => {
    const w = new World(['org:o'], {}, [L40S]);
    const r = w.start('huge', 'org:o', { gpus: 8 });
    expect(r).toMatchObject({ ok: false, reason: 'Headroom' });
    const r2 = w.start('many', 'org:o', { gpus: 4, min: 2 });
    expect(r2).toMatchObject({ ok: false, reason: 'Headroom' });
    expect(!r2.ok && r2.message).toBe(
      'no compute can take a 4-gpu replica (2 replicas together): gpu-l40s-4x is at its maxNodes 1, even with nothing else running',
    );
    // Without an empty headroom, the fallback asks which computes could host it at all.
    const m = w.model('cpu', 'org:o', { gpus: 0, cores: 2 });
    expect(checkStart({ ...w.input() }, m)).toMatchObject({ ok: false, reason: 'Headroom' });
  });

  test('take-back for headroom across orgs: only borrowed replicas on computes that could host it', () => {
    const small = { name: 'gpu-1x', gpus: 1, cores: 8, memoryGb: 32, maxNodes: 4 };
    const w = new World(
      ['org:a', 'org:b', 'org:c'],
      { 'org:a': { g: 2 }, 'org:b': { g: 1 }, 'org:c': { g: 4 } },
      [L40S, small],
    );
    w.model('b-big', 'org:b', { gpus: 4, cls: 'standard' }); // borrowing 3 on the L40S
    w.model('b-small', 'org:b', { gpus: 1, min: 4 }); // 4 on gpu-1x: b borrows
    w.pass();
    expect(w.held('b-big')).toBe(4);
    // c wants a 4-gpu replica within its guarantee: only b-big (on the L40S) helps; b-small stays.
    w.model('c', 'org:c', { gpus: 4 });
    const d = w.pass();
    expect(d.victims.map((v) => v.model)).toEqual(['b-big']);
    expect(w.admitted('b-small')).toBe(4);
    // a is beyond its guarantee for a 4-gpu replica: waits with Headroom, takes nothing.
    w.model('a', 'org:a', { gpus: 4 });
    const d2 = w.pass();
    expect(d2.victims).toEqual([]);
    expect(w.reasons('a')).toEqual(['Headroom']);
    expect(w.message('a')).toMatch(/takes nothing back$/);
  });
});

describe('make room', () => {
  test("displacement of the own scope's lower class when the own limit binds", () => {
    const w = new World(['org:o', 'project:p<org:o'], { 'project:p': { g: 4, l: 4 } });
    w.model('opp', 'project:p', { gpus: 1, min: 0, target: 3, max: 3 });
    w.model('std-old', 'project:p', { gpus: 1, min: 1 });
    w.pass();
    expect(w.gpus('project:p')).toBe(4);
    w.model('crit', 'project:p', { gpus: 2, cls: 'critical' });
    const d = w.pass();
    // The two most recently started opportunistic replicas go; the standard one stays.
    expect(d.victims.map((v) => [v.model, v.reason])).toEqual([
      ['opp', 'DisplacedByHigherClass'],
      ['opp', 'DisplacedByHigherClass'],
    ]);
    expect(w.admitted('std-old')).toBe(1);
    expect(w.held('crit')).toBe(2);
    expect(w.message('opp')).toMatch(/^displaced by critical model crit of project:p/);
  });

  test('an equal class is never displaced: LimitExceeded at the API', () => {
    const w = new World(['org:o', 'project:p<org:o'], { 'project:p': { g: 4, l: 4 } });
    w.model('std', 'project:p', { gpus: 4 });
    w.pass();
    expect(w.start('std2', 'project:p', { gpus: 1 })).toMatchObject({ ok: false, reason: 'LimitExceeded' });
    // An opportunistic start may not displace, a standard one may displace opportunistic only.
    w.model('std', 'project:p', { gpus: 4, cls: 'opportunistic' });
    w.pass();
    const r = w.start('std3', 'project:p', { gpus: 1 });
    expect(r).toMatchObject({ ok: true });
    expect(r.ok && r.decision.victims.map((v) => v.reason)).toEqual(['DisplacedByHigherClass']);
  });

  test('critical runs only within its owner guarantee, and is refused at the API when it never could', () => {
    const w = new World(['org:o', 'project:p<org:o'], { 'project:p': { g: { gpus: 4 }, l: 8 } });
    const never = w.start('crit-big', 'project:p', { gpus: 5, cls: 'critical' });
    expect(never).toMatchObject({ ok: false, reason: 'LimitExceeded' });
    expect(!never.ok && never.message).toMatch(
      /project:p guarantees 4 gpus and a critical model runs only within its owner's guarantee: 1 gpu more needed/,
    );
    w.model('std', 'project:p', { gpus: 3 });
    w.model('crit', 'project:p', { gpus: 2, cls: 'critical' });
    w.pass();
    // critical is first in the pass (within guarantee, highest class): std then cannot displace it.
    expect(w.held('crit')).toBe(2);
    expect(w.held('std')).toBe(3);
    w.model('crit2', 'project:p', { gpus: 2, cls: 'critical' });
    w.pass();
    // The critical replicas, 2 + 2, fit the guarantee of 4; std borrows beside them within the limit of 8.
    expect(w.held('crit2')).toBe(2);
    expect(w.held('std')).toBe(3);
    // A third would put the critical replicas at 5 > 4 (the limit holds: 8): it waits, and std stays.
    w.model('crit3', 'project:p', { gpus: 1, cls: 'critical' });
    w.pass();
    expect(w.held('crit3')).toBe(0);
    expect(w.message('crit3')).toMatch(
      /project:p guarantees 4 gpus and a critical model runs only within its owner's guarantee: 1 gpu more needed \(its critical models hold 4, this needs 1\)$/,
    );
    expect(w.held('std')).toBe(3);
    // Cores have no guarantee: critical is not held to them (crit, crit2 and std hold one core each).
    expect(w.usage('project:p').cores).toBe(3);
  });

  test("a critical model growing into its owner's guarantee displaces only what the limit needs, not a standard model's min", () => {
    // issue 33's bench: chat-70b (critical) grew while chat-8b (standard) ran its min and extras beside it, the
    // scope above its guarantee but below its limit. Only 1 GPU was short of the limit, yet all 3 of the
    // standard model went, its min too, because the lower class's replicas were counted against the guarantee.
    const w = new World(['org:o', 'project:p<org:o'], { 'project:p': { g: { gpus: 4 }, l: 6 } });
    w.model('crit', 'project:p', { gpus: 2, cls: 'critical', min: 1, max: 2 });
    w.model('std', 'project:p', { gpus: 1, min: 1, target: 3, max: 3 });
    w.pass();
    w.pass();
    expect(w.held('crit')).toBe(2);
    expect(w.held('std')).toBe(3);
    w.model('crit', 'project:p', { gpus: 2, cls: 'critical', min: 1, target: 2, max: 2 });
    const d = w.pass();
    expect(w.held('crit')).toBe(4);
    // 2 + 2 critical GPUs fit the guarantee of 4; 4 + 3 > the limit of 6 by 1: one standard extra goes.
    expect(d.victims.map((v) => [v.model, v.reason])).toEqual([['std', 'DisplacedByHigherClass']]);
    expect(w.held('std')).toBe(2);
    expect(w.usage('project:p').gpus).toBeLessThanOrEqual(6);
  });

  test('a request beyond its guarantee takes nothing back and displaces nothing', () => {
    const w = new World(['org:o', 'project:a<org:o', 'project:b<org:o'], {
      'org:o': { g: 4, l: 4 },
      'project:a': { g: 1 },
      'project:b': { g: 3 },
    });
    w.model('b', 'project:b', { min: 1, target: 4, max: 4 });
    w.model('a-opp', 'project:a', { min: 0, target: 0, max: 1 });
    w.pass();
    w.model('a', 'project:a', { gpus: 2 });
    const d = w.pass();
    expect(d.victims).toEqual([]);
    expect(w.reasons('a')).toEqual(['InsufficientQuota']);
    expect(w.message('a')).toMatch(/a would borrow beyond project:a's guarantee, so it takes nothing back$/);
  });

  test('eligible through an ancestor below the top: a team slack protected from outside it', () => {
    const w = new World(['org:o', 'team:t<org:o', 'project:t1<team:t', 'team:u<org:o', 'project:u1<team:u'], {
      'org:o': { g: 8, l: 8 },
      'team:t': { g: 4 },
      'project:t1': { g: 1 },
      'team:u': { g: 4 },
      'project:u1': { g: 1 },
    });
    w.model('u', 'project:u1', { min: 1, target: 8, max: 8 });
    w.pass();
    expect(w.gpus('team:u')).toBe(8);
    // t1 asks 3 (beyond its own guarantee of 1) but within team:t's (0 + 3 ≤ 4): eligible, takes back.
    w.model('t', 'project:t1', { min: 3 });
    const d = w.pass();
    expect(w.admitted('t')).toBe(3);
    expect(d.victims.map((v) => v.unitId)).toEqual(['u#7', 'u#6', 'u#5']);
    expect(w.gpus('team:u')).toBe(5);
  });

  test('per level, the requester takes from outside its branch at most its unused guarantee', () => {
    const w = new World(['org:o', 'project:a<org:o', 'project:b<org:o'], {
      'org:o': { g: 6, l: 6 },
      'project:a': { g: 2 },
      'project:b': { g: 2 },
    });
    w.model('b', 'project:b', { gpus: 3, min: 1, target: 2, max: 2 }); // two 3-gpu units: b borrows 4
    w.pass();
    expect(w.gpus('project:b')).toBe(6);
    // a needs 1 (unused 2) but each victim is 3 gpus: more than a may take.
    w.model('a', 'project:a', { gpus: 1 });
    const d = w.pass();
    expect(d.victims).toEqual([]);
    expect(w.reasons('a')).toEqual(['InsufficientQuota']);
  });

  test('victim order: outer branch first, most borrowing sibling, extras before min, min takes its extras', () => {
    const w = new World(
      ['org:o', 'team:t<org:o', 'project:r<team:t', 'project:s<team:t', 'team:u<org:o', 'team:v<org:o'],
      {
        'org:o': { g: 20, l: 20 },
        'team:t': { g: 10, l: 20 },
        'project:r': { g: 5 },
        'project:s': { g: 5 },
        'team:u': { g: 5 },
        'team:v': { g: 5 },
      },
    );
    w.model('s', 'project:s', { min: 1, target: 5, max: 6 }); // s at its guarantee
    w.model('u', 'team:u', { min: 1, target: 6, max: 6 }); // u borrows 1
    w.model('v', 'team:v', { min: 2, target: 6, max: 6 }); // v borrows 1
    w.pass();
    w.model('u-min', 'team:u', { gpus: 1, min: 2 }); // u now borrows 3, the most
    w.pass();
    expect(w.gpus('org:o')).toBe(19);
    expect(w.gpus('team:u')).toBe(8);
    // r asks 5 (its guarantee): the org needs 4 more. u borrows most; after two picks u and v both borrow 1.
    w.model('r', 'project:r', { min: 5 });
    const d = w.pass();
    // u-min, the newest, is a min unit: u's extras go first, most recent first; then v and u by index.
    expect(d.victims.map((v) => v.unitId)).toEqual(['u#5', 'u#4', 'u#3', 'v#4']);
    expect(w.held('u-min')).toBe(2);
    expect(w.admitted('s')).toBe(5);

    // Now s borrows inside t: t would end above its guarantee, so s gives back before t takes from outside.
    w.model('s', 'project:s', { min: 1, target: 6, max: 6 });
    w.model('r', 'project:r', { min: 5 });
    w.pass();
    expect(w.gpus('project:s')).toBe(5); // s's 6th replica could not get in: the org is at its limit
    w.model('r2', 'project:r', { min: 1 }); // r's 6th: beyond r's guarantee, and t's
    w.pass();
    expect(w.reasons('r2')).toEqual(['InsufficientQuota']);
  });

  test('a branch with its own borrowers gives back inside before taking from outside', () => {
    const w = new World(['org:o', 'team:t<org:o', 'project:r<team:t', 'project:s<team:t', 'team:u<org:o'], {
      'org:o': { g: 12, l: 12 },
      'team:t': { g: 8 },
      'project:r': { g: 4 },
      'project:s': { g: 4 },
      'team:u': { g: 4 },
    });
    w.model('s', 'project:s', { min: 1, target: 5, max: 5 }); // s borrows 1 inside t
    w.model('u', 'team:u', { min: 1, target: 7, max: 7 }); // u borrows 3
    w.pass();
    expect(w.gpus('org:o')).toBe(12);
    w.model('r', 'project:r', { min: 4 });
    const d = w.pass();
    // t would end at 9 > 8 with s's extra: u cannot be touched until s gives back one, then u gives 3.
    expect(d.victims.map((v) => v.unitId)).toEqual(['s#4', 'u#6', 'u#5', 'u#4']);
    expect(w.gpus('team:t')).toBe(8);
  });

  test('a min unit taken back takes its model extras with it', () => {
    const w = new World(['org:o', 'project:a<org:o', 'project:b<org:o'], {
      'org:o': { g: 6, l: 6 },
      'project:a': { g: 4 },
      'project:b': { g: 2 },
    });
    w.model('b', 'project:b', { gpus: 2, min: 1, target: 3, max: 3 }); // b at 6, borrowing 4
    w.pass();
    w.model('a', 'project:a', { gpus: 4, min: 1 });
    const d = w.pass();
    // Two extras are enough (4 gpus); the min stays.
    expect(d.victims.map((v) => v.unitId).sort()).toEqual(['b#1', 'b#2']);
    expect(w.held('b')).toBe(2);
  });

  test('a victim that turns out not to be needed is dropped', () => {
    // Headroom binds across orgs: p and q borrow 4 each; p (first on a tie) loses a 1-gpu replica, then q
    // borrows most and its 4-gpu replica alone makes room: p's replica was not needed after all.
    const w = new World(['org:o', 'org:p', 'org:q'], { 'org:o': { g: 8 } }, [
      { name: 'gpu', gpus: 4, cores: 100, memoryGb: 100, maxNodes: 2 },
    ]);
    w.model('p', 'org:p', { gpus: 1, min: 1, target: 4, max: 4 });
    w.model('q', 'org:q', { gpus: 4, min: 1 });
    w.pass();
    expect(w.held('p') + w.held('q')).toBe(8);
    w.model('o', 'org:o', { gpus: 3 });
    const d = w.pass();
    expect(d.victims.map((v) => v.model)).toEqual(['q']);
    expect(w.held('p')).toBe(4);
    expect(w.held('o')).toBe(3);
  });

  test('a unit admitted in a pass is no victim in it, not even through its min', () => {
    // b (org:b, no quota: all it holds is borrowed) runs its min; in the next pass its extra is admitted
    // first (standard before opportunistic), filling the compute, then a, within org:a's guarantee, needs
    // the room. b's extra is fresh; b's min would take it along, and once the extra alone made room the min
    // was dropped as not needed, leaving the fresh extra the victim. Neither may go in this pass.
    const w = new World(['org:a', 'org:b'], { 'org:a': { g: 4, l: 4 } }, [
      { name: 'gpu', gpus: 4, cores: 100, memoryGb: 1000, maxNodes: 1 },
    ]);
    w.model('b', 'org:b', { gpus: 2, min: 1, target: 1, max: 2, cls: 'standard' });
    w.pass();
    w.model('b', 'org:b', { gpus: 2, min: 1, target: 2, max: 2, cls: 'standard' });
    w.model('a', 'org:a', { gpus: 2, min: 1, cls: 'opportunistic' });
    const d = w.pass();
    expect(d.admitted.map((x) => x.unitId)).toEqual(['b#1']);
    expect(d.victims).toEqual([]);
    expect(w.admitted('b')).toBe(2);
    expect(w.reasons('a')).toEqual(['NoLongerFits']);
    // Next pass b's extra is no longer fresh: a takes it back (extras before the min), and b keeps its min.
    const d2 = w.pass();
    expect(d2.victims.map((v) => [v.unitId, v.reason])).toEqual([['b#1', 'TakenBackForScope']]);
    expect(w.admitted('b')).toBe(1);
    expect(w.reasons('a')).toEqual(['PendingTakeBack']);
  });

  test('multiple resources: only the binding resource counts', () => {
    const w = new World(['org:o', 'project:a<org:o', 'project:b<org:o'], {
      'org:o': { g: { gpus: 8, cores: 16 }, l: { gpus: 8, cores: 16 } },
      'project:a': { g: { gpus: 4, cores: 8 } },
      'project:b': { g: { gpus: 4, cores: 8 } },
    });
    w.model('b-cpu', 'project:b', { gpus: 0, cores: 4, min: 1, target: 3, max: 3 }); // b borrows 4 cores, no gpus
    w.model('b-gpu', 'project:b', { gpus: 1, cores: 0.5, min: 1 });
    w.pass();
    expect(w.usage('org:o')).toMatchObject({ gpus: 1, cores: 12.5 });
    // a asks 4 cores and 2 gpus: cores bind (16.5 > 16); only b-cpu, which holds cores, is a victim.
    w.model('a', 'project:a', { gpus: 2, cores: 2, min: 2 });
    const d = w.pass();
    expect(d.victims.map((v) => v.model)).toEqual(['b-cpu']);
    expect(w.admitted('b-gpu')).toBe(1);
    // A memory request beyond any quota's words has no limit: admitted.
    w.model('mem', 'project:a', { gpus: 0, cores: 0.1, mem: 500 });
    w.pass();
    expect(w.admitted('mem')).toBe(1);
    // Short of cores, beyond its guarantee of cores: InsufficientQuota names the cores.
    w.model('a2', 'project:a', { gpus: 0, cores: 8 });
    w.pass();
    expect(w.message('a2')).toMatch(/^org:o is at its limit of 16 cores; /);
  });

  test('zero guarantees: a scope with G 0 only borrows, and is taken back for one within its own', () => {
    const w = new World(['org:o', 'project:zero<org:o', 'project:g<org:o'], {
      'org:o': { g: 4, l: 4 },
      'project:zero': { g: 0, l: 4 },
      'project:g': { g: 4 },
    });
    w.model('z', 'project:zero', { min: 1, target: 4, max: 4 });
    w.pass();
    expect(w.status('z')).toMatchObject({ admitted: 4, borrowed: 4 });
    w.model('g', 'project:g', { min: 2 });
    w.pass();
    expect(w.admitted('z')).toBe(2);
    expect(w.admitted('g')).toBe(2);
  });
});

describe('lifecycle', () => {
  test('scale down releases the most recent extras; a removed model is released; a changed profile restarts', () => {
    const w = new World(['org:o'], { 'org:o': { g: 10, l: 10 } });
    w.model('m', 'org:o', { min: 1, target: 4, max: 4 });
    w.pass();
    w.model('m', 'org:o', { min: 1, target: 2, max: 4 });
    const d = w.pass();
    expect(d.released.map((r) => [r.unitId, r.why])).toEqual([
      ['m#3', 'scaled-down'],
      ['m#2', 'scaled-down'],
    ]);
    expect(d.changed).toEqual(['m']);
    expect(w.pass().changed).toEqual([]);
    w.model('m', 'org:o', { gpus: 2, min: 1, target: 2, max: 4 });
    const d2 = w.pass();
    expect(d2.released.map((r) => r.why)).toEqual(['changed', 'changed']);
    expect(w.gpus('org:o')).toBe(4);
    w.remove('m');
    const d3 = w.pass();
    expect(d3.removed).toEqual(['m']);
    expect(w.gpus('org:o')).toBe(0);
  });

  test('extras wait for their min; a model whose new min does not fit holds nothing', () => {
    const w = new World(['org:o'], { 'org:o': { g: 3, l: 3 } });
    w.model('m', 'org:o', { min: 1, target: 3, max: 5 });
    w.pass();
    expect(w.admitted('m')).toBe(3);
    w.model('m', 'org:o', { min: 4, target: 5, max: 5 });
    w.pass();
    expect(w.admitted('m')).toBe(0);
    expect(w.admissions.get('m')!.pending).toEqual([
      expect.objectContaining({ reason: 'LimitExceeded', replicas: 5 }),
    ]);
  });

  test('decide is deterministic and leaves the input admissions untouched', () => {
    const w = new World(['org:o', 'project:a<org:o'], { 'project:a': { g: 2, l: 3 } });
    w.model('a', 'project:a', { min: 1, target: 5, max: 5 });
    w.pass();
    const input = w.input();
    const frozen = JSON.stringify(input.admissions);
    const d1 = decide({ ...input, headroom: w.headroom() });
    const d2 = decide({ ...input, headroom: w.headroom() });
    expect(JSON.stringify(d1.admissions)).toBe(JSON.stringify(d2.admissions));
    expect(JSON.stringify(input.admissions)).toBe(frozen);
  });

  test('an owner that is not a scope waits with a message saying so', () => {
    const w = new World(['org:o']);
    w.model('m', 'team:gone');
    w.pass();
    expect(w.reasons('m')).toEqual(['LimitExceeded']);
    expect(w.message('m')).toMatch(/owner team:gone is not a scope/);
    expect(
      SimpleHeadroom.of([]).candidateComputes({ id: 'x', model: 'x', profiles: [], replicas: 1 }),
    ).toEqual([]);
  });
});

describe('take-back records that stay (docs/quotas.md "Taken back")', () => {
  test('a displaced replica keeps what took it and when, beside what it waits for, until it runs again', () => {
    const w = new World(['org:o', 'project:p<org:o'], { 'project:p': { g: 4, l: 4 } });
    w.model('opp', 'project:p', { gpus: 1, min: 0, target: 3, max: 3 });
    w.model('std-old', 'project:p', { gpus: 1, min: 1 });
    w.pass();
    w.model('crit', 'project:p', { gpus: 2, cls: 'critical' });
    w.pass();
    const at = w.status('opp').takenBack[0]!.at;
    // The next pass: what opp waits for now is the limit; why it lost the replicas stays beside it.
    w.pass();
    expect(w.reasons('opp')).toEqual(['LimitExceeded']);
    expect(w.status('opp').takenBack).toEqual([
      expect.objectContaining({
        reason: 'DisplacedByHigherClass',
        replicas: 2,
        by: { model: 'crit', unitId: 'crit#min', scope: 'project:p', class: 'critical' },
        at,
      }),
    ]);
    // crit goes: opp runs again and the record is cleared.
    w.remove('crit');
    w.pass();
    expect(w.admitted('opp')).toBe(3);
    expect(w.status('opp').takenBack).toEqual([]);
  });
});
