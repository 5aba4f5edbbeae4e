import { createHash } from 'node:crypto';
import { generateMix } from '../../../../bench/optimum';
import { benchComputes, generateUnits, MIXES } from '../../../../bench/placement';
import type { UnitPlacement } from '../../../../lambdas/domain/headroom';
import { type PlacementPlan, planPlacement } from '../../../../lambdas/domain/placement';
import { BUILTIN_COMPUTES } from '../../../helpers/computes';

/**
 * The planner is made faster without changing its answer (issue 34: 30,000 replicas under 100 ms): every
 * plan here, placements, nodes and totals, hashes the same as the planner before the speed work (main at
 * 88f19e3). A change that alters a plan on purpose must say so and record the new hashes.
 */

const hash = (p: PlacementPlan) => createHash('sha256').update(JSON.stringify(p)).digest('hex').slice(0, 16);

/** Where each unit runs in a plan, as consolidation passes it back as `start`. */
const startOf = (p: PlacementPlan) =>
  new Map<string, UnitPlacement[]>(p.placements.map((u) => [u.unitId, u.placements]));

function planHashes(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const mix of MIXES) {
    const units = generateUnits(mix);
    const computes = mix.builtinsAsIs ? BUILTIN_COMPUTES : benchComputes(units);
    const ffd = planPlacement(computes, units, { strategy: 'ffd' });
    out[`${mix.name}: best`] = hash(planPlacement(computes, units));
    out[`${mix.name}: ffd`] = hash(ffd);
    // From admission's plain packing, as consolidation plans: improveJoint instead of planJoint.
    if (mix.replicas <= 3_000)
      out[`${mix.name}: from ffd`] = hash(planPlacement(computes, units, { start: startOf(ffd) }));
  }
  for (let seed = 1; seed <= 50; seed++) {
    const m = generateMix(seed);
    const plan = planPlacement(m.computes, m.units);
    out[`optimum seed ${seed}`] = hash(plan);
    if (seed % 10 === 0) {
      const ffd = planPlacement(m.computes, m.units, { strategy: 'ffd' });
      out[`optimum seed ${seed}: from ffd`] = hash(
        planPlacement(m.computes, m.units, { start: startOf(ffd) }),
      );
    }
  }
  return out;
}

const BEFORE: Record<string, string> = {
  'CPU fleet: best': '70971aa20e18c65d',
  'CPU fleet: ffd': '87754d4b623a7cd8',
  'GPU 1 to 8: best': 'fb482b8e42053ee9',
  'GPU 1 to 8: ffd': '4cab6f4f73aa9abc',
  'GPU 1 to 8: from ffd': '4cab6f4f73aa9abc',
  'built-ins as configured: best': '51c648c25f4257b4',
  'built-ins as configured: ffd': '0f8850486486c300',
  'built-ins as configured: from ffd': '4623f68e4c109041',
  'mixed 30k: best': '353f0ff035d50123',
  'mixed 30k: ffd': 'eec0fbf2634a0c95',
  'mixed 3k: best': '721d9413feccce30',
  'mixed 3k: ffd': '08596f19c404219e',
  'mixed 3k: from ffd': '8d7849c1048ec3d7',
  'optimum seed 1': '887d0c6c0f900287',
  'optimum seed 10': '50d9aff643f356cd',
  'optimum seed 10: from ffd': '5a7ed3698e5e7ad8',
  'optimum seed 11': 'c25a1369501e894c',
  'optimum seed 12': '4e1a43acab3e649b',
  'optimum seed 13': '45eef9e6d0b2d094',
  'optimum seed 14': 'e0d548fb433fdf5e',
  'optimum seed 15': '69f4389a53300f44',
  'optimum seed 16': '4726652c79584c1c',
  'optimum seed 17': '28a3fb61019c6445',
  'optimum seed 18': 'cee6fb2cd67d5992',
  'optimum seed 19': '3ef154ada894183a',
  'optimum seed 2': '614489e4d1eb71db',
  'optimum seed 20': 'aa2b66b569bf8f90',
  'optimum seed 20: from ffd': 'b4066fd7d3211405',
  'optimum seed 21': 'deb9865b4cc85c77',
  'optimum seed 22': '9fe88a832d562877',
  'optimum seed 23': '7c7abb12c867ccd1',
  'optimum seed 24': '113cfd052c13631d',
  'optimum seed 25': '8c20f8ad4c905476',
  'optimum seed 26': 'd62da2e04fd04a27',
  'optimum seed 27': 'e5dc94b8cdb1df91',
  'optimum seed 28': 'e84afb7e8e3e2979',
  'optimum seed 29': 'a761441ce443a8b4',
  'optimum seed 3': '72ab8e55da4ec922',
  'optimum seed 30': '59dec4c3bf32f68d',
  'optimum seed 30: from ffd': '59dec4c3bf32f68d',
  'optimum seed 31': '16e48631c47c2549',
  'optimum seed 32': '0898a62b26f75813',
  'optimum seed 33': '29dc2e9fe6a86469',
  'optimum seed 34': '8ce4c21e5e3d8c6b',
  'optimum seed 35': 'c2170c67d4ba7741',
  'optimum seed 36': '0f681aea67bb7ef8',
  'optimum seed 37': '992a59f21a48eb0c',
  'optimum seed 38': '1cd8440e31f88349',
  'optimum seed 39': '594b8937c038e0b1',
  'optimum seed 4': '98c3676e77e240bb',
  'optimum seed 40': '46b34af6a37533ce',
  'optimum seed 40: from ffd': '4109768ab5cd87be',
  'optimum seed 41': 'e506d8a38a74dca7',
  'optimum seed 42': '7cc311345a359f35',
  'optimum seed 43': 'c4ea6efb7d1c1806',
  'optimum seed 44': '5c2f125e50ff3bdf',
  'optimum seed 45': '32005c19a6e52a9d',
  'optimum seed 46': 'b3a6076bf23dfb5c',
  'optimum seed 47': '1dfa6a5e33cf2167',
  'optimum seed 48': '2dc602a8f21b68ac',
  'optimum seed 49': '5987d52548523afd',
  'optimum seed 5': 'e9e6ab0863bfada5',
  'optimum seed 50': '1009754ea505cb10',
  'optimum seed 50: from ffd': '1009754ea505cb10',
  'optimum seed 6': 'f3db53e487aa0594',
  'optimum seed 7': '07a5ff7531eb5dbc',
  'optimum seed 8': '05ed888330ea474c',
  'optimum seed 9': 'c2736c083c1988e3',
  'small team: best': 'cc897627087d83ee',
  'small team: ffd': 'b60071e59ac9c051',
  'small team: from ffd': '9114f0a08042cdc0',
};

describe('planPlacement is unchanged by the speed work', () => {
  it('plans the bench mixes (30 to 30,000 replicas) and the optimum mixes exactly as before', () => {
    expect(planHashes()).toEqual(BEFORE);
  });
});
