/** Lists at most five names, then how many more: refusals name what is in the way without flooding. */
export function listed(xs: readonly string[], max = 5): string {
  return xs.length <= max ? xs.join(', ') : `${xs.slice(0, max).join(', ')} and ${xs.length - max} more`;
}
