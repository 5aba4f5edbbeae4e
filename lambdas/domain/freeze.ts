/** Freezes a value and everything it holds, so that data shared between requests cannot be changed by one. */
export function deepFreeze<T>(v: T): T {
  if (v === null || typeof v !== 'object' || Object.isFrozen(v)) return v;
  Object.freeze(v);
  for (const x of Object.values(v)) deepFreeze(x);
  return v;
}
