import { processWide } from '../../../local/process-wide';

/**
 * Test files in one jest worker have separate globals and module registries; what processWide keeps must reach
 * the next one anyway (that is its purpose), and a value whose making failed must be made again next time.
 */

it('keeps a value across module registries, and makes it once', () => {
  let made = 0;
  const key = `probe-${Math.random()}`;
  const first = processWide(key, () => ({ n: ++made }));
  jest.isolateModules(() => {
    const again = require('../../../local/process-wide') as typeof import('../../../local/process-wide');
    expect(again.processWide(key, () => ({ n: ++made }))).toBe(first);
  });
  expect(made).toBe(1);
});

it('does not keep a failure: the next call makes the value again', () => {
  const key = `failing-${Math.random()}`;
  expect(() =>
    processWide(key, () => {
      throw new Error('not valid');
    }),
  ).toThrow('not valid');
  expect(processWide(key, () => 'made')).toBe('made');
});
