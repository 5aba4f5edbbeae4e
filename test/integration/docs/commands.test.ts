import { describeDocCommands, docCommands, read, words } from './doc-commands';

/** README.md's commands, and the reading of both documents; docs/local.md's run in local-commands.test.ts. */

it('reads the commands of both documents', () => {
  const readme = docCommands(read('README.md'));
  const local = docCommands(read('docs/local.md'));
  expect(readme.length).toBeGreaterThan(25);
  expect(local.length).toBeGreaterThan(12);
  expect(readme.map((c) => c.args.join(' '))).toEqual(
    expect.arrayContaining(['model scale ml-chat --min 1 --max 4 --target 2 --wait', 'completion bash']),
  );
  expect(local.find((c) => c.input)?.input).toContain('name: a10-demo');
  expect(words(`x 'a b' "c" d#e # f`)).toEqual(['x', 'a b', 'c', 'd#e']);
});

describeDocCommands('README.md');
