import type { Role } from '../access';
import { sameValue } from '../compute';
import { type FieldIssue, invalid } from '../errors';
import { parsePrincipal, principalKey } from '../principal';
import { MAX_MEMBERS_PER_SCOPE } from './tenancy';

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
  const issues: FieldIssue[] = [];
  const seen = new Map<string, string>();
  for (const principal of Object.keys(desired)) {
    const p = parsePrincipal(principal);
    if (!p.ok) {
      issues.push({ path: `members.${principal}`, message: p.problem });
      continue;
    }
    const key = principalKey(p.value);
    const other = seen.get(key);
    if (other) issues.push({ path: `members.${principal}`, message: `the same identity as ${other}` });
    else seen.set(key, principal);
  }
  const count = Object.keys(desired).length;
  if (count > MAX_MEMBERS_PER_SCOPE) {
    issues.push({
      path: 'members',
      message: `${count} members; a scope holds at most ${MAX_MEMBERS_PER_SCOPE}`,
    });
  }
  if (issues.length) {
    throw invalid(
      `the members of ${scope} have ${issues.length} problem(s); fix each one listed in errors`,
      issues,
    );
  }
  if (sameValue(current, desired)) return { unchanged: true };
  return { unchanged: false, members: { ...desired } };
}
