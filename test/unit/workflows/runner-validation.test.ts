import { LocalStateMachine, validityKey } from '../../../local/sfn/runner';

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

// The test files' definitions differ only in the table name CDK-style substitutions put in payload templates.
const withTable = (table: string, path = '$.model') => ({
  StartAt: 'Put',
  States: {
    Put: {
      Type: 'Task',
      Resource: 'arn:aws:states:::dynamodb:putItem',
      Parameters: { TableName: table, Item: { 'pk.$': path } },
      End: true,
    },
  },
});

it('checks definitions that differ only in a payload literal once, and still refuses a bad path among them', () => {
  expect(validityKey(withTable('llmcap-a1'))).toEqual(validityKey(withTable('llmcap-b2')));
  expect(() => new LocalStateMachine(withTable('llmcap-a1') as never, dispatcher as never)).not.toThrow();
  expect(() => new LocalStateMachine(withTable('llmcap-b2') as never, dispatcher as never)).not.toThrow();
  // A path is kept in the key: the same definition with a path the schema refuses is checked, and refused.
  expect(validityKey(withTable('llmcap-a1', 'model'))).not.toEqual(validityKey(withTable('llmcap-a1')));
  expect(() => new LocalStateMachine(withTable('llmcap-b2', '$$$') as never, dispatcher as never)).toThrow(
    /invalid/,
  );
});

it('keeps every string outside payload templates in the key (state names, resources, transitions)', () => {
  const other = { ...withTable('t'), StartAt: 'Other' };
  expect(validityKey(other)).not.toEqual(validityKey(withTable('t')));
  const resource = withTable('t');
  resource.States.Put.Resource = 'arn:aws:states:::dynamodb:getItem';
  expect(validityKey(resource)).not.toEqual(validityKey(withTable('t')));
});
