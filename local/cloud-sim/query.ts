/** `Prefix.N` values of a form-encoded query-protocol request, in N order (`Filter.1.Value.2`, `X.member.3`). */
export function numbered(form: URLSearchParams, prefix: string): string[] {
  const re = new RegExp(`^${prefix.replace(/\./g, '\\.')}\\.(\\d+)$`);
  const out: [number, string][] = [];
  for (const [k, v] of form) {
    const m = re.exec(k);
    if (m) out.push([Number(m[1]), v]);
  }
  return out.sort((a, b) => a[0] - b[0]).map(([, v]) => v);
}
