import { admissionAsSeen, type ModelAdmission, takesBackAsSeen } from '../../../../lambdas/domain/quota';
import { heldMessage, victimMessage } from '../../../../lambdas/domain/quota/telling';

/**
 * What a take-back tells whom (docs/security.md, What names tell): names and figures of scopes the reader
 * sees, of the rest only that they exist; platform admins read it all.
 */

const reader = (sees: string[], isPlatformAdmin = false) => ({
  isPlatformAdmin,
  canSee: (s: string | undefined) => s === undefined || sees.includes(s),
});
const by = { model: 'a-tb', unitId: 'a-tb#min', scope: 'team:a', class: 'standard' as const };
const own = 'team:b holds 5 gpus against a guarantee of 4 gpus';
const at = '2026-12-06T00:00:00.000Z';

/** A victim of team:b's, taken back by team:a's a-tb, and a taker of team:a's holding room from two victims. */
const victim: ModelAdmission = {
  model: 'b-borrow',
  units: [],
  pending: [
    {
      reason: 'TakenBackForScope',
      message: victimMessage('TakenBackForScope', by, own),
      replicas: 1,
      since: at,
      binding: { kind: 'victim', scope: 'team:a' },
      behind: { model: 'a-tb', unitId: 'a-tb#min' },
      ownFigures: own,
    },
  ],
  takenBack: [
    {
      reason: 'TakenBackForScope',
      message: victimMessage('TakenBackForScope', by, own),
      replicas: 1,
      by,
      at,
      ownFigures: own,
    },
  ],
};
const victims = [
  { model: 'b-borrow', unitId: 'b-borrow#2', scope: 'team:b' },
  { model: 'a-old', unitId: 'a-old#1', scope: 'team:a' },
];
const taker: ModelAdmission = {
  model: 'a-tb',
  units: [
    {
      id: 'a-tb#min',
      kind: 'min',
      replicas: 1,
      profile: 'l4',
      resources: { gpus: 1, cores: 4, memoryGb: 16 },
      placements: [],
      admittedAt: at,
      borrowed: false,
      takeBack: { victims, since: at },
    },
  ],
  pending: [
    {
      reason: 'PendingTakeBack',
      message: heldMessage(victims),
      replicas: 1,
      since: at,
      binding: { kind: 'take-back' },
    },
  ],
};

describe('what a take-back tells', () => {
  it("tells the victim's readers their own figures, and not who took the replicas", () => {
    const seen = admissionAsSeen(victim, reader(['team:b']));
    const text = JSON.stringify(seen);
    expect(text).not.toMatch(/a-tb|team:a/);
    expect(seen.pending[0]!.message).toBe(
      `taken back for another scope, which is within its guarantee: ${own}; it runs again when room frees`,
    );
    expect(seen.takenBack).toEqual([
      { reason: 'TakenBackForScope', message: seen.pending[0]!.message, replicas: 1, at, ownFigures: own },
    ]);
  });

  it('tells whoever sees both scopes, and platform admins, everything', () => {
    expect(admissionAsSeen(victim, reader(['team:a', 'team:b']))).toEqual(victim);
    expect(admissionAsSeen(victim, reader([], true))).toBe(victim);
  });

  it("names the taker's own victims to its readers, and of another scope's only that they stop", () => {
    const seen = admissionAsSeen(taker, reader(['team:a']));
    expect(seen.pending.map((p) => p.message)).toEqual([
      'its room is held while 1 unit(s) of a-old and replicas of another scope stop',
    ]);
    expect(heldMessage(victims)).toBe('its room is held while 2 unit(s) of b-borrow, a-old stop');
  });

  it('says nothing of a victim recorded before victims carried their scope, but to platform admins', () => {
    const old = [{ model: 'b-borrow', unitId: 'b-borrow#2' }];
    expect(heldMessage(old, reader(['team:a', 'team:b']))).toBe(
      'its room is held while replicas of another scope stop',
    );
    expect(heldMessage(old, reader([], true))).toBe('its room is held while 1 unit(s) of b-borrow stop');
  });

  it('previews one unnamed line per reason for victims the caller cannot see, its own victims in full', () => {
    const lines = [
      { model: 'b1', scope: 'team:b', replicas: 1, reason: 'TakenBackForScope', message: `... ${own}` },
      { model: 'b2', scope: 'team:b', replicas: 2, reason: 'TakenBackForScope', message: `... ${own}` },
      {
        model: 'a-old',
        scope: 'team:a',
        replicas: 1,
        reason: 'DisplacedByHigherClass',
        message: 'displaced',
      },
    ];
    const seen = takesBackAsSeen(lines, reader(['team:a']));
    expect(seen).toEqual([
      lines[2],
      { reason: 'TakenBackForScope', message: expect.stringMatching(/^replicas another scope borrows/) },
    ]);
    expect(JSON.stringify(seen)).not.toMatch(/team:b|b1|b2|gpus/);
  });
});
