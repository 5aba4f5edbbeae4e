import { checkFaults, type FaultConfig } from '../../../local/cloud-sim/config';

/** A fault setting that would silently do nothing is refused with its name, so a typo in a test is loud. */

it('takes every fault setting, lists as lists', () => {
  const f: FaultConfig = {
    throttleRate: 0.1,
    serverErrorRate: 0.1,
    serverErrorType: 'ServerException',
    operations: ['CreateNodegroup'],
    unavailableInstanceTypes: [],
    launchFailures: [],
    deleteFailures: [],
    vanish: [],
    podCrashes: [],
    podsUnready: [],
    nodesNotReady: [],
  };
  expect(checkFaults(f)).toBe(f);
});

it.each(['operations', 'vanish', 'nodesNotReady'])('refuses %s when it is not a list', (key) => {
  expect(() => checkFaults({ [key]: 'x' } as never)).toThrow(`faults.${key} must be a list`);
});

it('refuses a setting it does not know', () => {
  expect(() => checkFaults({ throttlerate: 0.5 } as never)).toThrow('unknown fault setting: throttlerate');
});
