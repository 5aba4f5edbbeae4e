import type { ModelAdmission, PendingEntry, TakenBack, VictimReason, VictimRef } from './types';

/**
 * What a take-back tells whom (docs/security.md, What names tell). The records keep who took what from whom;
 * an answer tells a caller the names and figures of what it may read, and of the rest only what it may know:
 * that capacity it borrowed was taken back for another scope within its guarantee, or that borrowed replicas
 * of another scope give way to its request. A platform admin reads everything. Pure.
 */

/** Who reads an answer: the API's Caller. */
export interface Reader {
  readonly isPlatformAdmin: boolean;
  canSee(scope: string | undefined): boolean;
}

const AGAIN = 'it runs again when room frees';

/** A victim's pending message and take-back record; without `by` (a taker the reader may not see) it names none. */
export function victimMessage(
  reason: VictimReason,
  by: { model: string; scope: string; class: string } | undefined,
  ownFigures: string | undefined,
): string {
  if (reason === 'TakenBackForScope') {
    const who = by ? `${by.model} of ${by.scope}` : 'another scope';
    return `taken back for ${who}, which is within its guarantee${ownFigures ? `: ${ownFigures}` : ''}; ${AGAIN}`;
  }
  return by
    ? `displaced by ${by.class} model ${by.model} of ${by.scope}, which needed the room; ${AGAIN}`
    : `displaced by a model of a higher class of another scope, which needed the room; ${AGAIN}`;
}

/** A request's PendingTakeBack message while its victims stop; victims the reader may not see go unnamed. */
export function heldMessage(victims: readonly VictimRef[], reader?: Reader): string {
  const seen = reader ? victims.filter((v) => sees(reader, v.scope)) : victims;
  const parts = seen.length
    ? [`${seen.length} unit(s) of ${[...new Set(seen.map((v) => v.model))].join(', ')}`]
    : [];
  if (seen.length < victims.length) parts.push('replicas of another scope');
  return `its room is held while ${parts.join(' and ')} stop`;
}

/** A scope the reader may read; a record made before victims carried their scope is read by platform admins. */
function sees(reader: Reader, scope: string | undefined): boolean {
  return reader.isPlatformAdmin || (scope !== undefined && reader.canSee(scope));
}

/** A take-back record as a reader reads it: without `by` when it may not see what took the replicas. */
export type TakenBackAsSeen = Omit<TakenBack, 'by'> & { by?: TakenBack['by'] };

/** An admission as a reader reads it. */
export type AdmissionAsSeen = Omit<ModelAdmission, 'takenBack'> & { takenBack?: TakenBackAsSeen[] };

/** A model's admission as `reader` may read it: messages about scopes it cannot see name none of them. */
export function admissionAsSeen(a: ModelAdmission, reader: Reader): AdmissionAsSeen {
  if (reader.isPlatformAdmin) return a;
  // A held unit's message, as made, and as the reader reads it.
  const held = new Map<string, string>();
  for (const u of a.units)
    if (u.takeBack) held.set(heldMessage(u.takeBack.victims), heldMessage(u.takeBack.victims, reader));
  const pending: PendingEntry[] = [];
  for (const e of a.pending) {
    const told = pendingAsSeen(e, reader, held);
    // Two messages that differed only in what the reader may not see are one to it.
    const same = pending.find((p) => p.reason === told.reason && p.message === told.message);
    if (same) same.replicas += told.replicas;
    else pending.push(told);
  }
  const takenBack = a.takenBack?.map((t) => takenBackAsSeen(t, reader));
  return { ...a, pending, ...(takenBack ? { takenBack } : {}) };
}

function pendingAsSeen(e: PendingEntry, reader: Reader, held: Map<string, string>): PendingEntry {
  if (e.reason === 'PendingTakeBack') return { ...e, message: held.get(e.message) ?? e.message };
  if (e.binding?.kind !== 'victim' || sees(reader, e.binding.scope)) return { ...e };
  const { behind: _b, binding: _s, ...rest } = e;
  return {
    ...rest,
    binding: { kind: 'victim' },
    message: victimMessage(e.reason as VictimReason, undefined, e.ownFigures),
  };
}

function takenBackAsSeen(t: TakenBack, reader: Reader): TakenBackAsSeen {
  if (sees(reader, t.by.scope)) return t;
  const { by: _by, ...rest } = t;
  return { ...rest, message: victimMessage(t.reason, undefined, t.ownFigures) };
}

/** One line of a dry run's `takesBack`: model, scope and replicas only where the reader may see the victim. */
export interface TakesBackLine {
  model?: string;
  scope?: string;
  replicas?: number;
  reason: string;
  message: string;
}

/** What a dry run says it would take back: victims the reader may not see are one line per reason, unnamed. */
export function takesBackAsSeen(
  takesBack: readonly Required<TakesBackLine>[],
  reader: Reader,
): TakesBackLine[] {
  const out: TakesBackLine[] = [];
  const unseen = new Set<string>();
  for (const t of takesBack) {
    if (sees(reader, t.scope)) out.push(t);
    else unseen.add(t.reason);
  }
  for (const reason of unseen) {
    out.push({
      reason,
      message:
        reason === 'TakenBackForScope'
          ? `replicas another scope borrows beyond its guarantee give way, since this model runs within its owner's guarantee; they run again when room frees`
          : `replicas of a model of a lower class of another scope give way; they run again when room frees`,
    });
  }
  return out;
}
