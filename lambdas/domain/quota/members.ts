import type { Role } from '../access';
import { sameValue } from '../compute';
import { invalid } from '../errors';
import { parsePrincipal, principalKey } from '../principal';
import { fieldIssues, type PathPart, type RuleIssue, repeats, stringAt } from '../rules';
import { MAX_MEMBERS_PER_SCOPE } from './tenancy';

/**
 * The rules of a members list (`[{principal, role}]`, paths `[3].principal`) or map (`{principal: role}`, paths
 * `["arn:…"]`), relative to it, on whatever parsed: a principal in none of the forms, one identity twice (two
 * spellings, or the same entry again: named with the entry it repeats), and more than MAX_MEMBERS_PER_SCOPE.
 */
export function membersIssues(members: unknown): RuleIssue[] {
  if (!members || typeof members !== 'object') return [];
  const list = Array.isArray(members);
  const entries: { at: PathPart[]; principal: string | undefined }[] = list
    ? members.map((m, i) => ({ at: [i], principal: stringAt(m, 'principal') }))
    : Object.keys(members).map((k) => ({ at: [k], principal: k }));
  const issues: RuleIssue[] = [];
  const keys = entries.map(({ at, principal }) => {
    if (principal === undefined) return undefined;
    const p = parsePrincipal(principal);
    if (p.ok) return principalKey(p.value);
    issues.push({ path: list ? [...at, 'principal'] : at, message: p.problem });
    return undefined;
  });
  for (const { index, first } of repeats(entries, (_, i) => keys[i])) {
    const other = entries[first]!;
    const same = other.principal === entries[index]!.principal;
    issues.push({
      path: entries[index]!.at,
      message: list
        ? `${same ? 'repeats' : 'is the same identity as'} members[${first}] (${other.principal}); list each member once`
        : `the same identity as ${other.principal}`,
    });
  }
  if (entries.length > MAX_MEMBERS_PER_SCOPE) {
    issues.push({
      path: [],
      message: `${entries.length} members; a scope holds at most ${MAX_MEMBERS_PER_SCOPE}`,
    });
  }
  return issues.sort((a, b) => entryIndex(a, entries) - entryIndex(b, entries));
}

const entryIndex = (i: RuleIssue, entries: readonly { at: PathPart[] }[]) =>
  i.path.length ? entries.findIndex((e) => e.at[0] === i.path[0]) : entries.length;

/**
 * A scope's members as a whole (a scope manifest's spec.members is their desired state): the map to store,
 * or `unchanged` when it is what is stored. Refuses (400, every issue at once) a principal in none of the
 * forms, two spellings of one identity, and more than MAX_MEMBERS_PER_SCOPE members.
 */
export function planMembers(
  scope: string,
  current: Readonly<Record<string, Role>>,
  desired: Readonly<Record<string, Role>>,
): { unchanged: true } | { unchanged: false; members: Record<string, Role> } {
  const issues = fieldIssues(['members'], membersIssues(desired));
  if (issues.length) {
    throw invalid(
      `the members of ${scope} have ${issues.length} problem(s); fix each one listed in errors`,
      issues,
    );
  }
  if (sameValue(current, desired)) return { unchanged: true };
  return { unchanged: false, members: { ...desired } };
}
