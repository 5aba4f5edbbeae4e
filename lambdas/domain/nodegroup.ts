import { createHash, randomBytes } from 'node:crypto';
import type { Compute } from './compute';
import { labelValue, TWIN_MARK } from './names';

/**
 * What identifies a compute's node group and its work in AWS: the incarnation id fixed when the compute item
 * is created, the node group's name and tags, Step Functions execution names and EKS idempotency tokens.
 * Pure (node:crypto only), so that every rule is a unit test and the reconciler, the workflows' input and the
 * API all derive the same names.
 */

/** The tags every node group llmcap creates carries; the workflows' IAM policies condition on these keys. */
export const TAG_STAGE = 'llmcap:stage';
export const TAG_COMPUTE = 'llmcap:compute';
export const TAG_COMPUTE_ID = 'llmcap:compute-id';

/** Lowercase letters and digits without i, l, o, u: safe in tags, names and URLs, and hard to misread. */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
export const COMPUTE_ID_LENGTH = 12;
export const COMPUTE_ID_PATTERN = /^[0-9a-hjkmnp-tv-z]{12}$/;

function encode(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < COMPUTE_ID_LENGTH; i++) out += ALPHABET[(bytes[i] as number) & 31];
  return out;
}

/** A fresh incarnation id: 60 random bits, so two incarnations of one name never share work names. */
export function newComputeId(): string {
  return encode(randomBytes(COMPUTE_ID_LENGTH));
}

/**
 * The id of a compute stored before ids existed: derived from what never changes on its item (name and
 * creation time), so every reader agrees on it without a migration write.
 */
export function legacyComputeId(name: string, createdAt: string): string {
  return encode(createHash('sha256').update(`${name}\n${createdAt}`).digest());
}

export interface Incarnation {
  id: string;
  /** True for an item stored before ids existed: its node group may carry no compute-id tag. */
  legacy: boolean;
}

export function incarnation(c: Pick<Compute, 'name' | 'createdAt' | 'uid'>): Incarnation {
  return c.uid ? { id: c.uid, legacy: false } : { id: legacyComputeId(c.name, c.createdAt), legacy: true };
}

export const NODEGROUP_NAME_MAX = 63;

/**
 * `llmcap-<stage>-<name>`, lowercased, other characters as `-`. EKS allows 63 characters: a longer name keeps
 * its first 54 and ends in `-` and 8 hex digits of the full name's SHA-256, so two long names sharing a prefix
 * get different groups. `legacy` keeps the plain cut of items stored before that rule, whose groups exist
 * under it. A twin key's mark (domain/names.ts) becomes `_`, which neither names nor stages hold, so the twin's
 * group can never be another compute's.
 */
export function nodegroupName(stage: string, name: string, legacy = false): string {
  const full = `llmcap-${stage}-${name}`
    .toLowerCase()
    .replace(/[^a-z0-9~-]+/g, '-')
    .replace(TWIN_MARK, '_');
  if (full.length <= NODEGROUP_NAME_MAX) return full.replace(/-+$/, '');
  if (legacy) return full.slice(0, NODEGROUP_NAME_MAX).replace(/-+$/, '');
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 8);
  return `${full.slice(0, NODEGROUP_NAME_MAX - 9).replace(/-+$/, '')}-${hash}`;
}

export function nodegroupNameOf(stage: string, c: Pick<Compute, 'name' | 'createdAt' | 'uid'>): string {
  return nodegroupName(stage, c.name, incarnation(c).legacy);
}

/** Who a node group must belong to for llmcap to touch it: what its tags must say. */
export interface NodegroupOwner {
  stage: string;
  compute: string;
  computeId: string;
  legacy: boolean;
}

export function ownerOf(stage: string, c: Pick<Compute, 'name' | 'createdAt' | 'uid'>): NodegroupOwner {
  const { id, legacy } = incarnation(c);
  // A tag value allows no `~`: a twin key is tagged as its label value (only legacy items compare it, never twins).
  return { stage, compute: labelValue(c.name), computeId: id, legacy };
}

export function nodegroupTags(o: NodegroupOwner): Record<string, string> {
  return { [TAG_STAGE]: o.stage, [TAG_COMPUTE]: o.compute, [TAG_COMPUTE_ID]: o.computeId };
}

/**
 * A group is ours when its stage tag is this stage and its compute-id tag is this incarnation. A group an
 * older llmcap created has no compute-id tag: it is ours only for a compute stored before ids existed, with
 * the same name. An empty tag value counts as absent (the workflows cannot tell them apart). The ASL of
 * provision-nodegroup applies the same rule; test/unit/statemachines checks they agree.
 */
export function ownsNodegroup(tags: Record<string, string> | undefined, o: NodegroupOwner): boolean {
  const t = tags ?? {};
  if (t[TAG_STAGE] !== o.stage) return false;
  if (t[TAG_COMPUTE_ID] === o.computeId) return true;
  return o.legacy && !t[TAG_COMPUTE_ID] && t[TAG_COMPUTE] === o.compute;
}

/** The status message of a compute whose node group name is held by a group that is not its own. */
export function foreignMessage(
  nodegroup: string,
  tags: Record<string, string> | undefined,
  o: NodegroupOwner,
) {
  return `node group ${nodegroup} exists and is not llmcap's (tags ${JSON.stringify(tags ?? {})}; llmcap expects ${TAG_STAGE}=${o.stage} and ${TAG_COMPUTE_ID}=${o.computeId}): rename the compute or delete that node group`;
}

/** What an issue member EKS leaves out reads as (both are optional in EKS's model). */
export const ISSUE_DEFAULTS = { code: 'Unknown', message: '(EKS gave no message)' } as const;

export const EXECUTION_NAME_MAX = 80;

/**
 * `<compute>-<kind>-g<generation>-<id>`, at most 80 characters of `0-9 A-Z a-z - _` (what Step Functions
 * and CloudWatch Logs both accept). Step Functions keeps a name for 90 days, so the incarnation id makes the
 * name new when a compute is deleted and created again; only the compute part is shortened to fit.
 */
export function executionName(computeName: string, kind: string, generation: number, id: string): string {
  const suffix = `-${kind}-g${generation}-${id}`;
  const base = computeName
    .replace(TWIN_MARK, '_')
    .replace(/[^A-Za-z0-9_-]+/g, '-')
    .slice(0, EXECUTION_NAME_MAX - suffix.length);
  return `${base}${suffix}`;
}

/**
 * EKS's idempotency token for one piece of work: the same for every retry of it (a timed-out create is not
 * made twice), new for the next generation and for another incarnation of the same name.
 */
export function clientRequestToken(id: string, kind: string, generation: number): string {
  return `llmcap-${id}-${kind}-g${generation}`;
}
