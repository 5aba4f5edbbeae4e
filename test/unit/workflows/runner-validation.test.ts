import { LocalStateMachine } from '../../../local/sfn/runner';

/** A definition is checked once per process; one that fails the check fails every time, as CreateStateMachine does. */

const dispatcher = { dispatch: async () => ({}) };
const valid = { StartAt: 'Done', States: { Done: { Type: 'Succeed' } } };
const invalid = { StartAt: 'Missing', States: { Done: { Type: 'Nope' } } };

it('accepts a valid definition, again and again', () => {
  expect(() => new LocalStateMachine(valid as never, dispatcher as never)).not.toThrow();
  expect(() => new LocalStateMachine(valid as never, dispatcher as never)).not.toThrow();
});

it('refuses an invalid definition each time it is given, not only the first', () => {
  expect(() => new LocalStateMachine(invalid as never, dispatcher as never)).toThrow();
  expect(() => new LocalStateMachine(invalid as never, dispatcher as never)).toThrow();
});
