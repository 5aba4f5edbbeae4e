/**
 * Releases the AsyncLocalStorage instances of test files that have ended.
 *
 * Jest evaluates every module again for each test file, so each file makes its own instances (the store's ledger
 * and turn contexts, the local Lambda runtime's capture, Powertools' metrics and logger stores, jest-circus's own).
 * On Node 20 and 22 an instance that was ever used stays enabled, and every promise the process makes afterwards
 * is handed to each enabled instance in turn: a worker that ran 70 files paid for some 400 of them on every
 * promise (about 19 s of CPU in one serial run of the suite, `_propagate` in node:async_hooks). In Lambda the
 * modules load once, so only the tests pay this.
 *
 * An instance is disabled once its file has ended: at the next file's setup, never during its own file.
 */
// require, not import: the built-in module object itself, which every file of a worker shares (as in
// local/process-wide.ts); an import would give this file a copy, and the other files' modules would not see it.
const hooks = require('node:async_hooks') as typeof import('node:async_hooks') & Record<symbol, Tracking>;

interface Tracking {
  made: InstanceType<typeof import('node:async_hooks').AsyncLocalStorage>[];
  /** How many of `made` belong to files that have ended. */
  ended: number;
}

const SLOT = Symbol.for('llmcap.async-storage-tracking');

function tracking(): Tracking {
  const found = hooks[SLOT];
  if (found) return found;
  const state: Tracking = { made: [], ended: 0 };
  const Base = hooks.AsyncLocalStorage;
  class Tracked<T> extends Base<T> {
    // Whatever the running Node takes (newer ones take options such as a default value) is passed on.
    constructor(...args: unknown[]) {
      super(...(args as []));
      state.made.push(this as never);
    }
  }
  hooks.AsyncLocalStorage = Tracked as typeof Base;
  hooks[SLOT] = state;
  return state;
}

const state = tracking();
for (const storage of state.made.splice(0, state.ended)) storage.disable();
state.ended = 0;

afterAll(() => {
  state.ended = state.made.length;
});
