/**
 * A value made once per OS process, for what is costly to make and the same every time (the simulated cluster's
 * CA, a checked state machine definition). Outside jest globalThis would do; jest gives each test file its own
 * global and module registry, and Node's built-in modules are the one thing its files share, so the values hang
 * off one of them. Only for values that depend on nothing but their key.
 */
// require, not import: under jest an import would give a copy of the module object, which files do not share.
const holder = require('node:os') as Record<symbol, Map<string, unknown> | undefined>;
const SLOT = Symbol.for('llmcap.process-wide');

export function processWide<T>(key: string, make: () => T): T {
  let values = holder[SLOT];
  if (!values) {
    values = new Map();
    holder[SLOT] = values;
  }
  if (!values.has(key)) values.set(key, make());
  return values.get(key) as T;
}
