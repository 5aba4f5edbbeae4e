/**
 * `xs.map(f)`, built in a loop. V8's Array.prototype.map returns a packed array when its builtin runs and a holey
 * one when an optimised caller inlines it: two maps for one array, so code optimised on one is thrown away
 * ("wrong map") when the other arrives. The planner's arrays flowed between functions optimised at different
 * times, and a fresh process recompiled the joint greedy every few plans. An array made at its length is holey
 * in every tier, so whoever reads it sees one map.
 */
export function mapArray<T, U>(xs: readonly T[], f: (x: T, i: number) => U): U[] {
  const out = new Array<U>(xs.length);
  for (let i = 0; i < xs.length; i++) out[i] = f(xs[i]!, i);
  return out;
}
